"""Bit-exact model of the queue averager: an EWMA of the queue sampled on the clock.

The average ``A`` is a QAVG raw integer (UQ20.16 packets). Sample ``i`` is taken at clock
``S_i`` (``S_0 = avg_sample_period``, ``S_{i+1} = S_i + avg_sample_period``, the period in
effect at ``S_i``), with ``q`` = the packet occupancy after every event accepted at or before
``S_i``, and ``wq_shift`` in effect at ``S_i``::

    A = A + ((q << 16) - A) >> wq_shift          # arithmetic shift (floor)

The result is published at clock ``S_i + delay`` (``Build.avg_delay``): an arrival accepted at
clock ``c`` decides with the average after every sample with ``S_i + delay <= c`` (0 before
the first). Sampling on the clock makes the average a time average, as PIE and hardware AQMs
keep theirs: RED's per-arrival EWMA needs an idle-time correction to be one, and cannot span a
round-trip time at 100 GbE (148.8 M arrivals/s). The time constant is ``avg_sample_period /
-ln(1 - 2**-wq_shift)`` clocks (:func:`ewma_time_constant`; :func:`avg_parameters` chooses the
two for a time constant).

A long idle period costs the model a few steps per distinct step size (``ewma_repeat``), not a
step per sample.
"""

from collections import deque
import math

from .formats import QAVG, SAMPLE_PERIOD_BITS, MIN_SAMPLE_PERIOD, WQ_SHIFT_MAX

__all__ = ["QueueAverager", "ewma_step", "ewma_repeat", "AVG_WQ_SHIFT", "ewma_time_constant",
           "avg_parameters"]

_FX = QAVG.frac_bits

#: The weight per sample, ``2**-AVG_WQ_SHIFT``, that ``avg_tau_s`` is turned into wherever the
#: sample period allows (``avg_parameters``): 512 samples per time constant, and an average
#: that settles within 2**-7 packet of a constant queue.
AVG_WQ_SHIFT = 9


def ewma_time_constant(wq_shift, period):
    """Time constant, in clocks, of an EWMA with weight ``2**-wq_shift`` per sample and a sample
    every ``period`` clocks: the ``tau`` of ``(1 - w)^(t / period) = exp(-t / tau)``; 0 when
    ``w`` is 1 (the average is the latest sample)."""
    if wq_shift == 0:
        return 0.0
    return period / -math.log1p(-2.0 ** -wq_shift)


def avg_parameters(tau_clocks):
    """``(wq_shift, avg_sample_period)`` for a time constant of ``tau_clocks`` clocks.

    The weight is ``2**-AVG_WQ_SHIFT`` and the period the whole number of clocks nearest to
    ``tau`` (relative error below ``1 / (2 period)``). Where that period would not fit its
    32-bit register the weight shrinks (``wq_shift`` up to 16); where it would be under
    ``MIN_SAMPLE_PERIOD`` the weight grows, and below about 5.8 clocks it is 1 (``wq_shift``
    0, no averaging: the average is the latest sample). Raises ``ValueError`` beyond the
    longest time constant, ``2**-16`` every ``2**32 - 1`` clocks."""
    longest = (1 << SAMPLE_PERIOD_BITS) - 1
    if not (isinstance(tau_clocks, (int, float)) and math.isfinite(tau_clocks)
            and 0 <= tau_clocks <= ewma_time_constant(WQ_SHIFT_MAX, longest)):
        raise ValueError(f"time constant {tau_clocks!r} clocks is outside [0, "
                         f"{ewma_time_constant(WQ_SHIFT_MAX, longest):.6g}]")
    for k in range(AVG_WQ_SHIFT, WQ_SHIFT_MAX + 1):
        period = round(tau_clocks / ewma_time_constant(k, 1))
        if period <= longest:
            break
    if period >= MIN_SAMPLE_PERIOD:
        return k, period
    for k in range(AVG_WQ_SHIFT - 1, 0, -1):
        period = round(tau_clocks / ewma_time_constant(k, 1))
        if period >= MIN_SAMPLE_PERIOD:
            return k, period
    return 0, MIN_SAMPLE_PERIOD


