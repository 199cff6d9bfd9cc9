"""Scenario validation (errors name the key), --set overrides, the fpq sim / trace commands."""

import json
import os

import pytest

from fpq.cli import main
from fpq.trace import read_trace
from fpq import Arrival, Departure, QueueManager
from fpq_sim.scenario import load, ScenarioError, schema_markdown, shipped_scenarios

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SCEN = os.path.join(ROOT, "sim", "scenarios")
TRAD = os.path.join(SCEN, "fpq-traditional.toml")

GOOD = """
name = "t"
[run]
duration_s = 5.0
[bottleneck]
bandwidth_bps = 1e6
delay_s = 0.01
[queue]
discipline = "red"
[[flows]]
count = 3
access_bw_bps = 1e7
"""


def write(tmp_path, text):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("edit,needle", [
    (("count = 3", "count = 0"), "flows[0].count: 0 is out of range [1, 100000]"),
    (("count = 3", "count = 2.5"), "flows[0].count: 2.5 must be an integer"),
    (("count = 3", "count = 3\ntcp = \"vegas\""), "flows[0].tcp: 'vegas' must be one of"),
    (("count = 3", "count = 3\ncolour = 1"), "flows[0].colour: unknown key"),
    (("duration_s = 5.0", "duration_s = -1"), "run.duration_s: -1 is out of range"),
    (("duration_s = 5.0", "warmup_s = 1"), "run.duration_s: missing (required)"),
    (("delay_s = 0.01", "delay_s = \"x\""), "bottleneck.delay_s: 'x' is not a number"),
    (('discipline = "red"', 'discipline = "red"\nred_max_p = 2.0'),
     "queue.red_max_p: 2.0 is out of range"),
    (('discipline = "red"', 'discipline = "red"\nred_min_th = 50.0'),
     "queue.red_max_th: 45.0 must be >= red_min_th + 1"),
    (('discipline = "red"', 'discipline = "sfq"'), "queue.discipline: 'sfq' must be one of"),
    (("access_bw_bps = 1e7", "access_delay_s = 0.0"), "flows[0].access_bw_bps: give exactly one"),
    (("access_bw_bps = 1e7", "access_bw_bps = [2e6, 1e6]"), "hi < lo"),
    (("[[flows]]", "[flow]"), "flow: unknown key"),
    (("name = \"t\"", "name = \"t\"\n[run2]"), "run2: unknown key"),
    # the sections are among the known keys a misspelt one is told
    (("name = \"t\"", "name = \"t\"\n[run2]"),
     "known keys: name, description, run, bottleneck, queue, flows, floods"),
])
def test_bad_scenarios_name_the_key(tmp_path, edit, needle):
    path = write(tmp_path, GOOD.replace(*edit, 1))
    with pytest.raises(ScenarioError) as exc:
        load(path)
    assert needle in str(exc.value)
    assert str(path) in str(exc.value)


def test_good_scenario_defaults_and_ranges(tmp_path):
    sc = load(write(tmp_path, GOOD.replace("access_bw_bps = 1e7",
                                           "access_bw_bps = 1e7\naccess_delay_s = [0.0, 0.02]")))
    g = sc["flows"][0]
    assert g["tcp"] == "tahoe" and g["tick_s"] == 0.5 and g["access_delay_s"] == [0.0, 0.02]
    assert sc["run"]["seed"] == 1 and sc["queue"]["model"] == "exact"


def test_set_overrides_and_errors(tmp_path):
    path = write(tmp_path, GOOD)
    sc = load(path, ["flows.0.count=7", "queue.discipline=fpq", "flows[0].tcp=newreno",
                     "run.seed=9", "flows.0.access_delay_s=[0.001, 0.002]"])
    assert sc["flows"][0]["count"] == 7 and sc["queue"]["discipline"] == "fpq"
    assert sc["flows"][0]["tcp"] == "newreno" and sc["run"]["seed"] == 9
    assert sc["flows"][0]["access_delay_s"] == [0.001, 0.002]
    with pytest.raises(ScenarioError, match=r"flows.2: no such flow group"):
        load(path, ["flows.2.count=1"])
    with pytest.raises(ScenarioError, match=r"must be key=value"):
        load(path, ["flows.0.count"])
    with pytest.raises(ScenarioError, match=r"run.seed: -1 is out of range"):
        load(path, ["run.seed=-1"])


