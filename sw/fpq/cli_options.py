"""Command-line options that several commands share: ``FIELD=VALUE`` lists
(:func:`parse_fixed`) and the build options (``fpq verilog``, ``fpq regmap``, ``fpq config``,
``fpq board build``, ``python -m fpq_hdl.synth``), declared once with one set of defaults,
``Build()``'s."""

import dataclasses

from .config import BUILD_SIZES, Build
from .fields import ConfigError, FIELD_BY_NAME
from .messages import brief

__all__ = ["add_build_arguments", "build_from_args", "given_build_options", "parse_fixed"]


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
                                 f"decide with, 1..127, at least the RTL's own "
                                 f"({shown('avg_delay')})")
    replaces = "" if isinstance(d, Build) else f"; replaces {d} own fixed fields"
    parser.add_argument("--fix", action="append", metavar="FIELD=VALUE",
                        help=f"a configuration field fixed at build time (repeatable; its "
                             f"register is a read-only constant, docs/REGISTERS.md \"Fixed "
                             f"registers\"{replaces})")


def given_build_options(args):
    """The build options given in ``args`` (:func:`add_build_arguments`), by ``Build``'s
    field names (``fixed``: the parsed ``--fix``); those not given are left out."""
    given = {name: getattr(args, name, None) for name in ("vec_bits", "table_depth",
                                                         "avg_delay")}
    given = {name: value for name, value in given.items() if value is not None}
    if args.fix:
        given["fixed"] = parse_fixed(args.fix)
    return given


def build_from_args(args, defaults=None):
    """The ``Build`` of the build options in ``args`` (:func:`add_build_arguments`): those
    given replace the values of ``defaults`` (default ``Build()``), ``--fix`` all its fixed
    fields. Errors are ``Build``'s (``ConfigError`` naming the field and its range) or
    :func:`parse_fixed`'s."""
    return dataclasses.replace(Build() if defaults is None else defaults,
                               **given_build_options(args))


def parse_fixed(items, option="--fix"):
    """``["avg_tau_s=1e-3", "mode=fpq", "hash_key=6d5a..."]`` -> a dict for ``Build(fixed=...)``.
    Values are typed by their field (integers in any base, true/false, hex bytes); errors
    name the option, the field and what is allowed. Ranges are checked by ``Build``."""
    out = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        name, text = name.strip(), text.strip()
        f = FIELD_BY_NAME.get(name)
        if not sep or f is None:
            raise ConfigError(f"{option}: {brief(item)} must be FIELD=VALUE with FIELD one of "
                              f"{', '.join(FIELD_BY_NAME)}")
        try:
            if f.type == "int":
                value = int(text, 0)
            elif f.type == "float":
                value = float(text)
            elif f.type == "bool":
                value = {"true": True, "1": True, "false": False, "0": False}[text.lower()]
            elif f.type == "bytes":
                value = bytes.fromhex(text)
            else:
                value = text
        except (ValueError, KeyError):
            kind = {"int": "an integer", "float": "a number", "bool": "true or false",
                    "bytes": "hex bytes"}[f.type]
            raise ConfigError(f"{option} {name}: {brief(text)} is not {kind}") from None
        if name in out:
            raise ConfigError(f"{option} {name}: given twice")
        out[name] = value
    return out
