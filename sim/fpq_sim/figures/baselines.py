"""Modern baselines: FPQ, RED, CoDel and PIE (float models) on the FPQ paper's Fig. 8 network,
N = 10..150, with Tahoe, SACK and CUBIC senders."""

import numpy as np

from .outputs import ci_cols, ci_header
from .plots import errbar, MARKERS
from .quantities import ratio, jain, E, Ek, E_fraction, loss_est
from .registry import Experiment, register
from .template import prose, pct, overlap, DISC_LABEL

BASE_N = [10, 30, 60, 90, 120, 150]
BASE_DISC = ("fpq", "red", "codel", "pie")
BASE_TCP = ("tahoe", "sack", "cubic")
BASE_COLS = ("avg_queue_pkts", "avg_delay_s", "loss_rate", "utilisation", "p95_over_p5",
             "jain", "spurious_fast_retx", "timeouts_per_transfer")
#: (quantity, file, y label, scale)
PLOTS = (("avg_delay_s", "baselines_delay", "queueing delay (ms)", 1e3),
         ("loss_rate", "baselines_loss", "drop rate (%)", 100),
         ("p95_over_p5", "baselines_spread", "p95 / p5 of transfer time", 1),
         ("jain", "baselines_jain", "Jain index of goodput", 1))
#: The verdict's quantities and whether lower is better; their names are the template's
#: baselines.quantity sections
VERDICT = (("loss_rate", True), ("p95_over_p5", True), ("jain", False), ("avg_delay_s", True),
           ("utilisation", False))
#: The verdict counts points from this N up (where the link is saturated)
VERDICT_MIN_N = 60


def plan(p):
    for tcp in (("tahoe", "cubic") if p.quick else BASE_TCP):
        for n in ([30, 120] if p.quick else BASE_N):
            for disc in BASE_DISC:
                name = "fpq-fpq" if disc == "fpq" else "fpq-traditional"
                sets = [f"flows.0.count={n}", f"flows.0.tcp={tcp}", "queue.model=float"]
                if disc in ("codel", "pie"):
                    sets.append(f"queue.discipline={disc}")
                p.add(("base", tcp, disc, n), "base", name, sets)


def metrics(ss):
    """``{quantity: estimate}`` of the runs ``ss`` of one point, for :data:`BASE_COLS`."""
    return {
        "avg_queue_pkts": Ek(ss, "avg_queue_pkts"),
        "avg_delay_s": Ek(ss, "avg_delay_s"),
        "loss_rate": loss_est(ss),
        "utilisation": Ek(ss, "utilisation"),
        "p95_over_p5": E(ss, ratio),
        "jain": E(ss, lambda s: jain(s["flows"])),
        "spurious_fast_retx": Ek(ss, "tcp", "spurious_fast_retx"),
        "timeouts_per_transfer": E_fraction(ss, lambda s: s["tcp"]["timeouts"]
                                            / max(1, s["transfers"]["count"]),
                                            lambda s: s["transfers"]["count"], rate=True),
    }


def _base(G):
    """``{(tcp, discipline, N): runs}``, their metrics, the senders run (in :data:`BASE_TCP`'s
    order) and the N run."""
    base = {(k[1], k[2], k[3]): ss for k, ss in G.items() if k[0] == "base"}
    M = {k: metrics(ss) for k, ss in base.items()}
    tcps = [t for t in BASE_TCP if any(k[0] == t for k in base)]
    return base, M, tcps, sorted({k[2] for k in base})


def write(G, out):
    base, M, tcps, ns = _base(G)
    if not base:
        return
    rows = [[t, d, n, len(base[(t, d, n)])] + sum((ci_cols(M[(t, d, n)][c])
                                                   for c in BASE_COLS), [])
            for t in tcps for d in BASE_DISC for n in ns if (t, d, n) in M]
    out.csv("baselines.csv", ["tcp", "discipline", "N", "seeds"] + ci_header(BASE_COLS), rows)
    for c, fname, ylabel, scale in PLOTS:
        fig, axes = out.subplots(1, len(tcps), figsize=(3.3 * len(tcps), 3.6), sharey=True)
        axes = np.atleast_1d(axes)
        for ax, t in zip(axes, tcps):
            for d, fmt in zip(BASE_DISC, MARKERS):
                pts = [(n, M[(t, d, n)][c]) for n in ns if (t, d, n) in M]
                if pts:
                    errbar(ax, [p[0] for p in pts], [p[1] for p in pts], fmt, DISC_LABEL[d],
                           scale)
            ax.set_title(f"{t} senders")
            ax.set_xlabel("N")
            ax.grid(alpha=.3)
        axes[0].set_ylabel(ylabel)
        axes[0].legend()
        out.save(fig, fname)


