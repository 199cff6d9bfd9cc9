"""``fpq demo``: the main job. A TCP scenario through the golden model and the Verilated RTL.

Part 1, TCP. The FPQ paper's experiment (Figs. 8-9: ``--flows`` Tahoe senders making repeated
10-packet transfers through a 1 Mbit/s bottleneck, FPQ router; scenario
``sim/scenarios/fpq-fpq.toml``) runs in our TCP simulator three times, with the bottleneck's
queue manager being (a) the bit-exact golden model, (b) the Verilated RTL in the loop, and
(c) the paper's float model. Printed side by side: loss rate, average queue, utilisation,
goodput, flow count, transfer times. The bottleneck's descriptors of run (a) are also replayed
through the RTL (the lean Verilator harness) and every field of every verdict is compared.
With ``--no-rtl`` (or without Verilator) the RTL columns are skipped and the fact is printed.

Part 2, many flows. Synthetic traffic (``fpq.synthetic``): ``--synthetic-flows`` flows send
Poisson traffic into a FIFO link at 1.3 times its rate for the first phase; then two thirds of
them stop. Printed: true active flows against the bit-exact and the float model's N, drop
rate, average queue and the difference between the models.

Written to ``--out``: ``tcp.png`` (transfer-time distributions), ``demo.png`` (N, average
queue and probability over time in part 2), ``tcp.fpqtrace`` and ``demo.fpqtrace`` (the
descriptors, for the RTL benches) and ``summary.json``.
"""

import argparse
import importlib.util
import json
import os
import random
import time

from fpq.atomic import atomic_path, write_text
from fpq.output_files import staged_outputs
from fpq.config import Config
from fpq.float_model import FloatQueueManager
from fpq.formats import QAVG, PROB_ONE
from fpq.queue_manager import QueueManager, DROP_EARLY, DROP_FORCED, MARK
from fpq.synthetic import flow_keys, poisson_arrivals, serve_link
from fpq.trace import write_trace

__all__ = ["main", "run", "add_arguments"]

LENGTH = 1000            # bytes per packet
LINK_PKTS = 1250.0       # 10 Mbit/s of 1000-byte packets
OVERLOAD = 1.3


def run(flows, arrivals, seed, config=None):
    """Run both models; returns ``{name: (LinkRun, model)}`` and the phase boundaries."""
    # the average follows the queue within a tenth of a second: the phases last seconds
    cfg = config or Config(mode="fpq", p_pkts=125.0, limit_pkts=4000, seed_decide=seed,
                           seed_clear=seed + 1, avg_tau_s=0.1, pkt_time_s=1 / LINK_PKTS)
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


def _check_args(args):
    for name, lo, hi in (("flows", 1, 2000), ("duration", 10.0, 5000.0),
                         ("synthetic_flows", 1, 100_000), ("arrivals", 100, 10_000_000),
                         ("seed", 0, 2**63 - 1)):
        v = getattr(args, name)
        if not lo <= v <= hi:
            raise ValueError(f"--{name.replace('_', '-')}: {v} is out of range [{lo}, {hi}]")


