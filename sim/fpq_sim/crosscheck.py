"""``make crosscheck``: the same dumbbell in ns-3 and in our simulator, side by side.

ns-3 comes from PyPI (package ``ns3``) into a venv of its own (``make crosscheck`` creates it;
not part of ``make test``). For each queue discipline (drop-tail with a 45-packet limit, RED
5/45/0.02 with w_q = 2^-9) and N = 10, 30, 100 bulk NewReno senders on the FPQ paper's Fig. 8
network (1 Mbit/s 45 ms bottleneck, access links 10 x (10/N) Mbit/s with 0-10 ms delays), both
simulators run ``SEEDS`` seeds of ``DURATION`` s (statistics after ``WARMUP`` s); the table gives
the bottleneck's drop rate and utilisation with 95 % confidence intervals, and the speed: packets
arriving at the bottleneck per wall-clock second of the event loop (ns-3: ``Simulator::Run``;
ours: ``Simulator.run``), with their ratio for the same runs.

TCP on both sides: NewReno with classic recovery, no SACK, no timestamps, no limited transmit,
initial window 1, delayed ACKs (every second segment or 200 ms), 576-byte IP packets, 64 KB
receive window, 1 ms timer granularity, 1 s minimum RTO (ns-3's defaults for those two). What
still differs: ns-3 opens connections with a SYN handshake and its RTO follows RFC 6298
(ours counts ticks as ns-2 does); its point-to-point links add a 2-byte PPP header; our RED is
the float model with ns-2's idle rule (``fpq_sim.ns2idle``), ns-3's is its own RED
implementation.

Agreement is an equivalence test, not overlapping intervals (few seeds give wide intervals that
overlap anything): the two drop rates agree when the 90 % interval of the difference of their
means (ours - ns-3, Welch's t over ``SEEDS`` seeds a side) lies within ``+- loss_margin``, 15 %
of ns-3's mean drop rate and at least 0.1 percentage point (two one-sided tests at 5 %,
``fpq_sim.stats.equivalence``). The margin is a judgement: the simulators differ in the
details listed above, and a drop rate 15 % off changes none of the comparisons the tables
make. Fewer than ``MIN_SEEDS`` seeds a side (a section rebuilt from older saved runs) are not
judged.

Usage: ``python -m fpq_sim.crosscheck --ns3-python .venv-ns3/bin/python`` (writes the
``fpq crosscheck`` section of docs/RESULTS.md).
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

from fpq.atomic import write_text
from fpq.marked_section import markers, write_section

from .network import Network
from .scenario import validate
from .stats import est, equivalence

__all__ = ["main", "params", "our_run"]

HERE = os.path.dirname(os.path.abspath(__file__))


def _ns3_script():
    """The ns-3 side's script (run by the ns-3 venv's Python): ``fpq_sim/ns3`` in an installed
    package (package data), ``sim/crosscheck`` beside the package in a checkout."""
    installed = os.path.join(HERE, "ns3", "ns3_dumbbell.py")
    return installed if os.path.isfile(installed) else \
        os.path.normpath(os.path.join(HERE, "..", "crosscheck", "ns3_dumbbell.py"))


NS3_SCRIPT = _ns3_script()
BEGIN, END = markers("crosscheck")
FLOWS = (10, 30, 100)
DISCIPLINES = ("droptail", "red")
SEEDS = tuple(range(1, 11))
#: The fewest seeds a side that the agreement is judged on
MIN_SEEDS = 10
#: The equivalence margin of the drop rates: this share of ns-3's mean drop rate ...
LOSS_MARGIN_REL = 0.15
#: ... and at least this much (a drop rate, 0.1 percentage point)
LOSS_MARGIN_MIN = 0.001
DURATION, WARMUP = 60.0, 10.0


SPEED_TCP = ("newreno", "sack", "cubic")
SPEED_FLOWS = 30


def params(discipline, flows, seed, duration=DURATION, warmup=WARMUP, tcp="newreno"):
    """The shared description of one cross-check run."""
    return {"discipline": discipline, "flows": flows, "seed": seed, "duration_s": duration,
            "tcp": tcp,
            "warmup_s": warmup, "bandwidth_bps": 1e6, "delay_s": 0.045, "packet_bytes": 576,
            "access_bw_bps": 100e6 / flows, "access_delay_s": [0.0, 0.01],
            "start_jitter_s": 1.0, "max_window_bytes": 65536, "limit_pkts": 45,
            "red_min_th": 5.0, "red_max_th": 45.0, "red_max_p": 0.02, "red_wq": 2.0 ** -9}


def _scenario(p):
    q = {"discipline": p["discipline"], "model": "float"}
    if p["discipline"] == "red":
        # w_q = 2^-9 per packet: the scenario default avg_tau_s of 512 packet times
        q.update(red_min_th=p["red_min_th"], red_max_th=p["red_max_th"],
                 red_max_p=p["red_max_p"])
    else:
        q["limit_pkts"] = p["limit_pkts"]
    return validate({
        "name": f"crosscheck-{p['discipline']}-{p['flows']}",
        "run": {"duration_s": p["duration_s"], "warmup_s": 0.0, "seed": p["seed"]},
        "bottleneck": {"bandwidth_bps": p["bandwidth_bps"], "delay_s": p["delay_s"],
                       "packet_bytes": p["packet_bytes"]},
        "queue": q,
        "flows": [{"count": p["flows"], "tcp": p.get("tcp", "newreno"),
                   "access_bw_bps": p["access_bw_bps"],
                   "access_delay_s": p["access_delay_s"], "workload": "bulk",
                   "start_jitter_s": p["start_jitter_s"], "delayed_ack": True,
                   "ack_every": 2, "delack_timeout_s": 0.2, "tick_s": 0.001,
                   "rto_min_s": 1.0, "rto_init_s": 1.0,
                   "max_window_bytes": p["max_window_bytes"]}]})


def our_run(p):
    """Our simulator on the cross-check network: the same quantities as the ns-3 script."""
    net = Network(_scenario(p))
    port = net.port

    def snap():
        now = net.sim.now
        busy = port.busy_time - ((port.tx_end - now) if port.busy and port.tx_end > now else 0)
        return port.arrivals, port.drops, busy

    t0 = time.perf_counter()
    net.run(p["warmup_s"])
    a0, d0, b0 = snap()
    net.run(p["duration_s"])
    wall = time.perf_counter() - t0
    a1, d1, b1 = snap()
    span = p["duration_s"] - p["warmup_s"]
    return {"arrivals": a1 - a0, "drops": d1 - d0,
            "loss_rate": (d1 - d0) / (a1 - a0) if a1 > a0 else 0.0,
            "utilisation": (b1 - b0) / span, "bottleneck_packets": a1,
            "wall_seconds": wall}


def ns3_run(python, p):
    from fpq.terminate import signals_as_exit, ending_with_this_process
    # a signal that ends this process ends the ns-3 run too (subprocess.run kills it on the
    # exception), and so does its death by SIGKILL, instead of leaving it running
    with signals_as_exit():
        out = subprocess.run([python, NS3_SCRIPT, json.dumps(p)], capture_output=True,
                             text=True, timeout=3600, preexec_fn=ending_with_this_process())
    if out.returncode != 0:
        raise RuntimeError(f"ns-3 run {p['discipline']} N={p['flows']} seed {p['seed']} "
                           f"failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _pct(e):
    return f"{100 * e.mean:.2f} % [{100 * max(0, e.lo):.2f}, {100 * min(1, e.hi):.2f}]"


def loss_margin(ns3_mean):
    """The equivalence margin of the drop rates where ns-3's mean drop rate is
    ``ns3_mean``."""
    return max(LOSS_MARGIN_REL * ns3_mean, LOSS_MARGIN_MIN)


def agreement(ours, theirs):
    """Whether the drop rates of our runs and ns-3's (``fpq_sim.stats.Est`` over seeds)
    agree within :func:`loss_margin`: ``yes``, ``no``, or a dash and the seed count where
    there are fewer than ``MIN_SEEDS`` a side."""
    n = min(len(ours.values), len(theirs.values))
    if n < MIN_SEEDS:
        return f"- ({n} seeds)"
    e = equivalence(ours.values, theirs.values, loss_margin(theirs.mean), MIN_SEEDS)
    return "yes" if e.equivalent else "no"


def _seed_count(rows):
    """The fewest seeds of the ``rows`` of the table."""
    return min((len(r["ours_loss"].values) for _, r in rows), default=len(SEEDS))


def markdown(rows, wall, where, speed=()):
    L = ["## Cross-check with ns-3 (`make crosscheck`)", "",
         "Regenerate with `make crosscheck` (installs ns-3 from PyPI into `.venv-ns3`, then "
         "`python -m fpq_sim.crosscheck`; not part of `make test`). The same dumbbell in "
         "ns-3 and in our simulator: the FPQ paper's Fig. 8 network with N bulk NewReno "
         "senders, drop-tail (45 packets) or RED (5/45/0.02, w_q 2^-9, no hard limit), "
         f"{_seed_count(rows)} seeds of {DURATION:.0f} s each, statistics after "
         f"{WARMUP:.0f} s; "
         "what is matched and what still differs is listed in fpq_sim/crosscheck.py. Speed: "
         "packets arriving at the bottleneck per wall-clock second of each simulator's event "
         "loop, in the same runs (ours with the float queue manager). `agree`: the 90 % "
         "interval of the difference of the mean drop rates (ours - ns-3, Welch) lies within "
         f"+-{100 * LOSS_MARGIN_REL:.0f} % of ns-3's mean drop rate (at least "
         f"{100 * LOSS_MARGIN_MIN:.1f} percentage point): equivalent at 5 % by two one-sided "
         f"tests, judged with {MIN_SEEDS} or more seeds a side.", "",
         "| N | queue | drop rate, ours | drop rate, ns-3 | agree | utilisation, ours | "
         "utilisation, ns-3 | ours (pkt/s) | ns-3 (pkt/s) | speed ratio ours / ns-3 |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for (disc, n), r in rows:
        lo, l3 = r["ours_loss"], r["ns3_loss"]
        agree = agreement(lo, l3)
        L.append(f"| {n} | {disc} | {_pct(lo)} | {_pct(l3)} | {agree} | "
                 f"{_pct(r['ours_util'])} | {_pct(r['ns3_util'])} | "
                 f"{r['ours_speed']:,.0f} | {r['ns3_speed']:,.0f} | "
                 f"{r['ours_speed'] / r['ns3_speed']:.2f} |")
    odd = [(k, r) for k, r in rows if agreement(r["ours_loss"], r["ns3_loss"]) == "no"
           or r["ours_loss"].half > 3 * max(1e-9, r["ns3_loss"].half)]
    if odd:
        L += ["", "Per seed where the drop rates do not agree or ours is far wider (drop rate, "
              "ours / ns-3): " + "; ".join(
                  f"{d} N = {n}: " + ", ".join(f"{100 * a:.1f} / {100 * b:.1f} %"
                                               for a, b in r["per_seed"])
                  for (d, n), r in odd) + "."]
    if speed:
        L += ["", f"Speed with other senders (drop-tail, N = {SPEED_FLOWS}, the same runs in both "
              "simulators; ns-3 with SACK on, and its TcpCubic for CUBIC; drop rates for "
              "reference only, the two CUBICs and SACKs differ in details):", "",
              "| TCP | drop rate, ours | drop rate, ns-3 | ours (pkt/s) | ns-3 (pkt/s) | "
              "speed ratio ours / ns-3 |", "|---|---|---|---|---|---|"]
        for tcp, r in speed:
            L.append(f"| {tcp} | {_pct(r['ours_loss'])} | {_pct(r['ns3_loss'])} | "
                     f"{r['ours_speed']:,.0f} | {r['ns3_speed']:,.0f} | "
                     f"{r['ours_speed'] / r['ns3_speed']:.2f} |")
    L += ["", where, ""]
    return "\n".join(L) + "\n"


def update_results_md(path, body):
    """Replace the crosscheck section (appended if missing); atomic."""
    write_section(path, body, BEGIN, END)


def _summary(ours, theirs):
    return {"per_seed": [(a["loss_rate"], b["loss_rate"]) for a, b in zip(ours, theirs)],
            "ours_loss": est([x["loss_rate"] for x in ours]),
            "ns3_loss": est([x["loss_rate"] for x in theirs]),
            "ours_util": est([x["utilisation"] for x in ours]),
            "ns3_util": est([x["utilisation"] for x in theirs]),
            "ours_speed": sum(x["bottleneck_packets"] for x in ours)
            / sum(x["wall_seconds"] for x in ours),
            "ns3_speed": sum(x["bottleneck_packets"] for x in theirs)
            / sum(x["wall_seconds"] for x in theirs)}


def _provenance():
    """What the raw folder's ``_meta.json`` records of the code and the runs."""
    from .provenance import code_state
    return dict(code_state(), seeds=list(SEEDS))


