"""Queue averager: an EWMA of the queue, sampled on the clock, in a multi-clock update."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpq.formats import QAVG, QPKTS_BITS, WQ_SHIFT_MAX, MIN_SAMPLE_PERIOD

from .layouts import fixed_registers

__all__ = ["QueueAverager"]

_FX = QAVG.frac_bits
_SHIFT_BITS = WQ_SHIFT_MAX.bit_length()


class QueueAverager(wiring.Component):
    """Bit-exact ``fpq.queue_averager.QueueAverager``'s update: on ``sample``,
    ``A += ((q << 16) - A) >> wq_shift`` (arithmetic shift).

    Samples come at least ``MIN_SAMPLE_PERIOD`` (4) clocks apart, so the update is a
    pipeline of four clocks with no one-clock loop: cycle 0 the difference ``(q << 16) - A``
    (a carry chain), cycle 1 the shift by a multiple of 4 (a 5-way select), cycle 2 by 0-3 (a
    4-way select), cycle 3 the sum into ``A``. The next sample's cycle 0 reads the new ``A``.
    This replaces RED's per-arrival EWMA, whose shift of ``A`` by a register value and add
    formed a loop of five LUT levels and a chain in one clock (about 100 MHz on ECP5), and
    which needed an idle-time decay to be a time average at all.

    Latency: ``avg`` holds the new average ``LATENCY`` clocks after ``sample``.
    Throughput: a sample every ``MIN_SAMPLE_PERIOD`` clocks.

    Parameters
    ----------
    build : fpq.Build
        A ``wq_shift`` the build fixes (``Build.fixed``) is a constant: the shifts are wiring.

    Attributes
    ----------
    sample : In(1)
        Take ``q`` now, with ``wq_shift``.
    q : In(QPKTS_BITS)
        The packet occupancy the sample takes.
    wq_shift : In(5)
        The sample's weight, ``2**-wq_shift`` (the register map allows 0..16; up to 31 the
        shift is exact too).
    avg : Out(QAVG.width)
        ``A``, after every sample taken ``LATENCY`` or more clocks ago.
    """

    LATENCY = 4
    assert MIN_SAMPLE_PERIOD >= LATENCY

    def __init__(self, build):
        self._build = build
        super().__init__({"sample": In(1), "q": In(QPKTS_BITS), "wq_shift": In(5),
                          "avg": Out(QAVG.width)})

    def elaborate(self, platform):
        m = Module()
        a = self.avg
        fixed = fixed_registers(self._build).get("wq_shift")
        w = QAVG.width + 2
        # cycle 0: the difference
        d1 = Signal(signed(w))
        v1 = Signal()
        s1 = Signal(5)
        m.d.sync += [d1.eq((self.q << _FX) - a), v1.eq(self.sample), s1.eq(self.wq_shift)]
        # cycles 1, 2: the arithmetic shift, coarse then fine
        d2, d3 = Signal(signed(w)), Signal(signed(w))
        v2, v3 = Signal(), Signal()
        s2 = Signal(2)
        m.d.sync += [v2.eq(v1), v3.eq(v2)]
        if fixed is not None:
            k = fixed.value
            m.d.sync += [d2.eq(d1 >> (k & ~3)), d3.eq(d2 >> (k & 3))]
        else:
            m.d.sync += [d2.eq(Array([d1 >> (4 * j) for j in range(8)])[s1[2:]]),
                         s2.eq(s1[:2]),
                         d3.eq(Array([d2 >> j for j in range(4)])[s2])]
        # cycle 3: the sum
        with m.If(v3):
            m.d.sync += a.eq(a + d3)
        return m
