"""FPQ paper Figs. 10-13: N = 10..150 senders of repeated 10-packet transfers, the traditional RED
router against FPQ (``fpq-traditional``, ``fpq-fpq``, bit-exact model); Fig. 12 (transfer
times at N = 75) with its sensitivity to two timers and to the queue manager."""

import numpy as np

from .outputs import ci_cols, ci_header
from .plots import label, errbar, cdf_band, cdf_rows, FIGSIZE, MARKERS
from .quantities import times, ratio, E, Ek, saturated_share, loss_est, E_fraction
from .registry import Experiment, register
from .template import prose, pct

SWEEP_N = [10, 20, 30, 45, 60, 75, 90, 105, 120, 150]
FAIR_75 = 75 * 10 * 576 * 8 / 1e6     # fair time of a 10-packet transfer among 75: 3.456 s
ROUTERS = (("traditional", "fpq-traditional"), ("fpq", "fpq-fpq"))
#: Fig. 12's sensitivity: two timers the paper's text leaves open, and the queue manager
FIG12_VARIANTS = (("delack_tick", ["flows.0.delack_tick=true"]),
                  ("delack_0.1", ["flows.0.delack_timeout_s=0.1"]),
                  ("rto3", ["flows.0.rto_init_s=3.0"]),
                  ("float", ["queue.model=float"]))
#: The sweep's CSV columns and plots: (quantity, its estimate from the runs of a point)
COLUMNS = (("avg_queue_pkts", lambda ss: Ek(ss, "avg_queue_pkts")),
           ("loss_rate", loss_est),
           ("utilisation", lambda ss: Ek(ss, "utilisation")),
           ("p95_over_p5", lambda ss: E(ss, ratio)))
#: (quantity, file, y label, paper figure, scale)
PLOTS = (("avg_queue_pkts", "fig10_queue_vs_n", "average queue (packets)", "Fig. 10", 1),
         ("loss_rate", "fig11_loss_vs_n", "drop rate (%)", "Fig. 11", 100),
         ("p95_over_p5", "fig13_p95_p5_vs_n", "p95 / p5 of transfer time", "Fig. 13", 1))


def plan(p):
    for n in ([20, 75] if p.quick else SWEEP_N):
        for disc, name in ROUTERS:
            p.add(("sweep", disc, n), "sweep", name, [f"flows.0.count={n}"], n == 75)
    if p.quick:
        return
    for tag, sets in FIG12_VARIANTS:
        for disc, name in ROUTERS:
            p.add(("fig12", disc, tag), "fig12", name, ["flows.0.count=75"] + sets, True)


def _sweep(G):
    return {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "sweep"}


def _has_fig12(sweep):
    return ("traditional", 75) in sweep and "transfer_times" in sweep[("traditional", 75)][0]


def _fast(ss):
    """The estimate of the fraction of transfers under 1.75 s (half the fair time)."""
    return E_fraction(ss, lambda s: (times(s) < 1.75).mean(), lambda s: times(s).size)


def _slow(ss):
    """The estimate of the fraction of transfers over 7 s (twice the fair time)."""
    return E_fraction(ss, lambda s: (times(s) > 7).mean(), lambda s: times(s).size)


def _median(ss):
    return E(ss, lambda s: np.median(times(s)))


def _near(t):
    return ((t >= FAIR_75 / 2) & (t <= 2 * FAIR_75)).mean()


# ---- CSV and plots ------------------------------------------------------------------------------
def write(G, out):
    sweep = _sweep(G)
    if not sweep:
        return
    ns = sorted({n for _, n in sweep})
    table = {(d, n, c): f(sweep[(d, n)]) for d in ("traditional", "fpq") for n in ns
             for c, f in COLUMNS}
    rows = [[n] + sum((ci_cols(table[(d, n, c)]) for d in ("traditional", "fpq")
                       for c, _ in COLUMNS), []) for n in ns]
    out.csv("fig10_13_sweep.csv", ["N"] + ci_header(f"{d}_{c}" for d in ("trad", "fpq")
                                                    for c, _ in COLUMNS), rows)
    for c, fname, ylabel, title, scale in PLOTS:
        fig, ax = out.subplots(figsize=FIGSIZE)
        errbar(ax, ns, [table[("traditional", n, c)] for n in ns], MARKERS[0],
               "traditional (RED)", scale)
        errbar(ax, ns, [table[("fpq", n, c)] for n in ns], MARKERS[1], "FPQ", scale)
        if c == "avg_queue_pkts":
            ax.plot(ns, [6 * n for n in ns], ":", color="gray", label="6 N")
        label(ax, "competing connections N", ylabel,
              f"FPQ paper {title} (ours), 95 % CI over seeds")
        out.save(fig, fname)
    if _has_fig12(sweep):
        _fig12_plot(sweep, out)


