"""Measurement records (fpq.records) and the tables `fpq benchmarks` renders from them."""

import json
import os

import pytest

from fpq import benchmarks
from fpq.records import read_records, write_record


def _synth(seeds, component="queue_manager"):
    vals = [v for v in seeds.values() if v is not None]
    return {"component": component, "vec_bits": 65536, "table_depth": 1024, "speed": 6,
            "router": "router1", "seeds": seeds, "fixed": {},
            "fmax_mhz": {"min": min(vals), "median": sorted(vals)[len(vals) // 2],
                         "max": max(vals)},
            "utilization": {"TRELLIS_COMB": 7878, "TRELLIS_FF": 6200, "DP16KD": 26,
                            "MULT18X18D": 6}}


def test_records_round_trip_and_render(tmp_path):
    write_record(tmp_path / "top-speed6.json", "synth",
                 _synth({"1": 151.25, "2": 148.5, "3": None}), argv=["synth", "--seeds", "1"])
    write_record(tmp_path / "loop-timer.json", "synth",
                 _synth({"1": 201.0}, component="loop_timer"), argv=["synth"])
    write_record(tmp_path / "bench.json", "bench",
                 {"rows": [{"model": "bit-exact, fpq", "arrivals": 300000,
                            "arrivals_per_s": 349123}]}, argv=["fpq", "bench"])
    recs = read_records(tmp_path)
    assert set(recs) == {"top-speed6", "loop-timer", "bench"}
    text = benchmarks.markdown(recs)
    top = next(line for line in text.splitlines() if line.startswith("| `top-speed6`"))
    # every seed, the unrouted one named, the minimum first and bold
    assert "151.2, 148.5, not routed" in top and "**148.5** / 151.2 / 151.2" in top
    assert "| 7878 | 6200 | 26 | 6 |" in top
    assert "| `bench` | bit-exact, fpq | 300000 | 349,123 |" in text
    # one date line per table, every record linked with its command; its commit is the
    # record file's to say
    assert text.count("_Measured ") == 3
    assert "- [`top-speed6`](benchmarks/top-speed6.json): `synth --seeds 1`" in text
    commits = {r["commit"] for r in recs.values()} - {None}
    assert not any(c in text for c in commits)
    # the top's table comes before the components'
    assert text.index("top-speed6`") < text.index("loop-timer`")


def test_write_replaces_only_the_generated_block(tmp_path):
    write_record(tmp_path / "bench.json", "bench",
                 {"rows": [{"model": "bit-exact, red", "arrivals": 10,
                            "arrivals_per_s": 5}]}, argv=["fpq", "bench"])
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text(f"# Benchmarks\n\nintro\n\n{benchmarks.BEGIN}\nold table\n"
                   f"{benchmarks.END}\n\n## Method\n\nprose\n")

    class Args:
        records = str(tmp_path)
        write = str(doc)
    assert benchmarks.main(Args) == 0
    new = doc.read_text()
    assert "old table" not in new and "| bit-exact, red | 10 | 5 |" in new
    assert new.startswith("# Benchmarks\n\nintro\n\n") and new.endswith("## Method\n\nprose\n")


@pytest.mark.parametrize("content", ["not json", json.dumps({"version": 99, "results": {}}),
                                     json.dumps([1, 2]),
                                     '{"a":' * 100_000 + "1" + "}" * 100_000])
def test_a_file_that_is_not_a_record_is_named(tmp_path, content):
    (tmp_path / "bad.json").write_text(content)
    with pytest.raises(ValueError, match=os.path.join(str(tmp_path), "bad.json")):
        read_records(tmp_path)


def test_board_record_row(tmp_path):
    res = {"LC": {"used": 4950, "available": 5280}, "FF": {"used": 2000, "available": 5280},
           "BRAM": {"used": 20, "available": 30}, "DSP": {"used": 4, "available": 8}}
    write_record(tmp_path / "icebreaker.json", "board",
                 {"board": "icebreaker", "clock_mhz": 16.5, "fmax_mhz": 17.9, "met": True,
                  "build": {"vec_bits": 1024, "table_depth": 256}, "resources": res},
                 argv=["fpq", "board", "build", "icebreaker"])
    text = benchmarks.markdown(read_records(tmp_path))
    assert ("| `icebreaker` | icebreaker | 1024 / 256 | 16.5 | 17.9 | yes | - | 4950 / 5280 | "
            "2000 / 5280 | 20 / 30 | 4 / 8 |") in text


def test_board_record_row_lists_the_seeds_tried(tmp_path):
    """A build that tried several seeds: each with its Fmax, in the order tried; one run
    names its seed."""
    res = {"LUT": {"used": 9839, "available": 83640}}
    for name, nextpnr in (("a", {"seed": 3, "router": "router1",
                                 "fmax_by_seed": {"1": 139.41, "3": 153.07}}),
                          ("b", {"seed": 2, "router": "router1"})):
        write_record(tmp_path / f"{name}.json", "board",
                     {"board": "ulx3s", "clock_mhz": 150.0, "fmax_mhz": 153.07, "met": True,
                      "build": {}, "resources": res, "nextpnr": nextpnr},
                     argv=["fpq", "board", "build", "ulx3s"])
    text = benchmarks.markdown(read_records(tmp_path))
    assert "| 153.1 | yes | 1: 139.4, 3: 153.1 | 9839 / 83640 |" in text
    assert "| 153.1 | yes | 2 | 9839 / 83640 |" in text
