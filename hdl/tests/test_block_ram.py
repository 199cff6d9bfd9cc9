"""BlockRAM: a read returns the word last written, two clocks after its address, in both
styles; the ECP5 style (DP16KD primitives, rows of 16384-word tiles and a read multiplexer
over the rows) is simulated with a behavioural stand-in for the DP16KD."""
import random

import pytest
from amaranth import *
from amaranth.lib import memory
from amaranth.sim import Simulator

from fpq_hdl import block_ram
from fpq_hdl.block_ram import BlockRAM


class _DP16KD(Elaboratable):
    """The part of a DP16KD that ``BlockRAM(style="ecp5")`` uses, as the ECP5 sysMEM
    documentation describes it: 16384 x 1, port A writes (``WEA``, ``ADA``, ``DIA0``), port B
    reads with its address registered at the clock and ``REGMODE_B = "OUTREG"`` (the word
    leaves an output register: two clocks from ``ADB`` to ``DOB0``)."""

    def __init__(self, ports):
        assert ports["p_DATA_WIDTH_A"] == ports["p_DATA_WIDTH_B"] == 1
        assert ports["p_REGMODE_B"] == "OUTREG"
        self.p = ports

    def elaborate(self, platform):
        m = Module()
        p = self.p
        m.submodules.mem = mem = memory.Memory(shape=1, depth=16384, init=[])
        wp = mem.write_port()
        ada = Cat(p[f"i_ADA{i}"] for i in range(14))
        adb = Cat(p[f"i_ADB{i}"] for i in range(14))
        m.d.comb += [wp.en.eq(p["i_WEA"]), wp.addr.eq(ada), wp.data.eq(p["i_DIA0"])]
        rp = mem.read_port()                 # address register (latency 1)
        m.d.comb += rp.addr.eq(adb)
        m.d.sync += p["o_DOB0"].eq(rp.data)  # output register
        return m


@pytest.fixture
def dp16kd_model(monkeypatch):
    real = block_ram.Instance

    def instance(kind, **ports):
        return _DP16KD(ports) if kind == "DP16KD" else real(kind, **ports)
    monkeypatch.setattr(block_ram, "Instance", instance)


def run(style, width, depth, n=1500, seed=1):
    """Random writes and reads (a read never of the address written in its clock or the one
    before, which the RAM leaves undefined); returns [(clock, expected, got)]."""
    dut = BlockRAM(width, depth, style)
    rnd = random.Random(seed)
    shadow = {}
    checks = []
    pending = {}                   # clock when r_data is due -> expected word

    async def bench(ctx):
        recent = []
        for t in range(n):
            we = rnd.random() < 0.5
            wa = rnd.randrange(depth)
            wd = rnd.getrandbits(width)
            # reads favour written addresses, spread over every row of tiles
            ra = rnd.choice(list(shadow)) if shadow and rnd.random() < 0.8 else rnd.randrange(depth)
            while ra in recent or (we and ra == wa):
                ra = rnd.randrange(depth)
            ctx.set(dut.w_en, we)
            ctx.set(dut.w_addr, wa)
            ctx.set(dut.w_data, wd)
            ctx.set(dut.r_addr, ra)
            if ra in shadow:
                pending[t + 2] = shadow[ra]
            if t in pending:
                checks.append((t, pending.pop(t), ctx.get(dut.r_data)))
            await ctx.tick()
            if we:
                shadow[wa] = wd
            recent = ([wa] if we else []) + recent[:1]

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return checks


@pytest.mark.parametrize("style", ["generic", "ecp5"])
@pytest.mark.parametrize("width, depth", [(3, 300), (2, 3 * 16384 + 100)])
def test_reads_return_the_last_word_written(dp16kd_model, style, width, depth):
    checks = run(style, width, depth)
    assert len(checks) > 300
    bad = [c for c in checks if c[1] != c[2]]
    assert not bad, f"{len(bad)} of {len(checks)} reads wrong, first (clock, want, got): {bad[0]}"
    # the words read differ, so a constant output cannot pass
    assert len({c[1] for c in checks}) == 2 ** width


@pytest.mark.parametrize("style", ["ecp6", "", None])
def test_unknown_style_is_refused(style):
    with pytest.raises(ValueError, match=r"style: .* must be one of generic, ecp5"):
        BlockRAM(8, 64, style)
