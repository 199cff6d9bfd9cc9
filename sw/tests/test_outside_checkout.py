"""What the commands read and write when they do not run from the checkout: shipped scenarios
by name, ``-`` for standard output, the version, and the default outputs of an installed
package (``fpq.paths``). The installed wheel itself: ``test_wheel.py``."""

import glob
import json
import os
import tomllib
from pathlib import Path

import pytest

import fpq.paths
from fpq.cli import main, build_parser
from fpq.trace import write_trace
from fpq import Arrival, Departure, pack_flow

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCENARIOS = os.path.join(ROOT, "sim", "scenarios")


@pytest.fixture
def installed(monkeypatch, tmp_path):
    """As if the package were installed (no checkout around it), in an empty current folder."""
    monkeypatch.setattr(fpq.paths, "checkout_root", lambda: None)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_version_is_the_distributions(capsys):
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"{project['name']} {project['version']}\n"
    assert project["name"] == fpq.paths.DISTRIBUTION == "fpq-aqm"


def test_shipped_scenarios_are_the_checkouts_files(tmp_path, monkeypatch):
    from fpq_sim.scenario import shipped_scenarios, scenario_path, ScenarioError
    names = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(SCENARIOS,
                                                                          "*.toml")))
    assert len(names) >= 9 and shipped_scenarios() == names
    for name in ("fpq-fpq", "fpq-fpq.toml"):
        assert os.path.samefile(scenario_path(name), os.path.join(SCENARIOS, "fpq-fpq.toml"))
    # a file that exists is taken as given, even with a shipped scenario's name
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fpq-fpq.toml").write_text("name = 'mine'\n")
    assert scenario_path("fpq-fpq.toml") == "fpq-fpq.toml"
    with pytest.raises(ScenarioError, match=r"^--scenario: 'sim/nope' is neither a file nor "
                                            r"a shipped scenario \(one of: .*fpq-fpq"):
        scenario_path("sim/nope", "--scenario")
    # a path that is not there is not a name
    with pytest.raises(ScenarioError, match="is neither a file"):
        scenario_path("other/fpq-fpq.toml")


SHORT = ["--set", "flows.0.count=5", "--set", "run.duration_s=8", "--set", "run.warmup_s=2"]


def _deterministic(summary):
    return {k: v for k, v in summary.items() if "wall" not in k and "per_second" not in k}


def test_sim_by_name_and_json_to_standard_output(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["sim", os.path.join(SCENARIOS, "fpq-traditional.toml"), *SHORT,
                 "--json", "by-path.json"]) == 0
    capsys.readouterr()
    assert main(["sim", "fpq-traditional", *SHORT, "--json", "-"]) == 0
    out, err = capsys.readouterr()
    by_name = json.loads(out)              # standard output holds the summary only
    with open("by-path.json") as f:
        assert _deterministic(by_name) == _deterministic(json.load(f))
    assert by_name["flows_total"] == 5
    assert "5 flows" in err and "wrote" not in err
    assert sorted(os.listdir(tmp_path)) == ["by-path.json"]

    assert main(["sim", "fpq-nonsense"]) == 2
    assert "fpq sim: error: scenario: 'fpq-nonsense' is neither a file nor a shipped " \
           "scenario (one of: " in capsys.readouterr().err


def _events():
    flow = pack_flow(0x0a000001, 0x0a000002, 1234, 80, 6)
    return [Arrival(ts=10 * i, flow=flow + i % 3, length=100 + i) if i % 4 else
            Departure(ts=10 * i, length=64) for i in range(1, 40)]


def test_trace_csv_to_standard_output(tmp_path, capsysbinary):
    trace = tmp_path / "t.fpqtrace"
    write_trace(trace, _events(), 1e6)
    assert main(["trace-csv", str(trace), str(tmp_path / "t.csv")]) == 0
    capsysbinary.readouterr()
    assert main(["trace-csv", str(trace), "-"]) == 0
    out, err = capsysbinary.readouterr()
    assert out == (tmp_path / "t.csv").read_bytes() and out.count(b"\n") == 40
    assert err.startswith(b"wrote standard output: 39 events")


def test_trace_to_standard_output(tmp_path, capsysbinary):
    args = ["trace", "fpq-fpq", *SHORT, "--max-events", "200"]
    assert main(args + ["--out", str(tmp_path / "t.fpqtrace")]) == 0
    capsysbinary.readouterr()
    assert main(args + ["--out", "-"]) == 0
    out, err = capsysbinary.readouterr()
    assert out == (tmp_path / "t.fpqtrace").read_bytes() and out.startswith(b"FPQTRACE")
    assert err.startswith(b"wrote standard output: 200 descriptors")


def _defaults(argv):
    return vars(build_parser().parse_args(argv))


def test_outputs_default_to_the_checkout_when_run_from_it():
    assert fpq.paths.checkout_root() == ROOT
    figures = _defaults(["figures"])
    assert (figures["out"], figures["raw"], figures["results_md"]) == (
        os.path.join(ROOT, "docs", "figures"), os.path.join(ROOT, "results", "figures"),
        os.path.join(ROOT, "docs", "RESULTS.md"))
    assert _defaults(["accuracy", "--write"])["write"] == os.path.join(ROOT, "docs",
                                                                       "RESULTS.md")
    assert _defaults(["benchmarks"])["records"] == os.path.join(ROOT, "docs", "benchmarks")
    from fpq_hdl.verilated.harness import BUILD_ROOT
    assert BUILD_ROOT == Path(ROOT) / "build" / "verilated"


def test_outputs_default_to_the_current_folder_when_installed(installed, capsys):
    figures = _defaults(["figures"])
    assert (figures["out"], figures["raw"], figures["results_md"]) == (
        "fpq-figures", os.path.join("fpq-figures", "raw"),
        os.path.join("fpq-figures", "RESULTS.md"))
    assert _defaults(["accuracy", "--write"])["write"] == "RESULTS.md"
    assert _defaults(["parity", "--write"])["write"] == "RESULTS.md"
    assert _defaults(["benchmarks", "--records", "r", "--write"])["write"] == "BENCHMARKS.md"
    with pytest.raises(SystemExit):
        _defaults(["benchmarks"])          # no checkout, no records to default to
    assert "the following arguments are required: --records" in capsys.readouterr().err

    assert main(["regmap"]) == 0
    assert sorted(os.listdir(installed / "fpq-regmap")) == ["REGISTERS.md", "fpq_regs.h",
                                                            "regmap.json"]
    with open(os.path.join(ROOT, "sw", "generated", "regmap.json")) as f:
        assert (installed / "fpq-regmap" / "regmap.json").read_text() == f.read()
    from fpq.regmap import write_all
    with pytest.raises(ValueError, match="out: required when the package is installed"):
        write_all()

    # a repository around the current folder (or an installation) is not this code's
    import subprocess
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", "other"], check=True)
    from fpq.records import _commit
    assert _commit() is None


def test_verilator_cache_is_outside_an_installation(tmp_path, monkeypatch):
    from fpq_hdl.verilated.harness import _build_root
    site = tmp_path / "lib" / "site-packages"
    (site / "fpq_hdl" / "verilated").mkdir(parents=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert _build_root(site / "fpq_hdl" / "verilated") == tmp_path / "cache" / "fpq" / "verilator"
    # a pyproject.toml above an installation does not make it a checkout
    (tmp_path / "lib" / "pyproject.toml").write_text("")
    assert _build_root(site / "fpq_hdl" / "verilated") == tmp_path / "cache" / "fpq" / "verilator"
