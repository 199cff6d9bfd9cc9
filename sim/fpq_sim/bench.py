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


def single(name, sets):
    sc = load(os.path.join(SCEN, name + ".toml"), sets)
    s = run_scenario(sc)
    return s


def main(argv=None):
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
    rows = []
    lines = ["| run | simulated s | events | wall s | events/s | bottleneck arrivals (after "
             "warm-up) per wall second |", "|---|---|---|---|---|---|"]
    for label, name, sets in (
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
            ("1997 paper, 1500 bulk flows, 10 Mbit/s", "morris97-1500-flows", [])):
        s = single(name, sets)
        rows.append({"run": label, "simulated_s": s["duration_s"], "events": s["events"],
                     "wall_s": s["wall_seconds"], "events_per_s": s["events_per_second"],
                     "arrivals_per_wall_s": s["arrivals"] / s["wall_seconds"]})
        lines.append(f"| {label} | {s['duration_s']:.0f} | {s['events']:,} | "
                     f"{s['wall_seconds']:.2f} | {s['events_per_second']:,.0f} | "
                     f"{s['arrivals'] / s['wall_seconds']:,.0f} |")
        print(lines[-1], file=sys.stderr)
    jobs = [j for j in plan() if j[0][0] == "sweep"]
    t0 = time.perf_counter()
    res = run_jobs(jobs, n_jobs=args.jobs, progress=False)
    wall = time.perf_counter() - t0
    events = sum(s["events"] for s in res.values())
    cpu = sum(s["wall_seconds"] for s in res.values())
    ns = sorted({k[2] for k in res})
    seeds = sorted({k[-1] for k in res})
    dur = jobs[0][1]["run"]["duration_s"]
    lines += ["", f"Figs. 10-13 sweep: {len(jobs)} runs (N = {', '.join(map(str, ns))}; "
              f"traditional and FPQ; {len(seeds)} seeds of {dur:.0f} s each): "
              f"**{wall:.1f} s wall** on {args.jobs} local "
              f"processes ({events:,} events, {cpu:.1f} s of simulation in the workers, "
              f"{events / cpu:,.0f} events/s per process)."]
    lines += ["", f"_Measured {datetime.date.today().isoformat()} with `python -m fpq_sim.bench "
              f"--jobs {args.jobs}` on {platform.machine()}, {os.cpu_count()} cores, "
              f"Python {platform.python_version()}; machine shared with other jobs._"]
    print("\n".join(lines))
    if args.record:
        from fpq.records import write_record
        write_record(args.record, "sim", {"rows": rows, "sweep": {
            "runs": len(jobs), "n": ns, "seeds": len(seeds), "duration_s": dur, "jobs": args.jobs,
            "wall_s": wall, "events": events, "worker_s": cpu}},
            ["python", "-m", "fpq_sim.bench", "--jobs", str(args.jobs), "--record", args.record])
        print(f"wrote {args.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
