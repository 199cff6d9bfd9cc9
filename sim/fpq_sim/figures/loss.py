"""FPQ paper Figs. 1-3: 20-packet Tahoe transfers under uniform loss (``fpq-fig2-uniform-loss``),
with a sensitivity run at an initial RTO of 3 s instead of ns's 6 s."""

import numpy as np

from ..stats import est
from .outputs import ci_cols, ci_header
from .plots import label, errbar, cdf_band, cdf_rows, FIGSIZE
from .quantities import times, E, Ek, E_fraction
from .registry import Experiment, register
from .template import prose, pct

LOSSES = [0.0, 0.02, 0.05, 0.08, 0.10, 0.12, 0.15, 0.20]
SCENARIO = "fpq-fig2-uniform-loss"


def plan(p):
    for loss in (LOSSES[::3] if p.quick else LOSSES):
        p.add(("loss", "rto6", loss), "loss", SCENARIO, [f"bottleneck.loss_rate={loss}"], True)
    for loss in ((0.10,) if p.quick else (0.10, 0.15)):
        p.add(("loss", "rto3", loss), "loss", SCENARIO,
              [f"bottleneck.loss_rate={loss}", "flows.0.rto_init_s=3.0"], True)


def _transfers(ss):
    return sum(len(s["transfer_times"]) for s in ss)


def _fast(ss):
    """The estimate of the fraction of transfers under 1 s."""
    return E_fraction(ss, lambda s: (times(s) < 1).mean(), lambda s: times(s).size)


def _slow(ss):
    """The estimate of the fraction of transfers over 10 s."""
    return E_fraction(ss, lambda s: (times(s) > 10).mean(), lambda s: times(s).size)


def _mean(ss):
    return E(ss, lambda s: times(s).mean())


def _median(ss):
    return E(ss, lambda s: np.median(times(s)))


def _unfinished(ss):
    """The transfers still running at the end of the runs, all seeds."""
    return sum(s["transfers"]["unfinished"] for s in ss)


def _mean_lb(ss):
    """The estimate of the mean with the unfinished transfers counted at their elapsed
    time: a lower bound of the true mean."""
    return Ek(ss, "transfers", "mean_lower_bound")


def _km_median(ss):
    """The estimate of the Kaplan-Meier median (the unfinished transfers censored)."""
    return Ek(ss, "transfers", "km_median")


def write(G, out):
    loss = {k[2]: ss for k, ss in G.items() if k[0] == "loss" and k[1] == "rto6"}
    if not loss:
        return
    _fig1(loss, out)
    _fig2(loss, out)
    if 0.15 in loss:
        _fig3([times(s) for s in loss[0.15]], out)


def _fig1(loss, out):
    ls = sorted(loss)
    rows, means = [], []
    for l in ls:
        ss = loss[l]
        mean = _mean(ss)
        means.append(mean)
        rows.append([l, _transfers(ss), _unfinished(ss), len(ss)] + ci_cols(mean)
                    + ci_cols(_median(ss)) + ci_cols(_mean_lb(ss)) + ci_cols(_km_median(ss))
                    + ci_cols(_fast(ss)) + ci_cols(_slow(ss)))
    out.csv("fig1_mean_transfer_vs_loss.csv", ["loss_rate", "transfers", "unfinished", "seeds"]
            + ci_header(("mean_s", "median_s", "mean_lower_bound_s", "km_median_s",
                         "frac_lt_1s", "frac_gt_10s")), rows)
    fig, ax = out.subplots(figsize=FIGSIZE)
    errbar(ax, [100 * l for l in ls], means, "o-", "ours (95 % CI over seeds)")
    label(ax, "uniform loss rate (%)", "mean 20-packet transfer time (s)",
          "FPQ paper Fig. 1 (ours)")
    out.save(fig, "fig1_mean_transfer_vs_loss")


def _fig2(loss, out):
    fig, ax = out.subplots(figsize=FIGSIZE)
    grid = np.logspace(-1, 2.5, 300)
    cdf = []
    for l in sorted(loss):
        if l == 0:
            continue
        per = cdf_band(ax, [times(s) for s in loss[l]], grid, f"{100 * l:g} %")
        cdf += cdf_rows(l, grid, per)
    ax.set_xscale("log")
    label(ax, "transfer time (s)", "fraction of transfers",
          "FPQ paper Fig. 2 (ours): 20-packet transfers", legend_title="loss")
    out.save(fig, "fig2_transfer_cdf")
    out.csv("fig2_transfer_cdf.csv", ["loss_rate", "time_s", "cdf_mean", "cdf_lo", "cdf_hi"],
            cdf)


def _fig3(runs, out):
    """The tail at 15 % loss against the paper's Pareto fit."""
    allt = np.concatenate(runs)
    x = np.logspace(np.log10(4), np.log10(max(allt.max(), 5)), 60)
    tails = [est([(t > xi).mean() for t in runs]) for xi in x]
    fig, ax = out.subplots(figsize=FIGSIZE)
    m = np.array([e.mean for e in tails])
    ax.loglog(x, m, label="ours, 15 % loss")
    ax.fill_between(x, np.maximum([e.lo for e in tails], 1e-4),
                    np.maximum([e.hi for e in tails], 1e-4), alpha=.25, lw=0)
    ax.loglog(x, (4 / x) ** 1.8, "--", label="Pareto (4/x)^1.8")
    label(ax, "transfer time x (s)", "P[X > x]", "FPQ paper Fig. 3 (ours)", grid="both")
    out.save(fig, "fig3_tail_15pct")
    out.csv("fig3_tail_15pct.csv", ["x_s", "ccdf_mean", "ccdf_lo", "ccdf_hi", "pareto_ccdf"],
            [(xi, e.mean, e.lo, e.hi, (4 / xi) ** 1.8) for xi, e in zip(x, tails)])


def markdown(G):
    loss = {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "loss"}
    if not loss:
        return []
    L = [prose("loss")]
    fr = {}
    for (rto, l), ss in sorted(loss.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        n = _transfers(ss)
        if not n:
            continue
        f1, f10 = _fast(ss), _slow(ss)
        fr[(rto, l)] = (f1, f10)
        par = f"{pct(0.4 ** 1.8)}" if l == 0.15 else ""
        L.append(f"| {100 * l:g} % | {rto[3:]} s | {n} | {_unfinished(ss)} | "
                 f"{_mean(ss):.2f} s | {_mean_lb(ss):.2f} s | {_median(ss):.2f} s | "
                 f"{_km_median(ss):.2f} s | {pct(f1)} | {pct(f10)} | {par} |")
    L += ["", prose("loss.paper"), ""]
    return L + _discussion(fr)


def _discussion(fr):
    """The tail's dependence on the initial RTO, from ``{(rto, loss): (fast, slow)}``."""
    need = [("rto6", 0.10), ("rto3", 0.10), ("rto6", 0.15), ("rto3", 0.15)]
    if not all(k in fr for k in need):
        return []
    f1 = fr[("rto6", 0.10)][0]
    return [prose("loss.discussion", match=f1.lo - 0.05 <= 0.40 <= f1.hi + 0.05,
                  fast=pct(f1), rto6_slow_10=pct(fr[("rto6", 0.10)][1]),
                  rto6_slow_15=pct(fr[("rto6", 0.15)][1]),
                  rto3_slow_10=pct(fr[("rto3", 0.10)][1]),
                  rto3_slow_15=pct(fr[("rto3", 0.15)][1])), ""]


EXPERIMENT = register(Experiment(
    name="loss", durations={"loss": (300, 0)}, quick_durations={"loss": (60, 0)},
    plan=plan, write=write, markdown=markdown))