def _saved_runs(raw):
    """``(meta, {tag: run})`` of the raw folder ``raw`` of an earlier run."""
    with open(os.path.join(raw, "_meta.json")) as f:
        meta = json.load(f)
    saved = {}
    for name in os.listdir(raw):
        if name.endswith(".json") and not name.startswith("_"):
            with open(os.path.join(raw, name)) as f:
                saved[name[:-5]] = json.load(f)
    return meta, saved


def _pairs(pair, runs):
    """The summary (``_summary``) of the pairs of runs ``pair(tag, params)`` gives for
    ``runs``, ``[(tag, params)]``, leaving out those it has none for; each pair logged."""
    ours, theirs = [], []
    for tag, p in runs:
        got = pair(tag, p)
        if got is None:
            continue
        a, b = got
        ours.append(a)
        theirs.append(b)
        sa = a["bottleneck_packets"] / a["wall_seconds"]
        sb = b["bottleneck_packets"] / b["wall_seconds"]
        print(f"{tag}: loss {a['loss_rate']:.4f} / {b['loss_rate']:.4f}, speed {sa:.0f} / "
              f"{sb:.0f} pkt/s", file=sys.stderr)
    return _summary(ours, theirs)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m fpq_sim.crosscheck")
    ap.add_argument("--ns3-python", required=True, help="the Python of the ns-3 venv")
    from fpq.paths import default_output
    ap.add_argument("--results-md", default=default_output(
        os.path.join("docs", "RESULTS.md"), "RESULTS.md"), help="the Markdown file whose "
        "crosscheck section is rewritten (default: the checkout's docs/RESULTS.md; "
        "installed: ./RESULTS.md)")
    ap.add_argument("--raw", default=default_output(
        os.path.join("results", "crosscheck"), os.path.join("fpq-crosscheck", "raw")),
        help="every run's JSON (default: the checkout's results/crosscheck; installed: "
        "./fpq-crosscheck/raw)")
    ap.add_argument("--from-raw", action="store_true", help="run nothing: rebuild the "
                    "section from the JSON of an earlier run in --raw")
    args = ap.parse_args(argv)
    os.makedirs(args.raw, exist_ok=True)
    meta_path = os.path.join(args.raw, "_meta.json")
    t0 = time.perf_counter()
    saved = meta = None
    if args.from_raw:
        meta, saved = _saved_runs(args.raw)

    def pair(tag, p):
        if saved is not None:
            d = saved.get(tag)      # an older run may have fewer seeds
            return (d["ours"], d["ns3"]) if d else None
        a, b = our_run(p), ns3_run(args.ns3_python, p)
        from .provenance import code_state
        # whole or absent: a run cut off half-written would be read back as a bad file
        write_text(os.path.join(args.raw, tag + ".json"),
                   json.dumps({"params": p, "ours": a, "ns3": b, "provenance": code_state()}))
        return a, b

    rows = [((disc, n), _pairs(pair, [(f"{disc}-{n}-{seed}", params(disc, n, seed))
                                      for seed in SEEDS]))
            for disc in DISCIPLINES for n in FLOWS]
    speed = [(tcp, _pairs(pair, [(f"speed-{tcp}-{seed}",
                                  params("droptail", SPEED_FLOWS, seed, tcp=tcp))
                                 for seed in SEEDS])) for tcp in SPEED_TCP]
    if saved is not None:
        where = meta["where"][:-2] + (f"; rebuilt from its saved runs on "
                                      f"{datetime.date.today().isoformat()}._")
        wall = meta["wall"]
    else:
        wall = time.perf_counter() - t0
        ver = subprocess.run([args.ns3_python, "-c", "import importlib.metadata as m; "
                              "print(m.version('ns3'))"], capture_output=True,
                             text=True).stdout
        load = os.getloadavg()[1]
        where = (f"_Generated by `make crosscheck` on {datetime.date.today().isoformat()} with "
                 f"ns-3 {ver.strip() or '?'} from PyPI: "
                 f"{(len(rows) + len(speed)) * len(SEEDS)} runs in each simulator, {wall:.0f} s "
                 f"wall in all ({platform.machine()}, {os.cpu_count()} cores, one run at a "
                 f"time; load average {load:.1f} from other jobs on the machine)._")
        write_text(meta_path, json.dumps({"where": where, "wall": wall,
                                          "provenance": _provenance()}))
    update_results_md(args.results_md, markdown(rows, wall, where, speed))
    print(f"crosscheck: wrote the section of {args.results_md}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
