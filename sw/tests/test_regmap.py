"""The register map: generated files are current, addresses are sane, the commit check;
``fpq regmap``'s build options, output paths and SystemRDL export."""
import json
import os

import pytest

from fpq import Config, Build
from cli_run import run, build_args
from fpq.regmap import GENERATED, registers, tables, check_registers

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.mark.parametrize("rel", sorted(GENERATED))
def test_generated_files_are_current(rel):
    with open(os.path.join(ROOT, rel)) as f:
        committed = f.read()
    assert committed == GENERATED[rel](), f"{rel} is stale: run `make regmap`"


@pytest.mark.parametrize("build", [Build(), Build(vec_bits=65536, table_depth=65536),
                                   Build(vec_bits=64, table_depth=16)])
def test_registers_do_not_overlap_and_are_aligned(build):
    spans = []
    for r in registers(build):
        assert r.offset % 4 == 0
        if r.words > 1:
            assert r.offset % (4 * r.words) == 0 or r.kind == "counter"
        spans.append((r.offset, r.offset + 4 * r.words, r.name))
    for t in tables(build):
        spans.append((t.offset, t.offset + 4 * t.depth, t.name))
    spans.sort()
    for (a0, a1, an), (b0, b1, bn) in zip(spans, spans[1:]):
        assert a1 <= b0, f"{an} overlaps {bn}"
    assert len({r.name for r in registers(build)}) == len(registers(build))


def test_defaults_pass_the_commit_check_and_bad_values_name_their_register():
    regs = registers()
    values = Config().registers()
    assert check_registers(values) is None
    idx = {r.name: i for i, r in enumerate(regs)}
    for name, bad in (("mode", 3), ("v_max", 0), ("v_max", 8193), ("wq_shift", 17),
                      ("avg_sample_period", 3), ("avg_sample_period", 1 << 32),
                      ("red_max_p", (1 << 32) + 1), ("clear_period", 5),
                      ("rekey_hold", 1 << 47)):
        v = dict(values, **{name: bad})
        assert check_registers(v) == idx[name], name
    # max_th below min_th + 1.0 is rejected on max_th
    v = dict(values, red_min_th=10 << 16, red_max_th=(10 << 16) + 100)
    assert check_registers(v) == idx["red_max_th"]


def test_every_config_register_default_is_in_its_range():
    for r in registers():
        if r.kind == "config":
            assert r.lo <= r.reset <= r.hi, r.name


