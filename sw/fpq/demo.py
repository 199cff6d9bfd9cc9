"""``fpq demo``: a many-flow trace through the bit-exact and the float model, side by side.

Synthetic traffic (``fpq.synthetic``): ``--flows`` flows send Poisson traffic into a FIFO link
at 1.3 times its rate for the first half of the run; then two thirds of them stop, and the
offered load falls to 0.43. Each model decides every arrival (FPQ, P = 125 packets) and sees
the departures its own verdicts cause. Printed: true active flows against each model's N at
the end of both phases, drop rate, average queue, and the difference between the models;
written to ``--out``: the bit-exact run as a trace (``demo.fpqtrace``, for the RTL benches)
and plots of N, average queue and probability over time (``demo.png``).
"""

import os
import random
import time

from .config import Config
from .float_model import FloatQueueManager
from .formats import QAVG, PROB_ONE
from .queue_manager import QueueManager, DROP_EARLY, DROP_FORCED, MARK
from .synthetic import flow_keys, poisson_arrivals, serve_link
from .trace import write_trace

__all__ = ["main", "run"]

LENGTH = 1000            # bytes per packet
LINK_PKTS = 1250.0       # 10 Mbit/s of 1000-byte packets
OVERLOAD = 1.3


def run(flows, arrivals, seed, config=None):
    """Run both models; returns ``{name: (LinkRun, model)}`` and the phase boundaries."""
    cfg = config or Config(mode="fpq", p_pkts=125.0, limit_pkts=4000, seed_decide=seed,
                           seed_clear=seed + 1)
    keys = flow_keys(flows, seed)
    rate1 = OVERLOAD * LINK_PKTS / flows
    # phase 1 holds about 3/4 of the arrivals: phase 2 carries a third of the flows
    t_half = arrivals * 0.75 / (rate1 * flows)
    rnd = random.Random(seed)
    arr = poisson_arrivals(keys, rate1, 0.0, t_half, cfg.tick_hz, rnd)
    arr += poisson_arrivals(keys[:max(1, flows // 3)], rate1, t_half, 2 * t_half, cfg.tick_hz,
                            rnd)
    out = {}
    for name, model in (("bit-exact", QueueManager(cfg)), ("float", FloatQueueManager(cfg))):
        t0 = time.perf_counter()
        link = serve_link(model, arr, LINK_PKTS, LENGTH, cfg.tick_hz,
                          keep_events=(name == "bit-exact"))
        out[name] = (link, model, time.perf_counter() - t0)
    return cfg, out, t_half, (flows, max(1, flows // 3))


def _as_float(name, n, avg, prob):
    if name == "bit-exact":
        return n, avg / (1 << QAVG.frac_bits), prob / PROB_ONE
    return n, avg, prob


def _phase_means(name, samples, t0, t1):
    rows = [_as_float(name, s[1], s[2], s[3]) for s in samples if t0 <= s[0] < t1]
    k = max(len(rows), 1)
    return [sum(r[i] for r in rows) / k for i in range(3)]


def summary(cfg, out, t_half, true_flows):
    """Rows of the printed comparison: one dict per model."""
    rows = {}
    for name, (link, model, wall) in out.items():
        v = link.verdicts
        drops = sum(1 for x in v if x.action in (DROP_EARLY, DROP_FORCED))
        forced = sum(1 for x in v if x.action == DROP_FORCED)
        # the last quarter of each phase: N has settled (t_clear after the change)
        p1 = _phase_means(name, link.samples, 0.75 * t_half, t_half)
        p2 = _phase_means(name, link.samples, 1.75 * t_half, 2 * t_half)
        allm = _phase_means(name, link.samples, 0.0, 2 * t_half)
        rows[name] = {"arrivals": len(v), "drop_rate": drops / max(len(v), 1),
                      "forced": forced, "marks": sum(1 for x in v if x.action == MARK),
                      "n_phase1": p1[0], "n_phase2": p2[0], "avg_queue": allm[1],
                      "prob": allm[2], "wall": wall}
    return rows


def main(args):
    if args.flows < 1 or args.flows > 100_000:
        raise ValueError(f"--flows: {args.flows} is out of range [1, 100000]")
    if args.arrivals < 100 or args.arrivals > 10_000_000:
        raise ValueError(f"--arrivals: {args.arrivals} is out of range [100, 10000000]")
    print(f"fpq demo: {args.flows} flows, ~{args.arrivals} arrivals, seed {args.seed}; "
          f"FIFO link {LINK_PKTS:g} pkt/s, offered {OVERLOAD:g}x then "
          f"{OVERLOAD / 3:.2f}x when 2/3 of the flows stop")
    cfg, out, t_half, true_flows = run(args.flows, args.arrivals, args.seed)
    rows = summary(cfg, out, t_half, true_flows)
    names = list(rows)
    print(f"\n{'':28}" + "".join(f"{n:>14}" for n in names) + f"{'difference':>14}")

    def line(label, key, fmt):
        a, b = rows[names[0]][key], rows[names[1]][key]
        print(f"{label:28}" + "".join(f"{x:>14{fmt}}" for x in (a, b))
              + f"{a - b:>+14{fmt}}")
    print(f"{'true active flows, phase 1':28}{true_flows[0]:>14}{true_flows[0]:>14}")
    line("estimated N, phase 1", "n_phase1", ".1f")
    print(f"{'true active flows, phase 2':28}{true_flows[1]:>14}{true_flows[1]:>14}")
    line("estimated N, phase 2", "n_phase2", ".1f")
    line("arrivals", "arrivals", "d")
    line("drop rate", "drop_rate", ".4f")
    line("forced drops", "forced", "d")
    line("average queue (pkts)", "avg_queue", ".2f")
    line("mean drop probability", "prob", ".5f")
    line("model wall time (s)", "wall", ".2f")
    exact_link = out["bit-exact"][0]
    os.makedirs(args.out, exist_ok=True)
    trace = os.path.join(args.out, "demo.fpqtrace")
    write_trace(trace, exact_link.events, cfg.tick_hz,
                {"source": "fpq demo", "flows": args.flows, "seed": args.seed,
                 "config": cfg.to_dict()})
    print(f"\nwrote {trace} ({len(exact_link.events)} events)")
    png = os.path.join(args.out, "demo.png")
    plot(out, true_flows, t_half, png)
    print(f"wrote {png}")
    if not getattr(args, "no_rtl", True):
        rtl = _rtl_check(cfg, exact_link)
        if rtl is not None:
            print(rtl)
    return 0


def _rtl_check(cfg, link):
    """Replay the bit-exact run through the Verilated RTL when its harness is installed."""
    try:
        from fpq_hdl.verilated import replay  # provided by the RTL / cocotb work
    except ImportError:
        return ("RTL: the Verilated queue manager is not built in this version; "
                "the comparison covers the two software models only")
    return replay(cfg, link.events, link.verdicts)


def plot(out, true_flows, t_half, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    for name, (link, _, _) in out.items():
        s = link.samples[::max(1, len(link.samples) // 4000)]
        t = [x[0] for x in s]
        vals = [_as_float(name, x[1], x[2], x[3]) for x in s]
        for ax, i in zip(axes, range(3)):
            ax.plot(t, [v[i] for v in vals], label=name, lw=1)
    axes[0].plot([0, t_half, t_half, 2 * t_half],
                 [true_flows[0], true_flows[0], true_flows[1], true_flows[1]], "k--",
                 label="true active flows", lw=1)
    axes[0].set_ylabel("flows N")
    axes[1].set_ylabel("average queue (packets)")
    axes[2].set_ylabel("drop probability")
    axes[2].set_xlabel("time (s)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right")
    fig.suptitle("fpq demo: bit-exact and float models on the same many-flow traffic")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
