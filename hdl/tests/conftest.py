"""The shared test kit (``cocotb-tests/tb_lib``: block benches, stimulus generators, fault
injection at the RTL's construction seams) on sys.path, for the benches here in Amaranth's
simulator; and ``refused``, a command's refusal of bad arguments."""

import sys
from pathlib import Path

import pytest

KIT = str(Path(__file__).resolve().parents[2] / "cocotb-tests")
if KIT not in sys.path:
    sys.path.insert(0, KIT)


@pytest.fixture
def refused(tmp_path, capsys):
    """``refused(main, argv)``: run a command's ``main`` with ``argv`` and ``--out`` a new
    folder, check that it exits with 2 and writes nothing, and return its stderr."""
    def check(main, argv):
        out = tmp_path / "out"
        with pytest.raises(SystemExit) as exc:
            main(argv + ["--out", str(out)])
        assert exc.value.code == 2
        assert not out.exists()
        return capsys.readouterr().err
    return check
