"""``python -m fpq_hdl.synth``: argument checks (no tools run: they fail before) and, marked
``long``, the per-seed runs on a small component."""

import json

import pytest

from fpq_hdl.synth import (main, parse_seeds, _summary, critical_path_lines, _parser, _checked,
                            _record_results, _seeds_summary, _print_seeds)


@pytest.mark.parametrize("argv, message", [
    (["--placer-heap-beta", "0"], "--placer-heap-beta: 0.0 must be in (0, 1]"),
    (["--placer-heap-beta", "1.5"], "--placer-heap-beta: 1.5 must be in (0, 1]"),
    (["--router", "router3"], "argument --router: invalid choice: 'router3'"),
    (["--speed", "5"], "argument --speed: invalid choice: 5 (choose from 6, 7, 8)"),
    (["--fix", "avg_tau_s=2e4"], "fixed: avg_tau_s: 20000.0 is out of range [0.0, 10000.0] s"),
    # wq_shift is a register derived from avg_tau_s and tick_hz, not a field to fix
    (["--fix", "wq_shift=9"], "--fix: 'wq_shift=9' must be FIELD=VALUE with FIELD one of"),
    (["--fix", "hash_key=zz"], "--fix hash_key: 'zz' is not hex bytes"),
    (["--component", "nope"], "--component: 'nope' is not one of axi_core, decision,"),
])
def test_bad_arguments_are_refused_before_any_tool_runs(refused, argv, message):
    assert message in refused(main, argv)


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "1,x"], "--seeds: 'x' is not an integer; give seeds in [1, 2147483647]"),
    (["--seeds", "1,0"], "--seeds: 0 is out of range [1, 2147483647]"),
    (["--seeds", "2,3,2"], "--seeds: 2 is given twice"),
    (["--seeds", "1,2", "--seed", "3"], "argument --seed: not allowed with argument --seeds"),
    (["--seed", "0"], "--seed: 0 is out of range [1, 2147483647]"),
    (["--time-limit", "0"], "--time-limit: 0.0 must be above 0 seconds"),
])
def test_bad_seeds_and_time_limits_are_refused_before_any_tool_runs(refused, argv, message):
    assert message in refused(main, argv)


def test_every_component_elaborates_in_the_synthesis_harness():
    from amaranth.back import rtlil
    from fpq import Build
    from fpq_hdl.synth import COMPONENTS, SynthHarness
    build = Build(vec_bits=64, table_depth=16)
    for name in COMPONENTS:
        assert "module" in rtlil.convert(SynthHarness(build, name), name="top"), name


def test_seeds_parse_in_the_order_given():
    assert parse_seeds("3,1, 2") == [3, 1, 2]


@pytest.mark.parametrize("fmax, expected", [
    ({1: 90.0, 2: 80.0, 3: 95.0}, {"min": 80.0, "median": 90.0, "max": 95.0}),
    # even count: the mean of the middle two; a run stopped by --time-limit is left out
    ({1: 90.0, 2: None, 3: 80.0, 4: 96.0, 5: 94.0},
     {"min": 80.0, "median": 92.0, "max": 96.0}),
])
def test_summary_of_the_routed_seeds(fmax, expected):
    summary = _summary(fmax)
    assert {k: summary[k] for k in expected} == expected
    assert summary["routed"] == sum(v is not None for v in fmax.values())
    assert summary["runs"] == len(fmax)


def test_summary_when_no_seed_routed():
    assert _summary({1: None, 2: None}) is None


def test_critical_path_folds_carry_chains_only():
    def step(kind, delay, a, b):
        return {"type": kind, "delay": delay, "from": {"cell": a}, "to": {"cell": b}}
    c1, c2, c3 = "x_CCU2C_1", "x_CCU2C_2", "x_CCU2C_3"
    steps = [step("clk-to-q", 0.5, "ff", "ff"), step("routing", 1.0, "ff", c1),
             step("logic", 0.25, c1, c1), step("routing", 0.0, c1, c2),
             step("logic", 0.0625, c2, c2), step("routing", 0.0, c2, c3),
             step("logic", 0.375, c3, c3),
             # real routing between two cells named after a chain is not folded, nor a run
             # of fewer than three steps
             step("routing", 1.25, c3, c1), step("logic", 0.25, c1, c1),
             step("routing", 0.5, c1, "lut"), step("setup", 0.0, "lut", "lut")]
    lines = critical_path_lines(steps)
    assert [(kind, delay) for kind, delay, *_ in lines] == [
        ("clk-to-q", 0.5), ("routing", 1.0), ("carry", 0.6875), ("routing", 1.25),
        ("logic", 0.25), ("routing", 0.5), ("setup", 0.0)]
    assert lines[2][2:] == (2.1875, c1, c3)        # running total, first and last cell
    assert lines[-1][2] == sum(s["delay"] for s in steps)


