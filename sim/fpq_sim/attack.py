"""``fpq attack``: legitimate TCP flows under a flood of spoofed 5-tuples, measured.

The scenario (default ``sim/scenarios/attack-dumbbell.toml``: 15 NewReno bulk flows through
a 10 Mbit/s bottleneck with a 500-packet buffer) is run with its first ``[[floods]]`` group
(``fpq_sim.flood``) set to each attack point, and without it, under four queues: FPQ, FPQ with
``n_cap`` (``--n-cap``), RED and drop-tail (RED and drop-tail do not use the flow count, so
``n_cap`` would change nothing there). Attack points: the flood at ``--rate`` packets/s with
each pool size of ``--tuples`` (1 is a single unspoofed flow of the same rate), and at each
rate of ``--rates`` with a pool of ``--pool`` tuples. Every point runs ``--seeds`` seeds; the
table gives the mean and the 95 % confidence interval over seeds (``fpq_sim.stats``) of the
TCP flows' goodput, their drop rate and mean queueing delay at the bottleneck, and the flow
count the queue manager decided with (mean over the arrivals), beside the bitmap's
expectation of the flood's bits (``fpq_sim.flood.expected_flow_count``).

``--out`` gets the Markdown (nothing is written before every run is done); ``--plot`` a
figure of delay and goodput against pool size and rate.
"""

import math
import os
import platform
import time

from .provenance import runs_provenance, provenance_line, plot_metadata

__all__ = ["add_arguments", "main", "plan", "summarise", "markdown"]

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIO = os.path.normpath(os.path.join(HERE, "..", "scenarios", "attack-dumbbell.toml"))
#: (key, label, the queue's discipline, whether n_cap applies); ``{n_cap}`` is ``--n-cap``
QUEUES = (("fpq", "FPQ", "fpq", False),
          ("fpq-ncap", "FPQ, n_cap {n_cap}", "fpq", True),
          ("red", "RED", "red", False),
          ("droptail", "drop-tail", "droptail", False))
MAX_RATE = 1e7


