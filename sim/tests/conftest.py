"""sw/tests on sys.path: the fuzz tests here record the bad inputs they try through its
``bad_inputs`` module, as sw/tests's fuzz tests do (docs/RELIABILITY.md)."""

import sys
from pathlib import Path

SW_TESTS = str(Path(__file__).resolve().parents[2] / "sw" / "tests")
if SW_TESTS not in sys.path:
    sys.path.append(SW_TESTS)
