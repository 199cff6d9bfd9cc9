"""The queue manager's one-clock recurrences reduced to their arithmetic, to synthesise alone.

Each block here is the least a one-clock recurrence of the queue manager must compute, with
every operand that does not depend on the recurrence already in a register. Synthesised alone
(``python -m fpq_hdl.synth --component loop_...``), nothing else competes for placement or
routing, so the Fmax is an upper bound of what that recurrence reaches on the device with
this flow, whatever surrounds it (docs/BENCHMARKS.md, "Bounds of the one-clock loops"). They
are measurement fixtures, not parts of the queue manager.

* ``EwmaLoop(wq_shift=None, decay=False)``: the averager's EWMA ``A += ((q << 16) - A) >> s``
  written as ``QueueAverager`` writes it (``A - ceil(A / 2**s) + (q << 16 >> s)``, one
  carry-save level and one adder, its rounding as the averager's: an OR tree with a runtime
  ``s``, carry-chain bits with a build-time one), with ``s`` a runtime one-hot register
  (0..16), or a build-time constant; with ``decay``, RED's idle decay as well (``A >> d``
  for an arrival that finds the queue idle, ``d`` a one-hot register): the averager's whole
  recurrence.
* ``OccupancyLoop``: the byte occupancy of ``Decision(optimise="speed")`` alone (short
  departure, byte threshold, two sums, select).
* ``CompareSelectLoop``: a 48-bit time compared with a schedule register that, when reached,
  steps to a second register (``due``, ``due + period``): the least of the clear schedule.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpq.formats import QAVG, QBYTES_BITS, LENGTH_BITS, TIME_BITS

from .queue_averager import _select, ewma_step    # the averager's own shift and step

__all__ = ["EwmaLoop", "OccupancyLoop", "CompareSelectLoop", "LOOPS"]


class EwmaLoop(wiring.Component):
    """``avg`` steps to ``A - ceil(A / 2**s) + qs`` when ``valid`` (inputs registered here).

    ``qs`` is the caller's ``(q << 16) >> s``. With ``decay``, an arrival with ``idle`` set
    steps to ``A >> d`` instead, ``d`` the set bit of the one-hot ``dsel`` (0 if none: a shift
    of the width or more), as ``QueueAverager(optimise="speed")`` does. Latency: ``avg`` one
    clock after the inputs' register. Parameters: ``wq_shift`` None (runtime, port ``wq``
    one-hot) or 0..16; ``decay`` bool."""

    def __init__(self, wq_shift=None, decay=False):
        self.wq_shift = wq_shift
        self.decay = decay
        super().__init__({"wq": In(17), "qs": In(QAVG.width), "valid": In(1),
                          "idle": In(1), "dsel": In(QAVG.width), "avg": Out(QAVG.width)})

    def elaborate(self, platform):
        m = Module()
        w = QAVG.width
        qs, v = Signal(w), Signal()
        m.d.sync += [qs.eq(self.qs), v.eq(self.valid)]
        a = self.avg
        if self.wq_shift is None:
            wq, mask = Signal(17), Signal(w)
            m.d.sync += [wq.eq(self.wq),
                         mask.eq(Cat(*(self.wq[k + 1:].any() for k in range(16))))]
            step = ewma_step(m, a, _select(a, wq), qs, c=(a & mask) != 0)
        else:
            s = self.wq_shift
            step = ewma_step(m, a, a >> s, qs, low=~a[:s])
        if self.decay:
            idle, dsel = Signal(), Signal(w)
            m.d.sync += [idle.eq(self.idle), dsel.eq(self.dsel)]
            step = Mux(idle, _select(a, dsel), step)
        with m.If(v):
            m.d.sync += a.eq(step)
        return m


class OccupancyLoop(wiring.Component):
    """The byte occupancy: ``dep`` (0 without a departure), threshold ``k``, ``grow`` =
    length - dep, ``fits``, ``kill`` (no enqueue whatever the bytes) registered here."""

    def __init__(self):
        super().__init__({"k": In(signed(QBYTES_BITS + 2)), "dep": In(LENGTH_BITS),
                          "grow": In(signed(LENGTH_BITS + 1)), "length": In(LENGTH_BITS),
                          "fits": In(1), "kill": In(1), "occ": Out(QBYTES_BITS)})

    def elaborate(self, platform):
        m = Module()
        regs = {n: Signal.like(getattr(self, n)) for n in
                ("k", "dep", "grow", "length", "fits", "kill")}
        m.d.sync += [r.eq(getattr(self, n)) for n, r in regs.items()]
        k, dep, grow, length, fits, kill = regs.values()
        o = self.occ
        short = dep > o
        with m.If(short):
            m.d.sync += o.eq(Mux(kill | ~fits, 0, length))
        with m.Elif(kill | (o > k)):
            m.d.sync += o.eq(o - dep)
        with m.Else():
            m.d.sync += o.eq(o + grow)
        return m


class CompareSelectLoop(wiring.Component):
    """``due`` steps to the register ``due + period`` when ``ts >= due`` (48 bits)."""

    def __init__(self):
        super().__init__({"ts": In(TIME_BITS), "period": In(TIME_BITS), "valid": In(1),
                          "due": Out(TIME_BITS)})

    def elaborate(self, platform):
        m = Module()
        ts, period, v = Signal(TIME_BITS), Signal(TIME_BITS), Signal()
        nxt = Signal(TIME_BITS)
        m.d.sync += [ts.eq(self.ts), period.eq(self.period), v.eq(self.valid)]
        with m.If(v & (ts >= self.due)):
            m.d.sync += [self.due.eq(nxt), nxt.eq(nxt + period)]
        return m


#: ``--component`` names of ``fpq_hdl.synth`` -> factory
LOOPS = {
    "loop_ewma_runtime": lambda: EwmaLoop(),
    "loop_ewma_fixed9": lambda: EwmaLoop(9),
    "loop_ewma_runtime_decay": lambda: EwmaLoop(decay=True),
    "loop_ewma_fixed9_decay": lambda: EwmaLoop(9, decay=True),
    "loop_occupancy": OccupancyLoop,
    "loop_compare_select": CompareSelectLoop,
}
