"""``fpq`` run in the test's own process, for the command-line tests of ``sw/tests``."""

import contextlib
import io

from fpq.cli import main

__all__ = ["run", "build_args"]


def run(argv):
    """``fpq`` in this process: (exit status, standard output, standard error)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def build_args(build):
    """The command-line options (``fpq verilog``'s build options) that give ``build``."""
    argv = ["--vec-bits", str(build.vec_bits), "--table-depth", str(build.table_depth),
            "--avg-delay", str(build.avg_delay)]
    for name, value in build.fixed_json(reveal_secrets=True).items():
        argv += ["--fix", f"{name}={value}"]
    return argv
