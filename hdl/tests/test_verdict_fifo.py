"""VerdictFIFO against amaranth.lib.fifo.SyncFIFOBuffered of its capacity, clock for clock:
the same inputs give the same w_rdy, r_rdy, level and (when r_rdy) r_data, under random
writes and reads, full and empty, and resets; both memories, with and without the credit
(whose writer never writes when full)."""
import random

import pytest
from amaranth import Elaboratable, Module, ResetInserter, Signal
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.sim import Simulator

from fpq_hdl.verdict_fifo import VerdictFIFO, MEMORIES


class _Pair(Elaboratable):
    def __init__(self, width, depth, **kw):
        self.dut = VerdictFIFO(width=width, depth=depth, **kw)
        self.ref = SyncFIFOBuffered(width=width, depth=self.dut.capacity)
        self.rst = Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.ref = ResetInserter(self.rst)(self.ref)
        m.submodules.dut = ResetInserter(self.rst)(self.dut)
        return m


@pytest.mark.parametrize("credited", [False, True], ids=["gated", "credited"])
@pytest.mark.parametrize("memory", MEMORIES)
@pytest.mark.parametrize("depth", [2, 3, 33])
def test_same_as_sync_fifo_buffered(depth, memory, credited):
    rnd = random.Random(depth)
    pair = _Pair(12, depth, memory=memory, credited=credited)
    ref, dut = pair.ref, pair.dut
    sim = Simulator(pair)
    sim.add_clock(1e-8)
    seen = {"full": 0, "empty": 0, "reads": 0, "both": 0}

    async def bench(ctx):
        for t in range(6000):
            # phases that fill the FIFO and phases that drain it
            p_w, p_r = (0.9, 0.3) if (t // 300) % 2 == 0 else (0.3, 0.9)
            w_en, r_en = rnd.random() < p_w, rnd.random() < p_r
            if credited:
                w_en &= bool(ctx.get(ref.w_rdy))
            data = rnd.getrandbits(12)
            for f in (ref, dut):
                ctx.set(f.w_en, w_en)
                ctx.set(f.w_data, data)
                ctx.set(f.r_en, r_en)
            ctx.set(pair.rst, t % 2000 == 1999)
            for name in ("w_rdy", "r_rdy", "level"):
                assert ctx.get(getattr(dut, name)) == ctx.get(getattr(ref, name)), (t, name)
            if ctx.get(ref.r_rdy):
                assert ctx.get(dut.r_data) == ctx.get(ref.r_data), t
                seen["reads"] += r_en
                seen["both"] += r_en and w_en and ctx.get(ref.w_rdy)
            seen["full"] += not ctx.get(ref.w_rdy)
            seen["empty"] += not ctx.get(ref.r_rdy)
            await ctx.tick()
    sim.add_testbench(bench)
    sim.run()
    assert seen["full"] > 100 and seen["empty"] > 100 and seen["reads"] > 1000
    assert seen["both"] > 100


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match=r"depth: 1 is out of the allowed range"):
        VerdictFIFO(width=8, depth=1)
    with pytest.raises(ValueError, match=r"memory: 'lut' is not one of"):
        VerdictFIFO(width=8, depth=4, memory="lut")