def _args_and_build(argv):
    p = _parser()
    args = p.parse_args(argv)
    return args, _checked(p, args)[0]


def _report(fmax, used, path):
    """A nextpnr ``report.json`` as parsed: one clock, one cell type, one critical path."""
    return {"fmax": {"clk": {"achieved": fmax, "constraint": 150.0}},
            "utilization": {"TRELLIS_COMB": {"used": used, "available": 83640}},
            "critical_paths": [{"path": path}]}


def test_the_record_holds_each_seed_and_the_first_routed_seeds_utilisation():
    args, build = _args_and_build(["--vec-bits", "64", "--table-depth", "16", "--component",
                                   "decision", "--speed", "7", "--time-limit", "60"])
    path = [{"type": "logic", "delay": 0.5, "from": {"cell": "a"}, "to": {"cell": "b"}}]
    reports = {3: None, 1: _report(91.5, 1200, path), 2: _report(88.0, 1300, path)}
    fmax = {3: None, 1: 91.5, 2: 88.0}
    results = _record_results(args, build, reports, fmax)
    assert {k: results[k] for k in ("component", "vec_bits", "table_depth", "speed", "freq",
                                    "router", "time_limit_s")} == {
        "component": "decision", "vec_bits": 64, "table_depth": 16, "speed": 7, "freq": 150.0,
        "router": "router1", "time_limit_s": 60.0}
    assert results["seeds"] == {"3": None, "1": 91.5, "2": 88.0}
    assert results["fmax_mhz"] == _summary(fmax)
    assert results["utilization"] == {"TRELLIS_COMB": 1200}
    # a seed not routed has no critical path
    assert results["critical_paths"] == {"1": [["logic", 0.5, 0.5, "a", "b"]],
                                         "2": [["logic", 0.5, 0.5, "a", "b"]]}
    assert _record_results(args, build, {1: None}, {1: None})["utilization"] is None


def test_the_seeds_summary_is_written_and_printed_by_seed(capsys):
    args, _ = _args_and_build(["--seeds", "2,1", "--router", "router2"])
    summary = _seeds_summary(args, {2: 90.125, 1: None})
    assert summary == {"seeds": {"2": 90.125, "1": None},
                       "fmax_mhz": {"min": 90.125, "median": 90.125, "max": 90.125,
                                    "routed": 1, "runs": 2},
                       "speed": 6, "freq": 150.0, "router": "router2", "time_limit_s": None}
    _print_seeds(summary)
    assert capsys.readouterr().out.splitlines() == [
        "Fmax (MHz) by seed: 2: 90.12, 1: not routed",
        "min / median / max: 90.12 / 90.12 / 90.12 MHz (1 of 2 routed)"]
    _print_seeds(_seeds_summary(args, {2: None}))
    assert capsys.readouterr().out.splitlines() == ["Fmax (MHz) by seed: 2: not routed"]


@pytest.mark.long
def test_seeds_place_and_route_the_one_netlist_once_each(tmp_path, capsys):
    # a small component (one loop), so that the two runs take seconds; the tools' first
    # use compiles them (1-2.5 min)
    out = tmp_path / "out"
    assert main(["--component", "loop_hold", "--seeds", "2,1", "--out",
                 str(out)]) == 0
    summary = json.loads((out / "seeds.json").read_text())
    fmax = summary["seeds"]
    assert list(fmax) == ["2", "1"]
    for seed in (1, 2):
        report = json.loads((out / f"seed{seed}" / "report.json").read_text())
        assert fmax[str(seed)] == min(v["achieved"] for v in report["fmax"].values())
    assert summary["fmax_mhz"]["min"] == min(fmax.values())
    assert summary["fmax_mhz"]["max"] == max(fmax.values())
    assert "min / median / max:" in capsys.readouterr().out


@pytest.mark.long
def test_a_run_past_the_time_limit_is_reported_not_routed(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["--component", "loop_hold", "--seeds", "1", "--time-limit",
                 "0.01", "--out", str(out)]) == 1
    summary = json.loads((out / "seeds.json").read_text())
    assert summary["seeds"] == {"1": None} and summary["fmax_mhz"] is None
    assert "seed 1: not routed within 0.01 s" in capsys.readouterr().out
