"""``fpq figures``: the papers' experiments and our extensions, re-run on our simulator, as
PNG + PDF + CSV and the "TCP simulator" section of docs/RESULTS.md (between
``<!-- BEGIN fpq figures -->`` and ``<!-- END fpq figures -->``; the rest of the file is left
alone). The section's prose is the template ``fpq_sim/templates/results.md``; this module
computes the numbers, the tables' rows and the judgments it fills in.

Every point is run with ``len(SEEDS)`` (10) seeds and reported as the mean with its 95 %
confidence interval (``fpq_sim.stats``): error bars on the plots, ``mean [lo, hi]`` in the
tables. A seed changes every random choice of a run (start times, access delays, the queue
manager's random numbers, losses). Runs per seed are shorter than the papers' single runs
(``DURATIONS``), so that ten of them still fit the time budget.

Experiments (scenario files in sim/scenarios/):

* FPQ paper Figs. 1-3: 20-packet Tahoe transfers under uniform loss (``fpq-fig2-uniform-loss``);
  a sensitivity run with the initial RTO at 3 s instead of ns's 6 s;
* FPQ paper Figs. 10-13: N = 10..150 senders of repeated 10-packet transfers, traditional RED
  router against FPQ (``fpq-traditional``, ``fpq-fpq``, bit-exact model), and Fig. 12's
  sensitivity to timers and to the queue manager;
* 1997 paper: 30 and 1500 bulk flows (``morris97-*``), with sensitivity rows (gentle RED, the
  float model, the paper's five telnet sessions) and the FPQ router as an extension;
* simulator validation: one bulk flow against the Mathis formula (``validation-mathis``);
* phase effects: two bulk flows through drop-tail with unequal RTTs, deterministic and with
  the two remedies (``phase-droptail-two-flows``);
* modern baselines: FPQ, RED, CoDel and PIE (float models) on the FPQ paper's Fig. 8 network,
  N = 10..150, with Tahoe, SACK and CUBIC senders.

Runs are independent: they go to local worker processes (``--jobs``) or to a Dask cluster
(``--dask ADDRESS``), with a tqdm progress bar. ``--quick`` shortens every run, uses two seeds
and thins the sweeps (for tests; its numbers are not the reproduction).
"""

import copy
import csv
import datetime
import functools
import os
import platform
import string
import time
from collections import defaultdict

import numpy as np

import fpq
from fpq.atomic import atomic_path, write_text
from .marked_section import replace_marked_section
from .scenario import load, validate, SCENARIO_DIR
from .stats import est

__all__ = ["add_arguments", "main", "plan", "run_jobs", "update_results_md", "group",
           "EXPERIMENTS", "SEEDS"]

SCEN = SCENARIO_DIR
BEGIN, END = "<!-- BEGIN fpq figures -->", "<!-- END fpq figures -->"

EXPERIMENTS = ("loss", "sweep", "many", "validation", "phase", "baselines", "parking")
SEEDS = tuple(range(1, 11))
QUICK_SEEDS = (1, 2)
# (duration, warm-up) of one seed's run, seconds; --quick uses QUICK_DURATIONS
DURATIONS = {"loss": (300, 0), "sweep": (200, 20), "fig12": (200, 20), "mathis": (200, 20),
             "many": (100, 20), "phase": (100, 20), "base": (100, 20), "park": (150, 30)}
QUICK_DURATIONS = {"loss": (60, 0), "sweep": (60, 10), "fig12": (60, 10), "mathis": (60, 10),
                   "many": (30, 10), "phase": (30, 10), "base": (40, 10), "park": (40, 15)}
SWEEP_N = [10, 20, 30, 45, 60, 75, 90, 105, 120, 150]
LOSSES = [0.0, 0.02, 0.05, 0.08, 0.10, 0.12, 0.15, 0.20]
FAIR_75 = 75 * 10 * 576 * 8 / 1e6     # fair time of a 10-packet transfer among 75: 3.456 s
PHASE_STEPS = 11                      # flow 1's extra access delay: 0..5 packet times
PHASE_VARIANTS = ("deterministic", "overhead", "telnet")
BASE_N = [10, 30, 60, 90, 120, 150]
BASE_DISC = ("fpq", "red", "codel", "pie")
BASE_TCP = ("tahoe", "sack", "cubic")
PARK_HOPS = (3,)
PARK_DISC = {"fpq": [], "red": ["queue.discipline=red", "queue.red_min_th=5",
                                "queue.red_max_th=45", "queue.red_max_p=0.02"]}
DPI = 200


#: Default outputs outside a checkout (installed package), relative to the current folder:
#: everything in one new folder, RESULTS.md beside the figures.
OUTSIDE_OUT = "fpq-figures"


def add_arguments(p):
    from fpq.paths import default_output
    out = default_output(os.path.join("docs", "figures"), OUTSIDE_OUT)
    raw = default_output(os.path.join("results", "figures"), os.path.join(OUTSIDE_OUT, "raw"))
    results_md = default_output(os.path.join("docs", "RESULTS.md"),
                                os.path.join(OUTSIDE_OUT, "RESULTS.md"))
    p.add_argument("--out", default=out, help="folder for PNG, PDF and CSV (default: the "
                   f"checkout's docs/figures; installed: ./{OUTSIDE_OUT})")
    p.add_argument("--raw", default=raw, help="folder for every run's JSON summary "
                   f"(default: the checkout's results/figures; installed: ./{OUTSIDE_OUT}/raw)")
    p.add_argument("--results-md", default=results_md,
                   help="Markdown file whose fpq-figures section is rewritten (created if "
                   "missing; default: the checkout's docs/RESULTS.md; installed: "
                   f"./{OUTSIDE_OUT}/RESULTS.md)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="local worker processes (default: all cores)")
    p.add_argument("--dask", metavar="ADDRESS", help="run on this Dask scheduler instead "
                   "(e.g. tcp://127.0.0.1:8786)")
    p.add_argument("--only", choices=EXPERIMENTS, action="append",
                   help="run only these experiments (default: all); the RESULTS.md "
                   "section then holds only these")
    p.add_argument("--quick", action="store_true",
                   help="short runs, two seeds, few points: a smoke test, not the reproduction")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--from-raw", action="store_true",
                   help="run nothing: rebuild the plots, CSV and RESULTS.md section from the "
                   "JSON summaries saved in --raw by an earlier run")


# ---- the experiments ----------------------------------------------------------------------------
def _with_group(sc, group):
    """A copy of a validated scenario with one more flow group, validated again."""
    doc = copy.deepcopy(sc)
    doc["queue"] = {k: v for k, v in doc["queue"].items() if k != "params"}
    doc["queue"].update(sc["queue"]["params"])
    for g in doc["flows"]:
        for name in ("access_bw_bps", "access_bw_total_bps"):
            if g.get(name) == 0.0:
                del g[name]
    doc["flows"].append(group)
    return validate(doc)


def telnet_group(count=5, tcp="tahoe", tick_s=0.5, access_delay_s=(0.0, 0.01)):
    """``count`` telnet-like sessions (1 packet per second on average, ns Application/Telnet)."""
    return {"count": count, "tcp": tcp, "access_bw_bps": 10e6,
            "access_delay_s": list(access_delay_s), "workload": "telnet",
            "telnet_interval_s": 1.0, "tick_s": tick_s}


