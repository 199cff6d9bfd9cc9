"""pytest glue for the cocotb benches: the bench library on sys.path (the cocotb runner passes
sys.path on as PYTHONPATH), and the functional-coverage report.

Every bench run returns coverage bins; they are summed over the session, written to
``build/cocotb/coverage.json`` and printed at the end of the run."""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from tb_lib.coverage_report import SESSION, report_lines  # noqa: E402


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not SESSION.bins:
        return
    from tb_lib.verilog import BUILD_ROOT
    BUILD_ROOT.mkdir(parents=True, exist_ok=True)
    (BUILD_ROOT / "coverage.json").write_text(json.dumps(SESSION.summary(), indent=1) + "\n")
    terminalreporter.section("cocotb functional coverage (build/cocotb/coverage.json)")
    for line in report_lines(SESSION):
        terminalreporter.write_line(line)