def _number_list(text, option, kind, lo, hi):
    from fpq.messages import brief
    try:
        values = [kind(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"{option}: {brief(text)} must be comma-separated "
                         f"{'integers' if kind is int else 'numbers'}") from None
    for v in values:
        # an int is compared as it is: math.isfinite of one beyond a float's range raises
        if not ((isinstance(v, int) or math.isfinite(v)) and lo <= v <= hi):
            shown = f"[{lo}, {hi}]" if kind is int else f"[{lo:g}, {hi:g}]"
            raise ValueError(f"{option}: {brief(v)} is out of range {shown}")
    return values


def add_arguments(p):
    p.add_argument("--out", required=True, metavar="TABLE.md",
                   help="write the Markdown table here")
    p.add_argument("--plot", metavar="FIGURE.png", help="also write a figure (png, pdf, svg)")
    p.add_argument("--scenario", default=SCENARIO,
                   help="base scenario with one [[floods]] group whose rate and pool are "
                   "varied (default sim/scenarios/attack-dumbbell.toml)")
    p.add_argument("--rate", type=float, default=None,
                   help="flood packets/s of the pool sweep (default: the scenario's flood "
                   "rate; its v_max / t_clear is the cheap attack on the flow count)")
    p.add_argument("--tuples", default="1,100,1000,10000,1000000",
                   help="pool sizes of the pool sweep (default 1,100,1000,10000,1000000)")
    p.add_argument("--rates", default="125,5000",
                   help="further flood rates, packets/s, with a pool of --pool tuples "
                   "(default 125,5000)")
    p.add_argument("--pool", type=int, default=1_000_000,
                   help="pool size of the rate sweep (default 1000000)")
    p.add_argument("--n-cap", type=int, default=50,
                   help="n_cap of the capped FPQ runs, flows (default 50)")
    p.add_argument("--seeds", type=int, default=5, help="runs per point (default 5)")
    p.add_argument("--duration", type=float, default=None,
                   help="simulated seconds per run (default: the scenario's run.duration_s)")
    p.add_argument("--warmup", type=float, default=None,
                   help="seconds left out of the statistics (default: the scenario's)")
    p.add_argument("--jobs", type=int, default=1,
                   help="local worker processes (default 1)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _check_folder(path, option):
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"{option}: the folder of {path!r} does not exist")


def options(args):
    """Check every argument (errors name it and the allowed range) and load the scenario;
    returns ``(scenario, rate, tuples, rates)``."""
    from fpq import Build
    from .scenario import load, with_overrides
    if not 2 <= args.seeds <= 100:
        raise ValueError(f"--seeds: {args.seeds} is out of range [2, 100]")
    if not 1 <= args.jobs <= 64:
        raise ValueError(f"--jobs: {args.jobs} is out of range [1, 64]")
    cap_hi = Build().table_depth - 1
    if not 1 <= args.n_cap <= cap_hi:
        raise ValueError(f"--n-cap: {args.n_cap} is out of range [1, {cap_hi}]")
    if not 1 <= args.pool <= 2**32:
        raise ValueError(f"--pool: {args.pool} is out of range [1, {2**32}]")
    tuples = _number_list(args.tuples, "--tuples", int, 1, 2**32)
    rates = _number_list(args.rates, "--rates", float, 1e-3, MAX_RATE)
    _check_folder(args.out, "--out")
    if args.plot:
        _check_folder(args.plot, "--plot")
        if os.path.splitext(args.plot)[1].lower() not in (".png", ".pdf", ".svg"):
            raise ValueError(f"--plot: {args.plot!r} must end in .png, .pdf or .svg")
    sc = load(args.scenario)
    if not sc["floods"]:
        raise ValueError(f"--scenario: {args.scenario} has no [[floods]] group to vary")
    run = dict(sc["run"])
    if args.duration is not None:
        if not (math.isfinite(args.duration) and 0 < args.duration <= 1e4):
            raise ValueError(f"--duration: {args.duration} is out of range (0, 10000] s")
        run["duration_s"] = args.duration
    if args.warmup is not None:
        if not (math.isfinite(args.warmup) and 0 <= args.warmup):
            raise ValueError(f"--warmup: {args.warmup} is out of range [0, --duration) s")
        run["warmup_s"] = args.warmup
    if run["warmup_s"] >= run["duration_s"]:
        raise ValueError(f"--warmup: {run['warmup_s']} is out of range [0, "
                         f"{run['duration_s']}) s (less than the duration)")
    sc = with_overrides(sc, **{"run.duration_s": run["duration_s"],
                               "run.warmup_s": run["warmup_s"]})
    rate = sc["floods"][0]["rate_pps"] if args.rate is None else args.rate
    if not (math.isfinite(rate) and 1e-3 <= rate <= MAX_RATE):
        raise ValueError(f"--rate: {rate} is out of range [0.001, {MAX_RATE:g}]")
    return sc, rate, tuples, rates


def points(rate, tuples, rates, pool):
    """The attack points ``(rate, tuples)``: none (0, 0), the pool sweep, the rate sweep."""
    out = [(0.0, 0)] + [(rate, t) for t in tuples]
    out += [(r, pool) for r in rates if (r, pool) not in out]
    return out


def plan(sc, attack_points, seeds, n_cap):
    """The runs: ``(key, scenario, False)`` with key ``(queue, rate, tuples, seed)``."""
    from .scenario import with_overrides
    jobs = []
    for qkey, _, discipline, capped in QUEUES:
        sets = {"queue.discipline": discipline}
        if capped:
            sets["queue.n_cap"] = n_cap
        base = with_overrides(sc, **sets)
        for rate, tuples in attack_points:
            floods = ([] if rate == 0 else
                      [dict(sc["floods"][0], rate_pps=rate, tuples=tuples)])
            for seed in range(1, seeds + 1):
                point = with_overrides(base, floods=floods, **{"run.seed": seed})
                jobs.append(((qkey, rate, tuples, seed), point, False))
    return jobs


def summarise(results, sc):
    """``{(queue, rate, tuples): {metric: Est}}`` from ``{key: run summary}``."""
    from .stats import est
    pkt_bits = sc["bottleneck"]["packet_bytes"] * 8
    groups = {}
    for (q, rate, tuples, _), s in sorted(results.items(), key=lambda kv: kv[0][3]):
        groups.setdefault((q, rate, tuples), []).append(s)
    out = {}
    for key, runs in groups.items():
        tcp = [s["tcp_at_bottleneck"] for s in runs]
        out[key] = {
            "goodput_mbps": est([s["goodput_pkts_per_s"] * pkt_bits / 1e6 for s in runs]),
            "drop_pct": est([100 * t["drop_rate"] for t in tcp]).clip(lo=0.0),
            "delay_ms": est([1e3 * t["avg_delay_s"] for t in tcp]).clip(lo=0.0),
            "n": est([s["avg_flow_count"] for s in runs]).clip(lo=0.0),
            "flood_drop_pct": est([100 * s["floods"]["drop_rate"] if "floods" in s else 0.0
                                   for s in runs]).clip(lo=0.0),
        }
    return out


def _attack_label(rate, tuples, flood, v_max, t_clear_s):
    from .flood import expected_flow_count
    if rate == 0:
        return "none"
    mbps = rate * flood["packet_bytes"] * 8 / 1e6
    expect = expected_flow_count(rate, tuples, flood["spoof_every"], v_max, t_clear_s)
    return (f"{rate:g} pkt/s ({mbps:.2f} Mbit/s), {tuples:,} tuple{'s' * (tuples != 1)}; "
            f"flood's E[bits] {expect:,.0f}")


def markdown(summary, sc, attack_points, n_cap, seeds, command, wall, cpu):
    from .scenario import queue_config
    q, b, flood = sc["queue"], sc["bottleneck"], sc["floods"][0]
    cfg = queue_config(sc)
    v_max, t_clear = cfg.v_max, cfg.t_clear_s
    flows = sum(g["count"] for g in sc["flows"])
    tcp = ", ".join(sorted({g["tcp"] for g in sc["flows"]}))
    labels = {k: lab.format(n_cap=n_cap) for k, lab, _, _ in QUEUES}
    lines = [f"{flows} {tcp} bulk flows through a {b['bandwidth_bps'] / 1e6:g} Mbit/s, "
             f"{1e3 * b['delay_s']:g} ms bottleneck with a {q['limit_pkts']}-packet buffer "
             f"(`{os.path.basename(command['scenario'])}`), "
             f"{sc['run']['duration_s']:g} s per run of which the first "
             f"{sc['run']['warmup_s']:g} s are warm-up; a flood of {flood['packet_bytes']}-byte "
             f"packets at a constant rate, each with a tuple drawn from its pool. FPQ: P = "
             f"{cfg.p_pkts:g} packets, v_max {v_max}, t_clear {t_clear:g} s "
             f"(v_max / t_clear = {v_max / t_clear:g} new tuples/s keep half the vector set); "
             f"RED {cfg.red_min_th:g} / {cfg.red_max_th:g} / {cfg.red_max_p:g}"
             f"{' (gentle)' if cfg.red_gentle else ''}. Means over {seeds} seeds "
             f"with the 95 % confidence interval in brackets. TCP columns: the TCP flows' "
             f"goodput (in-order data at the receivers), their packets dropped by the queue "
             f"manager, and their mean queueing delay at the bottleneck. N: the flow count the "
             f"queue manager decided with (min(N, n_cap)), mean over all arrivals; "
             f"\"E[bits]\": the bits the flood alone keeps set in expectation "
             f"(`fpq_sim.flood.expected_flow_count`).", "",
             "| attack | queue | TCP goodput Mbit/s | TCP drops % | TCP queueing delay ms | "
             "N | flood drops % |", "|---|---|---|---|---|---|---|"]
    for rate, tuples in attack_points:
        label = _attack_label(rate, tuples, flood, v_max, t_clear)
        for qkey, _, _, _ in QUEUES:
            e = summary[(qkey, rate, tuples)]
            lines.append(f"| {label} | {labels[qkey]} | {e['goodput_mbps']:.2f} | "
                         f"{e['drop_pct']:.2f} | {e['delay_ms']:.1f} | {e['n']:.0f} | "
                         + (f"{e['flood_drop_pct']:.1f} |" if rate else "- |"))
    lines += ["", f"_Generated by `{command['argv']}` on {time.strftime('%Y-%m-%d')}: "
                  f"{command['runs']} runs in {wall:.0f} s wall ({cpu:.0f} s of simulation; "
                  f"{platform.machine()}, {os.cpu_count()} cores)._"]
    return "\n".join(lines) + "\n"


def plot(path, summary, rate, tuples, rates, pool, n_cap, prov=None):
    """The figure of the sweeps, with the runs' provenance ``prov``
    (``fpq_sim.provenance.runs_provenance``) in its metadata."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from fpq.atomic import atomic_path
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.5), sharey="row")
    by_rate = {(r, pool) for r in rates} | ({(rate, pool)} if pool in tuples else set())
    sweeps = ((f"pool size, tuples (flood of {rate:g} pkt/s)", [(rate, t) for t in tuples]),
              (f"flood rate, pkt/s (pool of {pool:,} tuples)", sorted(by_rate)))
    for col, (xlabel, pts) in enumerate(sweeps):
        xs = [t if col == 0 else r for r, t in pts]
        for row, (metric, ylabel) in enumerate((("delay_ms", "TCP queueing delay (ms)"),
                                                ("goodput_mbps", "TCP goodput (Mbit/s)"))):
            ax = axes[row][col]
            for qkey, label, _, _ in QUEUES:
                ests = [summary[(qkey, r, t)][metric] for r, t in pts]
                m = [e.mean for e in ests]
                line = ax.errorbar(xs, m, yerr=[[e.mean - e.lo for e in ests],
                                                [e.hi - e.mean for e in ests]],
                                   fmt="o-", capsize=3, ms=4, label=label.format(n_cap=n_cap))
                ax.axhline(summary[(qkey, 0.0, 0)][metric].mean, ls=":", lw=1,
                           color=line[0].get_color())
            ax.set_xscale("log")
            ax.set_xticks(xs, [f"{x:,.0f}" for x in xs])
            ax.minorticks_off()
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.grid(alpha=.3)
    axes[1][0].legend(title="dotted: no attack", loc="lower left")
    fig.tight_layout()
    fmt = os.path.splitext(path)[1][1:].lower()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=150, format=fmt, metadata=plot_metadata(prov or {}, fmt, "fpq attack"))
    plt.close(fig)


def command_line(args, rate):
    """The command that reproduces the numbers (every option that changes them)."""
    import shlex
    parts = ["fpq", "attack", "--out", args.out]
    if args.scenario != SCENARIO:
        parts += ["--scenario", args.scenario]
    parts += ["--rate", f"{rate:g}", "--tuples", args.tuples, "--rates", args.rates,
              "--pool", str(args.pool), "--n-cap", str(args.n_cap), "--seeds", str(args.seeds)]
    for option, value in (("--duration", args.duration), ("--warmup", args.warmup)):
        if value is not None:
            parts += [option, f"{value:g}"]
    return " ".join(shlex.quote(p) for p in parts)


def main(args):
    import sys
    from fpq.atomic import write_text
    from .figures import run_jobs
    sc, rate, tuples, rates = options(args)
    attack_points = points(rate, tuples, rates, args.pool)
    jobs = plan(sc, attack_points, args.seeds, args.n_cap)
    t0 = time.perf_counter()
    results = run_jobs(jobs, args.jobs, progress=not args.no_progress)
    wall = time.perf_counter() - t0
    summary = summarise(results, sc)
    command = {"argv": command_line(args, rate), "scenario": args.scenario, "runs": len(jobs)}
    cpu = sum(s["wall_seconds"] for s in results.values())
    prov = runs_provenance(results.values())
    text = markdown(summary, sc, attack_points, args.n_cap, args.seeds, command, wall, cpu)
    text += "\n" + provenance_line(prov) + "\n"
    if args.plot:
        plot(args.plot, summary, rate, tuples, rates, args.pool, args.n_cap, prov)
    write_text(args.out, text)
    print(text)
    print(f"wrote {args.out}" + (f" and {args.plot}" if args.plot else ""), file=sys.stderr)
    return 0
