"""`fpq verilog`: one standalone Verilog file with the documented port list."""
import re

import pytest

from fpq.cli import main
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
    from fpq.keys import random_key
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


def test_the_command_s_bus_and_target_choices_are_the_core_s():
    from fpq_hdl import cli, axi_core
    assert cli.BUSES == axi_core.BUSES
    assert cli.TARGETS == axi_core.TARGETS


# ---- power-on keys (Build.power_on_keys) ------------------------------------------------------
#: Keys typed once, not drawn by the code under test: they pass ``fpq.keys.check_key``.
GOOD_KEY = "3c7a0d5be2914f68a1c7e03b5d92f4a6087e1bc9"
GOOD_MIX = "5e0c93a1d27b48f6a9e3b170"
SMALL = ["--vec-bits", "64", "--table-depth", "16"]


def _keys(path):
    """``{name: hex}`` of a keys file."""
    return dict(line.split("=") for line in path.read_text().splitlines())


def test_each_export_draws_its_power_on_keys_and_records_them_privately(tmp_path, capsys):
    """Without ``--key`` every export holds power-on keys drawn from the OS: never the public
    defaults, a new pair each export, recorded in NAME_keys.txt (mode 0600) next to the
    output, and in the netlist (the register file's reset values); the package, the header
    and what the command prints do not have them."""
    import os
    from fpq.fields import RSS_KEY, MIX_KEY_DEFAULT
    from fpq.keys import key_weakness
    drawn = []
    for tag in ("a", "b"):
        out = tmp_path / tag / "core.v"
        assert main(["verilog", "-o", str(out), *SMALL]) == 0
        said = capsys.readouterr()
        keys_file = tmp_path / tag / "fpq_core_keys.txt"
        assert os.stat(keys_file).st_mode & 0o777 == 0o600
        keys = _keys(keys_file)
        assert sorted(keys) == ["hash_key", "hash_mix_key"]
        text = out.read_text()
        header, netlist = text.split("\nmodule ")
        for value in keys.values():
            assert value in netlist and value not in header
            assert value not in said.out + said.err
            assert value not in (tmp_path / tag / "fpq_core_pkg.sv").read_text()
        assert str(keys_file) in said.err and "hash_mix_key: power-on value drawn" in said.err
        drawn.append(keys)
    assert drawn[0]["hash_key"] != drawn[1]["hash_key"]
    assert drawn[0]["hash_mix_key"] != drawn[1]["hash_mix_key"]
    for keys in drawn:
        assert keys["hash_key"] != RSS_KEY.hex() and keys["hash_mix_key"] != MIX_KEY_DEFAULT.hex()
        assert key_weakness(bytes.fromhex(keys["hash_key"])) is None


def test_given_power_on_keys_are_the_netlist_s_and_recorded(tmp_path):
    """``--key`` and ``--mix-key`` set the power-on keys: the export is then reproducible
    (the same file twice), and the keys file has exactly them."""
    texts = []
    for tag in ("a", "b"):
        out = tmp_path / tag / "core.v"
        assert main(["verilog", "-o", str(out), "--name", "qm", "--key", GOOD_KEY,
                     "--mix-key", GOOD_MIX, *SMALL]) == 0
        assert _keys(tmp_path / tag / "qm_keys.txt") == {"hash_key": GOOD_KEY,
                                                         "hash_mix_key": GOOD_MIX}
        texts.append(out.read_text())
    assert texts[0] == texts[1] and GOOD_KEY in texts[0] and GOOD_MIX in texts[0]


@pytest.mark.parametrize("args, message", [
    (["--key", "00" * 20], "--key: 0000000000000000000000000000000000000000 is a weak key: "
                           "the 32-bit key window at key bit 0 has 0 set bits"),
    (["--key", "6d5a56da255b0ec24167253d43a38fb0d0ca2bcb"],
     "--key: 6d5a56da255b0ec24167253d43a38fb0d0ca2bcb is a weak key: it is the public "
     "Microsoft RSS key"),
    (["--key", "ab" * 10], "--key: must be exactly 20 bytes (40 hex digits)"),
    (["--key", "zz"], "--key: 'zz' is not hex bytes (allowed: exactly 20 bytes, 40 hex "
                      "digits)"),
    (["--mix-key", "ff" * 12], "--mix-key: ffffffffffffffffffffffff is a weak key: all its "
                               "bits are equal"),
    (["--key", GOOD_KEY, "--bus", "none"], "--key: only with a register bus"),
    (["--key", GOOD_KEY, "--fix", "hash_key=" + "3c" * 20],
     "--key: this build fixes hash_key (Build.fixed, --fix) to another key"),
], ids=["zeros", "rss", "length", "hex", "mix", "no-bus", "fixed"])
def test_bad_power_on_keys_are_refused_and_nothing_is_written(tmp_path, capsys, args, message):
    assert main(["verilog", "-o", str(tmp_path / "x.v"), *SMALL, *args]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert list(tmp_path.iterdir()) == []