def _fig12_plot(sweep, out):
    fig, ax = out.subplots(figsize=FIGSIZE)
    grid = np.logspace(-0.7, 2, 300)
    cdf = []
    for d, lab in (("traditional", "traditional (RED)"), ("fpq", "FPQ")):
        per = cdf_band(ax, [times(s) for s in sweep[(d, 75)]], grid, lab)
        cdf += cdf_rows(d, grid, per)
    ax.axvline(FAIR_75, color="gray", ls=":", label="fair 3.46 s")
    ax.set_xscale("log")
    label(ax, "transfer time (s)", "fraction of transfers", "FPQ paper Fig. 12 (ours): N = 75")
    out.save(fig, "fig12_transfer_cdf_n75")
    out.csv("fig12_transfer_cdf_n75.csv", ["router", "time_s", "cdf_mean", "cdf_lo", "cdf_hi"],
            cdf)


# ---- RESULTS.md ---------------------------------------------------------------------------------
def markdown(G):
    sweep = _sweep(G)
    if not sweep:
        return []
    L = _fig12_markdown(G, sweep) if _has_fig12(sweep) else []
    ns = sorted({n for _, n in sweep})
    L.append(prose("sweep"))
    L += [_sweep_row(n, sweep[("traditional", n)], sweep[("fpq", n)]) for n in ns]
    L.append("")
    return L + _sweep_discussion(sweep, ns)


def _fig12_row(ss_t, ss_f):
    return (_median(ss_t), _fast(ss_t), _slow(ss_t), E(ss_t, lambda s: ratio(s)),
            _median(ss_f), E(ss_f, lambda s: _near(times(s))))


def _fig12_markdown(G, sweep):
    tr, fq = sweep[("traditional", 75)], sweep[("fpq", 75)]
    row = _fig12_row(tr, fq)
    L = [prose("fig12", fair=FAIR_75, trad_median=row[0], trad_fast=pct(row[1]),
               trad_slow=pct(row[2]), fpq_median=row[4], fpq_near=pct(row[5]),
               fpq_fast=pct(_fast(fq)), fpq_slow=pct(_slow(fq)),
               trad_count=sum(len(s["transfer_times"]) for s in tr),
               fpq_count=sum(len(s["transfer_times"]) for s in fq), **_censored(tr, fq)), ""]
    sens = {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "fig12"}
    if sens:
        L += [prose("fig12.sensitivity"), _sensitivity_row("as_above", row)]
        for tag, _ in FIG12_VARIANTS:
            if ("traditional", tag) in sens:
                L.append(_sensitivity_row(tag, _fig12_row(sens[("traditional", tag)],
                                                          sens[("fpq", tag)])))
        L.append("")
    return L + _fig12_discussion(tr, fq, sens)


def _censored(tr, fq):
    """The fields of Fig. 12's transfers still running at the end of the runs: their count
    (all seeds) and the Kaplan-Meier median, of the traditional runs ``tr`` and FPQ's ``fq``."""
    out = {}
    for name, ss in (("trad", tr), ("fpq", fq)):
        out[f"{name}_unfinished"] = sum(s["transfers"]["unfinished"] for s in ss)
        out[f"{name}_km_median"] = Ek(ss, "transfers", "km_median")
    return out


def _sensitivity_row(tag, r):
    return prose("fig12.sensitivity.row", variant=prose(f"fig12.variant.{tag}"),
                 trad_median=r[0], trad_fast=pct(r[1]), trad_slow=pct(r[2]), trad_spread=r[3],
                 fpq_median=r[4], fpq_near=pct(r[5]))


