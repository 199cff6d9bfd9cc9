"""``fpq sim``, ``fpq trace``, ``fpq parity``, ``fpq figures``, ``fpq sweep``, ``fpq attack``,
``fpq demo`` and ``fpq config``: the simulator's subcommands of ``fpq`` (``fpq.cli``)."""

import argparse
import json
import sys

__all__ = ["register"]


def _write_json(path, data):
    """Write JSON atomically: a failed write leaves no partial file."""
    from fpq.atomic import write_text
    write_text(path, json.dumps(data, indent=1) + "\n")


def _check_outputs(output, argument, scenario):
    """Before the simulation runs: ``output`` can be written and is not the scenario
    (``-``, standard output, always can)."""
    from fpq.atomic import check_output_path, check_not_an_input
    if output == STDOUT:
        return
    check_output_path(output, argument)
    check_not_an_input(output, argument, [("scenario", scenario)])


#: The output path that means standard output.
STDOUT = "-"


def _validate_any(doc):
    """A validated scenario of either kind: a parking lot when the document has a
    ``[topology]`` table (``fpq_sim.parkinglot``), else a dumbbell (``fpq_sim.scenario``)."""
    from .scenario import validate
    from .parkinglot import validate_parking_lot
    if isinstance(doc, dict) and "topology" in doc:
        return validate_parking_lot(doc)
    return validate(doc)


def _write_summary(args, s):
    """The summary to ``--json`` (if given); returns the stream for the report (standard
    error when the summary went to standard output)."""
    if args.json == STDOUT:
        sys.stdout.write(json.dumps(s, indent=1) + "\n")
        sys.stdout.flush()
    elif args.json:
        _write_json(args.json, s)
    return sys.stderr if args.json == STDOUT else sys.stdout


def _report_events(args, s, report):
    """The run's last report line: events, wall time, the file written."""
    per_s = s["events"] / s["wall_seconds"] if s["wall_seconds"] > 0 else 0
    print(f"{s['events']} events in {s['wall_seconds']:.2f} s ({per_s:.0f} events/s)" +
          (f"; wrote {args.json}" if args.json not in (None, STDOUT) else ""), file=report)


def _sim_parking_lot(args, sc):
    """``fpq sim`` of a parking-lot scenario: its summary (``ParkingLot.summary``) and a
    report per flow class and per router."""
    from .parkinglot import run_parking_lot, class_stats
    from .provenance import run_provenance
    s = run_parking_lot(sc)
    s["provenance"] = run_provenance(sc)
    report = _write_summary(args, s)
    classes = class_stats(s)
    flows = "; ".join(f"{cls} ({m['flows']} flows): {m['throughput_pkts_per_s']:.1f} pkt/s "
                      f"each, loss {100 * m['loss_rate']:.2f} %"
                      for cls, m in sorted(classes.items(), key=lambda kv: kv[0] != "long"))
    routers = "; ".join(f"R{r['hop']}: queue {r['avg_queue_pkts']:.1f} pkts, loss "
                        f"{100 * r['loss_rate']:.2f} %" for r in s["routers"])
    print(f"{sc['name'] or args.scenario}: parking lot, {s['hops']} hops, "
          f"{sc['queue']['discipline']}: {flows}", file=report)
    print(f"routers: {routers}", file=report)
    _report_events(args, s, report)
    return 0


def _sim(args):
    from .scenario import load, scenario_path
    from .network import Network
    path = scenario_path(args.scenario)
    if args.json:
        _check_outputs(args.json, "--json", path)
    sc = load(path, args.set or (), _validate_any)
    if "topology" in sc:
        if args.transfer_times:
            raise ValueError("--transfer-times: a parking-lot scenario's summary has no "
                             "transfer times (a dumbbell's has)")
        return _sim_parking_lot(args, sc)
    net = Network(sc)
    net.run()
    s = net.summary(transfer_times=args.transfer_times)
    from .provenance import run_provenance
    s["provenance"] = run_provenance(sc, args.transfer_times)
    # with the summary on standard output, the report goes to standard error
    report = _write_summary(args, s)
    t = s["transfers"]
    line = (f"{sc['name'] or args.scenario}: {s['flows_total']} flows, "
            f"{sc['queue']['discipline']}: loss {100 * s['loss_rate']:.2f} %, "
            f"queue {s['avg_queue_pkts']:.1f} pkts, utilisation {100 * s['utilisation']:.1f} %, "
            f"goodput {s['goodput_pkts_per_s']:.1f} pkt/s")
    if t["count"]:
        line += (f", {t['count']} transfers: p5 {t['p5']:.2f} s, median {t['p50']:.2f} s, "
                 f"p95 {t['p95']:.2f} s ({t['unfinished']} unfinished at the end)")
    print(line, file=report)
    _report_events(args, s, report)
    return 0