def add_arguments(p):
    p.add_argument("--flows", type=int, default=75,
                   help="TCP senders in the FPQ paper's set-up (default 75)")
    p.add_argument("--duration", type=float, default=500.0,
                   help="simulated seconds of the TCP scenario (default 500)")
    p.add_argument("--synthetic-flows", type=int, default=300,
                   help="flows of the synthetic many-flow part (default 300)")
    p.add_argument("--arrivals", type=int, default=50_000,
                   help="arrivals of the synthetic part (default 50000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default="build/demo", help="folder for plots, traces, summary")
    p.add_argument("--no-rtl", action="store_true", help="skip the Verilated RTL")


def main(args):
    _check_args(args)
    # every output written into a staging folder that takes --out's place at the end: a
    # reader sees the old set or the new one, never a mix (fpq.output_files.staged_outputs)
    with staged_outputs([args.out]) as (stage, _):
        staged = argparse.Namespace(**{**vars(args), "out": stage[args.out]})
        report = {"tcp": tcp_part(staged), "synthetic": synthetic_part(staged)}
        write_text(os.path.join(staged.out, "summary.json"),
                   json.dumps(report, indent=1, default=str))
    print(f"wrote {args.out}: tcp.fpqtrace, tcp.png, demo.fpqtrace, demo.png, summary.json")
    return 0


# ---- part 1: TCP ----------------------------------------------------------------------------
#: Summary fields that must agree between runs of the same scenario with different (but
#: bit-exact) queue managers: everything but the model's name and the wall-clock figures.
_SAME = ("arrivals", "drops", "early_drops", "forced_drops", "loss_rate", "avg_queue_pkts",
         "avg_flow_count", "utilisation", "goodput_pkts_per_s", "transfers", "flows", "tcp",
         "events")


#: The queue manager's clock in the TCP runs: the RTL in the loop pays for every simulated
#: clock, and 100 kHz (10 us per clock, 461 clocks per packet at 1 Mbit/s) keeps the idle
#: clocks of 500 simulated seconds to 5e7.
TCP_TICK_HZ = 1e5


#: What the RTL columns need besides this package: the RTL's source and its export to Verilog
#: (amaranth), the harness (fpq_hdl.verilated) and the simulator (verilator).
RTL_MODULES = ("amaranth", "fpq_hdl", "fpq_hdl.verilated", "verilator")


def _verdict_wait():
    """Clocks the router waits for each verdict, the same in all three runs so that they
    see the same events: the RTL's latency (``fpq.accept_clock``)."""
    try:
        from fpq_hdl.queue_manager import LATENCY
    except ImportError:
        return 0
    return LATENCY


def _tcp_run(args, model, trace=False):
    from .network import Network
    from .scenario import load, SCENARIO_DIR
    sc = load(os.path.join(SCENARIO_DIR, "fpq-fpq.toml"),
              [f"flows.0.count={args.flows}", f"run.duration_s={args.duration}",
               f"run.warmup_s={min(20.0, args.duration / 5)}", f"run.seed={args.seed}",
               f"queue.model={model}", f"queue.tick_hz={TCP_TICK_HZ}",
               f"queue.verdict_wait={_verdict_wait()}"])
    net = Network(sc, trace=trace)
    net.run()
    return net, net.summary(transfer_times=True)


def tcp_part(args):
    print(f"== 1. TCP: FPQ paper Figs. 8-9, {args.flows} Tahoe senders, repeated 10-packet "
          f"transfers, 1 Mbit/s bottleneck, FPQ router, {args.duration:g} s, seed {args.seed}")
    runs = {}
    net, runs["golden model"] = _tcp_run(args, "exact", trace=True)
    events, cfg = net.trace, net.config
    verdict_report = "RTL: skipped (--no-rtl)"
    missing = [name for name in RTL_MODULES if importlib.util.find_spec(name) is None]
    if not args.no_rtl and missing:
        verdict_report = (f"RTL: skipped, {', '.join(missing)} not installed (the rtl-sim "
                          f"extra: pip install 'fpq-aqm[rtl-sim]'); software models only")
    elif not args.no_rtl:
        try:
            from fpq_hdl.verilated import replay
            _, runs["RTL in the loop"] = _tcp_run(args, "rtl")
            golden = QueueManager(cfg).run(events)
            verdict_report = replay(cfg, events, golden)
        except ImportError as exc:
            verdict_report = (f"RTL: the Verilator harness (fpq_hdl.verilated) is not installed "
                              f"({exc}); software models only")
    _, runs["float (paper)"] = _tcp_run(args, "float")
    names = list(runs)
    print("\n" + f"{'':30}" + "".join(f"{n:>17}" for n in names))
    rows = [("loss rate (%)", lambda s: 100 * s["loss_rate"], ".3f"),
            ("average queue (packets)", lambda s: s["avg_queue_pkts"], ".2f"),
            ("average flow count N", lambda s: s["avg_flow_count"], ".1f"),
            ("utilisation (%)", lambda s: 100 * s["utilisation"], ".2f"),
            ("goodput (packets/s)", lambda s: s["goodput_pkts_per_s"], ".2f"),
            ("transfers", lambda s: s["transfers"]["count"], "d"),
            ("transfer time p5 (s)", lambda s: s["transfers"]["p5"], ".3f"),
            ("transfer time median (s)", lambda s: s["transfers"]["p50"], ".3f"),
            ("transfer time p95 (s)", lambda s: s["transfers"]["p95"], ".3f"),
            ("events", lambda s: s["events"], "d"),
            ("wall time (s)", lambda s: s["wall_seconds"], ".2f")]
    for label, get, fmt in rows:
        print(f"{label:30}" + "".join(f"{get(runs[n]):>17{fmt}}" for n in names))
    out = {"runs": {n: {k: v for k, v in s.items() if k != "transfer_times"}
                    for n, s in runs.items()},
           "rtl_replay": verdict_report}
    if "RTL in the loop" in runs:
        a, b = runs["golden model"], runs["RTL in the loop"]
        same = all(a[k] == b[k] for k in _SAME) and a["transfer_times"] == b["transfer_times"]
        out["rtl_loop_identical"] = same
        print(f"\nRTL in the loop: {'identical to' if same else 'DIFFERENT from'} the golden "
              f"model's run (every transfer time, per-flow delivery and counter).")
    print(verdict_report)
    trace = os.path.join(args.out, "tcp.fpqtrace")
    write_trace(trace, events, cfg.tick_hz, {"source": "fpq demo", "scenario": "fpq-fpq",
                                             "flows": args.flows, "seed": args.seed,
                                             "config": cfg.to_dict()})
    png = os.path.join(args.out, "tcp.png")
    plot_transfers(runs, png)
    print(f"made {os.path.basename(trace)} ({len(events)} descriptors), "
          f"{os.path.basename(png)}\n")
    return out


def _save(fig, path):
    """Lay out ``fig``, write it to ``path`` as PNG (atomically) and free it."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=90, format="png")
    plt.close(fig)


def plot_transfers(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    styles = {"golden model": "-", "RTL in the loop": ":", "float (paper)": "--"}
    for name, s in runs.items():
        t = sorted(s["transfer_times"])
        ax.plot(t, [(i + 1) / len(t) for i in range(len(t))], styles.get(name, "-"),
                label=f"{name} (median {s['transfers']['p50']:.2f} s)", lw=1.5)
    ax.set_xscale("log")
    ax.set_xlabel("transfer time of 10 packets (s)")
    ax.set_ylabel("fraction of transfers")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="lower right")
    ax.set_title("FPQ router, FPQ paper Figs. 8-9 set-up: transfer times")
    _save(fig, path)


# ---- part 2: many flows, bit-exact against float ----------------------------------------------
def synthetic_part(args):
    flows = args.synthetic_flows
    print(f"== 2. Many flows: {flows} flows, ~{args.arrivals} arrivals, seed {args.seed}; "
          f"FIFO link {LINK_PKTS:g} pkt/s, offered {OVERLOAD:g}x, then "
          f"{OVERLOAD / 3:.2f}x when 2/3 of the flows stop")
    cfg, out, t_half, true_flows = run(flows, args.arrivals, args.seed)
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
    trace = os.path.join(args.out, "demo.fpqtrace")
    write_trace(trace, exact_link.events, cfg.tick_hz,
                {"source": "fpq demo", "flows": flows, "seed": args.seed,
                 "config": cfg.to_dict()})
    png = os.path.join(args.out, "demo.png")
    plot(out, true_flows, t_half, png)
    print(f"\nmade {os.path.basename(trace)} ({len(exact_link.events)} events), "
          f"{os.path.basename(png)}")
    return {"true_flows": true_flows, "models": rows}


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
    _save(fig, path)
