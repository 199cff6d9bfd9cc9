"""BlockRAM: a read returns the word last written, two clocks after its address, in both
styles; the ECP5 style (DP16KD primitives, rows of 16384-word tiles and a read multiplexer
over the rows) is simulated with a behavioural stand-in for the DP16KD."""
import random

import pytest
from amaranth import *
from amaranth.lib import memory

from fpq_hdl import block_ram
from fpq_hdl.block_ram import BlockRAM

from .hdl_harness import run_testbench


def decode_initval(ports):
    """The 16384 bits a DP16KD in x1 mode holds at power-on, from its ``p_INITVAL_xx``
    parameters (absent: 0), as the layout Yosys's ECP5 mapping writes them
    (``techlibs/ecp5/brams_init.py``): INITVAL_i is, from its least significant bit, byte
    32 i, one 0 bit, byte 32 i + 1, three 0 bits, byte 32 i + 2, ...; each byte is 8
    consecutive addresses, least significant bit first. The padding bits must be 0."""
    bits = []
    for i in range(64):
        value = ports.get(f"p_INITVAL_{i:02X}", Const(0, 320))
        assert isinstance(value, Const) and len(value) == 320, (i, value)
        value = value.value
        pos = 0
        for j in range(32):
            bits += [value >> (pos + k) & 1 for k in range(8)]
            pad = 1 if j % 2 == 0 else 3
            assert value >> (pos + 8) & ((1 << pad) - 1) == 0, f"INITVAL_{i:02X} padding"
            pos += 8 + pad
        assert pos == 320
    return bits


class _DP16KD(Elaboratable):
    """The part of a DP16KD that ``BlockRAM(style="ecp5")`` uses, as the ECP5 sysMEM
    documentation describes it: 16384 x 1, port A writes (``WEA``, ``ADA``, ``DIA0``), port B
    reads with its address registered at the clock and ``REGMODE_B = "OUTREG"`` (the word
    leaves an output register: two clocks from ``ADB`` to ``DOB0``); the contents at
    power-on from ``INITVAL_xx`` (``decode_initval``)."""

    def __init__(self, ports):
        assert ports["p_DATA_WIDTH_A"] == ports["p_DATA_WIDTH_B"] == 1
        assert ports["p_REGMODE_B"] == "OUTREG"
        self.p = ports

    def elaborate(self, platform):
        m = Module()
        p = self.p
        m.submodules.mem = mem = memory.Memory(shape=1, depth=16384, init=decode_initval(p))
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

    run_testbench(dut, bench)
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


def read_all(dut, depth):
    """Every word of ``dut`` read out of reset, with no write."""
    got = []

    async def bench(ctx):
        for a in range(depth + 2):
            ctx.set(dut.r_addr, min(a, depth - 1))
            if a >= 2:
                got.append(ctx.get(dut.r_data))
            await ctx.tick()

    run_testbench(dut, bench)
    return got


@pytest.mark.parametrize("style", ["generic", "ecp5"])
@pytest.mark.parametrize("width, depth, given", [(5, 300, 280), (2, 16384 + 700, 16384 + 600)])
def test_power_on_contents_are_the_init_words(dp16kd_model, style, width, depth, given):
    """Out of reset, with no write, every address reads its ``init`` word (0 past the end of
    ``init``), over one tile and over a second row of tiles."""
    rnd = random.Random(width)
    init = [rnd.getrandbits(width) for _ in range(given)]
    got = read_all(BlockRAM(width, depth, style, init=init), depth)
    want = init + [0] * (depth - given)
    bad = [a for a in range(depth) if got[a] != want[a]]
    assert not bad, f"{len(bad)} words differ, first at {bad[0]}: {got[bad[0]]} != " \
                    f"{want[bad[0]]}"
    assert len(set(init)) == 2 ** width       # every bit of the word in use both ways


def test_ecp5_tiles_without_init_carry_no_initval(monkeypatch):
    """A RAM without contents (the flow vector's) gives its tiles no INITVAL parameter (they
    are 0 by default); one with contents gives each of the 64 to every tile."""
    seen = []
    real = block_ram.Instance

    def instance(kind, **ports):
        seen.append(ports)
        return real(kind, **ports)
    monkeypatch.setattr(block_ram, "Instance", instance)
    Fragment.get(BlockRAM(2, 100, "ecp5"), None)
    assert len(seen) == 2 and not any(k.startswith("p_INITVAL") for p in seen for k in p)
    seen.clear()
    Fragment.get(BlockRAM(2, 100, "ecp5", init=[1, 2]), None)
    assert [sum(k.startswith("p_INITVAL") for k in p) for p in seen] == [64, 64]
    assert decode_initval(seen[0])[:3] == [1, 0, 0] and decode_initval(seen[1])[:3] == [0, 1, 0]


@pytest.mark.parametrize("init, message", [
    ([0] * 65, r"init: 65 words do not fit depth 64"),
    ([0, 256], r"init: word 1 is 256, outside the allowed range \[0, 255\] of width 8"),
    ([-1], r"init: word 0 is -1, outside the allowed range"),
    ([True], r"init: word 0 is True, outside the allowed range")])
def test_bad_init_is_refused_naming_the_word(init, message):
    with pytest.raises(ValueError, match=message):
        BlockRAM(8, 64, init=init)


@pytest.mark.parametrize("style", ["ecp6", "", None])
def test_unknown_style_is_refused(style):
    with pytest.raises(ValueError, match=r"style: .* must be one of generic, ecp5"):
        BlockRAM(8, 64, style)
