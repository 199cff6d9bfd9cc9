"""Bit-exact model of the flow counter: a bit vector with random clearing (FPQ paper Fig. 4).

Per arrival with timestamp ``t`` (ticks, taken modulo 2**48) and flow hash ``h``:

1. **Clears owed up to t, before the arrival's own bit.** The schedule is a fixed-point time
   ``next_due`` (UQ48.16 ticks, modulo 2**64). While ``next_due <= t`` (signed difference in
   the modulo-2**64 ring): draw ``r = rng_clear.next()``, clear bit ``(r * v_max) >> 32``
   (``N -= 1`` if it was set), ``next_due += clear_period``. In paper-literal mode, an arrival
   that cleared at least one bit then restarts the schedule: ``next_due = t + clear_period``
   (the paper's ``t_last <- t``, which drops the fractional remainder).
   If the backlog ``t - next_due`` is ``>= flush_after`` (8 full sweeps), the whole vector is
   wiped instead (N = 0, no random numbers drawn) and ``next_due = t + clear_period``.
2. **Set the arrival's bit** ``(h * v_max) >> 32``; ``N += 1`` if it was clear.
3. The count used downstream is ``n = min(N, n_cap)``; ``N`` itself is always the popcount.

Reset state: all bits clear, ``N = 0``, ``next_due = clear_period``.
"""

from .formats import TIME_BITS, CLEAR_PERIOD
from .random_source import XorShift128

__all__ = ["FlowCounter"]

_FX = CLEAR_PERIOD.frac_bits
_RING = TIME_BITS + _FX  # next_due lives in UQ48.16, modulo 2**64
_RING_MASK = (1 << _RING) - 1
_HALF = 1 << (_RING - 1)


class FlowCounter:
    def __init__(self, vec_bits, v_max, clear_period, flush_after, literal, rng_state):
        self.vec_bits = vec_bits
        self.bits = bytearray(vec_bits)
        self.n_raw = 0
        self.rng = XorShift128(rng_state)
        self.configure(v_max, clear_period, flush_after, literal)
        self.next_due = clear_period
        self.clears = 0          # clears performed (statistics, not in hardware)
        self.wipes = 0

    def configure(self, v_max, clear_period, flush_after, literal):
        if getattr(self, "v_max", v_max) != v_max:
            self.wipe()  # bits above a smaller v_max could never be cleared again
        self.v_max = v_max
        self.period = clear_period
        self.flush_after = flush_after
        self.literal = literal

    def wipe(self):
        self.bits = bytearray(self.vec_bits)
        self.n_raw = 0
        self.wipes += 1

    def advance(self, t):
        """Apply the clears owed up to tick ``t`` (step 1)."""
        now = (t << _FX) & _RING_MASK
        # signed difference in the modulo-2**64 ring (inlined wrap_signed: this is the hot path)
        backlog = ((now - self.next_due + _HALF) & _RING_MASK) - _HALF
        if backlog < 0:
            return 0
        if backlog >= self.flush_after:
            self.wipe()
            self.next_due = (now + self.period) & _RING_MASK
            return 0
        bits = self.bits
        v_max = self.v_max
        period = self.period
        n = backlog // period + 1            # clears due at next_due, + period, ... <= now
        cleared = 0
        for r in self.rng.take(n):
            idx = (r * v_max) >> 32
            if bits[idx]:
                bits[idx] = 0
                cleared += 1
        self.n_raw -= cleared
        self.clears += n
        if self.literal:
            self.next_due = (now + period) & _RING_MASK
        else:
            self.next_due = (self.next_due + n * period) & _RING_MASK
        return n

    def set(self, h):
        """Set the bit of hash ``h`` (step 2); returns the vector index."""
        idx = (h * self.v_max) >> 32
        if not self.bits[idx]:
            self.bits[idx] = 1
            self.n_raw += 1
        return idx

    def popcount(self):
        return sum(self.bits)
