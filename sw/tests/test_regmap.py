"""The register map: generated files are current, addresses are sane, the commit check."""
import os

import pytest

from fpq import Config, Build
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
                      ("red_max_p", (1 << 32) + 1), ("clear_period", 5)):
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
