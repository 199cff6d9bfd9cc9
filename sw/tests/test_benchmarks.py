"""Measurement records (fpq.records) and the tables `fpq benchmarks` renders from them."""

import json
import os
import re
from pathlib import Path

import pytest

from fpq import benchmarks, goals
from fpq.records import read_records, write_record

ROOT = Path(__file__).resolve().parents[2]


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


def _board(fmax, clock=150.0):
    return {"board": "ulx3s", "clock_mhz": clock, "fmax_mhz": fmax, "met": fmax >= clock,
            "build": {}, "nextpnr": {"seed": 1},
            "resources": {"LUT": {"used": 8364, "available": 83640},
                          "BRAM": {"used": 26, "available": 208}}}


def _entry(text, records, metric, extra):
    """One ``[[goal]]`` entry of a goals file, its source "issue 1"."""
    fields = {"text": text, "source": "issue 1", "records": records, "metric": metric, **extra}
    return "[[goal]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in fields.items())


def _goals_file(folder, body):
    (folder / goals.GOALS_FILE).write_text(body)
    return goals.read_goals(folder)


def test_goal_status_is_computed_from_the_records(tmp_path):
    write_record(tmp_path / "q6.json", "synth", _synth({"1": 151.25, "2": 160.0}), argv=["s"])
    write_record(tmp_path / "q8.json", "synth", _synth({"1": 210.0, "2": 190.5, "3": None}),
                 argv=["s"])
    write_record(tmp_path / "ulx3s.json", "board", _board(147.9), argv=["b"])
    write_record(tmp_path / "gm.json", "bench", {"rows": [
        {"model": "bit-exact, fpq", "arrivals": 10, "arrivals_per_s": 310_000},
        {"model": "bit-exact, red", "arrivals": 10, "arrivals_per_s": 290_000},
        {"model": "float (paper), fpq", "arrivals": 10, "arrivals_per_s": 80_000}]},
        argv=["fpq", "bench"])
    write_record(tmp_path / "sim.json", "sim", {"rows": [], "sweep": {
        "runs": 200, "n": [10], "seeds": 10, "duration_s": 200.0, "jobs": 2, "wall_s": 70.5,
        "events": 1000, "worker_s": 130.0}}, argv=["sim"])
    gs = _goals_file(tmp_path, "".join(_entry(*g) for g in (
        ("q at speed 6", ["q6"], "fmax_min", {"seeds": [1, 2], "at_least": 150}),
        ("q at speed 8", ["q8"], "fmax_min", {"seeds": [1, 2, 3], "at_least": 180}),
        ("q at speed 8, median", ["q8"], "fmax_median", {"seeds": [1, 2, 3], "at_least": 180}),
        ("q at speed 6, seeds the record lacks", ["q6"], "fmax_min",
         {"seeds": [1, 2, 3], "at_least": 150}),
        ("reported", ["q6"], "fmax_min", {"seeds": [1, 2]}),
        ("board", ["ulx3s"], "board_clock", {"at_least": 150}),
        ("model", ["gm"], "arrivals_min", {"rows": "bit-exact", "at_least": 300000}),
        ("sweep", ["sim"], "sweep_wall", {"at_most": 600}),
        ("not yet measured", ["q6", "top-speed9"], "fmax_min", {"seeds": [1], "at_least": 1}),
    )))
    recs = read_records(tmp_path)
    status = {g.text: goals.judge(g, recs) for g in gs}
    assert status["q at speed 6"][0] == "met"
    assert "151.2 / 155.6 / 160.0 MHz" in status["q at speed 6"][1]
    # an unrouted seed fails a minimum (190.5 alone would pass) but not the median
    assert status["q at speed 8"][0] == "not met"
    assert "seed 3 not routed" in status["q at speed 8"][1]
    assert status["q at speed 8, median"][0] == "met"
    assert status["q at speed 6, seeds the record lacks"] == \
        ("not met", "not measured: seed 3 not in `q6`")
    assert status["reported"][0] == "reported"
    assert status["board"][0] == "not met" and "147.9 MHz for a 150 MHz clock" in \
        status["board"][1] and "BRAM 12.5 % (26 / 208)" in status["board"][1]
    # the slowest bit-exact mode decides; the float model is not one of them
    assert status["model"] == ("not met", "290k-310k arrivals/s over 2 modes (`gm`)")
    assert status["sweep"][0] == "met" and "70.5 s wall" in status["sweep"][1]
    assert status["not yet measured"] == ("not measured", "no record `top-speed9`")
    table = goals.goals_markdown(gs, recs)
    assert "| q at speed 6: minimum Fmax over nextpnr seeds 1, 2 >= 150 MHz | issue 1 | " \
           "**met**: " in table
    assert "| sweep: wall time <= 600 s | issue 1 | **met**: " in table