def ewma_step(a, q, shift):
    """One sample: ``a + (((q << 16) - a) >> shift)``."""
    return a + (((q << _FX) - a) >> shift)


def ewma_repeat(a, q, shift, n):
    """``n`` samples of the same queue ``q``, exactly as ``n`` calls of ``ewma_step``.

    While the step ``((q << 16) - a) >> shift`` keeps its value the average moves by equal
    amounts, so the steps of one size are taken at once; it stops at the fixed point (the
    difference in ``[0, 2**shift)``). Work: one turn per distinct step size, at most about
    ``2**shift`` plus ``2**shift * ln(range)`` for a full queue draining."""
    target = q << _FX
    while n > 0:
        d = target - a
        step = d >> shift
        if step == 0:
            return a
        if step > 0:      # d in [step << shift, (step + 1) << shift): rises by step per sample
            j = (d - (step << shift)) // step + 1
        else:             # -d in ((m - 1) << shift, m << shift], m = -step: falls by m
            m = -step
            j = (-d - ((m - 1) << shift) + m - 1) // m
        if j > n:
            j = n
        a += j * step
        n -= j
    return a


class QueueAverager:
    """The sampled average, with its publication delay. ``sample_until(c, q)`` takes the
    samples due before clock ``c`` (the occupancy was ``q`` since the last event);
    ``read(c)`` is the average an arrival at ``c`` decides with."""
    __slots__ = ("avg", "published", "next_sample", "pending", "wq_shift", "period",
                 "then_period", "delay", "samples")

    def __init__(self, wq_shift, period, delay):
        self.avg = 0              # after the latest sample taken
        self.published = 0        # after the latest sample published
        self.next_sample = period
        self.pending = deque()    # (publish clock, average) of samples not yet published
        self.wq_shift = wq_shift
        self.period = period
        #: the period to step with after the next sample, when that sample is due in the
        #: clock of a commit (it steps with the period before the commit)
        self.then_period = None
        self.delay = delay
        self.samples = 0          # samples taken (statistics, not in hardware)

    def configure(self, wq_shift, period, clock):
        """New registers from ``clock`` on (every sample due before it was taken). The sample
        already scheduled keeps its clock; a sample due in ``clock`` itself steps to its
        successor with the old period (the timer reads the period a clock before a sample)."""
        self.wq_shift = wq_shift
        if self.next_sample <= clock:
            self.then_period = period
        else:
            self.period = period

    def sample_until(self, clock, q, first_read=None):
        """Take the samples due at clocks before ``clock``, all of occupancy ``q``; no read
        comes before ``first_read`` (default ``clock``)."""
        s = self.next_sample
        if s >= clock:
            return
        if self.then_period is not None:
            # the sample due in a commit's clock: taken, and stepped with the old period
            new, self.then_period = self.then_period, None
            self.sample_until(s + 1, q, clock if first_read is None else first_read)
            self.period = new
            return self.sample_until(clock, q, first_read)
        period, delay, shift = self.period, self.delay, self.wq_shift
        count = (clock - 1 - s) // period + 1
        # samples published by the first read (s + delay <= first_read) matter only through
        # the last one for any later read: take them at once
        read = clock if first_read is None else first_read
        done = (read - delay - s) // period + 1 if read - delay >= s else 0
        a = self.avg
        if done:
            if done > count:
                done = count
            a = ewma_repeat(a, q, shift, done)
            self.pending.clear()
            self.published = a
        target = q << _FX
        pending = self.pending
        for i in range(done, count):
            a += (target - a) >> shift
            pending.append((s + i * period + delay, a))
        self.avg = a
        self.next_sample = s + count * period
        self.samples += count

    def read(self, clock):
        """The average published at or before ``clock``."""
        pending = self.pending
        while pending and pending[0][0] <= clock:
            self.published = pending.popleft()[1]
        return self.published
