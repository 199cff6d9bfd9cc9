"""Beyond the paper: a parking lot of FPQ routers against one of RED routers (``parking-lot``,
``fpq_sim.parkinglot``): long flows crossing every router against each hop's cross flows."""

import numpy as np

from ..stats import est
from .outputs import ci_cols, ci_header
from .quantities import span_100s
from .registry import Experiment, register
from .template import prose, pct, DISC_LABEL

PARK_HOPS = (3,)
PARK_DISC = {"fpq": [], "red": ["queue.discipline=red", "queue.red_min_th=5",
                                "queue.red_max_th=45", "queue.red_max_p=0.02"]}
PARK_COLS = ("throughput_pkts_per_s", "loss_rate", "e2e_queueing_delay_s", "timeouts_per_100s",
             "window_pkts")
#: The plot's panels: (quantity, y label, scale)
PANELS = (("throughput_pkts_per_s", "throughput per flow (pkt/s)", 1),
          ("loss_rate", "loss rate (%)", 100),
          ("timeouts_per_100s", "timeouts per flow per 100 s", 1))
BAR_WIDTH = 0.38


def plan(p):
    from ..parkinglot import load_parking_lot
    for hops in PARK_HOPS:
        for disc, sets in PARK_DISC.items():
            p.add(("park", disc, hops), "park", "parking-lot", [f"topology.hops={hops}"] + sets,
                  loader=load_parking_lot)


def _names(hops):
    """The flow classes of a chain of ``hops`` routers."""
    return ["long"] + [f"cross{i}" for i in range(hops)]


def classes(ss):
    """Per flow class of a parking-lot point: estimates over seeds of the class means, and
    the mean window = throughput x (propagation RTT + queueing delay crossed)."""
    from ..parkinglot import class_stats
    per = [class_stats(s) for s in ss]
    span = [span_100s(s) for s in ss]
    out = {}
    for cls in per[0]:
        def f(name, i=cls):
            return est([p[i][name] for p in per])
        crossed = ss[0]["hops"] if cls == "long" else 1
        # propagation RTT: 15 ms each way per link, ~5 ms access each way, serialisation
        base = 2 * (crossed * 0.015 + 0.005) + crossed * 576 * 8 / 1e6
        out[cls] = {"throughput_pkts_per_s": f("throughput_pkts_per_s"),
                    "loss_rate": f("loss_rate"),
                    "e2e_queueing_delay_s": f("e2e_queueing_delay_s"),
                    "timeouts_per_100s": est([p[cls]["timeouts_per_flow"] / sp
                                              for p, sp in zip(per, span)]),
                    "window_pkts": est([p[cls]["throughput_pkts_per_s"]
                                        * (base + p[cls]["e2e_queueing_delay_s"])
                                        for p in per])}
    return out


def _park(G):
    """``{(discipline, hops): runs}`` and the chain lengths run."""
    park = {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "park"}
    return park, sorted({h for _, h in park})


# ---- CSV and plots ------------------------------------------------------------------------------
def write(G, out):
    park, chains = _park(G)
    if not park:
        return
    rows = []
    for (d, hops), ss in sorted(park.items()):
        for cls, m in classes(ss).items():
            rows.append([d, hops, cls, len(ss)] + sum((ci_cols(m[c]) for c in PARK_COLS), []))
    out.csv("parking_lot.csv", ["discipline", "hops", "class", "seeds"] + ci_header(PARK_COLS),
            rows)
    for hops in chains:
        _plot(park, hops, out)


def _plot(park, hops, out):
    fig, axes = out.subplots(1, 3, figsize=(9.9, 3.6))
    for ax, panel in zip(axes, PANELS):
        for k, (d, colour) in enumerate((("fpq", "C0"), ("red", "C1"))):
            if (d, hops) in park:
                _bars(ax, classes(park[(d, hops)]), _names(hops), panel, k, colour, d)
        ax.set_ylabel(panel[1])
        ax.grid(alpha=.3, axis="y")
    axes[0].legend()
    fig.suptitle(f"Parking lot, {hops} hops: long flows against each hop's cross flows")
    out.save(fig, f"parking_lot_{hops}hops")


