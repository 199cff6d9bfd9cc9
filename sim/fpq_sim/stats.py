"""Estimates over independent runs (seeds): the mean with a two-sided 95 % confidence interval
from Student's t distribution, ``mean +- t(0.975, n - 1) s / sqrt(n)``, where ``s`` is the
sample standard deviation of the ``n`` per-seed values. Each seed's run is one independent
sample; quantities derived from a run (a ratio, a fraction of its transfers) are computed per
run first, then estimated across runs.

:class:`Est` prints as ``mean [lo, hi]`` with the format spec applied to each number, compares
and scales by its mean, so report code can treat it like a number.
"""

import math

__all__ = ["Est", "est", "t975"]

# Student t quantiles t(0.975, df), df = 1..30 (standard tables); beyond 30 the next entries
# and the normal quantile 1.960 are used with linear interpolation in 1/df.
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
_T975_TAIL = [(30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980), (math.inf, 1.960)]


def t975(df):
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError(f"t975: df {df} must be >= 1")
    if df <= 30:
        return _T975[int(df) - 1]
    for (d0, t0), (d1, t1) in zip(_T975_TAIL, _T975_TAIL[1:]):
        if df <= d1:
            x0, x1, x = 1 / d0, (0.0 if d1 == math.inf else 1 / d1), 1 / df
            return t0 + (t1 - t0) * (x0 - x) / (x0 - x1)
    return 1.960


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
