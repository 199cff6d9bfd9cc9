"""Named fixed-point formats, written once and shared by the golden model and the RTL.

Every number that crosses the hardware/software boundary has one of these formats. The RTL
(`fpq_hdl`) sizes its signals from the same objects, so a width changes in one place only.

A format ``UQi.f`` is an unsigned integer ``raw`` of ``i + f`` bits standing for ``raw / 2**f``.
"""

from dataclasses import dataclass
import math

__all__ = [
    "UFixed", "RateFormat", "QAVG", "PROB", "CLEAR_PERIOD", "HOLD_BITS", "QPKTS_BITS",
    "QBYTES_BITS", "LENGTH_BITS", "RATE", "SAMPLE_PERIOD_BITS", "MIN_SAMPLE_PERIOD",
    "WQ_SHIFT_MAX", "FLOW_BITS", "FLOW6_BITS", "HASH_BITS", "PROB_ONE", "RAND_BITS",
    "COUNTER_BITS", "SEQ_BITS", "FLOW_COUNT_BITS", "CAPPED_COUNT_BITS",
]


@dataclass(frozen=True)
class UFixed:
    """Unsigned fixed point ``UQ<int_bits>.<frac_bits>``."""
    name: str
    int_bits: int
    frac_bits: int

    @property
    def width(self):
        return self.int_bits + self.frac_bits

    @property
    def max_raw(self):
        return (1 << self.width) - 1

    @property
    def max_value(self):
        return self.max_raw / (1 << self.frac_bits)

    def to_raw(self, value, field="value"):
        """Round ``value`` to the nearest representable raw integer; range errors name ``field``."""
        if not (isinstance(value, (int, float)) and math.isfinite(value)):
            raise ValueError(f"{field}: {value!r} is not a finite number")
        raw = int(round(value * (1 << self.frac_bits)))
        if raw < 0 or raw > self.max_raw:
            raise ValueError(f"{field}: {value} is outside {self.name} range "
                             f"[0, {self.max_value:.6g}]")
        return raw

    def to_float(self, raw):
        return raw / (1 << self.frac_bits)

    def __str__(self):
        return f"UQ{self.int_bits}.{self.frac_bits}"


@dataclass(frozen=True)
class RateFormat:
    """A positive rate as mantissa and shift: ``value = mant * 2**-(shift + mant_bits - 1)``.

    Normalised mantissas lie in ``[2**(mant_bits-1), 2**mant_bits)``, so the relative rounding
    error is at most ``2**-mant_bits`` over the whole range ``[2**-63, 2)``. The hardware uses it
    as a multiplier on the average queue ``D`` (a ``QAVG`` raw integer)::

        p_raw = ((mant * D) << 1) >> shift        # p_raw in PROB, i.e. p * 2**32

    which is ``value * D / 2**16 * 2**32`` exactly when ``mant_bits == 16``.
    """
    name: str
    mant_bits: int
    shift_bits: int

    @property
    def width(self):
        return self.mant_bits + self.shift_bits

    def encode(self, value, field="rate"):
        """Return ``(mant, shift)`` nearest to ``value``; ``(0, 0)`` encodes zero."""
        if not (isinstance(value, (int, float)) and math.isfinite(value)) or value < 0:
            raise ValueError(f"{field}: {value!r} must be a finite number >= 0")
        if value == 0:
            return 0, 0
        top = 1 << self.mant_bits
        max_shift = (1 << self.shift_bits) - 1
        # value in [2**-shift, 2**(1-shift))  <=>  mant in [top/2, top); fixed up below for
        # the rounding that can carry the mantissa to ``top``
        shift = max(-math.floor(math.log2(value)), 0)
        while True:
            if shift > max_shift:
                return 0, 0  # below the smallest representable rate: flushes to zero
            mant = int(round(math.ldexp(value, shift + self.mant_bits - 1)))
            if mant >= top:
                if shift == 0:
                    return top - 1, 0  # saturate at the largest representable rate
                shift -= 1
                continue
            if mant < top // 2 and shift < max_shift:
                shift += 1
                continue
            return mant, shift

    def decode(self, mant, shift):
        return math.ldexp(mant, -(shift + self.mant_bits - 1))

    def pack(self, mant, shift):
        return (shift << self.mant_bits) | mant

    def unpack(self, word):
        return word & ((1 << self.mant_bits) - 1), word >> self.mant_bits


# --- the formats -------------------------------------------------------------------------
#: Average queue length in packets. 20 integer bits hold the largest packet limit; 16
#: fractional bits let the EWMA weight go down to 2**-16 and still move.
QAVG = UFixed("QAVG", 20, 16)
#: Drop/mark probability, ``p * 2**32``; 1.0 is ``2**32`` (hence one integer bit).
PROB = UFixed("PROB", 1, 32)
PROB_ONE = 1 << 32
#: Clocks between two clears of the flow vector (``t_clear * tick_hz / v_max``), >= 1.
CLEAR_PERIOD = UFixed("CLEAR_PERIOD", 32, 16)
#: FPQ ``r(N) = l_t / q_t`` per packet of average queue, and RED slopes.
RATE = RateFormat("RATE", 16, 6)

HOLD_BITS = 48        # the re-key hold, in clocks (a down-counter in hardware)
QPKTS_BITS = 20       # queue occupancy and limit, packets
QBYTES_BITS = 32      # queue occupancy and limit, bytes
LENGTH_BITS = 16      # packet length, bytes
SAMPLE_PERIOD_BITS = 32  # clocks between two samples of the average queue
MIN_SAMPLE_PERIOD = 4    # the average's update takes 4 clocks in hardware (no 1-clock loop)
WQ_SHIFT_MAX = 16        # the average's weight per sample is 2**-wq_shift, 0..16
FLOW_BITS = 104       # IPv4 5-tuple: src 32 | dst 32 | sport 16 | dport 16 | proto 8
FLOW6_BITS = 296      # IPv6 5-tuple: src 128 | dst 128 | sport 16 | dport 16 | proto 8
HASH_BITS = 32        # Toeplitz hash output
RAND_BITS = 32        # random numbers
COUNTER_BITS = 64     # statistics counters
SEQ_BITS = 32         # verdict sequence number (wraps)
#: The flow count N (the flow vector's popcount, up to ``vec_bits``, at most 2**16: the
#: largest of ``fpq.config.BUILD_SIZES``) and ``v_max``, which is at most ``vec_bits``.
FLOW_COUNT_BITS = 17
#: The capped count ``n = min(N, n_cap)`` decisions use, an index of the r(N) table:
#: ``n_cap`` < ``table_depth``, at most 2**16.
CAPPED_COUNT_BITS = 16

