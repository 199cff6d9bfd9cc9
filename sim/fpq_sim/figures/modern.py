"""Modern hosts: FPQ, RED, CoDel and PIE with today's end hosts (``hosts = "modern"``: NewReno
with SACK or CUBIC, initial window 10, 1 ms clock, ECN) at 10 and 100 Mbit/s, N = 10..1000
bulk flows beside 10 short-transfer hosts (scenario ``modern-dumbbell``).

Every discipline gets the same 1500-byte packets, the same buffer (1000 packets, or two BDPs if
that is more) and ECN marking; the parameters that depend on the link are set per bandwidth:
FPQ's P = the BDP at the 100 ms mean round trip; RED as Adaptive RED sets its thresholds
(Floyd, Gummadi and Shenker 2001: min_th = max(5, 5 ms x C / 2) packets, max_th = 3 min_th,
gentle) with max_p 0.1 (fixed: Adaptive RED would adapt it); CoDel and PIE at their RFC
defaults. FPQ and RED are the bit-exact model (what the hardware decides), CoDel and PIE the
float reference models of sim/."""

import numpy as np

from .outputs import ci_cols, ci_header
from .plots import errbar, MARKERS
from .quantities import jain, E, Ek, loss_est
from .registry import Experiment, register
from .template import prose, pct, DISC_LABEL

MODERN_N = (10, 30, 100, 300, 1000)
QUICK_N = (10, 100, 1000)
#: Bottleneck bandwidths, Mbit/s (each its own kind of run: its own run length)
MODERN_MBIT = (10, 100)
MODERN_DISC = ("fpq", "red", "codel", "pie")
#: The senders: NewReno congestion control with SACK recovery ("sack"), and CUBIC
MODERN_TCP = ("sack", "cubic")
TCP_LABEL = {"sack": "NewReno (SACK)", "cubic": "CUBIC"}
PACKET_BYTES = 1500
RTT_S = 0.1
#: RED's delay target for its thresholds (Adaptive RED)
RED_TARGET_S = 0.005
COLS = ("loss_rate", "mark_rate", "delay_p50_s", "delay_p99_s", "utilisation", "jain",
        "short_p50_s", "short_km_median_s", "short_p95_s", "short_count", "short_unfinished")
#: (quantity, file, y label, scale)
PLOTS = (("delay_p99_s", "modern_delay_p99", "queueing delay, p99 (ms)", 1e3),
         ("loss_rate", "modern_loss", "drop rate (%)", 100),
         ("jain", "modern_jain", "Jain index of bulk goodput", 1),
         ("short_p95_s", "modern_short_p95", "short transfer time, p95 (s)", 1))


def bdp_packets(mbit):
    """The bandwidth-delay product at the mean round trip, packets."""
    return mbit * 1e6 * RTT_S / 8 / PACKET_BYTES


def queue_sets(disc, mbit):
    """The ``--set`` overrides of the bottleneck and its queue for ``disc`` at ``mbit``."""
    bdp = bdp_packets(mbit)
    sets = [f"bottleneck.bandwidth_bps={mbit * 1e6}", f"queue.discipline={disc}",
            f"queue.limit_pkts={max(1000, round(2 * bdp))}", f"queue.p_pkts={bdp:.1f}"]
    if disc == "red":
        min_th = max(5.0, RED_TARGET_S * mbit * 1e6 / 8 / PACKET_BYTES / 2)
        sets += [f"queue.red_min_th={min_th:.2f}", f"queue.red_max_th={3 * min_th:.2f}",
                 "queue.red_max_p=0.1", "queue.red_gentle=true"]
    return sets


def plan(p):
    for mbit in MODERN_MBIT:
        for tcp in MODERN_TCP:
            for n in (QUICK_N if p.quick else MODERN_N):
                for disc in MODERN_DISC:
                    sets = queue_sets(disc, mbit) + [f"flows.0.count={n}", f"flows.0.tcp={tcp}",
                                                     f"flows.1.tcp={tcp}"]
                    p.add(("modern", tcp, disc, mbit, n), f"modern{mbit}", "modern-dumbbell",
                          sets)


def _short(s, key):
    """A statistic of the run's short transfers (NaN if it has none): a percentile of the
    completed ones, or the Kaplan-Meier median with the unfinished ones censored."""
    v = s["transfers"][key]
    return float("nan") if v is None else v


