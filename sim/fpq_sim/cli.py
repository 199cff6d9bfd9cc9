"""``fpq sim``, ``fpq trace``, ``fpq parity``, ``fpq figures`` and ``fpq attack``: the
simulator's subcommands of ``fpq``."""

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


def _sim(args):
    from .scenario import load, scenario_path
    from .network import Network
    path = scenario_path(args.scenario)
    if args.json:
        _check_outputs(args.json, "--json", path)
    sc = load(path, args.set or ())
    net = Network(sc)
    net.run()
    s = net.summary(transfer_times=args.transfer_times)
    # with the summary on standard output, the report goes to standard error
    report = sys.stderr if args.json == STDOUT else sys.stdout
    if args.json == STDOUT:
        sys.stdout.write(json.dumps(s, indent=1) + "\n")
        sys.stdout.flush()
    elif args.json:
        _write_json(args.json, s)
    t = s["transfers"]
    line = (f"{sc['name'] or args.scenario}: {s['flows_total']} flows, "
            f"{sc['queue']['discipline']}: loss {100 * s['loss_rate']:.2f} %, "
            f"queue {s['avg_queue_pkts']:.1f} pkts, utilisation {100 * s['utilisation']:.1f} %, "
            f"goodput {s['goodput_pkts_per_s']:.1f} pkt/s")
    if t["count"]:
        line += (f", {t['count']} transfers: p5 {t['p5']:.2f} s, median {t['p50']:.2f} s, "
                 f"p95 {t['p95']:.2f} s")
    print(line, file=report)
    print(f"{s['events']} events in {s['wall_seconds']:.2f} s "
          f"({s['events_per_second'] or 0:.0f} events/s)" +
          (f"; wrote {args.json}" if args.json not in (None, STDOUT) else ""), file=report)
    return 0


def _trace(args):
    from fpq.trace import write_trace
    from .scenario import load, scenario_path
    from .network import Network
    path = scenario_path(args.scenario)
    _check_outputs(args.out, "--out", path)
    sc = load(path, args.set or ())
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


def _figures(args):
    from .figures import main
    return main(args)


def _parity(args):
    from .parity import main
    return main(args)


def _attack(args):
    from .attack import main
    return main(args)


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

    p = sub.add_parser("parity", help="the bit-exact model against the paper's float model on "
                                      "a dumbbell, over seeds (RED and FPQ, several N and "
                                      "link rates)")
    from .parity import add_arguments as parity_arguments
    parity_arguments(p)
    p.set_defaults(func=_parity)

    p = sub.add_parser("attack", help="legitimate TCP flows under a flood of spoofed 5-tuples: "
                                      "goodput, drops and delay against the flood's rate and "
                                      "pool, for FPQ (with and without n_cap), RED and "
                                      "drop-tail, over seeds; writes a Markdown table")
    from .attack import add_arguments as attack_arguments
    attack_arguments(p)
    p.set_defaults(func=_attack)

    p = sub.add_parser("figures", help="reproduce the papers' figures; writes PNG + CSV and "
                                       "the results section of docs/RESULTS.md")
    from .figures import add_arguments
    add_arguments(p)
    p.set_defaults(func=_figures)
