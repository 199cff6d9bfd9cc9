"""Quantities of one run's summary, and their estimates over the runs of a point (one per seed:
``fpq_sim.stats``), shared by the experiments' tables, plots and prose."""

import numpy as np

from ..stats import est, est_counts

__all__ = ["times", "ratio", "jain", "E", "Ek", "E_fraction", "loss_est", "ecdf", "span_100s",
           "saturated_share"]


def times(s):
    """The run's transfer times (s), as an array."""
    return np.asarray(s["transfer_times"], dtype=float)


def ratio(s):
    """p95 / p5 of the run's transfer times (the FPQ paper's unfairness measure)."""
    t = s["transfers"]
    return t["p95"] / t["p5"] if t["p5"] else float("nan")


def jain(xs):
    """Jain's fairness index (sum x)^2 / (n sum x^2) of per-flow throughputs."""
    xs = np.asarray(xs, dtype=float)
    sq = float((xs * xs).sum())
    return float(xs.sum() ** 2 / (xs.size * sq)) if sq > 0 else 1.0


def E(ss, f):
    """The estimate over runs of ``f(summary)``."""
    return est([f(s) for s in ss])


def E_fraction(ss, f, trials, rate=False):
    """The estimate over runs of the fraction (or, ``rate=True``, the rate) ``f(summary)``
    of ``trials(summary)`` trials (or exposure): where every run counted zero, ``0 [0,
    bound]`` with the exact bound of the pooled trials (``fpq_sim.stats.est_counts``)
    instead of an interval of zero width."""
    return est_counts([f(s) for s in ss], [trials(s) for s in ss], rate)


def loss_est(ss):
    """The estimate over runs of the drop rate (drops and wire losses per arrival at the
    bottleneck), with the exact upper bound where no run lost a packet (``E_fraction``)."""
    return E_fraction(ss, lambda s: s["loss_rate"], lambda s: s["arrivals"])


def Ek(ss, *path):
    """The estimate over runs of ``summary[path...]``."""
    def get(s):
        for p in path:
            s = s[p]
        return s
    return est([get(s) for s in ss])


def ecdf(t, grid):
    """The empirical CDF of the values ``t`` at the points ``grid`` (zeros if ``t`` is empty)."""
    t = np.sort(t)
    return np.searchsorted(t, grid, side="right") / t.size if t.size else np.zeros_like(grid)


def span_100s(s):
    """The run's measured time after the warm-up, in units of 100 s (for rates per 100 s)."""
    return (s["duration_s"] - s["warmup_s"]) / 100


def saturated_share(ss):
    """The estimate over runs of the share of drops made while RED's average was above
    max_th (where it drops every arrival)."""
    return E(ss, lambda s: s["saturated_drops"] / max(1, s["drops"]))
