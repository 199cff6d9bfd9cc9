"""``fpq board ...``: bitstream builds, the resource sweep and the live monitor; the boards'
subcommand of ``fpq`` (``fpq.cli``)."""

import math
import sys

__all__ = ["register"]


def _option(name):
    """The command-line option of a ``build_board`` parameter (``clk_mhz`` -> ``--clk-mhz``)."""
    return name if name in ("board", "router") else "--" + name.replace("_", "-")


def _retry_seeds(text):
    """``--retry-seeds``: None (the board's), "none" -> (), or "2,3" -> (2, 3)."""
    if text is None:
        return None
    if text.strip() == "none":
        return ()
    from fpq_hdl.synth import parse_seeds
    return tuple(parse_seeds(text, "--retry-seeds"))


def _build(args):
    from fpq.atomic import check_output_path
    from fpq.cli_options import given_build_options
    from fpq.keys import parse_key
    from .build import build_board, check_build_options
    key = None if args.key is None else parse_key(args.key, "--key")
    # the build options not given are the board's (build_board's None)
    options = dict(clk_mhz=args.clk_mhz, seed=args.seed, router=args.router,
                   time_limit=args.time_limit, key=key,
                   retry_seeds=_retry_seeds(args.retry_seeds), **given_build_options(args))
    # everything is checked before the build starts: it takes minutes to hours
    check_build_options(args.board, option=_option, **options)
    if args.record:
        check_output_path(args.record, "--record")
    s = build_board(args.board, out_root=args.out, **options)
    if args.record:
        from fpq.records import write_record
        write_record(args.record, "board", {
            "board": s["board"], "clock_mhz": s["clock_mhz"], "fmax_mhz": s["fmax_mhz"],
            "met": s["timing_met"], "goal_mhz": s["goal_mhz"], "build": s["build"],
            "nextpnr": s["nextpnr"], "resources": s["resources"]})
        print(f"wrote {args.record}")
    return 0 if (s["timing_met"] or not args.strict) else 1


def _sweep(args):
    from .sweep import sweep
    sweep(args.board, out_root=args.out, write=args.write, time_limit=args.time_limit)
    return 0


def _check_monitor_timing(args):
    """``--clk-mhz`` and ``--interval`` of ``fpq board monitor``: a clock the queue manager's
    configuration takes as its ``tick_hz``, and a finite interval shorter than the board's
    32-bit clock counter's wrap (``tg_time``: the view's rates are counter differences over
    it, which wrap once more than 2**32 clocks pass between two readings)."""
    from fpq.fields import FIELD_BY_NAME
    from .platforms import BOARDS
    from .traffic_generator import TG_REG
    lo_hz, hi_hz = FIELD_BY_NAME["tick_hz"].bounds(None)
    if args.clk_mhz is not None and not lo_hz / 1e6 <= args.clk_mhz <= hi_hz / 1e6:
        raise ValueError(f"--clk-mhz: {args.clk_mhz} MHz is out of range "
                         f"[{lo_hz / 1e6:g}, {hi_hz / 1e6:g}] (tick_hz)")
    if args.simulate:
        clocks_per_s, whose = 2000, "the simulated board's 2000 clocks per interval second"
    elif args.clk_mhz:
        clocks_per_s, whose = args.clk_mhz * 1e6, f"--clk-mhz {args.clk_mhz:g}"
    elif args.board:
        spec = BOARDS[args.board]
        clocks_per_s, whose = spec.clk_mhz * 1e6, (f"the {spec.name}'s default clock "
                                                   f"{spec.clk_mhz:g} MHz")
    else:
        spec = max(BOARDS.values(), key=lambda s: s.clk_mhz)
        clocks_per_s, whose = spec.clk_mhz * 1e6, (
            f"the fastest default board clock, {spec.clk_mhz:g} MHz ({spec.name}); "
            f"give --clk-mhz for another")
    longest = 2 ** TG_REG["tg_time"].width / clocks_per_s
    if not (math.isfinite(args.interval) and 0 < args.interval < longest):
        raise ValueError(f"--interval: {args.interval} s is out of range (0, {longest:.6g}) "
                         f"s: the board's 32-bit clock counter wraps after {longest:.6g} s at "
                         f"{whose}")


