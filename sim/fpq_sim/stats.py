"""Estimates over independent runs (seeds): the mean with a two-sided 95 % confidence interval
from Student's t distribution, ``mean +- t(0.975, n - 1) s / sqrt(n)``, where ``s`` is the
sample standard deviation of the ``n`` per-seed values. Each seed's run is one independent
sample; quantities derived from a run (a ratio, a fraction of its transfers) are computed per
run first, then estimated across runs.

:class:`Est` prints as ``mean [lo, hi]`` with the format spec applied to each number, compares
and scales by its mean, so report code can treat it like a number.

Beside it, the estimates that a mean over runs gets wrong:

* :func:`zero_fraction` and :func:`zero_rate`: where every run counted zero events, the
  t interval is ``[0, 0]``, which claims a certainty no finite run has. These give the exact
  upper bound instead: Clopper-Pearson for a fraction (0 of ``n`` trials: ``1 - (alpha /
  2)^(1 / n)``), Garwood's Poisson bound for a rate (0 events in an exposure ``T``:
  ``-ln(alpha / 2) / T``), both two-sided 95 %, so the interval means what the t interval
  of the other rows means. (The "rule of three", ``3 / n``, is the one-sided 95 % bound,
  slightly lower.) :func:`est_counts` chooses between the two kinds of interval.
* :func:`kaplan_meier` and :func:`km_median`, :func:`mean_lower_bound`: times of events some
  of which had not happened when the run ended (right-censored: a transfer still running).
  Leaving those out biases the times down, most where the tail is heaviest.
* :func:`equivalence`: whether two sets of runs agree within a stated margin (two one-sided
  tests at 5 %: the 90 % interval of the difference of the means, Welch, lies within
  ``+- margin``); overlapping intervals show no difference, which is not agreement (few runs
  give wide intervals that overlap anything).
"""

import math
from dataclasses import dataclass

__all__ = ["Est", "est", "t975", "t95", "zero_fraction", "zero_rate", "est_counts",
           "kaplan_meier", "km_median", "mean_lower_bound", "Equivalence", "equivalence",
           "ALPHA"]

#: Two-sided error rate of every interval here (95 % intervals)
ALPHA = 0.05

# Student t quantiles t(0.975, df), df = 1..30 (standard tables); beyond 30 the next entries
# and the normal quantile 1.960 are used with linear interpolation in 1/df.
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
_T975_TAIL = [(30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980), (math.inf, 1.960)]
# ... and t(0.95, df), the one-sided 95 % (two-sided 90 %) quantile, the same way
_T95 = [6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782,
        1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711,
        1.708, 1.706, 1.703, 1.701, 1.699, 1.697]
_T95_TAIL = [(30, 1.697), (40, 1.684), (60, 1.671), (120, 1.658), (math.inf, 1.645)]


def _t_quantile(table, tail, df, name):
    """A t quantile from its table (df 1..30, a non-integer df rounded down: the wider
    interval) and its tail (linear in 1/df)."""
    if df < 1:
        raise ValueError(f"{name}: df {df} must be >= 1")
    if df <= 30:
        return table[int(df) - 1]
    for (d0, t0), (d1, t1) in zip(tail, tail[1:]):
        if df <= d1:
            x0, x1, x = 1 / d0, (0.0 if d1 == math.inf else 1 / d1), 1 / df
            return t0 + (t1 - t0) * (x0 - x) / (x0 - x1)
    return tail[-1][1]


def t975(df):
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (df >= 1)."""
    return _t_quantile(_T975, _T975_TAIL, df, "t975")


def t95(df):
    """The 95 % quantile of Student's t with ``df`` degrees of freedom (df >= 1)."""
    return _t_quantile(_T95, _T95_TAIL, df, "t95")


