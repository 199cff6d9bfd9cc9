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
GOOD_SEED = 0x3f8a_51c2_97d0_6e4b
SMALL = ["--vec-bits", "64", "--table-depth", "16"]


def _keys(path):
    """``{name: value}`` of the field lines of a keys include file (``//   name=value``)."""
    return dict(line[len("//   "):].split("=") for line in path.read_text().splitlines()
                if line.startswith("//   "))


def _macros(path):
    """``{macro: value}`` of the ``define`` lines of a keys include file (the guard left out)."""
    return dict(m.groups() for m in re.finditer(r"^`define (\w+) (\S+)$", path.read_text(),
                                                re.M))


def _mode(path):
    import os
    return os.stat(path).st_mode & 0o777


def test_each_export_draws_its_power_on_keys_into_a_private_include_file(tmp_path, capsys):
    """Without ``--key`` every export draws its power-on keys and seeds from the OS (never
    the public defaults, new ones each export) into NAME_keys.vh (mode 0600) next to the
    output, whose macros the Verilog's reset values are; the Verilog (mode 0644), the
    package and what the command prints hold none of them, and two exports' Verilog is the
    same byte for byte."""
    from fpq.fields import RSS_KEY, MIX_KEY_DEFAULT
    from fpq.keys import key_weakness
    drawn, texts = [], []
    for tag in ("a", "b"):
        out = tmp_path / tag / "core.v"
        assert main(["verilog", "-o", str(out), *SMALL]) == 0
        said = capsys.readouterr()
        keys_file = tmp_path / tag / "fpq_core_keys.vh"
        assert _mode(keys_file) == 0o600
        assert _mode(out) == 0o644 and _mode(tmp_path / tag / "fpq_core_pkg.sv") == 0o644
        keys = _keys(keys_file)
        assert sorted(keys) == ["hash_key", "hash_mix_key", "seed_clear", "seed_decide"]
        macros = _macros(keys_file)
        assert sorted(macros) == ["FPQ_CORE_HASH_KEY", "FPQ_CORE_HASH_MIX_KEY",
                                  "FPQ_CORE_RNG_CLEAR_STATE", "FPQ_CORE_RNG_DECIDE_STATE"]
        assert macros["FPQ_CORE_HASH_KEY"] == f"160'h{keys['hash_key']}"
        text = out.read_text()
        assert '`include "fpq_core_keys.vh"' in text
        assert re.search(r"shadow_hash_key\s+= `FPQ_CORE_HASH_KEY;", text)
        for value in [*keys.values(), *(v.split("'h")[1] for v in macros.values())]:
            assert value.lower() not in text.lower()
            assert value not in said.out + said.err
            assert value not in (tmp_path / tag / "fpq_core_pkg.sv").read_text()
        assert str(keys_file) in said.err and "hash_mix_key: power-on value drawn" in said.err
        assert "seed_decide: power-on value drawn" in said.err
        drawn.append(keys)
        texts.append(text)
    assert texts[0] == texts[1]
    for name in drawn[0]:
        assert drawn[0][name] != drawn[1][name], name
    for keys in drawn:
        assert keys["hash_key"] != RSS_KEY.hex() and keys["hash_mix_key"] != MIX_KEY_DEFAULT.hex()
        assert key_weakness(bytes.fromhex(keys["hash_key"])) is None
        assert int(keys["seed_decide"]) >= 1 << 32 and int(keys["seed_clear"]) >= 1 << 32


def test_given_power_on_keys_are_in_the_include_file_only(tmp_path):
    """``--key``, ``--mix-key`` and the seeds set the power-on values: the include file has
    exactly them, the Verilog none of them and is the default export's."""
    texts = []
    for tag, keys in (("a", ["--key", GOOD_KEY, "--mix-key", GOOD_MIX, "--seed-decide",
                             str(GOOD_SEED), "--seed-clear", str(GOOD_SEED + 1)]), ("b", [])):
        out = tmp_path / tag / "core.v"
        assert main(["verilog", "-o", str(out), "--name", "qm", *keys, *SMALL]) == 0
        texts.append(out.read_text())
    assert _keys(tmp_path / "a" / "qm_keys.vh") == {
        "hash_key": GOOD_KEY, "hash_mix_key": GOOD_MIX, "seed_decide": str(GOOD_SEED),
        "seed_clear": str(GOOD_SEED + 1)}
    assert texts[0] == texts[1]
    assert GOOD_KEY not in texts[0] and GOOD_MIX not in texts[0]


def test_embed_keys_puts_them_in_the_verilog_written_privately_with_a_warning(tmp_path,
                                                                                capsys):
    """``--embed-keys``: the keys' definitions in the Verilog itself, which is then mode
    0600 and named in a warning; no include file."""
    out = tmp_path / "core.v"
    assert main(["verilog", "-o", str(out), "--key", GOOD_KEY, "--mix-key", GOOD_MIX,
                 "--embed-keys", *SMALL]) == 0
    err = capsys.readouterr().err
    text = out.read_text()
    assert _mode(out) == 0o600 and _mode(tmp_path / "fpq_core_pkg.sv") == 0o644
    assert f"`define FPQ_CORE_HASH_KEY 160'h{GOOD_KEY}" in text and GOOD_MIX in text
    assert "`include" not in text and not (tmp_path / "fpq_core_keys.vh").exists()
    assert f"warning: {out} holds secret values (--embed-keys" in err


