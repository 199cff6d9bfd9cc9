"""``fpq figures``: the papers' experiments and our extensions, re-run on our simulator, as
PNG + PDF + CSV and the "TCP simulator" section of docs/RESULTS.md (between
``<!-- BEGIN fpq figures -->`` and ``<!-- END fpq figures -->``; the rest of the file is left
alone). The section's prose is the template ``fpq_sim/templates/results.md``; this package
computes the numbers, the tables' rows and the judgments it fills in.

Every point is run with ``len(SEEDS)`` (10) seeds and reported as the mean with its 95 %
confidence interval (``fpq_sim.stats``): error bars on the plots, ``mean [lo, hi]`` in the
tables. A seed changes every random choice of a run (start times, access delays, the queue
manager's random numbers, losses). Runs per seed are shorter than the papers' single runs
(each experiment's ``durations``), so that ten of them still fit the time budget.

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
  N = 10..150, with Tahoe, SACK and CUBIC senders;
* beyond the paper: a parking lot of FPQ routers against one of RED routers (``parking-lot``);
* modern hosts: FPQ, RED, CoDel and PIE with today's end hosts (initial window 10, SACK, ECN)
  at 10 and 100 Mbit/s, N = 10..1000, NewReno and CUBIC (``modern-dumbbell``).

Each experiment is one module of this package that registers itself (``registry``): the runs
it needs, the CSV tables and plots it draws, its part of the RESULTS.md section. The driver
plans the registered experiments' runs, runs them (``runner``), groups the summaries by point
and hands them to each experiment (``driver``). Shared: the per-run quantities and their
estimates (``quantities``), the CSV writer and the plot files (``outputs``), the plots' style
and intervals (``plots``), the prose template (``template``).

Runs are independent: they go to local worker processes (``--jobs``) or to a Dask cluster
(``--dask ADDRESS``), with a tqdm progress bar. ``--quick`` shortens every run, uses two seeds
and thins the sweeps (for tests; its numbers are not the reproduction). Every run's JSON summary
is kept (``--raw``); ``--from-raw`` rebuilds the outputs from them without running anything.
While the command runs, each finished run's summary is also kept in a hidden sibling of the
raw folder (``runner.progress_folder``), removed at the end; ``--resume`` reuses the saved runs
(there or in the raw folder) whose run digest is that of the run the current code would make,
and runs only the others.

Provenance (``fpq_sim.provenance``): every run's summary records the package version, the
commit and whether the checkout had changes, its seed, its scenario's digest and its run
digest; every CSV table and plot records the same for the runs it shows; the RESULTS.md
section ends with the digest of the code and scenarios behind its rows
(``driver.digest_line``), which a test compares with the current code's.
"""

import contextlib
import datetime
import importlib
import json
import os
import platform
import shutil
import time

from .driver import write_outputs, results_markdown, update_results_md, BEGIN, END
from .quantities import jain
from .registry import REGISTRY, plan, durations, SEEDS, QUICK_SEEDS, SCEN
from .runner import (run_jobs, group, load_raw, load_meta, using_saved_runs, save_raw,
                     progress_folder, resumable)

__all__ = ["add_arguments", "main", "plan", "run_jobs", "update_results_md", "group",
           "write_outputs", "results_markdown", "load_raw", "jain", "durations", "EXPERIMENTS",
           "EXPERIMENT_MODULES", "SEEDS", "QUICK_SEEDS", "SCEN", "BEGIN", "END"]

#: The experiments' modules, in the order of ``--only``'s choices: each registers its
#: experiment when imported
EXPERIMENT_MODULES = ("loss", "sweep", "many", "validation", "phase", "baselines", "parking",
                      "modern")
for _module in EXPERIMENT_MODULES:
    importlib.import_module(f"{__name__}.{_module}")
#: The experiments' names (``--only``'s choices)
EXPERIMENTS = tuple(REGISTRY)

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
    p.add_argument("--resume", action="store_true",
                   help="reuse the runs saved by an earlier or interrupted run (in --raw or "
                   "beside it) whose scenario and simulation code are the current ones; run "
                   "only the others")


def main(args):
    _check_arguments(args)
    seeds = QUICK_SEEDS if args.quick else SEEDS
    if args.from_raw:
        return _rebuild(args, seeds)
    return _run(args, seeds)