class Est:
    """A mean over ``n`` runs with its 95 % confidence interval ``[lo, hi]``."""
    __slots__ = ("mean", "lo", "hi", "n", "values")

    def __init__(self, mean, lo, hi, n, values=()):
        self.mean, self.lo, self.hi, self.n = float(mean), float(lo), float(hi), int(n)
        self.values = tuple(values)

    def __format__(self, spec):
        return (f"{format(self.mean, spec)} [{format(self.lo, spec)}, "
                f"{format(self.hi, spec)}]")

    def __repr__(self):
        return f"Est({self.mean!r}, {self.lo!r}, {self.hi!r}, n={self.n})"

    def __float__(self):
        return self.mean

    def _scaled(self, k):
        lo, hi = sorted((self.lo * k, self.hi * k))
        return Est(self.mean * k, lo, hi, self.n, [v * k for v in self.values])

    def __mul__(self, k):
        return self._scaled(float(k))

    __rmul__ = __mul__

    def __truediv__(self, k):
        return self._scaled(1.0 / float(k))

    def __lt__(self, other):
        return self.mean < float(other)

    def __gt__(self, other):
        return self.mean > float(other)

    def __le__(self, other):
        return self.mean <= float(other)

    def __ge__(self, other):
        return self.mean >= float(other)

    def clip(self, lo=None, hi=None):
        """The same estimate with its interval cut to the possible range ``[lo, hi]`` of the
        quantity (a count cannot be negative); the mean stays as measured."""
        a = self.lo if lo is None else min(max(lo, self.lo), self.mean)
        b = self.hi if hi is None else max(min(hi, self.hi), self.mean)
        return Est(self.mean, a, b, self.n, self.values)

    @property
    def half(self):
        """Half the width of the interval."""
        return (self.hi - self.lo) / 2