def _trace(args):
    from fpq.trace import write_trace
    from .scenario import load, scenario_path, ScenarioError
    from .network import Network
    path = scenario_path(args.scenario)
    _check_outputs(args.out, "--out", path)
    sc = load(path, args.set or (), _validate_any)
    if "topology" in sc:
        raise ScenarioError(f"{path}: topology: fpq trace records the one bottleneck of a "
                            f"dumbbell scenario, and this parking lot queues at each of its "
                            f"{sc['topology']['hops']} hops (fpq sim runs it)")
    if args.duration is not None:
        if not 0 < args.duration <= sc["run"]["duration_s"]:
            raise ValueError(f"--duration: {args.duration} is out of range "
                             f"(0, {sc['run']['duration_s']}] s (run.duration_s)")
    net = Network(sc, trace=True)
    net.run(args.duration)
    events = net.trace
    if args.max_events is not None:
        events = events[:args.max_events]
    meta = {"source": "fpq_sim", "scenario": sc["name"], "seed": sc["run"]["seed"],
            "duration_s": net.sim.now, "discipline": sc["queue"]["discipline"],
            "flows": len(net.senders), "config": net.config.to_dict(),
            "sets": list(args.set or ())}
    write_trace(args.out, events, net.config.tick_hz, meta)
    arr = sum(1 for e in events if len(e) == 4)
    print(f"wrote {'standard output' if args.out == STDOUT else args.out}: {len(events)} "
          f"descriptors ({arr} arrivals, {len(events) - arr} departures) over "
          f"{net.sim.now:g} s, tick_hz {net.config.tick_hz:g}",
          file=sys.stderr if args.out == STDOUT else sys.stdout)
    return 0


def _positive_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} is out of range [1, ...]")
    return v


def _shipped():
    from .scenario import shipped_scenarios
    return ", ".join(shipped_scenarios())


def _module_commands():
    """The subcommands whose module has its own ``add_arguments`` and ``main``: ``(name,
    module, help)``."""
    from . import attack, config_command, demo, figures, parity, sweep_command
    return [
        ("demo", demo, "a TCP scenario through the golden model and the Verilated RTL, and "
                       "many-flow traffic through both models"),
        ("config", config_command, "a configuration as register writes and tables for a host "
                                   "without Python: JSON, C, $readmemh"),
        ("parity", parity, "the bit-exact model against the paper's float model on a "
                           "dumbbell, over seeds (RED and FPQ, several N and link rates)"),
        ("attack", attack, "legitimate TCP flows under a flood of spoofed 5-tuples: goodput, "
                           "drops and delay against the flood's rate and pool, for FPQ (with "
                           "and without n_cap), RED and drop-tail, over seeds; writes a "
                           "Markdown table"),
        ("figures", figures, "reproduce the papers' figures; writes PNG + CSV and the results "
                             "section of docs/RESULTS.md"),
        ("sweep", sweep_command, "a scenario over parameters (--vary) and seeds, locally or on "
                                 "a Dask cluster, resumable: one CSV with intervals and a plot"),
    ]


def register(sub):
    p = sub.add_parser("sim", help="run a TCP simulation scenario (TOML)")
    p.add_argument("scenario", help="scenario file (schema: sim/scenarios/README.md), or "
                                    "the name of a shipped one: " + _shipped())
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a scenario key, e.g. flows.0.count=75 or queue.discipline=fpq")
    p.add_argument("--json", metavar="OUT.json", help="write the summary here (- for "
                                                      "standard output)")
    p.add_argument("--transfer-times", action="store_true",
                   help="include every transfer time in the JSON")
    p.set_defaults(func=_sim)

    p = sub.add_parser("trace", help="bottleneck arrival/departure descriptors of a scenario, "
                                     "as an FPQ trace for the RTL benches")
    p.add_argument("scenario", help="scenario file or the name of a shipped one (as fpq sim)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE")
    p.add_argument("--out", required=True, help="trace file to write (fpq.trace format; - for "
                                                "standard output)")
    p.add_argument("--duration", type=float, help="simulate only this many seconds")
    p.add_argument("--max-events", type=_positive_int, help="keep only the first N descriptors")
    p.set_defaults(func=_trace)

    for name, module, help_text in _module_commands():
        p = sub.add_parser(name, help=help_text)
        module.add_arguments(p)
        p.set_defaults(func=module.main)
