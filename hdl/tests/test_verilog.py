"""`fpq verilog`: one standalone Verilog file with the documented port list."""
import re

import pytest

from fpq_app.cli import main
from fpq_hdl.layouts import ARRIVAL, VERDICT


def test_verilog_export_has_the_top_and_its_port_list(tmp_path):
    out = tmp_path / "core.v"
    assert main(["verilog", "-o", str(out), "--vec-bits", "64", "--table-depth", "16"]) == 0
    text = out.read_text()
    assert re.search(r"^module fpq_core\(", text, re.M)
    # one flat module: no submodule, so no submodule port named after a keyword
    assert text.count("\nmodule ") == 1 and "endmodule" in text
    header = text.split("\nmodule ")[0]
    # AXI-Stream tdata is whole bytes: the payload rounded up to a multiple of 8 bits
    assert f"input  [{-(-ARRIVAL.size // 8) * 8 - 1}:0] s_axis_arrival_tdata" in header
    assert f"output [{-(-VERDICT.size // 8) * 8 - 1}:0] m_axis_verdict_tdata" in header
    for field in ("flow", "length", "ecn", "seq", "prob", "action"):
        assert re.search(rf"\] {field}$", header, re.M), field
    # the contract's line-rate ports: no timestamps (the queue manager keeps its own time),
    # no raw configuration port behind a bus
    for gone in ("ts", "dep_ts", "config", "cfg", "rate_we", "arrivals__payload"):
        assert not re.search(rf"\b(input|output)\b.*\b{gone}\b", text), gone
    for port in ("s_axil_awaddr", "s_axil_rdata", "s_axis_departure_tready",
                 "m_axis_verdict_tuser", "clk", "rst"):
        assert re.search(rf"^//  (input |output) \[\s*\d+:0\] {port}$", header, re.M), port
    # every port named in the header is a port of the module
    for name in re.findall(r"^//  (?:input |output) \[\s*\d+:0\] (\w+)$", header, re.M):
        assert re.search(rf"\b(input|output)\b.*\b{name}\b", text), name
    assert (tmp_path / "fpq_core_pkg.sv").exists()


def test_bad_build_argument_names_the_field(tmp_path, capsys):
    assert main(["verilog", "-o", str(tmp_path / "x.v"), "--vec-bits", "1000"]) == 2
    assert "vec_bits: 1000 must be a power of two in [64, 65536]" in capsys.readouterr().err
    assert not (tmp_path / "x.v").exists() and not (tmp_path / "fpq_core_pkg.sv").exists()


def test_fixed_fields_are_listed_in_the_header(tmp_path):
    out = tmp_path / "core.v"
    # avg_tau_s and tick_hz fix both registers derived from them: 2**-9 per sample every
    # 100 clocks at 1e8 Hz is a time constant of 51,150 clocks
    from fpq.queue_averager import ewma_time_constant
    tau = ewma_time_constant(9, 100) / 1e8
    assert main(["verilog", "-o", str(out), "--vec-bits", "64", "--table-depth", "16",
                 "--fix", f"avg_tau_s={tau!r}", "--fix", "mode=fpq", "--fix",
                 "tick_hz=1e8"]) == 0
    header = out.read_text().split("\nmodule ")[0]
    assert f"// Fixed at build time (Build.fixed): avg_tau_s={tau!r}, mode=fpq, " \
           "tick_hz=100000000.0." in header
    assert "// Constants (read-only registers; the raw cfg port's field is ignored): " \
           "mode=0x2, wq_shift=0x9, avg_sample_period=0x64." in header


def test_a_fixed_key_is_not_written_into_the_header(tmp_path):
    out = tmp_path / "core.v"
    from fpq.config import random_key
    key = random_key().hex()
    assert main(["verilog", "-o", str(out), "--vec-bits", "64", "--table-depth", "16",
                 "--fix", f"hash_key={key}"]) == 0
    header = out.read_text().split("\nmodule ")[0]
    assert "hash_key=(secret)" in header
    # neither the hex of the field nor any word of the register's value
    assert key not in header.lower()
    value = int(key, 16)
    words = {f"{(value >> (32 * i)) & 0xFFFFFFFF:08x}" for i in range(5)}
    assert not any(w in header.lower() for w in words)


@pytest.mark.parametrize("fix, message", [
    ("avg_tau_s=x", "--fix avg_tau_s: 'x' is not a number"),
    ("avg_tau_s=-1", "fixed: avg_tau_s: -1.0 is out of range [0.0, 10000.0] s"),
    ("v_max=x", "--fix v_max: 'x' is not an integer"),
    # a register derived from fields (avg_tau_s, tick_hz) is not a field
    ("wq_shift=9", "--fix: 'wq_shift=9' must be FIELD=VALUE with FIELD one of mode, ecn,"),
    ("ecn=maybe", "--fix ecn: 'maybe' is not true or false"),
    ("nope=1", "--fix: 'nope=1' must be FIELD=VALUE with FIELD one of mode, ecn,"),
])
def test_bad_fixed_field_is_named_and_nothing_is_written(tmp_path, capsys, fix, message):
    assert main(["verilog", "-o", str(tmp_path / "x.v"), "--fix", fix]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.v").exists()


def test_the_command_s_bus_choices_are_the_core_s():
    from fpq_hdl import cli, axi_core
    assert cli.BUSES == axi_core.BUSES