def est(values):
    """The mean of ``values`` (one per run) with its 95 % confidence interval. One value gives
    an interval of zero width (no spread can be measured)."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        raise ValueError("est: no values")
    m = sum(xs) / n
    if n == 1:
        return Est(m, m, m, 1, xs)
    var = sum((x - m) ** 2 for x in xs) / (n - 1)
    h = t975(n - 1) * math.sqrt(var / n)
    return Est(m, m - h, m + h, n, xs)


# ---- zero counts -----------------------------------------------------------------------------

def zero_fraction(trials, alpha=ALPHA):
    """The Clopper-Pearson upper bound of a fraction observed as 0 of ``trials``: the
    fraction ``p`` at which seeing no event has probability ``alpha / 2``, ``(1 - p)^trials =
    alpha / 2``. 1 for no trials (nothing is known)."""
    if trials < 0:
        raise ValueError(f"zero_fraction: trials {trials} must be >= 0")
    return 1.0 - (alpha / 2) ** (1.0 / trials) if trials else 1.0


def zero_rate(exposure, alpha=ALPHA):
    """Garwood's upper bound of a Poisson rate observed as 0 events in ``exposure`` (units:
    the rate's denominator, e.g. transfers or seconds): ``exp(-rate x exposure) = alpha /
    2``. Infinite for no exposure."""
    if exposure < 0:
        raise ValueError(f"zero_rate: exposure {exposure} must be >= 0")
    return -math.log(alpha / 2) / exposure if exposure else math.inf


def est_counts(values, trials, rate=False):
    """The estimate of a per-run fraction (or rate, ``rate=True``) ``values`` whose runs had
    ``trials`` trials (or exposures) each: :func:`est` of the values, unless every run
    counted zero events; then ``0 [0, bound]`` with the bound of the pooled trials
    (:func:`zero_fraction`, :func:`zero_rate`). A fraction that is 1 in every run (zero
    events of the complement) gets ``1 [1 - bound, 1]``."""
    xs, ns = [float(v) for v in values], [float(n) for n in trials]
    if len(xs) != len(ns):
        raise ValueError(f"est_counts: {len(xs)} values but {len(ns)} trial counts")
    total = sum(ns)
    if xs and all(x == 0 for x in xs):
        return Est(0.0, 0.0, zero_rate(total) if rate else zero_fraction(total), len(xs), xs)
    if xs and not rate and all(x == 1 for x in xs):
        return Est(1.0, 1.0 - zero_fraction(total), 1.0, len(xs), xs)
    return est(xs)


# ---- censored times --------------------------------------------------------------------------

def kaplan_meier(times, finished):
    """The Kaplan-Meier estimate of the survival function from ``times`` (a time each) of
    which ``finished[i]`` says whether the event happened (False: censored, still running
    at that time). Returns ``[(t, S(t))]`` at each time an event happened, in order:
    ``S(t) = prod over event times t_i <= t of (1 - d_i / n_i)``, ``d_i`` events at
    ``t_i``, ``n_i`` times ``>= t_i`` (a time censored at ``t_i`` was still at risk then)."""
    if len(times) != len(finished):
        raise ValueError(f"kaplan_meier: {len(times)} times but {len(finished)} flags")
    pairs = sorted(zip(map(float, times), map(bool, finished)))
    steps, s, at_risk, i = [], 1.0, len(pairs), 0
    while i < len(pairs):
        t, d, j = pairs[i][0], 0, i
        while j < len(pairs) and pairs[j][0] == t:
            d += pairs[j][1]
            j += 1
        if d:
            s *= 1.0 - d / at_risk
            steps.append((t, s))
        at_risk -= j - i
        i = j
    return steps


def km_median(times, finished):
    """The Kaplan-Meier median: the first time at which the estimated survival is 0.5 or
    less. Where it never gets there (over half the times censored early), the largest time
    given, which the median exceeds (a lower bound); None without times."""
    if not len(times):
        return None
    for t, s in kaplan_meier(times, finished):
        if s <= 0.5:
            return t
    return float(max(times))


def mean_lower_bound(done, running):
    """The mean time counting the unfinished ``running`` at their elapsed time: a lower
    bound of the mean the finished ``done`` alone underestimate (each running time
    will end later). None if both are empty."""
    n = len(done) + len(running)
    return (float(sum(done)) + float(sum(running))) / n if n else None


# ---- agreement within a margin ---------------------------------------------------------------

@dataclass(frozen=True)
class Equivalence:
    """The result of :func:`equivalence`: the difference of the means ``a - b`` with its 90 %
    interval ``[lo, hi]``, the ``margin`` and the verdict ``equivalent`` (``lo > -margin``
    and ``hi < margin``: two one-sided tests at 5 % each)."""
    diff: float
    lo: float
    hi: float
    margin: float
    equivalent: bool


def equivalence(a, b, margin, min_runs=10):
    """Whether the runs ``a`` and ``b`` (one value each) have means within ``margin`` of
    each other: the 90 % interval of the difference of the means (Welch's t, degrees of
    freedom rounded down) inside ``+- margin``. Needs ``min_runs`` values a side (fewer
    give intervals too wide to show anything: ValueError)."""
    xa, xb = [float(v) for v in a], [float(v) for v in b]
    if min(len(xa), len(xb)) < max(2, min_runs):
        raise ValueError(f"equivalence: {len(xa)} and {len(xb)} runs; needs at least "
                         f"{max(2, min_runs)} a side")
    if not margin > 0:
        raise ValueError(f"equivalence: margin {margin} must be > 0")
    ea, eb = est(xa), est(xb)
    va = sum((x - ea.mean) ** 2 for x in xa) / (len(xa) - 1) / len(xa)
    vb = sum((x - eb.mean) ** 2 for x in xb) / (len(xb) - 1) / len(xb)
    d = ea.mean - eb.mean
    if va + vb == 0:
        return Equivalence(d, d, d, margin, abs(d) < margin)
    df = (va + vb) ** 2 / (va ** 2 / (len(xa) - 1) + vb ** 2 / (len(xb) - 1))
    h = t95(df) * math.sqrt(va + vb)
    return Equivalence(d, d - h, d + h, margin, -margin < d - h and d + h < margin)