def plan(quick=False, only=None, seeds=None):
    """The list of jobs: ``(key, validated scenario, keep transfer times)``; the last element
    of every key is the seed."""
    only = set(only or EXPERIMENTS)
    seeds = tuple(seeds or (QUICK_SEEDS if quick else SEEDS))
    durations = QUICK_DURATIONS if quick else DURATIONS
    jobs = []

    def run_sets(exp, seed):
        d, w = durations[exp]
        return [f"run.duration_s={d}", f"run.warmup_s={w}", f"run.seed={seed}"]

    def add(key, exp, name, sets, times=False, extra_group=None, loader=load):
        for seed in seeds:
            sc = loader(os.path.join(SCEN, name + ".toml"), list(sets) + run_sets(exp, seed))
            if extra_group is not None:
                sc = _with_group(sc, extra_group)
            jobs.append((key + (seed,), sc, times))

    if "loss" in only:
        for loss in (LOSSES[::3] if quick else LOSSES):
            add(("loss", "rto6", loss), "loss", "fpq-fig2-uniform-loss",
                [f"bottleneck.loss_rate={loss}"], True)
        for loss in ((0.10,) if quick else (0.10, 0.15)):
            add(("loss", "rto3", loss), "loss", "fpq-fig2-uniform-loss",
                [f"bottleneck.loss_rate={loss}", "flows.0.rto_init_s=3.0"], True)
    if "sweep" in only:
        for n in ([20, 75] if quick else SWEEP_N):
            for disc, name in (("traditional", "fpq-traditional"), ("fpq", "fpq-fpq")):
                add(("sweep", disc, n), "sweep", name, [f"flows.0.count={n}"], n == 75)
        if not quick:   # sensitivity of Fig. 12 to two timers the paper's text leaves open
            for tag, sets in (("delack_tick", ["flows.0.delack_tick=true"]),
                              ("delack_0.1", ["flows.0.delack_timeout_s=0.1"]),
                              ("rto3", ["flows.0.rto_init_s=3.0"]),
                              ("float", ["queue.model=float"])):
                for disc, name in (("traditional", "fpq-traditional"), ("fpq", "fpq-fpq")):
                    add(("fig12", disc, tag), "fig12", name, ["flows.0.count=75"] + sets, True)
    if "validation" in only:
        for tcp in ("tahoe", "reno", "newreno", "sack"):
            for p in ((0.01,) if quick else (0.005, 0.01, 0.02)):
                add(("mathis", tcp, p), "mathis", "validation-mathis",
                    [f"flows.0.tcp={tcp}", f"bottleneck.loss_rate={p}"])
    if "many" in only:
        for n in (30, 1500):
            jit = ["flows.0.start_jitter_s=2.0"] if quick else []
            add(("many", n), "many", f"morris97-{n}-flows", jit)
            if n == 30:   # sensitivity: gentle RED (not in ns-1), the float model, telnet
                add(("many_gentle", n), "many", f"morris97-{n}-flows",
                    jit + ["queue.red_gentle=true"])
                add(("many_float", n), "many", f"morris97-{n}-flows",
                    jit + ["queue.model=float"])
                add(("many_telnet", n), "many", f"morris97-{n}-flows", jit,
                    extra_group=telnet_group(access_delay_s=(0.0, 0.05)))
            # extension: the FPQ router on the same network
            add(("many_fpq", n), "many", f"morris97-{n}-flows",
                jit + ["queue.discipline=fpq", "queue.p_pkts=217", "queue.limit_pkts=0"])
    if "phase" in only:
        pkt = 576 * 8 / 1e6
        for k in range(0, PHASE_STEPS, 5 if quick else 1):
            d = 0.005 + k * pkt / 2
            for variant in PHASE_VARIANTS:
                sets = [f"flows.1.access_delay_s={d}"]
                group = None
                if variant == "overhead":
                    sets += ["flows.0.send_overhead_pkt_times=1.0",
                             "flows.1.send_overhead_pkt_times=1.0"]
                elif variant == "telnet":
                    group = telnet_group(tick_s=0.1)
                add(("phase", variant, k), "phase", "phase-droptail-two-flows", sets,
                    extra_group=group)
    if "baselines" in only:
        for tcp in (("tahoe", "cubic") if quick else BASE_TCP):
            for n in ([30, 120] if quick else BASE_N):
                for disc in BASE_DISC:
                    name = "fpq-fpq" if disc == "fpq" else "fpq-traditional"
                    sets = [f"flows.0.count={n}", f"flows.0.tcp={tcp}", "queue.model=float"]
                    if disc in ("codel", "pie"):
                        sets.append(f"queue.discipline={disc}")
                    add(("base", tcp, disc, n), "base", name, sets)
    if "parking" in only:
        from .parkinglot import load_parking_lot
        for hops in PARK_HOPS:
            for disc, sets in PARK_DISC.items():
                add(("park", disc, hops), "park", "parking-lot",
                    [f"topology.hops={hops}"] + sets, loader=load_parking_lot)
    return jobs


def _work(job):
    key, sc, times = job
    if "topology" in sc:
        from .parkinglot import run_parking_lot
        return key, run_parking_lot(sc)
    from .network import run_scenario
    return key, run_scenario(sc, transfer_times=times)


def run_jobs(jobs, n_jobs=1, dask=None, progress=True):
    """Run ``jobs``; returns ``{key: summary}``. Largest jobs first (better packing)."""
    from tqdm import tqdm
    order = sorted(jobs, key=lambda j: -_cost(j[1]))
    out = {}
    bar = tqdm(total=len(order), desc="fpq figures", unit="run", disable=not progress)
    try:
        if dask:
            from distributed import Client, as_completed
            with Client(dask) as client:
                futures = client.map(_work, order, pure=False)
                for fut in as_completed(futures):
                    key, s = fut.result()
                    out[key] = s
                    bar.update()
        elif n_jobs <= 1:
            for job in order:
                key, s = _work(job)
                out[key] = s
                bar.update()
        else:
            from concurrent.futures import ProcessPoolExecutor, as_completed
            with ProcessPoolExecutor(max_workers=n_jobs) as pool:
                for fut in as_completed([pool.submit(_work, j) for j in order]):
                    key, s = fut.result()
                    out[key] = s
                    bar.update()
    finally:
        bar.close()
    return out


def _cost(sc):
    """A rough relative cost, to start the longest runs first: packets the bottleneck links
    can carry, or the flows' own packets where these are fewer."""
    b = sc["bottleneck"]
    flows = sum(g["count"] for g in sc["flows"])
    link = b["bandwidth_bps"] / (8 * b["packet_bytes"]) * sc.get("topology", {}).get("hops", 1)
    own = sum(g["count"] * (g["transfer_pkts"] / 2 if g["workload"] == "transfers"
                            else 200.0) for g in sc["flows"])
    return sc["run"]["duration_s"] * (min(link, own) + flows)


def group(res):
    """``{key without seed: [summaries ordered by seed]}``."""
    g = defaultdict(list)
    for key in sorted(res, key=lambda k: k[-1]):
        g[key[:-1]].append(res[key])
    return dict(g)


# ---- per-run quantities -------------------------------------------------------------------------
def _times(s):
    return np.asarray(s["transfer_times"], dtype=float)


def _ratio(s):
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


# ---- outputs ------------------------------------------------------------------------------------
def _csv(path, header, rows):
    with atomic_path(path) as tmp:
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            for r in rows:
                w.writerow([f"{x:.6g}" if isinstance(x, float) else x for x in r])


def _ci_cols(e):
    return [e.mean, e.lo, e.hi]


def _ecdf(t, grid):
    t = np.sort(t)
    return np.searchsorted(t, grid, side="right") / t.size if t.size else np.zeros_like(grid)


