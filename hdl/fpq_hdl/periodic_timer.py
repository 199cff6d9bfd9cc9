"""Periodic timer: a strobe every ``period`` clocks, the fractional part kept (a DDA)."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["PeriodicTimer"]


class PeriodicTimer(wiring.Component):
    """``fire`` in the clocks ``ceil(D_j)``, ``D_0 = period``, ``D_{j+1} = D_j + period``,
    counted from the clock after ``restart`` (clock 0), with ``period`` read in the clock
    before each fire (so a new period applies from the strobe after the next one, or the one
    after that if the change comes in a strobe's clock, as ``fpq.flow_counter.FlowCounter``
    and ``fpq.queue_averager.QueueAverager`` schedule their clears and samples).

    How, with no compare of a time: the gap to the next strobe is ``ceil(D_{j+1}) -
    ceil(D_j)``. With ``R = ceil(D_j) - D_j`` (the fraction owed, ``frac_bits`` wide) it is
    ``int(period) + [frac(period) > R]`` and the next ``R`` is ``R - frac(period)`` modulo 1:
    one subtraction whose borrow is the compare. A down-counter of clocks to the next strobe
    is reloaded with the gap at each strobe. Every one-clock loop is one carry chain and one
    LUT: the counter (decrement, its borrow selects the reload), ``R`` (subtract, enable), the
    strobe (the counter's borrow or the gap's "1 clock" flag, by the strobe itself). What the
    strobe needs of the period (its fraction, ``int - 1``, ``int - 2``, ``int == 1``) is
    registered a clock ahead, so no subtraction or compare of the period sits in those loops.

    Latency: ``fire`` is a register. Throughput: a strobe per clock at most (``period >=
    1.0``; the register map refuses smaller periods, with which the strobes come at an
    unspecified rate).

    Parameters
    ----------
    int_bits, frac_bits : int
        The period's format, ``UQ<int_bits>.<frac_bits>`` clocks (``frac_bits`` may be 0).

    Attributes
    ----------
    period : In(int_bits + frac_bits)
    restart : In(1)
        The clock after this one is clock 0; the first strobe comes ``ceil(period)`` clocks
        later. Out of reset the timer is stopped until the first ``restart``.
    fire : Out(1)
    """

    def __init__(self, int_bits, frac_bits):
        self.int_bits, self.frac_bits = int_bits, frac_bits
        super().__init__({"period": In(int_bits + frac_bits), "restart": In(1),
                          "fire": Out(1)})

    def elaborate(self, platform):
        m = Module()
        fb, ib = self.frac_bits, self.int_bits
        # the period as the strobes read it: registered, with what the reload derives from it
        p_frac = Signal(fb) if fb else None
        if fb:
            m.d.sync += p_frac.eq(self.period[:fb])
        p_int = self.period[fb:]
        # ``tick``: a strobe, or the virtual one of clock 0 that loads the first gap
        tick = Signal()
        cnt = Signal(ib)                     # clocks to the next strobe, minus 2 (mod 2**ib)
        owed = Signal(fb) if fb else None    # R
        # the gap is p_int + b (b = [p_frac > R]); the counter takes gap - 2, and a gap of
        # one clock (p_int == 1 and b == 0) strobes at once
        if fb:
            diff = Signal(fb + 1)
            m.d.comb += diff.eq(owed - p_frac)
            b = diff[fb]
        else:
            b = C(0, 1)
        pm1 = Signal(ib)
        pm2 = Signal(ib)
        one = Signal()
        m.d.sync += [pm1.eq(p_int - 1), pm2.eq(p_int - 2), one.eq(p_int == 1)]
        dec = Signal(ib + 1)
        m.d.comb += dec.eq(cnt - 1)
        run = Signal()                       # stopped out of reset, until a restart
        tick_next = Signal()
        m.d.comb += tick_next.eq(Mux(tick, ~b & one, dec[ib] & run))
        # (the counter needs no restart: the virtual strobe of clock 0 reloads it)
        m.d.sync += cnt.eq(Mux(tick, Mux(b, pm1, pm2), dec[:ib]))
        with m.If(self.restart):
            m.d.sync += [tick.eq(1), self.fire.eq(0), run.eq(1)]
            if fb:
                m.d.sync += owed.eq(0)
        with m.Else():
            m.d.sync += [tick.eq(tick_next), self.fire.eq(tick_next)]
            if fb:
                with m.If(tick):
                    m.d.sync += owed.eq(diff[:fb])
        return m
