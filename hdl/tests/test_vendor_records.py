"""The plain-flow records in docs/benchmarks/ (``python -m fpq_hdl.vendor_flow``) describe the
file ``fpq verilog`` writes now: each record's family, bus, export target and build, exported
again as the record's command did, give the Verilog whose digest the record carries. A change
to the RTL that moves the exported file fails here until the records are measured again."""

import dataclasses
from pathlib import Path

import pytest

from fpq.records import read_records
from fpq_hdl.vendor_flow import FAMILIES, _build_fields, export_core, family_build

ROOT = Path(__file__).resolve().parents[2]
RECORDS = {name: r for name, r in read_records(ROOT / "docs" / "benchmarks").items()
           if r["kind"] == "vendor-flow"}


def _export_key(results):
    """What decides the exported file: the family's build at the record's sizes, the bus and
    the export target."""
    b = results["build"]
    return (results["family"], results["bus"], results["target"], b["vec_bits"],
            b["table_depth"])


#: One export per distinct file the records measured (two speed grades share one).
EXPORTS = sorted({_export_key(r["results"]) for r in RECORDS.values()})


def test_the_goals_plain_flow_records_exist():
    """The line-rate goals of the exported core are judged from these records."""
    assert {"core-ecp5-axi-lite", "core-ecp5-wishbone"} <= set(RECORDS)


@pytest.mark.parametrize("key", EXPORTS, ids=["-".join(map(str, k)) for k in EXPORTS])
def test_each_plain_flow_record_measured_the_file_exported_now(key, tmp_path):
    family, bus, target, vec_bits, table_depth = key
    build = family_build(FAMILIES[family], vec_bits, table_depth)
    _, digest = export_core(str(tmp_path), build, bus, target)
    for name, r in sorted(RECORDS.items()):
        res = r["results"]
        if _export_key(res) != key:
            continue
        assert res["build"] == _build_fields(build), \
            f"{name}: its build differs from the family's at these sizes"
        assert res["rtl_digest"] == digest, (
            f"{name} measured an export that no longer exists (the RTL changed since): "
            f"measure again with `{r['command']}`")


def test_a_changed_export_is_refused(tmp_path):
    """The check above can fail: a build that differs in one field exports another file (a
    small build, for speed)."""
    build = family_build(FAMILIES["ecp5"], 1024, 256)
    bus, target = "axi-lite", "ecp5"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, digest = export_core(str(tmp_path / "a"), build, bus, target)
    other = dataclasses.replace(build, avg_delay=build.avg_delay + 1)
    _, changed = export_core(str(tmp_path / "b"), other, bus, target)
    assert changed != digest
