"""docs/DATASHEET.md and fpq_core.core: the datasheet is current (``fpq datasheet``), its port
tables are the exported Verilog's ports, its timing is what the core does in simulation, its
Verilog template lints against the exported core, its Amaranth template runs, and the FuseSoC
core file lists files that exist after ``fpq verilog``."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("amaranth")

from fpq import Build, pack_flow
from fpq_hdl.datasheet import (parse_ports, measure, wavedrom, replace_sections,
                           check_markers, verilog_template, begin_marker, end_marker,
                           SECTIONS)
from fpq.regmap import ID_VALUE
from fpq_hdl.axi_core import FPQCore, core_verilog
from fpq_hdl.queue_manager import LATENCY, FIFO_DEPTH

from cli_run import run

ROOT = Path(__file__).resolve().parents[2]
DATASHEET = ROOT / "docs" / "DATASHEET.md"
CORE_FILE = ROOT / "fpq_core.core"
WAIVERS = ROOT / "hdl" / "verilator_waivers.vlt"
SMALL = Build(vec_bits=64, table_depth=16)
SMALL_ARGS = ["--vec-bits", "64", "--table-depth", "16"]


def _section(text, name):
    return text.split(begin_marker(name), 1)[1].split(end_marker(name), 1)[0]


def _code_block(text, language):
    return re.search(r"```" + language + r"\n(.*?)```", text, re.S)[1]


def _lint(*files, top=None):
    """Verilator's -Wall lint of ``files``: the include files (``.vh``, the export's power-on
    keys) by their folders, as include directories (FuseSoC's ``is_include_file``), the
    others as sources, their folders include directories too."""
    folders = sorted({str(Path(f).parent) for f in files})
    argv = ["verilator", "--lint-only", "-Wall", *(f"-I{d}" for d in folders),
            *(str(f) for f in files if not str(f).endswith(".vh"))]
    if top:
        argv += ["--top-module", top]
    return subprocess.run(argv, capture_output=True, text=True)


# ---- ports ---------------------------------------------------------------------------------
@pytest.mark.parametrize("bus", ["axi-lite", "wishbone", "none"])
def test_parsed_ports_are_the_components_ports(bus):
    """The Verilog's ports, parsed, against the Amaranth component's signature (an
    independent list: names, directions and widths) plus clk and rst."""
    from amaranth.hdl import Value
    text, core = core_verilog(SMALL, bus)
    parsed = {p.name: (p.direction, p.width) for p in parse_ports(text, "fpq_core")}
    expected = {"clk": ("input", 1), "rst": ("input", 1)}
    for path, member, value in core.signature.flatten(core):
        name = "__".join(map(str, path))
        expected[name] = ("input" if member.flow.name == "In" else "output",
                          len(Value.cast(value)))
    assert parsed == expected


def test_port_widths_do_not_depend_on_the_build():
    """The datasheet's port tables say so; a small and a large build export the same ports."""
    small = parse_ports(core_verilog(SMALL)[0])
    large = parse_ports(core_verilog(Build(vec_bits=4096, table_depth=1024))[0])
    assert small == large


def test_parse_ports_refuses_a_port_without_declaration():
    text = "module m(a, b);\n  input a;\n  assign b = a;\nendmodule\n"
    with pytest.raises(ValueError, match="no declaration of port.*b"):
        parse_ports(text)
    with pytest.raises(ValueError, match="module 'x' not found"):
        parse_ports(text, "x")
    widths = "module m(a, b);\n  input [7:0] a;\n  output [0:3] b;\nendmodule\n"
    assert [(p.name, p.direction, p.width) for p in parse_ports(widths)] == \
        [("a", "input", 8), ("b", "output", 4)]


# ---- timing in simulation ------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_timing():
    return measure(SMALL, "axi-lite")


def test_measured_latency_throughput_and_backpressure(small_timing):
    """What the simulation counts, against the RTL's own constants and AXI-Stream's rules."""
    r = small_timing["results"]
    assert r["latency"]["clocks"] == [LATENCY]
    full = r["throughput"]["sink_always_ready"]
    assert full["arrivals_accepted"] == full["departures_accepted"] == full["clocks_offered"]
    assert full["verdicts"] == full["verdict_clocks"] == full["clocks_offered"]
    assert full["verdicts_in_order"] and full["latency_clocks"] == [LATENCY]
    half = r["throughput"]["sink_ready_half"]
    # the sink takes a verdict in every other clock: arrivals follow it, plus the FIFO's fill
    assert half["clocks_offered"] // 2 <= half["arrivals_accepted"] \
        <= half["clocks_offered"] // 2 + FIFO_DEPTH
    assert half["verdicts"] == half["arrivals_accepted"] and half["verdicts_in_order"]
    bp = r["backpressure"]
    assert bp["arrivals_accepted_while_stalled"] == FIFO_DEPTH
    assert bp["arrival_tready_low_from_clock"] == FIFO_DEPTH
    assert bp["verdicts_delivered"] == bp["arrivals_accepted"]
    assert bp["verdict_held_while_stalled"]


def test_measured_reset_bus_and_commit(small_timing):
    r = small_timing["results"]
    # the flow vector is wiped out of reset: vec_bits + 3 clocks (QueueManager's docstring)
    assert r["reset"]["arrival_ready_clocks"] == SMALL.vec_bits + 3
    assert r["reset"]["departure_ready_clocks"] == 0
    assert r["reset"]["id_read"]["value"] == ID_VALUE
    # out of reset the register file holds the configuration's defaults and zero counters,
    # and STATUS says BUSY while the vector is wiped, and that the tables hold their
    # power-on defaults
    from fpq import Config
    from fpq.regmap import STATUS_BITS
    status = (1 << STATUS_BITS["BUSY"]) | (1 << STATUS_BITS["TABLES_DEFAULT"])
    assert r["reset"]["reads"] == {"id": ID_VALUE, "status": status,
                                   "arrivals": 0,
                                   "mode": Config(build=SMALL).registers()["mode"]}
    bus = r["bus"]
    assert (bus["write"]["bresp"], bus["read"]["value"]) == (0, 1)
    assert bus["partial_write"]["bresp"] == 2 and bus["after_partial_write"] == 1
    for label, written in (("commit_arrivals_flowing", 0), ("commit_idle", 1)):
        c = r[label]
        assert (c["readback"], c["rejected"]) == (written, False), label
        assert c["arrival_tready_low_clocks"] > 0
    # with arrivals in flight the commit waits for the pipeline to drain
    assert r["commit_arrivals_flowing"]["arrival_tready_low_clocks"] >= LATENCY
    assert r["commit_idle"]["arrival_tready_low_clocks"] < LATENCY


def test_measured_wishbone_ack():
    """The acks come when the core's documented response clocks say: 5 after a write's
    strobe, 6 after a read's (the register file's registered decode)."""
    from fpq_hdl.axi_core import FPQCore
    r = measure(SMALL, "wishbone")["results"]
    assert (FPQCore.WRITE_RESPONSE_CLOCKS, FPQCore.READ_RESPONSE_CLOCKS) == (5, 6)
    assert r["bus"] == {"wishbone_ack_clocks": [5, 6], "id": ID_VALUE, "readback": 1}


def test_wavedrom_lanes_gaps_and_data():
    trace = [{"_clock": c, "v": v, "d": d} for c, v, d in
             [(10, 0, None), (11, 1, "a"), (12, 1, "a"), (13, 1, "b"), (20, 1, "b"),
              (21, 0, None)]]
    d = wavedrom(trace, [("v", "v", "bit"), ("d", None, lambda row: row["d"])],
                 [(0, 3), (10, 11)], "t")
    lanes = {lane["name"]: lane for lane in d["signal"]}
    assert lanes["clk"]["wave"] == "p...|."
    assert lanes["clock"]["data"] == ["0", "1", "2", "3", "10", "11"]
    assert lanes["v"]["wave"] == "01..|0"
    assert (lanes["d"]["wave"], lanes["d"]["data"]) == ("x=.=|x", ["a", "b"])


# ---- the document --------------------------------------------------------------------------
def test_datasheet_is_current():
    """Regenerating the sections changes nothing (else run `fpq datasheet --write`). In a
    process of its own: the default build's export and simulation take a few hundred MiB,
    which a child process started later by this one would report as its own peak (Linux
    keeps ``ru_maxrss`` across fork and exec; test_trace measures a child's)."""
    import sys
    res = subprocess.run([sys.executable, "-m", "fpq.cli", "datasheet"], capture_output=True,
                         text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    text = DATASHEET.read_text()
    generated = {name: _section(res.stdout, name).lstrip("\n") for name in SECTIONS}
    for name in SECTIONS:
        assert _section(text, name).strip() == generated[name].strip(), \
            f"section {name} is stale: run `fpq datasheet --write`"
    assert replace_sections(text, generated) == text


def test_every_wavedrom_block_is_json_with_matching_lanes():
    import json
    text = DATASHEET.read_text()
    blocks = re.findall(r"```wavedrom\n(.*?)```", text, re.S)
    assert len(blocks) >= 4
    for block in blocks:
        d = json.loads(block)
        lengths = {len(lane["wave"]) for lane in d["signal"]}
        assert len(lengths) == 1, d["head"]
        for lane in d["signal"]:
            if "data" in lane:
                assert len(lane["data"]) == lane["wave"].count("="), lane["name"]


def test_write_refuses_a_file_without_markers_and_changes_nothing(tmp_path):
    target = tmp_path / "sheet.md"
    target.write_text("# sheet\n" + begin_marker("ports") + "\n" + end_marker("ports") + "\n")
    before = target.read_text()
    code, out, err = run(["datasheet", "--write", str(target)])
    assert code == 2 and "section 'payload': needs one" in err and "--write" in err
    assert target.read_text() == before
    code, out, err = run(["datasheet", "--records", str(tmp_path / "none")])
    assert code == 2 and "--records:" in err
    with pytest.raises(ValueError, match="section 'timing'"):
        check_markers(end_marker("timing") + begin_marker("timing"), ["timing"])


# ---- instantiation templates ---------------------------------------------------------------
def test_verilog_template_lints_against_the_exported_core(tmp_path):
    assert run(["verilog", "-o", str(tmp_path / "fpq_core.v"), *SMALL_ARGS])[0] == 0
    template = _code_block(_section(DATASHEET.read_text(), "verilog-template"), "verilog")
    sv = tmp_path / "fpq_core_example.sv"
    sv.write_text(template)
    files = [WAIVERS, tmp_path / "fpq_core_pkg.sv", tmp_path / "fpq_core.v", sv]
    res = _lint(*files, top="fpq_core_example")
    assert res.returncode == 0, res.stderr[-3000:]
    # the lint sees the template's mistakes: a port the core does not have, a port left out
    sv.write_text(template.replace(".s_axil_rready", ".s_axil_rreddy"))
    res = _lint(*files, top="fpq_core_example")
    assert res.returncode != 0 and "s_axil_rreddy" in res.stderr
    sv.write_text(re.sub(r",\n\s*\.s_axil_rready\s*\([^)]*\)", "", template))
    res = _lint(*files, top="fpq_core_example")
    assert res.returncode != 0 and "PINMISSING" in res.stderr


def test_verilog_template_connects_every_port():
    text, _ = core_verilog(SMALL, "wishbone")
    ports = parse_ports(text)
    template = verilog_template(ports)
    for p in ports:
        assert re.search(rf"\.{p.name}\s+\(", template), p.name


def test_amaranth_template_elaborates_and_gives_a_verdict():
    """The template in Amaranth's simulator: an arrival gets the golden model's verdict after
    the pipeline's latency, and the template's sink takes it."""
    from amaranth.sim import Simulator
    from fpq import QueueManager, Arrival, Config
    code = DATASHEET.read_text().split("<!-- amaranth template", 1)[1]
    namespace = {}
    exec(compile(_code_block(code, "python"), "DATASHEET.md", "exec"), namespace)
    design = namespace["QueueWithFPQ"](SMALL)
    assert isinstance(design.fpq, FPQCore) and design.fpq.bus == "axi-lite"
    sim = Simulator(design)
    sim.add_clock(1e-8)
    flow = pack_flow(0x0A000001, 0x0A000002, 1000, 80, 6)
    got = {}

    async def wait(ctx, signal, limit):
        clocks = 0
        while not ctx.get(signal) and clocks < limit:
            await ctx.tick()
            clocks += 1
        return clocks

    async def bench(ctx):
        got["ready"] = await wait(ctx, design.arrival_ready, 4 * SMALL.vec_bits)
        ctx.set(design.arrival.flow, flow)
        ctx.set(design.arrival.length, 1500)
        ctx.set(design.arrival_valid, 1)
        await ctx.tick()
        ctx.set(design.arrival_valid, 0)
        got["latency"] = 1 + await wait(ctx, design.verdict_valid, 4 * LATENCY)
        v = design.verdict
        got["verdict"] = tuple(ctx.get(f) for f in (v.seq, v.action, v.n, v.avg, v.prob))
        await ctx.tick()
        got["taken"] = not ctx.get(design.verdict_valid)

    sim.add_testbench(bench)
    sim.run()
    # clock 0 of the core's time base is the third clock with rst low (fpq verilog's header)
    model = QueueManager(Config(build=SMALL)).arrive(
        Arrival(ts=got["ready"] - 2, flow=flow, length=1500, ecn=False))
    assert got == {"ready": SMALL.vec_bits + 3, "latency": LATENCY, "taken": True,
                   "verdict": (0, model.action, model.n, model.avg, model.prob)}
    assert model.n == 1


# ---- FuseSoC -------------------------------------------------------------------------------
#: FuseSoC's file types for the files the core lists (CAPI2 reference).
_FILE_TYPES = {"verilogSource", "systemVerilogSource", "vlt"}


def _core_files(core):
    """``{path: file_type}`` of every fileset of a parsed CAPI2 ``core``."""
    out = {}
    for fileset in core["filesets"].values():
        for entry in fileset["files"]:
            (path, attrs), = entry.items() if isinstance(entry, dict) else ((entry, {}),)
            out[path] = attrs.get("file_type", fileset.get("file_type"))
    return out


def test_fusesoc_core_file_lists_what_fpq_verilog_writes(tmp_path):
    yaml = pytest.importorskip("yaml")
    text = CORE_FILE.read_text()
    assert text.startswith("CAPI=2:\n")
    core = yaml.safe_load(text)
    from fpq.paths import version
    vendor, library, name, ver = core["name"].split(":")
    assert (name, ver) == ("fpq_core", version())
    files = _core_files(core)
    assert set(files.values()) <= _FILE_TYPES, files
    # the files a user has after `fpq verilog` in a checkout: the generated ones written
    # by the command, the others the checkout's own
    for path in files:
        if not path.startswith("build/"):
            assert (ROOT / path).is_file(), path
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / path, tmp_path / path)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert run(["verilog", *SMALL_ARGS])[0] == 0       # default -o build/fpq_core.v
    finally:
        os.chdir(cwd)
    missing = [p for p in files if not (tmp_path / p).is_file()]
    assert missing == []
    # every target's toplevel is the module `fpq verilog` wrote
    module = re.search(r"^module (\w+)\(", (tmp_path / "build/fpq_core.v").read_text(), re.M)[1]
    for target in core["targets"].values():
        assert target["toplevel"] == module
    # the lint target's files, in its order, lint clean (what FuseSoC's Verilator runs)
    lint = core["targets"]["lint"]
    assert lint["default_tool"] == "verilator"
    assert "-Wall" in lint["tools"]["verilator"]["verilator_options"]
    ordered = [tmp_path / p for fs in lint["filesets"]
               for p in _core_files({"filesets": {fs: core["filesets"][fs]}})]
    ordered.sort(key=lambda p: p.suffix != ".vlt")          # FuseSoC passes .vlt files first
    res = _lint(*ordered, top=lint["toplevel"])
    assert res.returncode == 0, res.stderr[-3000:]


def test_resources_rows_come_from_the_records():
    from fpq_hdl.datasheet import _resources_markdown
    synth = {"kind": "synth", "date": "2030-01-02", "commit": "abc1234",
             "command": "python -m fpq_hdl.synth --component axi_core --seeds 1,2",
             "results": {"component": "axi_core", "device": "LFE5U-85F", "speed": 6,
                         "vec_bits": 1024, "table_depth": 256,
                         "fmax_mhz": {"min": 101.25, "median": 102.5, "max": 103.75,
                                      "routed": 2, "runs": 2},
                         "utilization": {"TRELLIS_COMB": 11, "TRELLIS_FF": 22,
                                         "TRELLIS_RAMW": 33, "DP16KD": 4, "MULT18X18D": 5}}}
    loop = dict(synth, results=dict(synth["results"], component="loop_timer"))
    text = "\n".join(_resources_markdown({"core-a": synth, "loop-b": loop}))
    assert ("| `core-a` | the core's top (`FPQCore`) with the project's Lattice primitives | "
            "LFE5U-85F | 6 | 1024 / 256 | 101.2 / 102.5 / 103.8 | 2 of 2 | 11 | 22 | 33 | 4 | "
            "5 |") in text
    assert "- [`core-a`](benchmarks/core-a.json) (2030-01-02): `python -m fpq_hdl.synth " \
           "--component axi_core --seeds 1,2`" in text
    assert "abc1234" not in text                # the commit is the record's to say
    assert "loop-b" not in text                 # a component's record is not the core's
    # no plain-flow record: the datasheet says so, and how to make one
    assert "has no plain-flow record yet" in text


def test_the_exported_file_s_plain_flow_rows_lead_the_resources():
    """A vendor-flow record (the file a user synthesises) is a row of its own table, before
    the project's own synthesis, with its seeds, minimum, resources and digest; its command
    is listed."""
    from fpq_hdl.datasheet import _resources_markdown
    vendor = {"kind": "vendor-flow", "date": "2030-01-03", "commit": None,
              "command": "python -m fpq_hdl.vendor_flow --family ecp5 --seeds 1,2",
              "results": {"family": "ecp5", "device": "LFE5U-85F, CABGA381", "speed": 6,
                          "bus": "wishbone", "target": "ecp5",
                          "build": {"vec_bits": 65536, "table_depth": 1024},
                          "seeds": {"1": 151.0, "2": 149.0},
                          "fmax_mhz": {"min": 149.0, "median": 151.0, "max": 151.0},
                          "resources": {"LUT": 10, "FF": 20, "BRAM": 3, "DSP": 4},
                          "fits": True, "rtl_digest": "f" * 64}}
    text = "\n".join(_resources_markdown({"core-ecp5-wishbone": vendor}))
    row = next(l for l in text.splitlines() if l.startswith("| `core-ecp5-wishbone`"))
    assert "| 6 | wishbone | ecp5 | 65536 / 1024 | 151.0, 149.0 | **149.0** / 151.0 / 151.0 |" \
        in row and "| 10 LUT, 20 FF, 3 BRAM, 4 DSP | yes | `ffffffffffff` |" in row
    assert "has no plain-flow record yet" not in text
    assert text.index("core-ecp5-wishbone`") < text.index("Synthesised alone")
    assert "- [`core-ecp5-wishbone`](benchmarks/core-ecp5-wishbone.json) (2030-01-03): " \
           "`python -m fpq_hdl.vendor_flow --family ecp5 --seeds 1,2`" in text