"""pytest glue for the cocotb benches: the bench library on sys.path (the cocotb runner passes
sys.path on as PYTHONPATH), and the functional-coverage report.

Every bench run returns coverage bins; they are summed over the session, written to
``build/cocotb/coverage.json`` and printed at the end of the run. Under pytest-xdist
(``make test`` runs two workers) each worker hands its sums to the controller, which reports
them all."""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import pytest  # noqa: E402

from tb_lib.coverage_report import SESSION, report_lines  # noqa: E402

_COUNTS = ("arrivals", "inputs", "cycles", "runs")


def _is_xdist_worker(config):
    return hasattr(config, "workerinput")


def pytest_sessionfinish(session):
    if _is_xdist_worker(session.config):
        session.config.workeroutput["fpq_coverage"] = {
            "bins": dict(SESSION.bins), **{k: getattr(SESSION, k) for k in _COUNTS}}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist controller: add a finished worker's coverage to the session's."""
    got = getattr(node, "workeroutput", {}).get("fpq_coverage")
    if got:
        SESSION.merge(got["bins"])
        for k in _COUNTS:
            setattr(SESSION, k, getattr(SESSION, k) + got[k])


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _is_xdist_worker(config) or not SESSION.bins:
        return
    from tb_lib.verilog import BUILD_ROOT
    BUILD_ROOT.mkdir(parents=True, exist_ok=True)
    (BUILD_ROOT / "coverage.json").write_text(json.dumps(SESSION.summary(), indent=1) + "\n")
    terminalreporter.section("cocotb functional coverage (build/cocotb/coverage.json)")
    for line in report_lines(SESSION):
        terminalreporter.write_line(line)