def _fig12_discussion(trad, fq, sens):
    tick = sens.get(("traditional", "delack_tick"))
    rto3 = sens.get(("traditional", "rto3"))
    out = [prose("fig12.discussion", mean=E(trad, lambda s: times(s).mean()),
                 median=_median(trad), fast=pct(_fast(trad)), slow=pct(_slow(trad)),
                 tick=bool(tick), tick_fast=pct(_fast(tick)) if tick else "",
                 rto3=bool(rto3), rto3_slow=pct(_slow(rto3)) if rto3 else "")]
    flt = sens.get(("traditional", "float"))
    if flt:
        f_flt = sens[("fpq", "float")]
        out += ["", prose("fig12.float", saturated=pct(saturated_share(trad)),
                          float_loss=pct(loss_est(flt)),
                          float_util=pct(Ek(flt, "utilisation")),
                          loss=pct(loss_est(trad)), util=pct(Ek(trad, "utilisation")),
                          fpq_float_loss=pct(loss_est(f_flt), 2),
                          fpq_loss=pct(loss_est(fq), 2))]
    return out + [""]


def _sweep_row(n, a, b):
    """The sweep table's row at N = ``n``: traditional runs ``a``, FPQ runs ``b``."""
    return (f"| {n} | {Ek(a, 'avg_queue_pkts'):.1f} | {Ek(b, 'avg_queue_pkts'):.1f} | "
            f"{Ek(b, 'avg_queue_pkts') / n:.2f} | {pct(loss_est(a), 2)} | "
            f"{pct(loss_est(b), 2)} | {pct(Ek(a, 'utilisation'))} | "
            f"{pct(Ek(b, 'utilisation'))} | {E(a, ratio):.2f} | {E(b, ratio):.2f} | "
            f"{Ek(b, 'avg_flow_count'):.1f} |")


def _sweep_discussion(sweep, ns):
    big = [n for n in ns if n >= 45]
    if not big:
        return []
    top = ns[-1]
    tq = [Ek(sweep[("traditional", n)], "avg_queue_pkts") for n in big]
    fqn = [Ek(sweep[("fpq", n)], "avg_queue_pkts") / n for n in big]
    fl = max((Ek(sweep[("fpq", n)], "loss_rate") for n in ns), key=float)
    fr = max((E(sweep[("fpq", n)], ratio) for n in ns), key=float)
    a, b = sweep[("traditional", top)], sweep[("fpq", top)]
    la, ra = loss_est(a), E(a, ratio)
    trends = bool(la.lo > 5 * fl.hi and max(float(x) for x in fqn) < 6 and ra.lo > 2 * fr.hi)
    return [prose("sweep.discussion", trends=trends, trad_queue_min=min(map(float, tq)),
                  trad_queue_max=max(map(float, tq)), n_big=big[0], trad_loss=pct(la), top=top,
                  fpq_per_flow_min=min(map(float, fqn)), fpq_per_flow_max=max(map(float, fqn)),
                  fpq_loss_max=pct(fl, 2), trad_util=pct(Ek(a, "utilisation")),
                  fpq_util=pct(Ek(b, "utilisation")), trad_spread=ra, fpq_spread_max=fr,
                  flow_count=Ek(b, "avg_flow_count"), **_flow_count_model(b, top)), ""]


def _flow_count_model(b, top):
    """Why FPQ's flow count reads low at N = ``top`` (its runs ``b``): a slow flow's randomly
    cleared bit stays clear until its next packet, and hash collisions."""
    r_top = float(E(b, lambda s: s["arrivals"] / (s["duration_s"] - s["warmup_s"]) / top))
    t_clear = b[0]["queue_config"]["t_clear_s"]
    v_max = b[0]["queue_config"]["v_max"]
    keep = 1 - 1 / (1 + r_top * t_clear)
    return {"rate": r_top, "clear": pct(1 - keep), "predicted": top * keep, "v_max": v_max,
            "collisions": top * top / (2 * v_max)}


EXPERIMENT = register(Experiment(
    name="sweep", durations={"sweep": (200, 20), "fig12": (200, 20)},
    quick_durations={"sweep": (60, 10), "fig12": (60, 10)},
    plan=plan, write=write, markdown=markdown))