def _monitor(args):
    from .monitor import monitor, open_port, parse_settings
    from .platforms import BOARDS
    settings = parse_settings(args.set)
    _check_monitor_timing(args)
    keys = {}
    if args.key is not None:
        from fpq.keys import check_key, parse_key
        if not args.configure:
            raise ValueError("--key: only with --configure (the key is written with the "
                             "configuration)")
        if args.board and "hash_key" in BOARDS[args.board].build.fixed_fields:
            raise ValueError(f"--key: the {args.board}'s bitstream fixes hash_key (fpq board "
                             f"build {args.board} --key HEX): it cannot be written")
        keys["hash_key"] = check_key(parse_key(args.key, "--key"), "hash_key", "--key")
    if args.configure and not (args.clk_mhz or args.simulate):
        # checked before the port is opened: an argument error touches no board
        raise ValueError("--clk-mhz: required with --configure (the board clock is the "
                         "queue manager's time base: tick_hz = the clock)")
    from .platforms import BOARDS, ICEBREAKER_SIZES, at_clock
    build = BOARDS[args.board].build if args.board else None
    if args.simulate:
        from .soc import SelfTestSoC
        from .sim_port import SimulatedPort
        build = at_clock(build or ICEBREAKER_SIZES, 1e6)
        soc = SelfTestSoC(build, clk_freq=1e6, baud=250000)
        port = SimulatedPort(soc)
        clk_hz = 1e6
        sleep = lambda s: port.run_cycles(max(1, int(s * 2000)))   # noqa: E731
        print("simulated board (Amaranth simulator, 1 MHz clock, 2000 clocks per interval)",
              file=sys.stderr)
    else:
        if not args.port:
            raise ValueError("--port: required (e.g. /dev/ttyUSB0), or --simulate")
        port = open_port(args.port, args.baud, args.timeout)
        clk_hz = args.clk_mhz * 1e6 if args.clk_mhz else None
        sleep = None
    if args.configure:
        from .monitor import configure
        from .protocol import BusClient
        configure(BusClient(port, retries=1), clk_hz, build=build, **keys)
        if not keys and not (build and "hash_key" in build.fixed_fields):
            print("hash_key: drawn from the operating system's random source and written to "
                  "the board (write-only: it cannot be read back)", file=sys.stderr)
    if args.lock:
        # the generator settings go first: once locked, the bridge refuses every write
        from .monitor import apply_settings
        from .protocol import BusClient
        client = BusClient(port, retries=1)
        apply_settings(client, settings)
        settings = {}
        client.lock()
        print("the UART bridge is locked: register writes are refused until the board is "
              "reset", file=sys.stderr)
    kw = {"sleep": sleep} if sleep else {}
    monitor(port, interval=args.interval, count=args.count, clk_hz=clk_hz,
            settings=settings, clear=not args.no_clear, **kw)
    return 0


def register(subparsers):
    p = subparsers.add_parser("board", help="FPGA boards: bitstreams, reports, live monitor "
                                            "(needs the boards extra)")
    p.set_defaults(extra="boards")
    sub = p.add_subparsers(dest="board_command", metavar="BOARD_COMMAND")
    sub.required = True
    _add_build(sub)
    _add_sweep(sub)
    _add_monitor(sub)


