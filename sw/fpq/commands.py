"""The golden model's subcommands of ``fpq`` (``fpq.cli``): ``regmap``, ``bench``,
``benchmarks``, ``accuracy`` and ``trace-csv``."""

import os
import sys

from .cli_options import add_build_arguments, build_from_args
from .messages import brief

__all__ = ["register"]


def _regmap(args):
    from .config import Build
    from .regmap import write_all, FORMATS
    from .output_files import write_files
    build = build_from_args(args)
    if args.format == "all":
        if args.o is not None:
            raise ValueError(f"-o: names one file, for --format {'|'.join(FORMATS)}; "
                             f"--format all writes to --out DIR and --docs FILE")
        from .paths import checkout_root
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


def _accuracy(args):
    from .accuracy import markdown, BEGIN, END
    from .marked_section import write_section
    try:
        flows = [int(x) for x in args.flows.split(",")]
    except ValueError:
        raise ValueError(f"--flows: {brief(args.flows)} must be comma-separated integers "
                         f"in [1, 65536]") from None
    bad = [f for f in flows if not 1 <= f <= 65536]
    if bad:
        raise ValueError(f"--flows: {bad[0]} is out of range [1, 65536]")
    if not 0 <= args.seed < 2**64:
        raise ValueError(f"--seed: {args.seed} is out of range [0, {2**64 - 1}]")
    if args.write:
        from .atomic import check_output_path
        check_output_path(args.write, "--write")
    text = markdown(flows, seed=args.seed, progress=lambda m: print(m, file=sys.stderr))
    print(text)
    if args.write:
        write_section(args.write, text, BEGIN, END)
        print(f"wrote {args.write}", file=sys.stderr)
    return 0


def _trace_csv(args):
    from .atomic import check_output_path, check_not_an_input
    from .trace import convert_to_csv, STDOUT
    if args.output != STDOUT:
        check_output_path(args.output, "output")
        check_not_an_input(args.output, "output", [("input", args.input)])
    header = convert_to_csv(args.input, args.output)
    # with the CSV on standard output, the report goes to standard error
    print(f"wrote {'standard output' if args.output == STDOUT else args.output}: "
          f"{header['count']} events (tick_hz {header['tick_hz']:g})",
          file=sys.stderr if args.output == STDOUT else sys.stdout)
    return 0


def register(sub):
    from . import bench, benchmarks
    from .paths import default_output
    p = sub.add_parser("regmap", help="generate the register map: JSON, C header, Markdown, "
                                      "SystemRDL")
    from .regmap import FORMATS as REGMAP_FORMATS
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
    add_build_arguments(p)
    p.set_defaults(func=_regmap)

    p = sub.add_parser("bench", help="golden-model throughput benchmark")
    p.add_argument("--arrivals", type=int, default=300_000,
                   help="arrivals per run, 1000..1000000 (default 300000)")
    p.add_argument("--repeat", type=int, default=3, help="runs per case; the best counts")
    p.add_argument("--record", metavar="PATH.json",
                   help="also write the results as a measurement record (docs/benchmarks/)")
    p.set_defaults(func=bench.main)

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
    benchmarks.add_arguments(p)
    p.set_defaults(func=benchmarks.main)

    p = sub.add_parser("trace-csv", help="convert a binary trace to CSV")
    p.add_argument("input")
    p.add_argument("output", help="the CSV file (- for standard output)")
    p.set_defaults(func=_trace_csv)