def _bars(ax, cl, names, panel, k, colour, d):
    """One discipline's bars (the ``k``-th of two per class) of one panel, with intervals."""
    c, _, scale = panel
    xs = np.arange(len(names)) + (k - 0.5) * BAR_WIDTH
    m = np.array([cl[n][c].mean for n in names]) * scale
    lo = np.array([cl[n][c].lo for n in names]) * scale
    hi = np.array([cl[n][c].hi for n in names]) * scale
    ax.bar(xs, m, BAR_WIDTH, yerr=[m - lo, hi - m], capsize=3, color=colour,
           label=DISC_LABEL[d])
    ax.set_xticks(np.arange(len(names)), names)


# ---- RESULTS.md ---------------------------------------------------------------------------------
def markdown(G):
    park, chains = _park(G)
    if not park:
        return []
    L = [prose("parking"), ""]
    for hops in chains:
        L += [prose("parking.figure", hops=hops), ""]
    L += [prose("parking.intro"), ""]
    for (d, hops), ss in sorted(park.items(), key=lambda kv: (kv[0][1], kv[0][0] != "fpq")):
        L += _flows_table(d, hops, classes(ss)) + _routers_table(d, hops, ss)
    for hops in chains:
        if ("fpq", hops) in park and ("red", hops) in park:
            L += _discussion(hops, classes(park[("fpq", hops)]),
                             classes(park[("red", hops)]))
    return L


def _flows_table(d, hops, cl):
    L = [prose("parking.flows", discipline=DISC_LABEL[d], hops=hops)]
    for cls in _names(hops):
        m = cl[cls]
        L.append(f"| {cls} | {m['throughput_pkts_per_s']:.2f} | {pct(m['loss_rate'], 2)} "
                 f"| {m['e2e_queueing_delay_s'] * 1e3:.0f} | "
                 f"{m['timeouts_per_100s'].clip(0):.2f} | {m['window_pkts']:.1f} |")
    return L


def _routers_table(d, hops, ss):
    L = ["", prose("parking.routers", fpq=d == "fpq")]
    for i in range(hops):
        rs = [s["routers"][i] for s in ss]
        q = est([r["avg_queue_pkts"] for r in rs])
        row = (f"| R{i} | {q:.1f} | {pct(est([r['loss_rate'] for r in rs]), 2)} | "
               f"{est([r['avg_flow_count'] for r in rs]):.1f} |")
        if d == "fpq":
            row += (f" {est([r['fpq_target_q_t'] for r in rs]):.1f} | "
                    f"{est([r['avg_queue_pkts'] / r['fpq_target_q_t'] for r in rs]):.2f} | "
                    f"{pct(est([r['fpq_target_l_t'] for r in rs]), 2)} |")
        L.append(row)
    L.append("")
    return L


def _cross(cl, name):
    """The estimate over the cross flows of every hop and seed of the quantity ``name``."""
    return est([v for k, m in cl.items() if k != "long" for v in m[name].values])


def _discussion(hops, f, r):
    """Whether the paper's claim holds: FPQ's classes ``f`` against RED's ``r``."""
    fl, rl = f["long"], r["long"]
    fewer_to = fl["timeouts_per_100s"].hi < rl["timeouts_per_100s"].lo
    return [prose("parking.discussion", hops=hops,
                  full=fewer_to and fl["window_pkts"].lo >= 6, fewer_timeouts=fewer_to,
                  fpq_loss=pct(fl["loss_rate"], 2), red_loss=pct(rl["loss_rate"], 2),
                  fpq_timeouts=fl["timeouts_per_100s"], red_timeouts=rl["timeouts_per_100s"],
                  fpq_window=fl["window_pkts"], red_window=rl["window_pkts"],
                  cross_window=_cross(f, "window_pkts"), small_window=fl["window_pkts"].hi < 6,
                  loss_ratio=fl["loss_rate"].mean / max(1e-9, f["cross0"]["loss_rate"].mean),
                  fpq_share=fl["throughput_pkts_per_s"].mean
                  / _cross(f, "throughput_pkts_per_s").mean,
                  red_share=rl["throughput_pkts_per_s"].mean
                  / _cross(r, "throughput_pkts_per_s").mean,
                  fpq_delay_ms=fl["e2e_queueing_delay_s"] * 1e3,
                  red_delay_ms=rl["e2e_queueing_delay_s"] * 1e3), ""]


EXPERIMENT = register(Experiment(
    name="parking", durations={"park": (150, 30)}, quick_durations={"park": (40, 15)},
    plan=plan, write=write, markdown=markdown))
