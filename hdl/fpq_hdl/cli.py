"""``fpq verilog``: the queue manager as a core (``fpq_hdl.axi_core``): one flat Verilog
module with AXI-Stream ports and its register file behind AXI4-Lite or Wishbone, and a
SystemVerilog package of its payload structs and register addresses."""


__all__ = ["register"]


def _fixed_lines(build):
    """Header lines naming the registers the build fixes (their ``config`` fields are
    ignored) and the fields they come from."""
    if not build.fixed:
        return []
    from fpq.config import SECRET_SHOWN
    from fpq.regmap import registers
    fields = ", ".join(f"{k}={v}" for k, v in build.fixed_json().items())
    # a fixed key is in the netlist, but not in a header line that logs and diffs copy
    regs = [f"{r.name}={SECRET_SHOWN if r.secret else f'{r.reset:#x}'}"
            for r in registers(build) if r.kind == "fixed"]
    return [f"// Fixed at build time (Build.fixed): {fields}.",
            "// Constants (read-only registers; the raw cfg port's field is ignored): "
            f"{', '.join(regs) if regs else '(no register: only host fields fixed)'}."]


def _verilog(args):
    from fpq.config import Build
    from fpq.config import parse_fixed
    from .axi_core import export_verilog
    build = Build(vec_bits=args.vec_bits, table_depth=args.table_depth,
                  avg_delay=args.avg_delay,
                  fixed=parse_fixed(args.fix))
    for path in export_verilog(args.out, build, bus=args.bus, name=args.name,
                               package=not args.no_package):
        print(f"wrote {path}")
    return 0


#: ``--bus`` choices (``axi_core.BUSES``, which a test holds equal), here so that the command
#: registers without Amaranth and can say that it needs it.
BUSES = ("axi-lite", "wishbone", "none")


def register(subparsers):
    from fpq.config import Build
    d = Build()
    p = subparsers.add_parser("verilog", help="export the RTL queue manager as a Verilog core")
    p.add_argument("-o", "--out", default="build/fpq_core.v",
                   help="output file (default build/fpq_core.v); the package goes next to it "
                        "as NAME_pkg.sv")
    p.add_argument("--bus", choices=BUSES, default="axi-lite",
                   help="register bus of the core: axi-lite (s_axil_*), wishbone (wb_*), or "
                        "none (the queue manager's raw configuration port cfg; default "
                        "axi-lite)")
    p.add_argument("--name", default="fpq_core",
                   help="module name, and the package's NAME_pkg (a Verilog identifier; "
                        "default fpq_core): two builds with different names can share one "
                        "design")
    p.add_argument("--no-package", action="store_true",
                   help="do not write the SystemVerilog package")
    p.add_argument("--vec-bits", type=int, default=d.vec_bits,
                   help=f"flow vector bits, power of two 64..65536 (default {d.vec_bits})")
    p.add_argument("--table-depth", type=int, default=d.table_depth,
                   help=f"r(N) table entries, power of two 16..65536 (default {d.table_depth})")
    p.add_argument("--avg-delay", type=int, default=d.avg_delay,
                   help=f"clocks from a sample of the queue to the average arrivals decide "
                        f"with, 1..127, at least the RTL's own (default {d.avg_delay})")
    p.add_argument("--fix", action="append", metavar="FIELD=VALUE",
                   help="fix a configuration field at build time (repeatable; its register "
                        "becomes a constant, docs/REGISTERS.md \"Fixed registers\")")
    p.set_defaults(func=_verilog)
