"""Bit-exact model of the flow counter: a bit vector with random clearing (FPQ paper Fig. 4).

Clearing runs on the queue manager's own clock, whatever the traffic. Clear ``j`` (j = 0, 1,
...) is due at ``D_j`` (UQ.16 clocks from the time base's start): ``D_0 = clear_period``,
``D_{j+1} = D_j + clear_period``, with the period in effect in the clock before clear ``j``
applies (the timer registers what it derives from the period). It applies in clock ``ceil(D_j)`` (at most one per clock, since ``clear_period >= 1``), before an arrival
of the same clock: ``r = rng_clear.next()``, clear bit ``(r * v_max) >> 32``, ``N -= 1`` if it
was set. So clears run at exactly ``v_max / t_clear`` per second, spread evenly, with the
fractional period kept. An arrival sets bit ``(h * v_max) >> 32`` (``N += 1`` if it was clear).
``N`` is always the popcount.

The model applies the clears lazily, before the next event that could see them
(``advance``); a long idle period costs a draw per clear only while set bits are left, and a
jump of the generator (``XorShift128.skip``) for the rest.

Reset state: all bits clear, ``N = 0``, the first clear due at ``clear_period``.
"""

from .formats import CLEAR_PERIOD
from .random_source import XorShift128

__all__ = ["FlowCounter"]

_FX = CLEAR_PERIOD.frac_bits


class FlowCounter:
    def __init__(self, vec_bits, v_max, clear_period, rng_state):
        self.vec_bits = vec_bits
        self.bits = bytearray(vec_bits)
        self.n_raw = 0
        self.rng = XorShift128(rng_state)
        self.v_max = v_max
        self.period = clear_period
        #: when the next clear is due, UQ.16 clocks since the time base's start
        self.next_due = clear_period
        #: the period to step with after the next clear, when that clear is due in the clock
        #: of a commit (it steps with the period before the commit)
        self.then_period = None
        self.clears = 0          # clears applied (statistics, not in hardware)
        self.wipes = 0

    def configure(self, v_max, clear_period, clock):
        """New registers from ``clock`` on (every clear due before it was applied). The clear
        already scheduled keeps its time (the hardware's counter is loaded); the ones after it
        follow the new period, except that a clear due in ``clock`` itself steps to its
        successor with the old one (the period a clear steps with is read a clock before it)."""
        if v_max != self.v_max:
            self.wipe()  # bits above a smaller v_max could never be cleared again
        self.v_max = v_max
        if self.next_due <= clock << _FX:
            self.then_period = clear_period
        else:
            self.period = clear_period

    def wipe(self):
        self.bits = bytearray(self.vec_bits)
        self.n_raw = 0
        self.wipes += 1

    def advance(self, clock):
        """Apply the clears due at or before ``clock``; returns how many."""
        now = clock << _FX
        due = self.next_due
        if due > now:
            return 0
        if self.then_period is not None:
            # the clear due in a commit's clock: one step with the old period, then the new
            self._clear(1)
            due = self.next_due = due + self.period
            self.period, self.then_period = self.then_period, None
            if due > now:
                return 1
            return 1 + self.advance(clock)
        period = self.period
        n = (now - due) // period + 1           # clears due at due, due + period, ... <= now
        self._clear(n)
        self.next_due = due + n * period
        return n

    def _clear(self, n):
        """``n`` clears, each drawing its number and clearing its bit."""
        left = n
        bits = self.bits
        v_max = self.v_max
        rand = self.rng.next
        while left and self.n_raw:
            left -= 1
            idx = (rand() * v_max) >> 32
            if bits[idx]:
                bits[idx] = 0
                self.n_raw -= 1
        if left:                                # the vector is empty: only the draws remain
            self.rng.skip(left)
        self.clears += n

    def set(self, h):
        """Set the bit of hash ``h``; returns the vector index."""
        idx = (h * self.v_max) >> 32
        if not self.bits[idx]:
            self.bits[idx] = 1
            self.n_raw += 1
        return idx

    def popcount(self):
        return sum(self.bits)