def test_cli_sim_writes_summary(tmp_path, capsys):
    out = tmp_path / "out.json"
    rc = main(["sim", TRAD, "--set", "run.duration_s=30", "--set", "run.warmup_s=5",
               "--set", "flows.0.count=20", "--json", str(out)])
    assert rc == 0
    s = json.loads(out.read_text())
    for key in ("loss_rate", "avg_queue_pkts", "utilisation", "goodput_pkts_per_s", "events",
                "wall_seconds"):
        assert isinstance(s[key], (int, float))
    assert set(s["transfers"]) == {"count", "mean", "p5", "p50", "p95", "unfinished",
                                   "mean_lower_bound", "km_median"}
    assert len(s["flows"]) == 20
    assert "loss" in capsys.readouterr().out


def test_cli_bad_scenario_exits_2_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "out.json"
    rc = main(["sim", TRAD, "--set", "flows.0.count=0", "--json", str(out)])
    assert rc == 2
    assert "flows[0].count" in capsys.readouterr().err
    assert not out.exists()
    bad = write(tmp_path, "this is = = not toml")
    assert main(["sim", bad]) == 2
    assert "not valid TOML" in capsys.readouterr().err


def test_cli_trace_replays_bit_exactly_through_the_golden_model(tmp_path):
    """The trace holds what the bottleneck's queue manager saw: replaying it through a fresh
    golden model with the recorded configuration gives a consistent queue (no departure from
    an empty queue) and the same drop count as the simulation's summary."""
    out = tmp_path / "t.fpqtrace"
    rc = main(["trace", os.path.join(SCEN, "fpq-fpq.toml"), "--set", "flows.0.count=30",
               "--duration", "20", "--out", str(out)])
    assert rc == 0
    header, events = read_trace(str(out))
    arrivals = [e for e in events if type(e) is Arrival]
    deps = [e for e in events if type(e) is Departure]
    assert len(arrivals) > 1000 and len(deps) > 1000
    assert header["metadata"]["scenario"] == "fpq-fpq"
    assert len({a.flow for a in arrivals}) == 30
    from fpq_sim.network import Network
    sc = load(os.path.join(SCEN, "fpq-fpq.toml"), ["flows.0.count=30"])
    net = Network(sc)
    net.run(20.0)
    qm = QueueManager(net.config)
    verdicts = qm.run(events)
    assert qm.counters["dep_errors"] == 0
    assert sum(v.action >= 2 for v in verdicts) == net.port.lost_total
    assert qm.counters["early_drops"] > 0


def test_scenario_readme_documents_the_schema():
    with open(os.path.join(SCEN, "README.md")) as f:
        text = f.read()
    assert schema_markdown() in text, "sim/scenarios/README.md is out of date: " \
        "regenerate the schema section with fpq_sim.scenario.schema_markdown()"


def test_cli_trace_options_are_checked(tmp_path, capsys):
    out = tmp_path / "t.fpqtrace"
    assert main(["trace", TRAD, "--duration", "1e9", "--out", str(out)]) == 2
    assert "--duration" in capsys.readouterr().err and not out.exists()
    with pytest.raises(SystemExit):
        main(["trace", TRAD, "--max-events", "0", "--out", str(out)])
    assert main(["trace", TRAD, "--duration", "5", "--max-events", "100", "--out",
                 str(out)]) == 0
    header, events = read_trace(str(out))
    assert len(events) == 100 and header["metadata"]["config"]["mode"] == "red"


def test_queue_clock_keys_and_the_average_s_time_constant(tmp_path):
    """[queue] tick_hz is the queue manager's clock, avg_delay its build's, and avg_tau_s
    defaults to 512 bottleneck packet times (RED's w_q = 2^-9 per packet at a full link):
    576 bytes at 1 Mbit/s are 4.608 ms, so 2.359296 s."""
    import fpq
    from fpq_sim.scenario import queue_config
    from fpq.float_model import float_wq
    path = write(tmp_path, GOOD)
    cfg = queue_config(load(path))
    assert cfg.tick_hz == 150e6 and cfg.build == fpq.Build()
    assert cfg.pkt_time_s == pytest.approx(0.004608, rel=1e-12)
    assert cfg.avg_tau_s == pytest.approx(2.359296, rel=1e-12)
    assert float_wq(cfg) == pytest.approx(1 - 2.718281828459045 ** (-1 / 512), rel=1e-9)
    sc = load(path, ["queue.tick_hz=1e6", "queue.avg_delay=40", "queue.avg_tau_s=0.5",
                     "queue.verdict_wait=3"])
    cfg = queue_config(sc)
    assert (cfg.tick_hz, cfg.build.avg_delay, cfg.avg_tau_s) == (1e6, 40, 0.5)
    assert sc["queue"]["verdict_wait"] == 3
    # 0.5 s at 1 MHz = 500,000 clocks = 977.5 samples of time constant 511.5 (2^-9 each)
    regs = cfg.registers()
    assert (regs["wq_shift"], regs["avg_sample_period"]) == (9, 978)
    with pytest.raises(ScenarioError, match=r"queue.verdict_wait: -1 is out of range "
                                            r"\[0, 1048576\]"):
        load(path, ["queue.verdict_wait=-1"])
    with pytest.raises(ScenarioError, match=r"queue.avg_delay: 128 is out of range \[0, 127\]"):
        load(path, ["queue.avg_delay=128"])


