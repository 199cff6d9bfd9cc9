"""The RTL's subcommands of ``fpq`` (``fpq.cli``). ``fpq verilog``: the queue manager as a core (``fpq_hdl.axi_core``): one flat Verilog
module with AXI-Stream ports and its register file behind AXI4-Lite or Wishbone, and a
SystemVerilog package of its payload structs and register addresses; ``fpq datasheet``: the
generated sections of docs/DATASHEET.md (``fpq_hdl.datasheet``)."""


__all__ = ["register"]


def _power_on_keys(build, key=None, mix_key=None):
    """``build`` with its power-on keys (``Build.power_on_keys``): ``key`` (``--key`` hex)
    for ``hash_key`` and ``mix_key`` (``--mix-key``) for ``hash_mix_key``, checked, and one
    drawn from the operating system for every other runtime key (``fpq.keys.hardware_keys``;
    a key the build fixes is checked instead). Returns ``(build, names of the keys drawn)``."""
    import dataclasses
    from fpq.keys import hardware_keys, parse_key
    given = {name: (parse_key(text, option, name, build), option)
             for name, text, option in (("hash_key", key, "--key"),
                                        ("hash_mix_key", mix_key, "--mix-key"))
             if text is not None}
    keys, drawn = hardware_keys(build, given)
    return dataclasses.replace(build, power_on_keys=keys), drawn


def keys_path(out, name):
    """The file ``fpq verilog -o OUT --name NAME`` records the core's keys in: NAME_keys.txt
    next to OUT (mode 0600)."""
    import os
    return os.path.join(os.path.dirname(out), f"{name}_keys.txt")


def _verilog(args):
    import sys
    from fpq.cli_options import build_from_args
    from .axi_core import export_verilog
    build = build_from_args(args)
    drawn = []
    if args.bus != "none":
        build, drawn = _power_on_keys(build, args.key, args.mix_key)
    elif args.key is not None or args.mix_key is not None:
        raise ValueError(f"{'--key' if args.key is not None else '--mix-key'}: only with a "
                         f"register bus: the core of --bus none has no key register (the "
                         f"keys come in on its cfg port)")
    for name in drawn:
        option = {"hash_key": "--key", "hash_mix_key": "--mix-key"}[name]
        print(f"{name}: power-on value drawn from the operating system's random source "
              f"({option} HEX gives one)", file=sys.stderr)
    keys = keys_path(args.out, args.name)
    for path in export_verilog(args.out, build, bus=args.bus, name=args.name,
                               package=not args.no_package, keys=keys, target=args.target):
        print(f"wrote {path}")
    if build.secret_values():
        print(f"the core's keys are recorded in {keys} (mode 0600): keep it secret",
              file=sys.stderr)
    return 0


#: ``--bus`` choices (``axi_core.BUSES``, which a test holds equal), here so that the command
#: registers without Amaranth and can say that it needs it.
BUSES = ("axi-lite", "wishbone", "none")
#: ``--target`` choices (``axi_core.TARGETS``, held equal by the same test).
TARGETS = ("generic", "ecp5")


def register(subparsers):
    from fpq.cli_options import add_build_arguments
    p = subparsers.add_parser("verilog", help="export the RTL queue manager as a Verilog core "
                                              "(needs the hdl extra)")
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
    p.add_argument("--target", choices=TARGETS, default="generic",
                   help="generic (default: memories and multipliers for your tool to infer; "
                        "Vivado and Quartus use the block RAMs' output registers) or ecp5 "
                        "(Lattice DP16KD and MULT18X18D instantiated, the block RAMs' output "
                        "registers used: Yosys's inference leaves them out, and the RAMs' "
                        "clock-to-out then limits the clock; docs/DATASHEET.md, Resources)")
    add_build_arguments(p)
    p.add_argument("--key", default=None, metavar="HEX",
                   help="power-on value of the hash_key register (what the core holds out "
                        "of reset until a host writes a key): 40 hex digits, not weak "
                        "(docs/RELIABILITY.md, \"Key handling\"); default: drawn from the "
                        "operating system. The power-on keys are recorded in NAME_keys.txt "
                        "next to the output (mode 0600), nowhere else")
    p.add_argument("--mix-key", default=None, metavar="HEX",
                   help="power-on value of the hash_mix_key register: 24 hex digits, not all "
                        "bits equal; default: drawn from the operating system (recorded as "
                        "--key's)")
    p.set_defaults(func=_verilog, extra="hdl")

    p = subparsers.add_parser("datasheet", help="the generated sections of docs/DATASHEET.md: "
                                                "the exported core's ports, its timing "
                                                "measured in simulation, resources from "
                                                "docs/benchmarks/ (needs the hdl extra)")
    from .datasheet import add_arguments as datasheet_arguments, main as datasheet
    datasheet_arguments(p)
    p.set_defaults(func=datasheet, extra="hdl")
