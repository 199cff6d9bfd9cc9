"""Simulator benchmarks: ``python -m fpq_sim.bench [--jobs 2]`` prints a Markdown report.

* events per second of single runs (one process): the FPQ paper's network at N = 75, both
  routers, with the bit-exact and the float queue manager; the 1997 network with 1500 flows;
* the wall time of the whole Figs. 10-13 sweep (the ``sweep`` jobs of ``fpq figures``: N = 10..150
  in 10 points, traditional and FPQ, 10 seeds each), on ``--jobs`` local processes.

``--record PATH`` also writes the results as a measurement record (``fpq.records``, kind
"sim"), from which ``fpq benchmarks`` writes the table in docs/BENCHMARKS.md.
"""

import argparse
import datetime
import os
import platform
import sys
import time

from .figures import plan, run_jobs, SCEN
from .network import run_scenario
from .scenario import load


#: The single runs timed, as (label, scenario of ``fpq_sim/scenarios``, settings).
SINGLE_RUNS = (
    ("FPQ paper, traditional (RED), N = 75, bit-exact model", "fpq-traditional", []),
    ("FPQ paper, FPQ, N = 75, bit-exact model", "fpq-fpq", []),
    ("FPQ paper, FPQ, N = 75, float model", "fpq-fpq", ["queue.model=float"]),
    ("FPQ paper, FPQ, N = 150, bit-exact model", "fpq-fpq", ["flows.0.count=150"]),
    ("FPQ paper, FPQ, N = 75, SACK senders, bit-exact model", "fpq-fpq",
     ["flows.0.tcp=sack"]),
    ("FPQ paper, FPQ, N = 75, CUBIC senders, bit-exact model", "fpq-fpq",
     ["flows.0.tcp=cubic"]),
    ("FPQ paper, CoDel, N = 75, CUBIC senders", "fpq-traditional",
     ["flows.0.tcp=cubic", "queue.discipline=codel"]),
    ("1997 paper, 1500 bulk flows, 10 Mbit/s", "morris97-1500-flows", []))

#: The single runs' table head (Markdown).
TABLE_HEAD = ["| run | simulated s | events | wall s | events/s | bottleneck arrivals (after "
              "warm-up) per wall second |", "|---|---|---|---|---|---|"]


def single(name, sets):
    sc = load(os.path.join(SCEN, name + ".toml"), sets)
    s = run_scenario(sc)
    return s


def _arguments(argv):
    """The parsed command line; a ``--record`` path that cannot be written exits 2."""
    ap = argparse.ArgumentParser(prog="python -m fpq_sim.bench")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--record", metavar="PATH",
                    help="also write the results as a measurement record (docs/benchmarks/)")
    args = ap.parse_args(argv)
    if args.record:
        from fpq.atomic import check_output_path, OutputPathError
        try:
            check_output_path(args.record, "--record")
        except OutputPathError as exc:
            ap.exit(2, f"{ap.prog}: error: {exc}\n")
    return args


def run_row(label, s):
    """A single run's row of the record, from ``label`` and its statistics ``s``
    (``run_scenario``'s)."""
    return {"run": label, "simulated_s": s["duration_s"], "events": s["events"],
            "wall_s": s["wall_seconds"], "events_per_s": s["events_per_second"],
            "arrivals_per_wall_s": s["arrivals"] / s["wall_seconds"]}


def row_line(row):
    """A single run's row (``run_row``) as a line of the Markdown table."""
    return (f"| {row['run']} | {row['simulated_s']:.0f} | {row['events']:,} | "
            f"{row['wall_s']:.2f} | {row['events_per_s']:,.0f} | "
            f"{row['arrivals_per_wall_s']:,.0f} |")


def time_sweep(n_jobs):
    """Run the Figs. 10-13 sweep (the ``sweep`` jobs of ``fpq figures``) on ``n_jobs`` local
    processes; its size and times, as the record holds them."""
    jobs = [j for j in plan() if j[0][0] == "sweep"]
    t0 = time.perf_counter()
    res = run_jobs(jobs, n_jobs=n_jobs, progress=False)
    wall = time.perf_counter() - t0
    return {"runs": len(jobs), "n": sorted({k[2] for k in res}),
            "seeds": len({k[-1] for k in res}), "duration_s": jobs[0][1]["run"]["duration_s"],
            "jobs": n_jobs, "wall_s": wall, "events": sum(s["events"] for s in res.values()),
            "worker_s": sum(s["wall_seconds"] for s in res.values())}


def sweep_line(sweep):
    """The sweep's times (``time_sweep``) as a line of the report."""
    events, cpu = sweep["events"], sweep["worker_s"]
    return (f"Figs. 10-13 sweep: {sweep['runs']} runs (N = {', '.join(map(str, sweep['n']))}; "
            f"traditional and FPQ; {sweep['seeds']} seeds of {sweep['duration_s']:.0f} s each): "
            f"**{sweep['wall_s']:.1f} s wall** on {sweep['jobs']} local "
            f"processes ({events:,} events, {cpu:.1f} s of simulation in the workers, "
            f"{events / cpu:,.0f} events/s per process).")


def _measured_line(n_jobs):
    """The report's last line: when, how and where it was measured."""
    return (f"_Measured {datetime.date.today().isoformat()} with `python -m fpq_sim.bench "
            f"--jobs {n_jobs}` on {platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}; machine shared with other jobs._")


def main(argv=None):
    args = _arguments(argv)
    rows = []
    lines = list(TABLE_HEAD)
    for label, name, sets in SINGLE_RUNS:
        rows.append(run_row(label, single(name, sets)))
        lines.append(row_line(rows[-1]))
        print(lines[-1], file=sys.stderr)
    sweep = time_sweep(args.jobs)
    lines += ["", sweep_line(sweep), "", _measured_line(args.jobs)]
    print("\n".join(lines))
    if args.record:
        from fpq.records import write_record
        write_record(args.record, "sim", {"rows": rows, "sweep": sweep},
                     ["python", "-m", "fpq_sim.bench", "--jobs", str(args.jobs), "--record",
                      args.record])
        print(f"wrote {args.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
