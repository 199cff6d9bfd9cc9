"""Command-line options that several commands share: the build options (``fpq verilog``,
``fpq regmap``, ``fpq config``, ``fpq board build``, ``python -m fpq_hdl.synth``), declared
once with one set of defaults, ``Build()``'s."""

import dataclasses

from .config import AVG_DELAY, BUILD_SIZES, Build, parse_fixed

__all__ = ["add_build_arguments", "build_from_args"]


def add_build_arguments(parser, defaults=None, avg_delay=True):
    """Add the build options to ``parser``: ``--vec-bits``, ``--table-depth``,
    ``--avg-delay`` (unless ``avg_delay`` is False: a command whose builds keep theirs) and
    ``--fix``. An option not given is None, so :func:`build_from_args` can tell it from a
    value given.

    Parameters
    ----------
    defaults : Build or str
        What an option not given takes, for the help: a ``Build`` (default ``Build()``),
        whose values the help shows, or the words for a build the command picks later
        (``"the board's"``)."""
    d = Build() if defaults is None else defaults
    shown = (lambda name: f"default {getattr(d, name)}") if isinstance(d, Build) else \
        (lambda name: f"default: {d}")
    for name, what in (("vec_bits", "flow vector bits"), ("table_depth", "r(N) table entries")):
        lo, hi = BUILD_SIZES[name]
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=None,
                            help=f"{what}, power of two {lo}..{hi} ({shown(name)})")
    if avg_delay:
        parser.add_argument("--avg-delay", type=int, default=None,
                            help=f"clocks from a sample of the queue to the average arrivals "
                                 f"decide with, 1..127; the RTL needs at least its own, "
                                 f"{AVG_DELAY} ({shown('avg_delay')})")
    replaces = "" if isinstance(d, Build) else f"; replaces {d} own fixed fields"
    parser.add_argument("--fix", action="append", metavar="FIELD=VALUE",
                        help=f"a configuration field fixed at build time (repeatable; its "
                             f"register is a read-only constant, docs/REGISTERS.md \"Fixed "
                             f"registers\"{replaces})")


def build_from_args(args, defaults=None):
    """The ``Build`` of the build options in ``args`` (:func:`add_build_arguments`): those
    given replace the values of ``defaults`` (default ``Build()``), ``--fix`` all its fixed
    fields. Errors are ``Build``'s (``ConfigError`` naming the field and its range) or
    ``parse_fixed``'s."""
    given = {name: getattr(args, name, None) for name in ("vec_bits", "table_depth",
                                                         "avg_delay")}
    given = {name: value for name, value in given.items() if value is not None}
    if args.fix:
        given["fixed"] = parse_fixed(args.fix)
    return dataclasses.replace(Build() if defaults is None else defaults, **given)