def metrics(ss, n):
    """``{quantity: estimate}`` of the runs ``ss`` of one point with ``n`` bulk flows."""
    return {
        "loss_rate": loss_est(ss),
        "mark_rate": E(ss, lambda s: s["marks"] / max(1, s["arrivals"])),
        "delay_p50_s": Ek(ss, "delay_p50_s"),
        "delay_p99_s": Ek(ss, "delay_p99_s"),
        "utilisation": Ek(ss, "utilisation"),
        "jain": E(ss, lambda s: jain(s["flows"][:n])),
        "short_p50_s": E(ss, lambda s: _short(s, "p50")),
        "short_p95_s": E(ss, lambda s: _short(s, "p95")),
        "short_km_median_s": E(ss, lambda s: _short(s, "km_median")),
        "short_count": E(ss, lambda s: s["transfers"]["count"]),
        "short_unfinished": E(ss, lambda s: s["transfers"]["unfinished"]),
    }


def _points(G):
    """``{(mbit, tcp, discipline, N): runs}``, their metrics, and the N run."""
    pts = {(k[3], k[1], k[2], k[4]): ss for k, ss in G.items() if k[0] == "modern"}
    M = {k: metrics(ss, k[3]) for k, ss in pts.items()}
    return pts, M, sorted({k[3] for k in pts})


def _panels(pts):
    """The (mbit, tcp) pairs run, in order."""
    return [(b, t) for b in MODERN_MBIT for t in MODERN_TCP
            if any(k[:2] == (b, t) for k in pts)]


def write(G, out):
    pts, M, ns = _points(G)
    if not pts:
        return
    rows = [[b, t, d, n, len(pts[(b, t, d, n)])] + sum((ci_cols(M[(b, t, d, n)][c])
                                                        for c in COLS), [])
            for b, t in _panels(pts) for d in MODERN_DISC for n in ns if (b, t, d, n) in M]
    out.csv("modern.csv", ["mbit", "tcp", "discipline", "N", "seeds"] + ci_header(COLS), rows)
    panels = _panels(pts)
    for c, fname, ylabel, scale in PLOTS:
        # each panel its own scale: the two bandwidths' delays differ tenfold
        fig, axes = out.subplots(1, len(panels), figsize=(3.0 * len(panels), 3.4))
        axes = np.atleast_1d(axes)
        for ax, (b, t) in zip(axes, panels):
            for d, fmt in zip(MODERN_DISC, MARKERS):
                xs = [n for n in ns if (b, t, d, n) in M]
                if xs:
                    errbar(ax, xs, [M[(b, t, d, n)][c] for n in xs], fmt, DISC_LABEL[d], scale)
            ax.set_xscale("log")
            ax.set_title(f"{b} Mbit/s, {TCP_LABEL[t]}")
            ax.set_xlabel("bulk flows N")
            ax.grid(alpha=.3, which="both")
            ax.set_ylabel(ylabel)
        axes[0].legend()
        fig.tight_layout()
        out.save(fig, fname)


def markdown(G):
    pts, M, ns = _points(G)
    if not pts:
        return []
    L = [prose("modern", n_min=ns[0], n_max=ns[-1]), ""]
    for b, t in _panels(pts):
        L.append(prose("modern.panel", mbit=b, tcp=TCP_LABEL[t], bdp=bdp_packets(b)))
        L += [_row(n, d, M[(b, t, d, n)]) for n in ns for d in MODERN_DISC
              if (b, t, d, n) in M]
        L.append("")
    return L


def _seconds(e, digits=2):
    """An estimate in seconds, or a dash where no run had a value (no transfer completed)."""
    return "-" if np.isnan(e.mean) else f"{e:.{digits}f}"


def _row(n, d, m):
    return (f"| {n} | {DISC_LABEL[d]} | {pct(m['loss_rate'], 2)} | {pct(m['mark_rate'], 2)} | "
            f"{m['delay_p50_s'] * 1e3:.0f} | {m['delay_p99_s'] * 1e3:.0f} | "
            f"{pct(m['utilisation'])} | {m['jain']:.3f} | {_seconds(m['short_p50_s'])} | "
            f"{_seconds(m['short_km_median_s'])} | {_seconds(m['short_p95_s'])} | "
            f"{m['short_count']:.0f} | {m['short_unfinished'].clip(0.0):.1f} |")


EXPERIMENT = register(Experiment(
    name="modern", durations={"modern10": (120, 30), "modern100": (60, 15)},
    quick_durations={"modern10": (30, 10), "modern100": (15, 5)},
    plan=plan, write=write, markdown=markdown))