def test_a_goal_over_several_records_names_its_statistic_per_record(tmp_path):
    """A median goal over two records shows each record's median (not its minimum), and the
    smaller decides."""
    write_record(tmp_path / "a.json", "synth", _synth({"1": 120.0, "2": 150.0, "3": 170.0}),
                 argv=["s"])
    write_record(tmp_path / "b.json", "synth", _synth({"1": 140.0, "2": 165.0, "3": 166.0}),
                 argv=["s"])
    gs = _goals_file(tmp_path, _entry("both", ["a", "b"], "fmax_median",
                                      {"seeds": [1, 2, 3], "at_least": 160})
                     + _entry("both, minimum", ["a", "b"], "fmax_min",
                              {"seeds": [1, 2, 3], "at_least": 100}))
    recs = read_records(tmp_path)
    median, minimum = (goals.judge(g, recs) for g in gs)
    assert median == ("not met", "median per record: `a` 150.0, `b` 165.0 MHz, every seed "
                                 "routed")
    assert minimum == ("met", "minimum per record: `a` 120.0, `b` 140.0 MHz, every seed "
                              "routed")


def test_adding_a_goal_is_one_entry_and_both_documents_show_it(tmp_path):
    write_record(tmp_path / "q6.json", "synth", _synth({"1": 151.25}), argv=["s"])
    _goals_file(tmp_path, '[[goal]]\ntext = "the core"\nsource = "issue 45"\n'
                          'records = ["q6"]\nmetric = "fmax_min"\nseeds = [1]\n'
                          'at_least = 150\n')
    doc, readme = tmp_path / "BENCHMARKS.md", tmp_path / "README.md"
    doc.write_text(f"# B\n\n{benchmarks.BEGIN}\n{benchmarks.END}\n\n## Goals\n\n"
                   f"{benchmarks.GOALS[0]}\nold\n{benchmarks.GOALS[1]}\n\n## Method\n")
    readme.write_text(f"# R\n\n## Status\n\n{benchmarks.STATUS[0]}\nold\n"
                      f"{benchmarks.STATUS[1]}\n\n## References\n")

    class Args:
        records = str(tmp_path)
        write = str(doc)
        readme = str(tmp_path / "README.md")
    assert benchmarks.main(Args) == 0
    row = "| the core: minimum Fmax over nextpnr seeds 1 >= 150 MHz |"
    for text in (doc.read_text(), readme.read_text()):
        assert "old" not in text
        line = next(line for line in text.splitlines() if line.startswith(row))
        assert "**met**: 151.2 / 151.2 / 151.2 MHz" in line
    assert doc.read_text().endswith("\n\n## Method\n")
    assert readme.read_text().endswith("\n\n## References\n")


@pytest.mark.parametrize("entry, named", [
    ('text = "a"\nsource = "s"\nrecords = ["r"]\nmetric = "speed"', "metric 'speed'"),
    ('text = "a"\nsource = "s"\nrecords = ["r"]', "missing metric"),
    ('text = "a"\nsource = "s"\nrecords = ["r"]\nmetric = "fmax_min"', "needs seeds"),
    ('text = "a"\nsource = "s"\nrecords = ["r"]\nmetric = "sweep_wall"\nat_least = 1\n'
     'at_most = 2', "at_least and at_most"),
    ('text = "a"\nsource = "s"\nrecords = ["r"]\nmetric = "sweep_wall"\nat_most = "10"',
     "at_most = '10'"),
    ('text = "a"\nsource = "s"\nrecords = ["r"]\nmetric = "sweep_wall"\nthreshold = 1',
     "unknown field 'threshold'"),
    ('text = "a"\nsource = "s"\nrecords = []\nmetric = "sweep_wall"', "records is empty"),
])
def test_a_bad_goal_is_named_with_its_field(tmp_path, entry, named):
    with pytest.raises(ValueError, match=f"goal 1 .*{re.escape(named)}"):
        _goals_file(tmp_path, f"[[goal]]\n{entry}\n")