def test_a_fixed_key_makes_the_verilog_private(tmp_path, capsys):
    """A key the build fixes is folded into the netlist's logic: the Verilog is written
    mode 0600 with a warning."""
    out = tmp_path / "core.v"
    assert main(["verilog", "-o", str(out), "--fix", f"hash_key={GOOD_KEY}", *SMALL]) == 0
    assert _mode(out) == 0o600
    assert f"warning: {out} holds secret values (--fix" in capsys.readouterr().err


def test_the_keys_reach_the_netlist_through_the_include(tmp_path):
    """The core and its include file lint clean with the include's folder given (-I), and
    the placeholder the netlist was made from is nowhere in it: every reset value of a key
    register is its macro."""
    import subprocess
    from pathlib import Path
    from fpq import Build
    from fpq_hdl.axi_core import _placeholders
    out = tmp_path / "core.v"
    assert main(["verilog", "-o", str(out), "--key", GOOD_KEY, *SMALL]) == 0
    waivers = Path(__file__).resolve().parents[1] / "verilator_waivers.vlt"
    res = subprocess.run(["verilator", "--lint-only", "-Wall", f"-I{tmp_path}", str(waivers),
                          str(tmp_path / "fpq_core_pkg.sv"), str(out)], capture_output=True,
                         text=True, cwd="/")
    assert res.returncode == 0, res.stderr[-3000:]
    res = subprocess.run(["verilator", "--lint-only", str(out)], capture_output=True,
                         text=True, cwd="/")
    assert res.returncode != 0 and "fpq_core_keys.vh" in res.stderr
    fake = dict(_placeholders(Build(vec_bits=64, table_depth=16,
                                    power_on_keys={"hash_key": bytes.fromhex(GOOD_KEY)}))
                .power_on_keys)["hash_key"]
    assert fake.hex() not in out.read_text().lower()


@pytest.mark.parametrize("args, message", [
    (["--key", "00" * 20], "--key: 0000000000000000000000000000000000000000 is a weak key: "
                           "the 32-bit key window at key bit 0 has 0 set bits"),
    (["--key", "6d5a56da255b0ec24167253d43a38fb0d0ca2bcb"],
     "--key: 6d5a56da255b0ec24167253d43a38fb0d0ca2bcb is a weak key: it is the public "
     "Microsoft RSS key"),
    (["--key", "ab" * 10], "--key: must be exactly 20 bytes (40 hex digits)"),
    (["--key", "zz"], "--key: 'zz' is not hex bytes (allowed: exactly 20 bytes, 40 hex "
                      "digits)"),
    (["--mix-key", "ff" * 12], "--mix-key: ffffffffffffffffffffffff is a weak key: round "
                               "key k0 has 32 set bits; each 32-bit round key must have 8 "
                               "to 24"),
    (["--mix-key", "243f6a8885a308d313198a2e"], "--mix-key: 243f6a8885a308d313198a2e is a "
     "weak key: it is Config's public default (the digits of pi)"),
    (["--mix-key", "00" * 11 + "01"], "--mix-key: 000000000000000000000001 is a weak key: "
                                      "round key k0 has 0 set bits"),
    (["--seed-decide", "7"], "--seed-decide: 7 is a weak seed: it is below 0x100000000"),
    (["--seed-clear", "x"], "--seed-clear: 'x' is not an integer"),
    (["--embed-keys", "--bus", "none"], "--embed-keys: only with a register bus"),
    (["--key", GOOD_KEY, "--bus", "none"], "--key: only with a register bus"),
    (["--key", GOOD_KEY, "--fix", "hash_key=" + "3c" * 20],
     "--key: this build fixes hash_key (Build.fixed, --fix) to another key"),
], ids=["zeros", "rss", "length", "hex", "mix", "mix-pi", "mix-one-bit", "seed-low",
        "seed-text", "embed-no-bus", "no-bus", "fixed"])
def test_bad_power_on_keys_are_refused_and_nothing_is_written(tmp_path, capsys, args, message):
    assert main(["verilog", "-o", str(tmp_path / "x.v"), *SMALL, *args]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert list(tmp_path.iterdir()) == []


def test_the_header_says_tready_never_depends_on_tvalid(tmp_path):
    """The exported Verilog's header states the core's AXI-Stream contract as the datasheet
    and the core do: ``tready`` never depends on ``tvalid`` (it said it may, once)."""
    out = tmp_path / "core.v"
    assert main(["verilog", "-o", str(out), "--no-package", *SMALL]) == 0
    header = out.read_text().split("\nmodule ")[0]
    assert "tready never depends on tvalid" in header
    assert "may depend" not in header