def write_outputs(res, out, raw, quick):
    import json
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10,
                         "xtick.labelsize": 9, "ytick.labelsize": 9, "legend.fontsize": 8})
    os.makedirs(out, exist_ok=True)
    os.makedirs(raw, exist_ok=True)
    for key, s in res.items():
        name = "-".join(str(k) for k in key)
        write_text(os.path.join(raw, name + ".json"), json.dumps(dict(s, key=list(key))))
    files = []
    G = group(res)

    def save(fig, name):
        fig.tight_layout()
        for ext in ("png", "pdf"):
            path = os.path.join(out, f"{name}.{ext}")
            with atomic_path(path) as tmp:
                fig.savefig(tmp, dpi=DPI, format=ext)
            files.append(path)
        plt.close(fig)

    def csvfile(name, header, rows):
        path = os.path.join(out, name)
        _csv(path, header, rows)
        files.append(path)

    def errbar(ax, xs, ests, fmt, label, scale=1.0):
        m = np.array([e.mean for e in ests]) * scale
        lo = np.array([e.lo for e in ests]) * scale
        hi = np.array([e.hi for e in ests]) * scale
        ax.errorbar(xs, m, yerr=[m - lo, hi - m], fmt=fmt, capsize=3, label=label, ms=4)

    def cdf_band(ax, runs, grid, label, log=True):
        """Pooled ECDF of all runs as a line, the 95 % CI of the per-run ECDFs as a band."""
        per = np.array([_ecdf(t, grid) for t in runs])
        pooled = _ecdf(np.concatenate(runs), grid)
        line, = ax.step(grid, pooled, where="post", label=label)
        band = [est(col) for col in per.T]
        ax.fill_between(grid, [b.lo for b in band], [b.hi for b in band], step="post",
                        alpha=0.25, color=line.get_color(), lw=0)
        return per

    loss = {k[2]: ss for k, ss in G.items() if k[0] == "loss" and k[1] == "rto6"}
    if loss:
        ls = sorted(loss)
        rows, means = [], []
        for l in ls:
            ss = loss[l]
            mean = E(ss, lambda s: _times(s).mean())
            med = E(ss, lambda s: np.median(_times(s)))
            f1 = E(ss, lambda s: (_times(s) < 1).mean())
            f10 = E(ss, lambda s: (_times(s) > 10).mean())
            means.append(mean)
            rows.append([l, sum(len(s["transfer_times"]) for s in ss), len(ss)]
                        + _ci_cols(mean) + _ci_cols(med) + _ci_cols(f1) + _ci_cols(f10))
        csvfile("fig1_mean_transfer_vs_loss.csv",
                ["loss_rate", "transfers", "seeds"]
                + [f"{m}_{c}" for m in ("mean_s", "median_s", "frac_lt_1s", "frac_gt_10s")
                   for c in ("mean", "lo", "hi")], rows)
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        errbar(ax, [100 * l for l in ls], means, "o-", "ours (95 % CI over seeds)")
        ax.set_xlabel("uniform loss rate (%)")
        ax.set_ylabel("mean 20-packet transfer time (s)")
        ax.set_title("FPQ paper Fig. 1 (ours)")
        ax.legend()
        ax.grid(alpha=.3)
        save(fig, "fig1_mean_transfer_vs_loss")
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        grid = np.logspace(-1, 2.5, 300)
        cdf = []
        for l in ls:
            if l == 0:
                continue
            runs = [_times(s) for s in loss[l]]
            per = cdf_band(ax, runs, grid, f"{100 * l:g} %")
            for x, col in zip(grid[::10], per.T[::10]):
                e = est(col)
                cdf.append((l, x, e.mean, e.lo, e.hi))
        ax.set_xscale("log")
        ax.set_xlabel("transfer time (s)")
        ax.set_ylabel("fraction of transfers")
        ax.set_title("FPQ paper Fig. 2 (ours): 20-packet transfers")
        ax.legend(title="loss")
        ax.grid(alpha=.3)
        save(fig, "fig2_transfer_cdf")
        csvfile("fig2_transfer_cdf.csv", ["loss_rate", "time_s", "cdf_mean", "cdf_lo",
                                          "cdf_hi"], cdf)
        if 0.15 in loss:
            runs = [_times(s) for s in loss[0.15]]
            allt = np.concatenate(runs)
            x = np.logspace(np.log10(4), np.log10(max(allt.max(), 5)), 60)
            tails = [est([(t > xi).mean() for t in runs]) for xi in x]
            fig, ax = plt.subplots(figsize=(5.5, 3.8))
            m = np.array([e.mean for e in tails])
            ax.loglog(x, m, label="ours, 15 % loss")
            ax.fill_between(x, np.maximum([e.lo for e in tails], 1e-4),
                            np.maximum([e.hi for e in tails], 1e-4), alpha=.25, lw=0)
            ax.loglog(x, (4 / x) ** 1.8, "--", label="Pareto (4/x)^1.8")
            ax.set_xlabel("transfer time x (s)")
            ax.set_ylabel("P[X > x]")
            ax.set_title("FPQ paper Fig. 3 (ours)")
            ax.legend()
            ax.grid(alpha=.3, which="both")
            save(fig, "fig3_tail_15pct")
            csvfile("fig3_tail_15pct.csv", ["x_s", "ccdf_mean", "ccdf_lo", "ccdf_hi",
                                            "pareto_ccdf"],
                    [(xi, e.mean, e.lo, e.hi, (4 / xi) ** 1.8) for xi, e in zip(x, tails)])

    sweep = {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "sweep"}
    if sweep:
        ns = sorted({n for _, n in sweep})
        cols = (("avg_queue_pkts", lambda s: s["avg_queue_pkts"]),
                ("loss_rate", lambda s: s["loss_rate"]),
                ("utilisation", lambda s: s["utilisation"]),
                ("p95_over_p5", _ratio))
        table = {(d, n, c): E(sweep[(d, n)], f) for d in ("traditional", "fpq") for n in ns
                 for c, f in cols}
        rows = [[n] + sum((_ci_cols(table[(d, n, c)]) for d in ("traditional", "fpq")
                           for c, _ in cols), []) for n in ns]
        csvfile("fig10_13_sweep.csv", ["N"] + [f"{d}_{c}_{x}" for d in ("trad", "fpq")
                                                 for c, _ in cols
                                                 for x in ("mean", "lo", "hi")], rows)
        for c, fname, ylabel, title, scale in (
                ("avg_queue_pkts", "fig10_queue_vs_n", "average queue (packets)", "Fig. 10", 1),
                ("loss_rate", "fig11_loss_vs_n", "drop rate (%)", "Fig. 11", 100),
                ("p95_over_p5", "fig13_p95_p5_vs_n", "p95 / p5 of transfer time", "Fig. 13",
                 1)):
            fig, ax = plt.subplots(figsize=(5.5, 3.8))
            errbar(ax, ns, [table[("traditional", n, c)] for n in ns], "o-",
                   "traditional (RED)", scale)
            errbar(ax, ns, [table[("fpq", n, c)] for n in ns], "s-", "FPQ", scale)
            if c == "avg_queue_pkts":
                ax.plot(ns, [6 * n for n in ns], ":", color="gray", label="6 N")
            ax.set_xlabel("competing connections N")
            ax.set_ylabel(ylabel)
            ax.set_title(f"FPQ paper {title} (ours), 95 % CI over seeds")
            ax.legend()
            ax.grid(alpha=.3)
            save(fig, fname)
        if ("traditional", 75) in sweep and "transfer_times" in sweep[("traditional", 75)][0]:
            fig, ax = plt.subplots(figsize=(5.5, 3.8))
            grid = np.logspace(-0.7, 2, 300)
            cdf = []
            for d, lab in (("traditional", "traditional (RED)"), ("fpq", "FPQ")):
                per = cdf_band(ax, [_times(s) for s in sweep[(d, 75)]], grid, lab)
                for x, col in zip(grid[::10], per.T[::10]):
                    e = est(col)
                    cdf.append((d, x, e.mean, e.lo, e.hi))
            ax.axvline(FAIR_75, color="gray", ls=":", label="fair 3.46 s")
            ax.set_xscale("log")
            ax.set_xlabel("transfer time (s)")
            ax.set_ylabel("fraction of transfers")
            ax.set_title("FPQ paper Fig. 12 (ours): N = 75")
            ax.legend()
            ax.grid(alpha=.3)
            save(fig, "fig12_transfer_cdf_n75")
            csvfile("fig12_transfer_cdf_n75.csv", ["router", "time_s", "cdf_mean", "cdf_lo",
                                                   "cdf_hi"], cdf)

    many = {k: ss for k, ss in G.items() if k[0].startswith("many")}
    if many:
        label = {"many": "RED as published", "many_gentle": "gentle RED", "many_fpq": "FPQ",
                 "many_float": "RED, float model", "many_telnet": "RED + 5 telnet sessions"}
        rows = []
        for (v, n), ss in sorted(many.items()):
            rows.append([label[v], n, len(ss)] + _ci_cols(Ek(ss, "loss_rate"))
                        + _ci_cols(Ek(ss, "goodput_fraction")) + _ci_cols(Ek(ss, "utilisation"))
                        + _ci_cols(Ek(ss, "avg_queue_pkts"))
                        + _ci_cols(Ek(ss, "tcp", "timeouts"))
                        + _ci_cols(Ek(ss, "tcp", "fast_retx")))
        csvfile("morris97_many_flows.csv",
                ["router", "flows", "seeds"] + [f"{m}_{x}" for m in (
                    "loss_rate", "goodput_fraction", "utilisation", "avg_queue_pkts",
                    "timeouts", "fast_retransmits") for x in ("mean", "lo", "hi")], rows)

    phase = {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "phase"}
    if phase:
        ks = sorted({k for _, k in phase})
        pkt = 576 * 8 / 1e6
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        rows = []
        for v, fmt in zip(PHASE_VARIANTS, ("o-", "s-", "^-")):
            if (v, ks[0]) not in phase:
                continue
            shares = [E(phase[(v, k)], _phase_share) for k in ks]
            errbar(ax, [k / 2 for k in ks], shares, fmt, _PHASE_LABEL[v])
            rows += [[v, k / 2, (0.005 + k * pkt / 2) * 1e3] + _ci_cols(e)
                     for k, e in zip(ks, shares)]
        ax.axhline(0.5, color="gray", ls=":")
        ax.set_xlabel("flow 1's extra access delay (bottleneck packet times)")
        ax.set_ylabel("flow 1's share of the goodput")
        ax.set_title("Phase effects: two Tahoe flows, drop-tail, 15 buffers")
        ax.set_ylim(0, 1)
        ax.legend()
        ax.grid(alpha=.3)
        save(fig, "phase_share_vs_delay")
        csvfile("phase_share_vs_delay.csv", ["variant", "extra_delay_pkt_times",
                                             "access_delay_ms", "share_mean", "share_lo",
                                             "share_hi"], rows)

    base = {(k[1], k[2], k[3]): ss for k, ss in G.items() if k[0] == "base"}
    if base:
        tcps = [t for t in BASE_TCP if any(k[0] == t for k in base)]
        ns = sorted({k[2] for k in base})
        rows = []
        for t in tcps:
            for d in BASE_DISC:
                for n in ns:
                    ss = base.get((t, d, n))
                    if ss:
                        m = _base_metrics(ss)
                        rows.append([t, d, n, len(ss)] + sum((_ci_cols(m[c])
                                                              for c in BASE_COLS), []))
        csvfile("baselines.csv", ["tcp", "discipline", "N", "seeds"]
                + [f"{c}_{x}" for c in BASE_COLS for x in ("mean", "lo", "hi")], rows)
        for c, fname, ylabel, scale in (("avg_delay_s", "baselines_delay", "queueing delay (ms)",
                                         1e3),
                                        ("loss_rate", "baselines_loss", "drop rate (%)", 100),
                                        ("p95_over_p5", "baselines_spread",
                                         "p95 / p5 of transfer time", 1),
                                        ("jain", "baselines_jain", "Jain index of goodput", 1)):
            fig, axes = plt.subplots(1, len(tcps), figsize=(3.3 * len(tcps), 3.6), sharey=True)
            axes = np.atleast_1d(axes)
            for ax, t in zip(axes, tcps):
                for d, fmt in zip(BASE_DISC, ("o-", "s-", "^-", "v-")):
                    pts = [(n, _base_metrics(base[(t, d, n)])[c]) for n in ns
                           if (t, d, n) in base]
                    if pts:
                        errbar(ax, [p[0] for p in pts], [p[1] for p in pts], fmt,
                               _DISC_LABEL[d], scale)
                ax.set_title(f"{t} senders")
                ax.set_xlabel("N")
                ax.grid(alpha=.3)
            axes[0].set_ylabel(ylabel)
            axes[0].legend()
            save(fig, fname)

    park = {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "park"}
    if park:
        rows = []
        for (d, hops), ss in sorted(park.items()):
            for cls, m in _park_classes(ss).items():
                rows.append([d, hops, cls, len(ss)] + sum((_ci_cols(m[c]) for c in PARK_COLS),
                                                          []))
        csvfile("parking_lot.csv", ["discipline", "hops", "class", "seeds"]
                + [f"{c}_{x}" for c in PARK_COLS for x in ("mean", "lo", "hi")], rows)
        for hops in sorted({h for _, h in park}):
            fig, axes = plt.subplots(1, 3, figsize=(9.9, 3.6))
            for j, (c, ylabel, scale) in enumerate((
                    ("throughput_pkts_per_s", "throughput per flow (pkt/s)", 1),
                    ("loss_rate", "loss rate (%)", 100),
                    ("timeouts_per_100s", "timeouts per flow per 100 s", 1))):
                ax = axes[j]
                for k, (d, colour) in enumerate((("fpq", "C0"), ("red", "C1"))):
                    if (d, hops) not in park:
                        continue
                    cl = _park_classes(park[(d, hops)])
                    names = ["long"] + [f"cross{i}" for i in range(hops)]
                    xs = np.arange(len(names)) + (k - 0.5) * 0.38
                    m = np.array([cl[n][c].mean for n in names]) * scale
                    lo = np.array([cl[n][c].lo for n in names]) * scale
                    hi = np.array([cl[n][c].hi for n in names]) * scale
                    ax.bar(xs, m, 0.38, yerr=[m - lo, hi - m], capsize=3, color=colour,
                           label=_DISC_LABEL[d])
                    ax.set_xticks(np.arange(len(names)), names)
                ax.set_ylabel(ylabel)
                ax.grid(alpha=.3, axis="y")
            axes[0].legend()
            fig.suptitle(f"Parking lot, {hops} hops: long flows against each hop's cross flows")
            save(fig, f"parking_lot_{hops}hops")
    return files