def test_c_header_compiles_and_agrees_with_the_json_map(tmp_path):
    import json
    import shutil
    import subprocess
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler on PATH")
    with open(os.path.join(ROOT, "sw/generated/regmap.json")) as f:
        regmap = json.load(f)
    src = tmp_path / "check.c"
    lines = ['#include <stdio.h>', '#include "fpq_regs.h"', "int main(void) {"]
    for r in regmap["registers"]:
        n = r["name"].upper()
        lines.append(f'  printf("{r["name"]} %u %u %u\\n", (unsigned)FPQ_REG_{n}, '
                     f"(unsigned)FPQ_REG_{n}_WIDTH, (unsigned)FPQ_REG_{n}_INDEX);")
    lines += ["  return 0;", "}"]
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "check"
    subprocess.run([cc, "-std=c99", "-Wall", "-Werror", "-I", os.path.join(ROOT, "sw/generated"),
                    str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    for line, r in zip(out, regmap["registers"]):
        assert line.split() == [r["name"], str(r["offset"]), str(r["width"]), str(r["index"])]


def _alternative(field):
    """A valid value of ``field`` other than its default."""
    from fpq.drop_probability import Mode
    if field.type == "enum":
        return next(m.name for m in Mode if m.name != field.default)
    if field.type == "bool":
        return not field.default
    if field.type == "bytes":                 # the default build's (hash_key's is callable)
        default = field.default(Build()) if callable(field.default) else field.default
        return bytes(b ^ 0x5A for b in default)
    if field.name == "v_max":
        return 4096
    if field.name == "n_cap":
        return 1000
    return field.default * 1.5 if field.type == "float" else field.default - 1 or 3


def test_register_sources_are_exactly_the_fields_that_change_it():
    """``RegisterSpec.sources`` (which fields a register is computed from) decides which
    registers a build can fix; every field changed on its own must change exactly registers
    listing it."""
    from fpq.fields import FIELDS
    from fpq.register_specs import CONFIG_REGISTERS
    base = Config(tick_hz=100e6)
    raw = base.registers()
    assert [r.name for r in CONFIG_REGISTERS] == list(raw)
    for f in FIELDS:
        changed = base.replace(**{f.name: _alternative(f)}).registers()
        moved = {name for name in raw if changed[name] != raw[name]}
        listed = {r.name for r in CONFIG_REGISTERS if f.name in r.sources}
        # a register may keep its value by rounding (e.g. wq_shift when avg_tau_s changes),
        # never move without listing the field
        assert moved <= listed, (f.name, moved - listed)
        if f.kind == "reg" or f.name.startswith("seed"):
            assert moved, f.name
        if f.kind == "float":                     # float-model parameters: no register
            assert not listed and not moved, f.name


def test_a_register_whose_fields_are_all_fixed_is_a_read_only_constant():
    import json
    from fpq.regmap import to_json, BUILD_FIXED_BIT
    b = Build(fixed={"avg_tau_s": 1e-3, "tick_hz": 24e6, "pkt_time_s": 1e-6,
                     "t_clear_s": 2.0, "hash_key": bytes(range(20))})
    raw = Config(build=b).registers()
    regs = {r.name: r for r in registers(b)}
    fixed = {n for n, r in regs.items() if r.kind == "fixed"}
    # the averager's two registers come from avg_tau_s and tick_hz alone; clear_period needs
    # v_max too, rekey_hold its own field: both stay configurable; pkt_time_s is no register
    assert fixed == {"wq_shift", "avg_sample_period", "hash_key"}
    assert (raw["wq_shift"], raw["avg_sample_period"]) == (9, 47)    # 24,000 clocks / 511.5
    for n in fixed:
        # a fixed key is neither writable nor readable: its access stays "secret"
        assert (regs[n].access, regs[n].reset) == ("secret" if n == "hash_key" else "ro",
                                                   raw[n])
    assert regs["clear_period"].kind == regs["rekey_hold"].kind == "config"
    # same addresses as the build without fixed fields: host software keeps its map
    assert {n: r.offset for n, r in regs.items()} == \
        {r.name: r.offset for r in registers(Build())}
    assert regs["build"].reset >> BUILD_FIXED_BIT & 1
    assert not registers(Build())[1].reset >> BUILD_FIXED_BIT & 1
    # the generated map does not give the build's key away
    doc = json.loads(to_json(b))
    assert doc["build"]["fixed"]["hash_key"] == "(secret)"
    assert [r["reset"] for r in doc["registers"] if r["name"] == "hash_key"] == ["(secret)"]
    assert bytes(range(20)).hex() not in to_json(b)
    # the commit check looks at configurable registers only
    assert check_registers(raw, b) is None




# ---- fpq regmap ------------------------------------------------------------------------
def test_regmap_writes_a_build_s_files_relative_to_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["regmap", "--vec-bits", "64", "--table-depth", "16", "--fix",
                        "mode=red", "--out", "map"])
    assert code == 0
    assert sorted(os.listdir(tmp_path / "map")) == ["REGISTERS.md", "fpq_regs.h",
                                                    "regmap.json"]
    doc = json.loads((tmp_path / "map" / "regmap.json").read_text())
    assert doc["build"] == {"vec_bits": 64, "table_depth": 16, "avg_delay": 14,
                            "hash_input": "5-tuple", "hash_mix": True, "flow_key": "ipv4",
                            "fixed": {"mode": "red"}}
    regs = {r["name"]: r for r in doc["registers"]}
    assert regs["v_max"]["hi"] == 64 and regs["mode"]["kind"] == "fixed"
    assert "#define FPQ_RATE_TABLE_DEPTH 16u" in (tmp_path / "map" / "fpq_regs.h").read_text()
    assert "vec_bits 64, table_depth 16" in (tmp_path / "map" / "REGISTERS.md").read_text()
    code, out, _ = run(["regmap", "--format", "markdown", "-o", "one/R.md"])
    assert code == 0 and (tmp_path / "one" / "R.md").read_text().startswith("# Register map")


@pytest.mark.parametrize("argv, fragment", [
    (["--vec-bits", "64"], "--out: required with a build other than the default"),
    (["--format", "json"], "-o: required with --format json"),
    (["--format", "json", "-o", "x.json", "--out", "d"], "--out: only with --format all"),
    (["-o", "x.json"], "-o: names one file"),
    (["--vec-bits", "63", "--out", "d"], "vec_bits: 63 must be a power of two in [64, 65536]"),
])
def test_regmap_refuses_bad_arguments_and_writes_nothing(tmp_path, monkeypatch, argv,
                                                         fragment):
    monkeypatch.chdir(tmp_path)
    generated = {rel: os.stat(os.path.join(ROOT, rel)).st_mtime_ns for rel in GENERATED}
    code, _, err = run(["regmap", *argv])
    assert code == 2 and fragment in err, err
    assert os.listdir(tmp_path) == []
    assert {rel: os.stat(os.path.join(ROOT, rel)).st_mtime_ns for rel in GENERATED} == \
        generated


def test_regmap_without_options_writes_the_checkout_s_files(tmp_path):
    """What ``make regmap`` runs: the default build's files at their places in the checkout
    (here a copy's root), the committed files' contents."""
    from fpq.regmap import write_all
    written = write_all(root=str(tmp_path))
    assert sorted(os.path.relpath(p, tmp_path) for p in written) == sorted(GENERATED)
    for rel in GENERATED:
        with open(os.path.join(ROOT, rel)) as f:
            assert (tmp_path / rel).read_text() == f.read(), rel


@pytest.mark.parametrize("build", [Build(), Build(vec_bits=64, table_depth=16, fixed={
    "hash_key": bytes(range(20)), "mode": "red", "seed_clear": 3})], ids=["default", "fixed"])
def test_systemrdl_export_compiles_and_describes_the_map(tmp_path, build):
    """systemrdl-compiler (PyPI) compiles the export; every register's address, width,
    reset value and software access, and every table, are those of ``fpq.regmap``."""
    systemrdl = pytest.importorskip(
        "systemrdl", reason="systemrdl-compiler is not installed (pip install "
                            "systemrdl-compiler): the SystemRDL export is not compiled")
    from systemrdl.node import RegNode, MemNode
    path = tmp_path / "fpq.rdl"
    assert run(["regmap", "--format", "systemrdl", "-o", str(path), *build_args(build)])[0] == 0
    compiler = systemrdl.RDLCompiler()
    compiler.compile_file(str(path))
    top = compiler.elaborate().top
    found, mems = {}, {}
    for node in top.descendants():
        if isinstance(node, MemNode):
            mems[node.inst_name] = (node.absolute_address, node.get_property("mementries"))
        if not isinstance(node, RegNode):
            continue
        fields = list(node.fields())
        value = sum((f.get_property("reset") or 0) << f.lsb for f in fields)
        width = max(f.msb for f in fields) + 1
        writable = any(f.is_sw_writable for f in fields)
        found[node.inst_name] = (node.absolute_address, width, value, writable)
    want = {}
    for r in registers(build):
        writable = r.access in ("rw", "wo", "rc") or (r.access == "secret" and
                                                      r.kind == "config")
        # a secret register's reset is left out (0): a fixed key's, or one each export
        # draws (docs/REGISTERS.md "per export")
        reset = 0 if r.secret else r.reset
        if r.name in ("hash_key", "hash_mix_key"):     # 160, 96 bits: a register a word
            for w in range(r.words):
                want[f"{r.name}_{w}"] = (r.offset + 4 * w, 32,
                                         (reset >> (32 * w)) & 0xFFFFFFFF, writable)
        else:
            want[r.name] = (r.offset, r.width, reset, writable)
    assert found == want
    assert mems == {t.name: (t.offset, t.depth) for t in tables(build)}


def test_place_puts_registers_some_builds_lack_last_and_aligns_wide_ones():
    """``place``: declaration order, but a register some builds lack
    (``RegisterSpec.exists``) after the others, so their addresses do not depend on it; a
    register of n > 1 words at a multiple of 4 n bytes."""
    from fpq.register_specs import RegisterSpec
    from fpq.regmap import place
    specs = [RegisterSpec("opt", 64, 0, 1, "", "", kind="setting",
                          exists=lambda b: b.hash_mix),
             RegisterSpec("a", 8, 0, 1, "", "", kind="setting"),
             RegisterSpec("wide", 96, 0, 1, "", "", kind="setting")]
    assert [(r.name, r.offset) for r in place(specs, 0x100)] == \
        [("a", 0x100), ("wide", 0x108), ("opt", 0x118)]
    assert [(r.name, r.offset) for r in place(specs, 0x100, Build(hash_mix=False))] == \
        [("a", 0x100), ("wide", 0x108)]


def test_the_mix_key_is_a_register_and_a_key_only_of_builds_that_mix_the_hash():
    """``hash_mix_key`` exists only with ``Build.hash_mix``: without it every other register
    keeps its address, the model and the RTL re-key on ``hash_key`` alone and the commands
    that configure hardware draw no mix key."""
    from fpq.keys import hardware_keys
    from fpq.register_specs import key_registers
    mixed = {r.name: r.offset for r in registers(Build())}
    plain = {r.name: r.offset for r in registers(Build(hash_mix=False))}
    assert set(mixed) - set(plain) == {"hash_mix_key"}
    assert all(mixed[name] == offset for name, offset in plain.items())
    assert key_registers(Build()) == ["hash_key", "hash_mix_key"]
    assert key_registers(Build(hash_mix=False)) == ["hash_key"]
    assert sorted(hardware_keys(Build())[0]) == ["hash_key", "hash_mix_key", "seed_clear",
                                                 "seed_decide"]
    assert sorted(hardware_keys(Build(hash_mix=False))[0]) == ["hash_key", "seed_clear",
                                                               "seed_decide"]


def test_ipv6_build_has_a_328_bit_hash_key_and_says_so_in_the_build_word():
    """``Build.flow_key`` "ipv6": ``hash_key`` holds the 41-byte key (328 bits, 11 words, at
    a multiple of 44 bytes as every wide register), the build word's bit 21 is set, and the
    register set is the default build's."""
    from fpq.regmap import BUILD_IPV6_BIT, build_word
    v4 = {r.name: r for r in registers(Build())}
    v6 = {r.name: r for r in registers(Build(flow_key="ipv6"))}
    assert set(v4) == set(v6)
    hk = v6["hash_key"]
    assert (hk.width, hk.words, hk.lo, hk.hi) == (328, 11, 0, (1 << 328) - 1)
    assert hk.offset % 44 == 0 and hk.secret and "0..327" in hk.fmt
    assert hk.reset == int.from_bytes(Config(build=Build(flow_key="ipv6")).hash_key, "big")
    assert v4["hash_key"].width == 160 and "0..159" in v4["hash_key"].fmt
    assert build_word(Build(flow_key="ipv6")) == build_word(Build()) | 1 << BUILD_IPV6_BIT
