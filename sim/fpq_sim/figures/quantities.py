"""Quantities of one run's summary, and their estimates over the runs of a point (one per seed:
``fpq_sim.stats``), shared by the experiments' tables, plots and prose."""

import numpy as np

from ..stats import est

__all__ = ["times", "ratio", "jain", "E", "Ek", "ecdf", "span_100s", "saturated_share"]


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