def test_router_stamps_accept_clocks_and_a_verdict_wait_holds_events_back(tmp_path):
    """The bottleneck stamps each descriptor with its accept clock: with verdict_wait = W no
    event is accepted within W clocks of the arrival before it (here W = 1 ms at 1 MHz,
    longer than two back-to-back packets' 0.46 ms on the 10 Mbit/s access links, so the wait
    binds), and the golden model on those clocks reproduces the run exactly."""
    from fpq_sim.network import Network
    from fpq.trace import write_trace
    sc = load(TRAD, ["flows.0.count=30", "queue.tick_hz=1e6", "queue.verdict_wait=1000",
                     "run.duration_s=20", "run.warmup_s=1"])
    net = Network(sc, trace=True).run()
    write_trace(tmp_path / "w.fpqtrace", net.trace, 1e6)   # checks the accept-clock order
    _, events = read_trace(str(tmp_path / "w.fpqtrace"))
    gaps = [b.ts - a.ts for a, b in zip(events, events[1:]) if type(a) is Arrival]
    assert min(gaps) == 1000 and gaps.count(1000) > 10
    qm = QueueManager(net.config)
    verdicts = qm.run(events)
    assert qm.counters == net.qm.counters and qm.snapshot() == net.qm.snapshot()
    assert sum(v.action >= 2 for v in verdicts) == net.port.lost_total > 0


# ---- output paths: checked before the simulation, never the scenario ----------------------

@pytest.fixture
def no_simulation(monkeypatch):
    import fpq_sim.network

    class Network:
        def __init__(self, *args, **kwargs):
            raise AssertionError("the simulation started before the output was checked")
    monkeypatch.setattr(fpq_sim.network, "Network", Network)