def _add_build(sub):
    from fpq.cli_options import add_build_arguments
    from fpq_hdl.toolchain import ROUTERS
    b = sub.add_parser("build", help="build a bitstream with timing / utilisation reports")
    b.add_argument("board", choices=["ulx3s", "icebreaker"])
    b.add_argument("--out", default="build", help="folder (default build/; the board's "
                   "files go to build/<board>/)")
    add_build_arguments(b, defaults="the board's", avg_delay=False)
    b.add_argument("--clk-mhz", type=float, default=None,
                   help="PLL clock, MHz (default per board; within what the board's PLL "
                        "makes: iCEBreaker 8.4375-528, ULX3S 3.125-800)")
    b.add_argument("--seed", type=int, default=1, help="nextpnr placement seed")
    b.add_argument("--retry-seeds", default=None, metavar="LIST",
                   help="seeds to place and route with again, in turn, while timing is "
                        "missed (comma-separated, or 'none'; default the board's: ULX3S "
                        "2-7, iCEBreaker none)")
    b.add_argument("--router", choices=ROUTERS, default=ROUTERS[0],
                   help="nextpnr router (default router1)")
    b.add_argument("--strict", action="store_true", help="exit 1 if timing is missed")
    b.add_argument("--key", default=None, metavar="HEX",
                   help="the hash key: 40 hex digits, not weak (docs/RELIABILITY.md, \"Key "
                        "handling\"); fixed in a build that fixes it (the iCEBreaker's), "
                        "else the power-on value of the hash_key register (the ULX3S's: what "
                        "it holds out of reset until a host writes a key). Default: drawn "
                        "from the operating system, as are the power-on values of the other "
                        "runtime keys (hash_mix_key). Recorded in build/<board>/keys.txt "
                        "(mode 0600), never in the summaries or records")
    b.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="stop the tools after S seconds (default: no limit)")
    b.add_argument("--record", metavar="PATH.json", default=None,
                   help="also write the results as a measurement record (fpq.records; the "
                        "project keeps them in docs/benchmarks/)")
    b.set_defaults(func=_build)


def _add_sweep(sub):
    s = sub.add_parser("sweep", help="resource / Fmax table over build-time configurations")
    s.add_argument("board", choices=["ulx3s", "icebreaker"])
    s.add_argument("--out", default="build/sweep")
    s.add_argument("--write", default=None, metavar="MD", help="also write the table here")
    s.add_argument("--time-limit", type=float, default=1200.0, metavar="S",
                   help="seconds per configuration before it is stopped and listed as not "
                        "finished (default 1200)")
    s.set_defaults(func=_sweep)


def _add_monitor(sub):
    m = sub.add_parser("monitor", help="live view of a board over its UART")
    m.add_argument("--port", help="serial port, e.g. /dev/ttyUSB0")
    m.add_argument("--baud", type=int, default=115200)
    m.add_argument("--board", choices=["ulx3s", "icebreaker"], default=None,
                   help="the board's build; needed with --configure when its bitstream fixes "
                        "configuration fields (build register bit 17)")
    m.add_argument("--timeout", type=float, default=0.5, help="reply timeout, s")
    m.add_argument("--interval", type=float, default=1.0,
                   help="refresh period, s (shorter than 2**32 board clocks, the wrap of the "
                        "clock counter the rates are measured with)")
    m.add_argument("--count", type=int, default=0, help="views to show (0: until Ctrl-C)")
    m.add_argument("--clk-mhz", type=float, default=None,
                   help="board clock, for rates per s and for --configure (the queue "
                        "manager's time base: tick_hz = this clock)")
    m.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="generator register to write first, e.g. --set flows=1000")
    m.add_argument("--configure", action="store_true",
                   help="first load the default FPQ configuration (every register of "
                        "fpq.Config for the board's build, derived with tick_hz = the board "
                        "clock: clear_period, wq_shift, avg_sample_period, ...) and the r(N) "
                        "table (out of reset the table already holds the build's defaults)")
    m.add_argument("--key", default=None, metavar="HEX",
                   help="with --configure: the hash key to write, 40 hex digits, not weak "
                        "(docs/RELIABILITY.md, \"Key handling\"); default: drawn from the "
                        "operating system. The register is write-only: keep the key if you "
                        "need it")
    m.add_argument("--lock", action="store_true",
                   help="after --configure and --set, lock the UART bridge: every register "
                        "write through it is refused until the board is reset (reads still "
                        "work); boards/README.md, \"The UART bridge\"")
    m.add_argument("--simulate", action="store_true",
                   help="no board: run the self-test SoC RTL in Amaranth's simulator")
    m.add_argument("--no-clear", action="store_true", help="do not clear the screen")
    m.set_defaults(func=_monitor)
