"""The shared test kit (``cocotb-tests/tb_lib``: block benches, stimulus generators, fault
injection at the RTL's construction seams) on sys.path, for the benches here in Amaranth's
simulator."""

import sys
from pathlib import Path

KIT = str(Path(__file__).resolve().parents[2] / "cocotb-tests")
if KIT not in sys.path:
    sys.path.insert(0, KIT)