def test_the_checked_in_goals_and_tables_are_generated_from_the_records():
    """docs/BENCHMARKS.md and README.md hold what `fpq benchmarks --write --readme` renders
    from docs/benchmarks/: no figure in them was typed by hand or left stale."""
    folder = ROOT / "docs" / "benchmarks"
    recs, gs = read_records(folder), goals.read_goals(folder)
    assert gs, "docs/benchmarks/goals.toml declares no goal"
    for path, (begin, end), text in (
            (ROOT / "docs" / "BENCHMARKS.md", (benchmarks.BEGIN, benchmarks.END),
             benchmarks.markdown(recs)),
            (ROOT / "docs" / "BENCHMARKS.md", benchmarks.GOALS, goals.goals_markdown(gs, recs)),
            (ROOT / "README.md", benchmarks.STATUS, goals.status_markdown(gs, recs))):
        doc = path.read_text()
        assert doc.count(begin) == 1 and doc.count(end) == 1, (path, begin)
        assert doc.split(begin, 1)[1].split(end, 1)[0] == f"\n{text}", \
            f"{path.name} is not what the records give: run `fpq benchmarks --write --readme`"


def test_simulator_record_table_and_a_record_s_note(tmp_path):
    write_record(tmp_path / "sim.json", "sim", {
        "rows": [{"run": "FPQ paper, N = 75", "simulated_s": 500.0, "events": 482247,
                  "wall_s": 1.514, "events_per_s": 318525.1, "arrivals_per_wall_s": 69488.4}],
        "sweep": {"runs": 200, "n": [10, 20], "seeds": 10, "duration_s": 200.0, "jobs": 2,
                  "wall_s": 55.43, "events": 1000000, "worker_s": 100.0}},
        argv=["python", "-m", "fpq_sim.bench"])
    rec = json.loads((tmp_path / "sim.json").read_text())
    (tmp_path / "sim.json").write_text(json.dumps(rec | {"note": "transcribed"}))
    text = benchmarks.markdown(read_records(tmp_path))
    assert "| `sim` | FPQ paper, N = 75 | 500 | 482,247 | 1.51 | 318,525 | 69,488 |" in text
    assert ("`sim`, Figs. 10-13 sweep: 200 runs (N = 10, 20; traditional and FPQ; 10 seeds of "
            "200 s each): **55.4 s wall** on 2 local processes (1,000,000 events, 100.0 s of "
            "simulation in the workers, 10,000 events/s per process).") in text
    assert text.count("_Measured ") == 1
    assert "`python -m fpq_sim.bench` (" in text and "); transcribed" in text


def _vendor(family, bus, seeds, **extra):
    vals = [v for v in seeds.values() if v is not None]
    return dict({"family": family, "device": "LFE5U-85F, CABGA381", "speed": 6, "bus": bus,
                 "target": "generic", "build": {"vec_bits": 65536, "table_depth": 1024},
                 "seeds": seeds,
                 "fmax_mhz": {"min": min(vals), "median": sorted(vals)[len(vals) // 2],
                              "max": max(vals)},
                 "resources": {"LUT": 10294, "FF": 7611, "BRAM": 26, "DSP": 6},
                 "fits": True, "rtl_digest": "0123456789abcdef" * 4}, **extra)


def test_vendor_flow_rows_come_first_with_every_seed(tmp_path):
    """The exported core in a plain flow is what a user gets: its table leads, a row per
    record with each seed, the minimum bold, the counted resources and a short digest; ECP5
    before the other families, an unrouted seed named, a core that does not fit marked."""
    write_record(tmp_path / "top-speed6.json", "synth", _synth({"1": 171.0}), argv=["synth"])
    write_record(tmp_path / "core-ecp5-axi-lite.json", "vendor-flow",
                 _vendor("ecp5", "axi-lite", {"2": 155.5, "1": 151.25, "10": 160.0}),
                 argv=["vendor_flow"])
    write_record(tmp_path / "core-gowin-wishbone.json", "vendor-flow",
                 _vendor("gowin", "wishbone", {"1": 80.0, "2": None}, fits=False,
                         build={"vec_bits": 1024, "table_depth": 256, "hash_mix": False},
                         resources={"LUT": 20000, "FF": 8000}),
                 argv=["vendor_flow"])
    text = benchmarks.markdown(read_records(tmp_path))
    ecp5 = next(l for l in text.splitlines() if l.startswith("| `core-ecp5-axi-lite`"))
    gowin = next(l for l in text.splitlines() if l.startswith("| `core-gowin-wishbone`"))
    # seeds in numeric order (10 after 2), the minimum bold, then median and maximum
    assert "| 151.2, 155.5, 160.0 | **151.2** / 155.5 / 160.0 |" in ecp5
    assert "| 10294 LUT, 7611 FF, 26 BRAM, 6 DSP | yes | `0123456789ab` |" in ecp5
    assert "| 80.0, not routed |" in gowin and "| **no** |" in gowin
    assert "| 1024 / 256, no keyed mix |" in gowin
    assert text.index("core-ecp5-axi-lite`") < text.index("core-gowin-wishbone`") \
        < text.index("top-speed6`")