@pytest.mark.parametrize("command, option", [("sim", "--json"), ("trace", "--out")])
def test_an_output_that_is_the_scenario_is_refused(tmp_path, capsys, no_simulation, command,
                                                   option):
    """Before the check ``fpq sim SC --json SC`` replaced the scenario by the summary."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(GOOD)
    os.link(scenario, tmp_path / "other-name.toml")
    for out in (scenario, tmp_path / "other-name.toml"):
        assert main([command, str(scenario), option, str(out)]) == 2
        assert f"{option} {str(out)!r} is the same file as scenario {str(scenario)!r}: " \
               f"writing it would destroy the input" in capsys.readouterr().err
    assert scenario.read_text() == GOOD


@pytest.mark.parametrize("command, option", [("sim", "--json"), ("trace", "--out")])
def test_a_bad_output_path_is_refused_before_the_simulation(tmp_path, capsys, no_simulation,
                                                            command, option):
    assert main([command, TRAD, option, str(tmp_path)]) == 2
    assert f"{option}: '{tmp_path}' is a folder, not a regular file" in capsys.readouterr().err
    out = tmp_path / "nowhere" / "x"
    assert main([command, TRAD, option, str(out)]) == 2
    assert f"{option}: the folder '{tmp_path}/nowhere' of '{out}' does not exist" in \
        capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_figures_and_parity_check_their_outputs_before_running(tmp_path, capsys, monkeypatch):
    import fpq_sim.figures
    import fpq_sim.parity

    def run(*args, **kwargs):
        raise AssertionError("the runs started before the outputs were checked")
    monkeypatch.setattr(fpq_sim.figures, "plan", run)
    monkeypatch.setattr(fpq_sim.parity, "cases", run)
    (tmp_path / "file").write_text("x")
    base = ["figures", "--no-progress", "--out", str(tmp_path / "f"), "--raw",
            str(tmp_path / "raw"), "--results-md", str(tmp_path / "R.md")]
    for option, value, message in [
            ("--results-md", tmp_path, f"--results-md: '{tmp_path}' is a folder"),
            ("--out", tmp_path / "file" / "f", f"--out: '{tmp_path}/file' (on the way to "
                                               f"'{tmp_path}/file/f') is not a folder"),
            ("--raw", tmp_path / "file", f"--raw: '{tmp_path}/file' is not a folder")]:
        argv = list(base)
        argv[argv.index(option) + 1] = str(value)
        assert main(argv) == 2
        assert message in capsys.readouterr().err
    assert main(["parity", "--jobs", "1", "--write", str(tmp_path)]) == 2
    assert f"--write: '{tmp_path}' is a folder" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["file"]


@pytest.mark.parametrize("nesting", ["arrays", "inline tables"])
def test_deeply_nested_values_are_a_scenario_error(tmp_path, capsys, nesting):
    """``tomllib`` recurses once per level of nesting: before the check a few hundred levels
    escaped as a RecursionError traceback (``fpq sim``, ``--set``, the parking lot)."""
    from fpq_sim.parkinglot import load_parking_lot
    depth = 10_000
    value = "[" * depth + "]" * depth if nesting == "arrays" else \
        "{a = " * depth + "1" + "}" * depth
    path = write(tmp_path, GOOD.replace('name = "t"', f"name = {value}"))
    message = (f"{path}: scenario: nested too deeply to read (a scenario's values are at most "
               f"a list in a table)")
    for read in (load, load_parking_lot):
        with pytest.raises(ScenarioError) as info:
            read(path)
        assert str(info.value) == message
    assert main(["sim", str(path)]) == 2
    assert capsys.readouterr().err.strip() == f"fpq sim: error: {message}"
    with pytest.raises(ScenarioError, match=r"^--set queue.v_max: the value is nested too "
                                            r"deeply to read$"):
        load(TRAD, [f"queue.v_max={value}"])


@pytest.mark.parametrize("name", shipped_scenarios())
def test_fpq_sim_runs_every_shipped_scenario_it_lists(tmp_path, capsys, name):
    # the names are those of `fpq sim --help` and of its unknown-scenario error
    out = tmp_path / "out.json"
    rc = main(["sim", name, "--set", "run.duration_s=2", "--set", "run.warmup_s=0",
               "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    s = json.loads(out.read_text())
    assert s["events"] > 100 and s["wall_seconds"] > 0
    assert captured.out.startswith(f"{name}: ")


def test_fpq_sim_runs_a_parking_lot_and_trace_refuses_it(tmp_path, capsys):
    out = tmp_path / "out.json"
    rc = main(["sim", "parking-lot", "--set", "topology.hops=2", "--set", "run.duration_s=3",
               "--set", "run.warmup_s=1", "--json", str(out)])
    report = capsys.readouterr().out
    assert rc == 0
    s = json.loads(out.read_text())
    # the shipped file: 10 long flows, 10 cross flows at each hop
    assert s["hops"] == 2 and len(s["routers"]) == 2 and len(s["flows"]) == 30
    assert sorted({f["route"] for f in s["flows"]}) == ["cross0", "cross1", "long"]
    assert 0 < s["duration_s"] <= 3.0 and s["warmup_s"] == 1.0
    assert "parking lot, 2 hops, fpq: long (10 flows): " in report
    assert "cross1 (10 flows): " in report and "routers: R0: queue " in report
    assert f"wrote {out}" in report

    rc = main(["sim", "parking-lot", "--transfer-times", "--json", str(tmp_path / "t.json")])
    assert rc == 2 and not (tmp_path / "t.json").exists()
    assert "--transfer-times: a parking-lot scenario's summary has no transfer times" in \
        capsys.readouterr().err
    rc = main(["trace", "parking-lot", "--out", str(tmp_path / "p.trace")])
    assert rc == 2 and not (tmp_path / "p.trace").exists()
    assert "topology: fpq trace records the one bottleneck of a dumbbell scenario, and this " \
        "parking lot queues at each of its 3 hops (fpq sim runs it)" in capsys.readouterr().err
    # a parking lot's own keys are still checked when fpq sim loads it
    assert main(["sim", "parking-lot", "--set", "topology.hops=1"]) == 2
    assert "topology.hops: 1 must be an integer in [2, 16]" in capsys.readouterr().err