def markdown(G):
    base, M, tcps, ns = _base(G)
    if not base:
        return []
    L = [prose("baselines", n_min=ns[0], n_max=ns[-1]), ""]
    for t in tcps:
        L.append(prose("baselines.senders", tcp=t))
        L += [_row(n, d, M[(t, d, n)]) for n in ns for d in BASE_DISC if (t, d, n) in M]
        L.append("")
    return L + _verdict(M, tcps, ns)


def _row(n, d, m):
    return (f"| {n} | {DISC_LABEL[d]} | {m['avg_queue_pkts']:.1f} | "
            f"{m['avg_delay_s'] * 1e3:.0f} | {pct(m['loss_rate'], 2)} | "
            f"{pct(m['utilisation'])} | {m['p95_over_p5']:.2f} | "
            f"{m['jain']:.3f} | {m['timeouts_per_transfer']:.3f} |")


def _compare(M, metric, better_low, t, n, other):
    """FPQ against ``other`` at one point: 1 better, -1 worse, 0 no difference shown (the
    intervals overlap), None if either was not run."""
    a, b = M.get((t, "fpq", n)), M.get((t, other, n))
    if not a or not b:
        return None
    x, y = a[metric], b[metric]
    if overlap(x, y):
        return 0
    return 1 if ((x.mean < y.mean) == better_low) else -1


def _tally(M, tcps, ns):
    """``(metric, other discipline, wins, losses, ties)`` of FPQ, over every sender type and
    every N >= :data:`VERDICT_MIN_N`."""
    big = [n for n in ns if n >= VERDICT_MIN_N]
    lines = []
    for metric, low in VERDICT:
        for other in ("red", "codel", "pie"):
            results = [_compare(M, metric, low, t, n, other) for t in tcps for n in big]
            results = [r for r in results if r is not None]
            if results:
                lines.append((metric, other, results.count(1), results.count(-1),
                              results.count(0)))
    return lines


def _verdict(M, tcps, ns):
    """Where FPQ wins and loses, decided on the intervals (no overlap = a difference)."""
    lines = _tally(M, tcps, ns)
    if not lines:
        return []
    out = [prose("baselines.verdict")]
    for metric, other, w, l_, t in lines:
        out.append(f"| {prose(f'baselines.quantity.{metric}')} | {DISC_LABEL[other]} | "
                   f"{w} | {l_} | {t} |")
    out.append("")
    return out + _reading(M, tcps[0], ns[-1])


def _reading(M, t0, n_top):
    """A few numbers for the prose: the first sender type at the largest N."""
    f, c, p, r = (M.get((t0, d, n_top)) for d in ("fpq", "codel", "pie", "red"))
    if not (f and c and p and r):
        return []
    return [prose("baselines.reading", n=n_top, tcp=t0,
                  fpq_delay_ms=f["avg_delay_s"] * 1e3, codel_delay_ms=c["avg_delay_s"] * 1e3,
                  pie_delay_ms=p["avg_delay_s"] * 1e3, red_delay_ms=r["avg_delay_s"] * 1e3,
                  codel_loss=pct(c["loss_rate"]), pie_loss=pct(p["loss_rate"]),
                  fpq_loss=pct(f["loss_rate"]), codel_timeouts=c["timeouts_per_transfer"],
                  pie_timeouts=p["timeouts_per_transfer"],
                  fpq_timeouts=f["timeouts_per_transfer"], codel_spread=c["p95_over_p5"],
                  pie_spread=p["p95_over_p5"], fpq_spread=f["p95_over_p5"]), ""]


EXPERIMENT = register(Experiment(
    name="baselines", durations={"base": (100, 20)}, quick_durations={"base": (40, 10)},
    plan=plan, write=write, markdown=markdown))