_PHASE_LABEL = {"deterministic": "deterministic", "overhead": "random send delay (ns-2 "
                "overhead_, up to 1 packet time)", "telnet": "5 telnet sessions"}
_DISC_LABEL = {"fpq": "FPQ", "red": "RED", "codel": "CoDel", "pie": "PIE"}
BASE_COLS = ("avg_queue_pkts", "avg_delay_s", "loss_rate", "utilisation", "p95_over_p5",
             "jain", "spurious_fast_retx", "timeouts_per_transfer")


PARK_COLS = ("throughput_pkts_per_s", "loss_rate", "e2e_queueing_delay_s", "timeouts_per_100s",
             "window_pkts")


def _park_classes(ss):
    """Per flow class of a parking-lot point: estimates over seeds of the class means, and
    the mean window = throughput x (propagation RTT + queueing delay crossed)."""
    from .parkinglot import class_stats
    per = [class_stats(s) for s in ss]
    out = {}
    for cls in per[0]:
        def f(name, i=cls):
            return est([p[i][name] for p in per])
        span = [(s["duration_s"] - s["warmup_s"]) / 100 for s in ss]
        hops = ss[0]["hops"]
        crossed = hops if cls == "long" else 1
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


def _phase_share(s):
    f = s["flows"]
    return f[1] / (f[0] + f[1]) if f[0] + f[1] else 0.5


