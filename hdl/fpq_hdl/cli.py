"""The RTL's subcommands of ``fpq`` (``fpq.cli``). ``fpq verilog``: the queue manager as a core (``fpq_hdl.axi_core``): one flat Verilog
module with AXI-Stream ports and its register file behind AXI4-Lite or Wishbone, and a
SystemVerilog package of its payload structs and register addresses; ``fpq datasheet``: the
generated sections of docs/DATASHEET.md (``fpq_hdl.datasheet``)."""


__all__ = ["register"]


def _power_on_keys(build, key=None, mix_key=None, seeds=None):
    """``build`` with its power-on keys (``Build.power_on_keys``): ``key`` (``--key`` hex)
    for ``hash_key``, ``mix_key`` (``--mix-key``) for ``hash_mix_key`` and ``seeds``
    (``{field: integer}``, for the generators' seeds), checked, and one drawn from the
    operating system for every other runtime key and seed (``fpq.keys.hardware_keys``; a
    key the build fixes is checked instead). Returns ``(build, names of those drawn)``."""
    import dataclasses
    from fpq.keys import hardware_keys, parse_key
    given = {name: (parse_key(text, option, name, build), option)
             for name, text, option in (("hash_key", key, "--key"),
                                        ("hash_mix_key", mix_key, "--mix-key"))
             if text is not None}
    given.update({name: (value, f"--{name.replace('_', '-')}")
                  for name, value in (seeds or {}).items()})
    keys, drawn = hardware_keys(build, given)
    return dataclasses.replace(build, power_on_keys=keys), drawn


def _verilog(args):
    import sys
    from fpq.cli_options import build_from_args
    from .axi_core import export_verilog, keys_file
    build = build_from_args(args)
    drawn = []
    if args.bus != "none":
        seeds = {name: _seed(getattr(args, name), f"--{name.replace('_', '-')}")
                 for name in ("seed_decide", "seed_clear") if getattr(args, name) is not None}
        build, drawn = _power_on_keys(build, args.key, args.mix_key, seeds)
    elif [o for o in ("key", "mix_key", "seed_decide", "seed_clear")
          if getattr(args, o) is not None]:
        option = next(o for o in ("key", "mix_key", "seed_decide", "seed_clear")
                      if getattr(args, o) is not None)
        raise ValueError(f"--{option.replace('_', '-')}: only with a register bus: the core "
                         f"of --bus none has no key register (the keys come in on its cfg "
                         f"port)")
    elif args.embed_keys:
        raise ValueError("--embed-keys: only with a register bus: the core of --bus none has "
                         "no key register")
    for name in drawn:
        option = {"hash_key": " (--key HEX gives one)",
                  "hash_mix_key": " (--mix-key HEX gives one)"}.get(
                      name, f" (--{name.replace('_', '-')} N gives one)")
        print(f"{name}: power-on value drawn from the operating system's random "
              f"source{option}", file=sys.stderr)
    paths, private = export_verilog(args.out, build, bus=args.bus, name=args.name,
                                    package=not args.no_package, target=args.target,
                                    embed_keys=args.embed_keys)
    for path in paths:
        print(f"wrote {path}")
    for path in private:
        if path != args.out:
            print(f"{path}: the power-on keys and seeds, which {args.out} includes (mode "
                  f"0600): keep it secret", file=sys.stderr)
        else:
            what = "--embed-keys: the power-on keys" if args.embed_keys else \
                "--fix: a key the build fixes"
            print(f"warning: {path} holds secret values ({what}): written with mode 0600; "
                  f"keep it secret and out of version control", file=sys.stderr)
    return 0


def _seed(text, option):
    """The integer of a seed option's text (decimal or 0x hex); its range and strength are
    checked with the keys' (``fpq.keys.check_key``)."""
    try:
        return int(text, 0)
    except ValueError:
        raise ValueError(f"{option}: {text[:40]!r} is not an integer (allowed: [2**32, "
                         f"2**64 - 1])") from None


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
                        "operating system, as are the other power-on keys and the random "
                        "generators' seeds. The Verilog holds none of them: its key "
                        "registers reset to macros (NAME_HASH_KEY, ...) defined in "
                        "NAME_keys.vh next to the output (mode 0600), which it includes (give "
                        "your tools that folder as an include directory); so the Verilog is "
                        "the same for every key")
    p.add_argument("--mix-key", default=None, metavar="HEX",
                   help="power-on value of the hash_mix_key register: 24 hex digits, not "
                        "Config's public default, each 32-bit round key with 8 to 24 set "
                        "bits; default: drawn from the operating system (in NAME_keys.vh as "
                        "--key's)")
    for name, what in (("seed_decide", "the per-arrival generator's"),
                       ("seed_clear", "the clear-index generator's")):
        p.add_argument(f"--{name.replace('_', '-')}", default=None, metavar="N",
                       help=f"power-on seed of {what} state: an integer in [2**32, "
                            f"2**64 - 1]; default: drawn from the operating system (in "
                            f"NAME_keys.vh as --key's)")
    p.add_argument("--embed-keys", action="store_true",
                   help="put the power-on keys in the Verilog itself instead of "
                        "NAME_keys.vh: the Verilog is then secret, written with mode 0600, "
                        "and differs between exports (a warning says so)")
    p.set_defaults(func=_verilog, extra="hdl")

    p = subparsers.add_parser("datasheet", help="the generated sections of docs/DATASHEET.md: "
                                                "the exported core's ports, its timing "
                                                "measured in simulation, resources from "
                                                "docs/benchmarks/ (needs the hdl extra)")
    from .datasheet import add_arguments as datasheet_arguments, main as datasheet
    datasheet_arguments(p)
    p.set_defaults(func=datasheet, extra="hdl")
