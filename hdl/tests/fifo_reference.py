"""A FIFO against ``amaranth.lib.fifo.SyncFIFOBuffered``, clock for clock (the benches of
``BlockFIFO`` and ``VerdictFIFO``): the same random writes and reads, in phases that fill it
and phases that drain it, with a reset every 2000 clocks; the same ``w_rdy``, ``r_rdy``,
``level`` and (when ``r_rdy``) ``r_data`` in every clock."""
import random

from amaranth import Elaboratable, Module, ResetInserter, Signal
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.sim import Simulator

__all__ = ["same_as_sync_fifo_buffered"]


class _Pair(Elaboratable):
    def __init__(self, dut, depth):
        self.dut = dut
        self.ref = SyncFIFOBuffered(width=len(dut.w_data), depth=depth)
        self.rst = Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.ref = ResetInserter(self.rst)(self.ref)
        m.submodules.dut = ResetInserter(self.rst)(self.dut)
        return m


def same_as_sync_fifo_buffered(dut, depth, seed, credited=False, clocks=6000):
    """Run ``dut`` beside a ``SyncFIFOBuffered`` of ``depth`` words (asserting every clock);
    ``credited``: the writer writes only when the reference has room, as a credited writer
    does. Returns counts of what the run reached: clocks full, clocks empty, reads, and
    clocks with a read and a write together."""
    rnd = random.Random(seed)
    pair = _Pair(dut, depth)
    ref = pair.ref
    sim = Simulator(pair)
    sim.add_clock(1e-8)
    seen = {"full": 0, "empty": 0, "reads": 0, "both": 0}

    async def bench(ctx):
        for t in range(clocks):
            p_w, p_r = (0.9, 0.3) if (t // 300) % 2 == 0 else (0.3, 0.9)
            w_en, r_en = rnd.random() < p_w, rnd.random() < p_r
            if credited:
                w_en &= bool(ctx.get(ref.w_rdy))
            data = rnd.getrandbits(len(dut.w_data))
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
    return seen