def _base_metrics(ss):
    return {
        "avg_queue_pkts": Ek(ss, "avg_queue_pkts"),
        "avg_delay_s": Ek(ss, "avg_delay_s"),
        "loss_rate": Ek(ss, "loss_rate"),
        "utilisation": Ek(ss, "utilisation"),
        "p95_over_p5": E(ss, _ratio),
        "jain": E(ss, lambda s: jain(s["flows"])),
        "spurious_fast_retx": Ek(ss, "tcp", "spurious_fast_retx"),
        "timeouts_per_transfer": E(ss, lambda s: s["tcp"]["timeouts"]
                                   / max(1, s["transfers"]["count"])),
    }


# ---- RESULTS.md -------------------------------------------------------------------------------
def _pct(x, digits=1):
    """A fraction as a percentage; an estimate as ``m % [lo, hi]``, the interval clipped to
    the possible range [0, 100 %]."""
    if hasattr(x, "lo"):
        x = x.clip(0.0, 1.0)
        return (f"{100 * x.mean:.{digits}f} % [{100 * x.lo:.{digits}f}, "
                f"{100 * x.hi:.{digits}f}]")
    return f"{100 * x:.{digits}f} %"


def _near(t):
    return ((t >= FAIR_75 / 2) & (t <= 2 * FAIR_75)).mean()


def _fig12_row(ss_t, ss_f):
    return (E(ss_t, lambda s: np.median(_times(s))), E(ss_t, lambda s: (_times(s) < 1.75).mean()),
            E(ss_t, lambda s: (_times(s) > 7).mean()), E(ss_t, lambda s: _ratio(s)),
            E(ss_f, lambda s: np.median(_times(s))), E(ss_f, lambda s: _near(_times(s))))


#: The prose of the RESULTS.md section, package data beside this module; its first lines
#: describe the format that ``_prose`` reads.
TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates", "results.md")


class _ProseFormatter(string.Formatter):
    """``str.format`` with one addition: a field whose value is True or False writes one of
    the two texts of its spec, ``{flag:if true||if false}``."""

    def format_field(self, value, spec):
        if isinstance(value, bool):
            if not spec:
                raise ValueError(f"a True/False field needs its texts, {{flag:if true||if "
                                 f"false}}; got {value} without any")
            yes, _, no = spec.partition("||")
            return yes if value else no
        return super().format_field(value, spec)


@functools.cache
def _sections(path=TEMPLATE):
    """``{name: text}`` of the template ``path`` (its format: the template's first lines)."""
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("\\\n", "")
    sections, name, lines = {}, None, []
    for line in text.split("\n") + ["%% "]:
        if not line.startswith("%% "):
            lines.append(line)
            continue
        if name is not None:
            sections[name] = "\n".join(lines).rstrip("\n")
        name, lines = line[3:].strip(), []
        if name in sections:
            raise ValueError(f"{path}: section {name!r} appears twice")
    return sections


def _prose(name, **fields):
    """Section ``name`` of the template with ``fields`` filled in."""
    try:
        text = _sections()[name]
    except KeyError:
        raise KeyError(f"{TEMPLATE}: no section {name!r}") from None
    try:
        return _ProseFormatter().vformat(text, (), fields)
    except KeyError as exc:
        raise KeyError(f"{TEMPLATE}, section {name!r}: field {exc} not given") from None


def _discussion_fig12(trad, fq, sens):
    tick = sens.get(("traditional", "delack_tick"))
    rto3 = sens.get(("traditional", "rto3"))
    out = [_prose("fig12.discussion",
                  mean=E(trad, lambda s: _times(s).mean()),
                  median=E(trad, lambda s: np.median(_times(s))),
                  fast=_pct(E(trad, lambda s: (_times(s) < 1.75).mean())),
                  slow=_pct(E(trad, lambda s: (_times(s) > 7).mean())),
                  tick=bool(tick),
                  tick_fast=_pct(E(tick, lambda s: (_times(s) < 1.75).mean())) if tick else "",
                  rto3=bool(rto3),
                  rto3_slow=_pct(E(rto3, lambda s: (_times(s) > 7).mean())) if rto3 else "")]
    flt = sens.get(("traditional", "float"))
    if flt:
        f_flt = sens[("fpq", "float")]
        sat = E(trad, lambda s: s["saturated_drops"] / max(1, s["drops"]))
        out += ["", _prose("fig12.float", saturated=_pct(sat),
                           float_loss=_pct(Ek(flt, "loss_rate")),
                           float_util=_pct(Ek(flt, "utilisation")),
                           loss=_pct(Ek(trad, "loss_rate")), util=_pct(Ek(trad, "utilisation")),
                           fpq_float_loss=_pct(Ek(f_flt, "loss_rate"), 2),
                           fpq_loss=_pct(Ek(fq, "loss_rate"), 2))]
    return out + [""]


def _overlap(a, b):
    """Whether two estimates' intervals overlap (no difference shown at 95 %)."""
    return a.lo <= b.hi and b.lo <= a.hi


def _averagers():
    """The bit-exact model's averager in these runs, from the scenarios' own configuration."""
    from .scenario import load, queue_config
    lines = []
    for name, label in (("fpq-traditional", "1 Mbit/s (FPQ paper)"),
                        ("morris97-30-flows", "10 Mbit/s (1997 paper)")):
        cfg = queue_config(load(os.path.join(SCEN, name + ".toml")))
        k, period = cfg.avg_parameters()
        lines.append(_prose("intro.averager", label=label, tau_s=cfg.avg_tau_s, period=period,
                            mhz=cfg.tick_hz / 1e6, period_ms=period / cfg.tick_hz * 1e3, k=k,
                            time_constant_s=cfg.avg_tau_actual_s()))
    return "; ".join(lines)


