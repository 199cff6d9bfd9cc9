"""How the plots of ``fpq figures`` look and draw their intervals: matplotlib (imported only when
a plot is drawn) on the Agg backend, one style, error bars and CDF bands of 95 % intervals."""

import numpy as np

from ..stats import est
from .quantities import ecdf

__all__ = ["pyplot", "label", "errbar", "cdf_band", "cdf_rows", "MARKERS", "FIGSIZE"]

#: Line formats of the series of one plot, in order: one marker each.
MARKERS = ("o-", "s-", "^-", "v-")
#: Size (inches) of a one-panel plot.
FIGSIZE = (5.5, 3.8)
STYLE = {"font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10, "xtick.labelsize": 9,
         "ytick.labelsize": 9, "legend.fontsize": 8}


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend, with the plots' font sizes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update(STYLE)
    return plt


def label(ax, xlabel, ylabel, title, legend_title=None, grid="major"):
    """Name the axes of a one-panel plot and give it its title, its legend (titled
    ``legend_title``) and a light grid at the ``grid`` ticks."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(title=legend_title)
    ax.grid(alpha=.3, which=grid)


def errbar(ax, xs, ests, fmt, label, scale=1.0):
    """Estimates ``ests`` at ``xs`` as points with their intervals as error bars, times
    ``scale``."""
    m = np.array([e.mean for e in ests]) * scale
    lo = np.array([e.lo for e in ests]) * scale
    hi = np.array([e.hi for e in ests]) * scale
    ax.errorbar(xs, m, yerr=[m - lo, hi - m], fmt=fmt, capsize=3, label=label, ms=4)


def cdf_band(ax, runs, grid, label):
    """Pooled ECDF of all runs as a line, the 95 % CI of the per-run ECDFs as a band; returns
    the per-run ECDFs (one row per run)."""
    per = np.array([ecdf(t, grid) for t in runs])
    pooled = ecdf(np.concatenate(runs), grid)
    line, = ax.step(grid, pooled, where="post", label=label)
    band = [est(col) for col in per.T]
    ax.fill_between(grid, [b.lo for b in band], [b.hi for b in band], step="post",
                    alpha=0.25, color=line.get_color(), lw=0)
    return per


def cdf_rows(tag, grid, per, step=10):
    """CSV rows ``(tag, x, mean, lo, hi)`` of the per-run ECDFs ``per`` at every ``step``-th
    point of ``grid``."""
    rows = []
    for x, col in zip(grid[::step], per.T[::step]):
        e = est(col)
        rows.append((tag, x, e.mean, e.lo, e.hi))
    return rows