def _check_arguments(args):
    """Check ``--jobs`` and the output paths: before the runs, which take minutes."""
    if not 1 <= args.jobs <= 256:
        raise ValueError(f"--jobs: {args.jobs} is out of range [1, 256]")
    if args.resume and args.from_raw:
        raise ValueError("--resume: runs nothing with --from-raw (which reuses every saved "
                         "run); give one of the two")
    from fpq.atomic import check_output_path, check_output_folder
    check_output_folder(args.out, "--out")
    check_output_folder(args.raw, "--raw")
    if os.path.abspath(os.path.dirname(args.results_md)) == os.path.abspath(args.out):
        os.makedirs(args.out, exist_ok=True)      # RESULTS.md kept with the figures
    check_output_path(args.results_md, "--results-md")


def _write(args, res, markdown, meta=None, saved=False):
    """Write the outputs of the runs ``res``: the plots and CSV tables (``--out``), every
    run's summary and ``meta`` (``--raw``, ``_meta.json``) and the RESULTS.md section
    (``markdown(res)``), as one set (``fpq.output_files.staged_outputs``: a reader sees the
    old outputs until all new ones are written, then the new ones; an interrupted command
    changes none). ``saved``: ``res`` was read from a raw folder, whose values the figures'
    code may not be able to use (named, ``runner.using_saved_runs``). Returns the number of
    files written to ``--out``."""
    from fpq.atomic import write_text
    from fpq.output_files import staged_outputs
    with staged_outputs([args.out, args.raw], [args.results_md]) as (stage, tmp):
        raw = stage[args.raw]
        with using_saved_runs() if saved else contextlib.nullcontext():
            files = write_outputs(res, stage[args.out], raw, args.quick)
            text = markdown(res)
        if meta is not None:
            write_text(os.path.join(raw, "_meta.json"), json.dumps(meta))
        update_results_md(tmp[args.results_md], text)
    return len(files)


def _rebuild(args, seeds):
    """``--from-raw``: the outputs from the summaries an earlier run saved."""
    meta = load_meta(args.raw)
    res = load_raw(args.raw)
    where = meta["where"][:-2] + (f"; tables and plots rebuilt from its saved runs with "
                                  f"`fpq figures --from-raw` on "
                                  f"{datetime.date.today().isoformat()}._")
    files = _write(args, res, lambda res: results_markdown(res, args.quick, meta["wall"],
                                                           where, seeds), saved=True)
    print(f"fpq figures: rebuilt from {len(res)} saved runs; wrote {files} files")
    return 0


def _run(args, seeds):
    """Plan, run (all, or with ``--resume`` those without a saved run), write the outputs and
    the RESULTS.md section."""
    from ..provenance import code_state
    t0 = time.perf_counter()
    jobs = plan(args.quick, args.only)
    saved = resumable(jobs, args.raw) if args.resume else {}
    partial = progress_folder(args.raw)
    res = run_jobs([j for j in jobs if j[0] not in saved], args.jobs, args.dask,
                   progress=not args.no_progress,
                   on_result=lambda key, s: save_raw({key: s}, partial))
    res.update(saved)
    wall = time.perf_counter() - t0
    where = _where(args, len(jobs), res, wall, seeds, len(saved))
    files = _write(args, res, lambda res: results_markdown(res, args.quick, wall, where, seeds),
                   meta={"where": where, "wall": wall, "runs": len(jobs),
                         "provenance": dict(code_state(), seeds=list(seeds))})
    shutil.rmtree(partial, ignore_errors=True)
    print(f"fpq figures: {len(jobs) - len(saved)} runs in {wall:.1f} s"
          f"{f' ({len(saved)} saved runs reused)' if saved else ''}; wrote {files} files in "
          f"{args.out} and the fpq-figures section of {args.results_md}")
    return 0


def _where(args, runs, res, wall, seeds, reused=0):
    """The section's closing line: what ran, when, where and how long."""
    events = sum(s["events"] for s in res.values())
    cpu = sum(s["wall_seconds"] for s in res.values())
    runner = f"Dask {args.dask}" if args.dask else f"{args.jobs} local processes"
    again = f", {reused} of them saved runs reused (`--resume`)" if reused else ""
    return (f"_Generated by `fpq figures{' --quick' if args.quick else ''}` on "
            f"{datetime.date.today().isoformat()}: {runs} runs ({len(seeds)} seeds per "
            f"point{again}), {events:,} events, {wall:.0f} s wall on {runner} "
            f"({platform.machine()}, {os.cpu_count()} cores; {cpu:.0f} s of simulation)._")