def results_markdown(res, quick, wall, where, seeds):
    """The fpq-figures section of RESULTS.md for the summaries ``res`` (``{key: summary}``):
    a subsection per experiment present, its prose from the template. ``quick`` marks a
    ``--quick`` run; ``where`` is the closing line (what ran, where); ``seeds`` the seeds of
    each point; ``wall``, the run's wall time, is not used (``where`` carries it)."""
    G = group(res)
    d = DURATIONS
    L = [_prose("intro", avg_delay=fpq.Build().avg_delay, averagers=_averagers(),
                seeds=len(seeds), sweep_s=d["sweep"][0], loss_s=d["loss"][0],
                many_s=d["many"][0], mathis_s=d["mathis"][0], phase_s=d["phase"][0],
                base_s=d["base"][0])]
    tcp_runs = {k: s for k, s in res.items() if "tcp" in s and "fast_retx" in s["tcp"]
                and "spurious_fast_retx" in s["tcp"]}
    if tcp_runs:
        where_sp = defaultdict(int)
        for k, s in tcp_runs.items():
            if s["tcp"]["spurious_fast_retx"]:
                tag = "/".join(str(x) for x in k[:2]) if k[0] in ("mathis", "base") else k[0]
                where_sp[tag] += s["tcp"]["spurious_fast_retx"]
        L += ["", _prose(
            "intro.recovery", runs=len(tcp_runs),
            fast_retx=sum(s["tcp"]["fast_retx"] for s in tcp_runs.values()),
            spurious=sum(s["tcp"]["spurious_fast_retx"] for s in tcp_runs.values()),
            duplicates=sum(s["tcp"]["duplicate_data"] for s in tcp_runs.values()),
            listed=bool(where_sp),
            per_run=", ".join(f"{t}: {n}" for t, n in sorted(where_sp.items())),
            all_sack=bool(where_sp) and all("sack" in t or "cubic" in t for t in where_sp))]
    if quick:
        L += ["", _prose("intro.quick")]
    L.append("")

    sweep = {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "sweep"}
    if sweep:
        if ("traditional", 75) in sweep and "transfer_times" in sweep[("traditional", 75)][0]:
            tr, fq = sweep[("traditional", 75)], sweep[("fpq", 75)]
            row = _fig12_row(tr, fq)
            L += [_prose("fig12", fair=FAIR_75, trad_median=row[0], trad_fast=_pct(row[1]),
                         trad_slow=_pct(row[2]), fpq_median=row[4], fpq_near=_pct(row[5]),
                         fpq_fast=_pct(E(fq, lambda s: (_times(s) < 1.75).mean())),
                         fpq_slow=_pct(E(fq, lambda s: (_times(s) > 7).mean())),
                         trad_count=sum(len(s["transfer_times"]) for s in tr),
                         fpq_count=sum(len(s["transfer_times"]) for s in fq)), ""]
            sens = {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "fig12"}
            if sens:
                def sens_row(tag, r):
                    return _prose("fig12.sensitivity.row",
                                  variant=_prose(f"fig12.variant.{tag}"), trad_median=r[0],
                                  trad_fast=_pct(r[1]), trad_slow=_pct(r[2]),
                                  trad_spread=r[3], fpq_median=r[4], fpq_near=_pct(r[5]))
                L += [_prose("fig12.sensitivity"), sens_row("as_above", row)]
                for tag in ("delack_tick", "delack_0.1", "rto3", "float"):
                    if ("traditional", tag) in sens:
                        L.append(sens_row(tag, _fig12_row(sens[("traditional", tag)],
                                                          sens[("fpq", tag)])))
                L.append("")
            L += _discussion_fig12(tr, fq, sens)
        ns = sorted({n for _, n in sweep})
        L.append(_prose("sweep"))
        for n in ns:
            a, b = sweep[("traditional", n)], sweep[("fpq", n)]
            L.append(f"| {n} | {Ek(a, 'avg_queue_pkts'):.1f} | {Ek(b, 'avg_queue_pkts'):.1f} | "
                     f"{Ek(b, 'avg_queue_pkts') / n:.2f} | {_pct(Ek(a, 'loss_rate'), 2)} | "
                     f"{_pct(Ek(b, 'loss_rate'), 2)} | {_pct(Ek(a, 'utilisation'))} | "
                     f"{_pct(Ek(b, 'utilisation'))} | {E(a, _ratio):.2f} | {E(b, _ratio):.2f} | "
                     f"{Ek(b, 'avg_flow_count'):.1f} |")
        L.append("")
        big = [n for n in ns if n >= 45]
        top = ns[-1]
        if big:
            tq = [Ek(sweep[("traditional", n)], "avg_queue_pkts") for n in big]
            fqn = [Ek(sweep[("fpq", n)], "avg_queue_pkts") / n for n in big]
            fl = max((Ek(sweep[("fpq", n)], "loss_rate") for n in ns), key=float)
            fr = max((E(sweep[("fpq", n)], _ratio) for n in ns), key=float)
            a, b = sweep[("traditional", top)], sweep[("fpq", top)]
            b0 = b[0]
            r_top = float(E(b, lambda s: s["arrivals"] / (s["duration_s"] - s["warmup_s"])
                            / top))
            t_clear = b0["queue_config"]["t_clear_s"]
            v_max = b0["queue_config"]["v_max"]
            keep = 1 - 1 / (1 + r_top * t_clear)
            la, ra = Ek(a, "loss_rate"), E(a, _ratio)
            trends = bool(la.lo > 5 * fl.hi and max(float(x) for x in fqn) < 6
                          and ra.lo > 2 * fr.hi)
            L += [_prose("sweep.discussion", trends=trends,
                         trad_queue_min=min(map(float, tq)), trad_queue_max=max(map(float, tq)),
                         n_big=big[0], trad_loss=_pct(la), top=top,
                         fpq_per_flow_min=min(map(float, fqn)),
                         fpq_per_flow_max=max(map(float, fqn)), fpq_loss_max=_pct(fl, 2),
                         trad_util=_pct(Ek(a, "utilisation")),
                         fpq_util=_pct(Ek(b, "utilisation")), trad_spread=ra, fpq_spread_max=fr,
                         flow_count=Ek(b, "avg_flow_count"), rate=r_top, clear=_pct(1 - keep),
                         predicted=top * keep, v_max=v_max,
                         collisions=top * top / (2 * v_max)), ""]

    loss = {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "loss"}
    if loss:
        L.append(_prose("loss"))
        fr = {}
        for (rto, l), ss in sorted(loss.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            n = sum(len(s["transfer_times"]) for s in ss)
            if not n:
                continue
            f1 = E(ss, lambda s: (_times(s) < 1).mean())
            f10 = E(ss, lambda s: (_times(s) > 10).mean())
            fr[(rto, l)] = (f1, f10)
            par = f"{_pct(0.4 ** 1.8)}" if l == 0.15 else ""
            L.append(f"| {100 * l:g} % | {rto[3:]} s | {n} | "
                     f"{E(ss, lambda s: _times(s).mean()):.2f} s | "
                     f"{E(ss, lambda s: np.median(_times(s))):.2f} s | {_pct(f1)} | "
                     f"{_pct(f10)} | {par} |")
        L += ["", _prose("loss.paper"), ""]
        need = [("rto6", 0.10), ("rto3", 0.10), ("rto6", 0.15), ("rto3", 0.15)]
        if all(k in fr for k in need):
            f1 = fr[("rto6", 0.10)][0]
            L += [_prose("loss.discussion", match=f1.lo - 0.05 <= 0.40 <= f1.hi + 0.05,
                         fast=_pct(f1), rto6_slow_10=_pct(fr[("rto6", 0.10)][1]),
                         rto6_slow_15=_pct(fr[("rto6", 0.15)][1]),
                         rto3_slow_10=_pct(fr[("rto3", 0.10)][1]),
                         rto3_slow_15=_pct(fr[("rto3", 0.15)][1])), ""]

    many = {k: ss for k, ss in G.items() if k[0].startswith("many")}
    if ("many", 30) in many or ("many", 1500) in many:
        L.append(_prose("many"))
        for n in (30, 1500):
            ss = many.get(("many", n))
            if not ss:
                continue
            span = (ss[0]["duration_s"] - ss[0]["warmup_s"]) / 100
            L.append(_prose("many.rows", n=n, n1500=n == 1500,
                            loss=_pct(Ek(ss, "loss_rate"), 2),
                            goodput=_pct(Ek(ss, "goodput_fraction")),
                            queue=Ek(ss, "avg_queue_pkts"),
                            timeouts=E(ss, lambda s: s["tcp"]["timeouts"] / n / span)))
            fs = many.get(("many_fpq", n))
            if fs:
                L.append(_prose("many.many_fpq", n=n, loss=_pct(Ek(fs, "loss_rate"), 2),
                                queue_per_flow=Ek(fs, "avg_queue_pkts") / n,
                                goodput=_pct(Ek(fs, "goodput_fraction"))))
            for tag in ("many_float", "many_gentle", "many_telnet"):
                xs = many.get((tag, n))
                if xs:
                    L.append(_prose(f"many.{tag}", n=n, loss=_pct(Ek(xs, "loss_rate"), 2)))
        L += ["", _prose("many.goodput"), ""]
        ss30, ss15 = many.get(("many", 30)), many.get(("many", 1500))
        if ss30 and ss15:
            sat = E(ss30, lambda s: s["saturated_drops"] / max(1, s["drops"]))
            l30, l15 = Ek(ss30, "loss_rate"), Ek(ss15, "loss_rate")
            tel = many.get(("many_telnet", 30))
            lt = Ek(tel, "loss_rate") if tel else None
            f15 = many.get(("many_fpq", 1500))
            fpq_text = ""
            if f15:
                q = Ek(f15, "avg_queue_pkts")
                fpq_text = _prose("many.discussion.fpq", loss=_pct(Ek(f15, "loss_rate")),
                                  red_loss=_pct(l15), queue_per_flow=q / 1500,
                                  delay_s=float(q) * 576 * 8 / 10e6,
                                  flow_count=Ek(f15, "avg_flow_count"))
            L += [_prose("many.discussion", reproduced=abs(l15.mean - 0.17) < 0.03,
                         loss_1500=_pct(l15), loss_30=_pct(l30, 2), saturated=_pct(sat),
                         telnet=bool(tel), telnet_loss=_pct(lt, 2) if tel else "",
                         telnet_same=bool(tel) and _overlap(lt, l30), fpq=fpq_text), ""]

    mathis = {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "mathis"}
    if mathis:
        L.append(_prose("mathis"))
        order = {"sack": 0, "newreno": 1, "reno": 2, "tahoe": 3}
        for (tcp, p), ss in sorted(mathis.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
            f = (1.5 / p) ** 0.5 / 0.1
            g = Ek(ss, "goodput_pkts_per_s")
            span = (ss[0]["duration_s"] - ss[0]["warmup_s"]) / 100
            L.append(f"| {tcp} | {100 * p:g} % | {g:.1f} | {f:.1f} | {g / f:.2f} | "
                     f"{E(ss, lambda s: s['tcp']['timeouts'] / span).clip(0):.1f} |")
        L.append("")

    L += _phase_markdown(G)
    L += _baselines_markdown(G)
    L += _parking_markdown(G)
    L.append(where)
    return "\n".join(L) + "\n"


def _phase_markdown(G):
    phase = {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "phase"}
    if not phase:
        return []
    ks = sorted({k for _, k in phase})
    shares = {v: [E(phase[(v, k)], _phase_share) for k in ks] for v in PHASE_VARIANTS
              if (v, ks[0]) in phase}
    L = [_prose("phase", variants=" | ".join(_PHASE_LABEL[v] for v in shares),
                columns="---|" * len(shares))]
    for i, k in enumerate(ks):
        L.append(f"| {k / 2:g} | " + " | ".join(f"{shares[v][i]:.2f}" for v in shares) + " |")
    L.append("")

    def rough(v):
        m = [e.mean for e in shares[v]]
        return float(np.mean(np.abs(np.diff(m)))) if len(m) > 1 else 0.0

    def width(v):
        return float(np.mean([e.hi - e.lo for e in shares[v]]))

    both = "deterministic" in shares and "overhead" in shares
    telnet = "telnet" in shares
    L += [_prose("phase.discussion",
                 roughness="; ".join(_prose("phase.roughness", variant=v, step=rough(v),
                                            width=width(v)) for v in shares),
                 overhead=both, rougher=both and rough("deterministic") > rough("overhead"),
                 telnet=telnet,
                 smooth=telnet and rough("telnet") < 0.75 * rough("deterministic")), ""]
    return L


def _baselines_markdown(G):
    base = {(k[1], k[2], k[3]): ss for k, ss in G.items() if k[0] == "base"}
    if not base:
        return []
    tcps = [t for t in BASE_TCP if any(k[0] == t for k in base)]
    ns = sorted({k[2] for k in base})
    M = {k: _base_metrics(ss) for k, ss in base.items()}
    L = [_prose("baselines", n_min=ns[0], n_max=ns[-1]), ""]
    for t in tcps:
        L.append(_prose("baselines.senders", tcp=t))
        for n in ns:
            for d in BASE_DISC:
                m = M.get((t, d, n))
                if not m:
                    continue
                L.append(f"| {n} | {_DISC_LABEL[d]} | {m['avg_queue_pkts']:.1f} | "
                         f"{m['avg_delay_s'] * 1e3:.0f} | {_pct(m['loss_rate'], 2)} | "
                         f"{_pct(m['utilisation'])} | {m['p95_over_p5']:.2f} | "
                         f"{m['jain']:.3f} | {m['timeouts_per_transfer']:.3f} |")
        L.append("")
    L += _baselines_verdict(M, tcps, ns)
    return L


def _baselines_verdict(M, tcps, ns):
    """Where FPQ wins and loses, decided on the intervals (no overlap = a difference)."""
    out = []
    big = [n for n in ns if n >= 60]

    def cmp(metric, better_low, t, n, other):
        a, b = M.get((t, "fpq", n)), M.get((t, other, n))
        if not a or not b:
            return None
        x, y = a[metric], b[metric]
        if _overlap(x, y):
            return 0
        return 1 if ((x.mean < y.mean) == better_low) else -1

    lines = []
    # (metric, whether lower is better); their names are the template's
    # baselines.quantity sections
    for metric, low in (("loss_rate", True), ("p95_over_p5", True), ("jain", False),
                        ("avg_delay_s", True), ("utilisation", False)):
        for other in ("red", "codel", "pie"):
            wins = losses = ties = 0
            for t in tcps:
                for n in big:
                    r = cmp(metric, low, t, n, other)
                    if r is None:
                        continue
                    wins += r == 1
                    losses += r == -1
                    ties += r == 0
            if wins + losses + ties:
                lines.append((metric, other, wins, losses, ties))
    if not lines:
        return out
    out.append(_prose("baselines.verdict"))
    for metric, other, w, l_, t in lines:
        out.append(f"| {_prose(f'baselines.quantity.{metric}')} | {_DISC_LABEL[other]} | "
                   f"{w} | {l_} | {t} |")
    out.append("")
    # a few numbers for the prose
    t0 = tcps[0]
    n_top = ns[-1]
    f, c, p, r = (M.get((t0, d, n_top)) for d in ("fpq", "codel", "pie", "red"))
    if f and c and p and r:
        out += [_prose("baselines.reading", n=n_top, tcp=t0,
                       fpq_delay_ms=f["avg_delay_s"] * 1e3, codel_delay_ms=c["avg_delay_s"] * 1e3,
                       pie_delay_ms=p["avg_delay_s"] * 1e3, red_delay_ms=r["avg_delay_s"] * 1e3,
                       codel_loss=_pct(c["loss_rate"]), pie_loss=_pct(p["loss_rate"]),
                       fpq_loss=_pct(f["loss_rate"]),
                       codel_timeouts=c["timeouts_per_transfer"],
                       pie_timeouts=p["timeouts_per_transfer"],
                       fpq_timeouts=f["timeouts_per_transfer"],
                       codel_spread=c["p95_over_p5"], pie_spread=p["p95_over_p5"],
                       fpq_spread=f["p95_over_p5"]), ""]
    return out


def _parking_markdown(G):
    park = {(k[1], k[2]): ss for k, ss in G.items() if k[0] == "park"}
    if not park:
        return []
    L = [_prose("parking"), ""]
    for hops in sorted({h for _, h in park}):
        L += [_prose("parking.figure", hops=hops), ""]
    L += [_prose("parking.intro"), ""]
    for (d, hops), ss in sorted(park.items(), key=lambda kv: (kv[0][1], kv[0][0] != "fpq")):
        cl = _park_classes(ss)
        L.append(_prose("parking.flows", discipline=_DISC_LABEL[d], hops=hops))
        for cls in ["long"] + [f"cross{i}" for i in range(hops)]:
            m = cl[cls]
            L.append(f"| {cls} | {m['throughput_pkts_per_s']:.2f} | {_pct(m['loss_rate'], 2)} "
                     f"| {m['e2e_queueing_delay_s'] * 1e3:.0f} | "
                     f"{m['timeouts_per_100s'].clip(0):.2f} | {m['window_pkts']:.1f} |")
        L += ["", _prose("parking.routers", fpq=d == "fpq")]
        for i in range(hops):
            rs = [s["routers"][i] for s in ss]
            q = est([r["avg_queue_pkts"] for r in rs])
            row = (f"| R{i} | {q:.1f} | {_pct(est([r['loss_rate'] for r in rs]), 2)} | "
                   f"{est([r['avg_flow_count'] for r in rs]):.1f} |")
            if d == "fpq":
                row += (f" {est([r['fpq_target_q_t'] for r in rs]):.1f} | "
                        f"{est([r['avg_queue_pkts'] / r['fpq_target_q_t'] for r in rs]):.2f} | "
                        f"{_pct(est([r['fpq_target_l_t'] for r in rs]), 2)} |")
            L.append(row)
        L.append("")
    for hops in sorted({h for _, h in park}):
        if ("fpq", hops) in park and ("red", hops) in park:
            f, r = _park_classes(park[("fpq", hops)]), _park_classes(park[("red", hops)])
            fl, rl = f["long"], r["long"]
            fc = est([v for k, m in f.items() if k != "long"
                      for v in m["throughput_pkts_per_s"].values])
            rc = est([v for k, m in r.items() if k != "long"
                      for v in m["throughput_pkts_per_s"].values])
            fewer_to = fl["timeouts_per_100s"].hi < rl["timeouts_per_100s"].lo
            cross_win = est([v for k, m in f.items() if k != "long"
                             for v in m["window_pkts"].values])
            L += [_prose("parking.discussion", hops=hops,
                         full=fewer_to and fl["window_pkts"].lo >= 6, fewer_timeouts=fewer_to,
                         fpq_loss=_pct(fl["loss_rate"], 2), red_loss=_pct(rl["loss_rate"], 2),
                         fpq_timeouts=fl["timeouts_per_100s"],
                         red_timeouts=rl["timeouts_per_100s"], fpq_window=fl["window_pkts"],
                         red_window=rl["window_pkts"], cross_window=cross_win,
                         small_window=fl["window_pkts"].hi < 6,
                         loss_ratio=fl["loss_rate"].mean
                         / max(1e-9, f["cross0"]["loss_rate"].mean),
                         fpq_share=fl["throughput_pkts_per_s"].mean / fc.mean,
                         red_share=rl["throughput_pkts_per_s"].mean / rc.mean,
                         fpq_delay_ms=fl["e2e_queueing_delay_s"] * 1e3,
                         red_delay_ms=rl["e2e_queueing_delay_s"] * 1e3), ""]
    return L


def update_results_md(path, body):
    """Replace what lies between the fpq-figures markers (appended if missing); atomic."""
    replace_marked_section(path, body, BEGIN, END)


def _parse_key_part(x):
    for conv in (int, float):
        try:
            return conv(x)
        except ValueError:
            pass
    return x


def load_raw(raw):
    """``{key: summary}`` from the JSON files an earlier run left in ``raw`` (the key is
    stored in each file; older files have it only in their name)."""
    import json
    res = {}
    for name in sorted(os.listdir(raw)):
        if not name.endswith(".json") or name.startswith("_"):
            continue
        with open(os.path.join(raw, name)) as f:
            s = json.load(f)
        key = s.pop("key", None)
        if key is None:
            key = [_parse_key_part(x) for x in name[:-5].split("-")]
        res[tuple(key)] = s
    return res


def main(args):
    import json
    if not 1 <= args.jobs <= 256:
        raise ValueError(f"--jobs: {args.jobs} is out of range [1, 256]")
    # output paths are checked before the runs, which take minutes
    from fpq.atomic import check_output_path, check_output_folder
    check_output_folder(args.out, "--out")
    check_output_folder(args.raw, "--raw")
    if os.path.abspath(os.path.dirname(args.results_md)) == os.path.abspath(args.out):
        os.makedirs(args.out, exist_ok=True)      # RESULTS.md kept with the figures
    check_output_path(args.results_md, "--results-md")
    seeds = QUICK_SEEDS if args.quick else SEEDS
    meta_path = os.path.join(args.raw, "_meta.json")
    if args.from_raw:
        if not os.path.exists(meta_path):
            raise ValueError(f"--from-raw: {meta_path} is missing (no earlier run to rebuild)")
        res = load_raw(args.raw)
        with open(meta_path) as f:
            meta = json.load(f)
        where = meta["where"][:-2] + (f"; tables and plots rebuilt from its saved runs with "
                                      f"`fpq figures --from-raw` on "
                                      f"{datetime.date.today().isoformat()}._")
        files = write_outputs(res, args.out, args.raw, args.quick)
        update_results_md(args.results_md, results_markdown(res, args.quick, meta["wall"],
                                                            where, seeds))
        print(f"fpq figures: rebuilt from {len(res)} saved runs; wrote {len(files)} files")
        return 0
    t0 = time.perf_counter()
    jobs = plan(args.quick, args.only)
    res = run_jobs(jobs, args.jobs, args.dask, progress=not args.no_progress)
    wall = time.perf_counter() - t0
    files = write_outputs(res, args.out, args.raw, args.quick)
    events = sum(s["events"] for s in res.values())
    cpu = sum(s["wall_seconds"] for s in res.values())
    runner = f"Dask {args.dask}" if args.dask else f"{args.jobs} local processes"
    where = (f"_Generated by `fpq figures{' --quick' if args.quick else ''}` on "
             f"{datetime.date.today().isoformat()}: {len(jobs)} runs ({len(seeds)} seeds per "
             f"point), {events:,} events, {wall:.0f} s wall on {runner} "
             f"({platform.machine()}, {os.cpu_count()} cores; {cpu:.0f} s of simulation)._")
    write_text(meta_path, json.dumps({"where": where, "wall": wall, "runs": len(jobs)}))
    update_results_md(args.results_md, results_markdown(res, args.quick, wall, where, seeds))
    print(f"fpq figures: {len(jobs)} runs in {wall:.1f} s; wrote {len(files)} files in "
          f"{args.out} and the fpq-figures section of {args.results_md}")
    return 0
