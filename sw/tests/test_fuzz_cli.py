"""Fuzzing of ``fpq`` command-line arguments (hypothesis): for each subcommand's numeric
options, values out of range, NaN/inf and non-numbers. Each must exit with status 2, name the
option (and the allowed range when the value is a number), print no traceback, and create
no file. Out-of-range values only: a valid value would start a long run. Case counts:
docs/RELIABILITY.md."""

import contextlib
import io
import math
import os
import subprocess
import sys

from hypothesis import given, settings, strategies as st, HealthCheck
import pytest

from fpq.cli import main
from bad_inputs import Tried

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCENARIO = os.path.join(ROOT, "sim", "scenarios", "fpq-fpq.toml")
TRIED = Tried("`fpq` arguments")

# (subcommand prefix, option, type, lo, hi); output options are added per example
OPTIONS = [
    (["demo", "--no-rtl"], "--flows", int, 1, 2000),
    (["demo", "--no-rtl"], "--duration", float, 10.0, 5000.0),
    (["demo", "--no-rtl"], "--synthetic-flows", int, 1, 100_000),
    (["demo", "--no-rtl"], "--arrivals", int, 100, 10_000_000),
    (["demo", "--no-rtl"], "--seed", int, 0, 2**63 - 1),
    (["bench"], "--arrivals", int, 1000, 1_000_000),
    (["bench"], "--repeat", int, 1, 100),
    (["accuracy"], "--seed", int, 0, 2**64 - 1),
    (["trace", SCENARIO], "--duration", float, 0.0, 500.0),
    (["trace", SCENARIO], "--max-events", int, 1, None),
    (["figures", "--no-progress"], "--jobs", int, 1, 256),
    (["verilog"], "--avg-delay", int, 1, 127),
    (["config", "--format", "json"], "--vec-bits", int, 64, 65536),
    (["config", "--format", "c"], "--table-depth", int, 16, 65536),
    (["config", "--format", "readmemh"], "--avg-delay", int, 1, 127),
    (["regmap", "--format", "systemrdl"], "--table-depth", int, 16, 65536),
    (["attack", "--no-progress"], "--seeds", int, 2, 100),
    (["attack", "--no-progress"], "--jobs", int, 1, 64),
    (["attack", "--no-progress"], "--n-cap", int, 1, 8191),
    (["attack", "--no-progress"], "--pool", int, 1, 2**32),
    (["attack", "--no-progress"], "--duration", float, 0.0, 1e4),
    (["attack", "--no-progress"], "--rate", float, 1e-3, 1e7),
]
OUT = {"demo": ["--out", "{d}/demo"], "trace": ["--out", "{d}/t.fpqtrace"],
       "figures": ["--out", "{d}/fig", "--raw", "{d}/raw", "--results-md", "{d}/R.md"],
       "verilog": ["-o", "{d}/q.v"], "regmap": ["-o", "{d}/fpq.rdl"],
       "accuracy": ["--flows", "10", "--write", "{d}/R.md"],
       "attack": ["--out", "{d}/attack.md", "--plot", "{d}/attack.png"]}


def _not_a_number(text):
    try:
        float(text)
    except ValueError:
        return True
    return False


@st.composite
def bad_option(draw):
    prefix, opt, typ, lo, hi = draw(st.sampled_from(OPTIONS))
    junk = st.text(min_size=1, max_size=8).filter(
        lambda s: _not_a_number(s) and "\x00" not in s)
    if typ is int:
        nums = [st.integers(max_value=lo - 1)]
        if hi is not None:
            nums.append(st.integers(min_value=hi + 1))
        value = draw(st.one_of(*nums, st.just("1.5"), junk))
    else:
        value = draw(st.one_of(st.floats(max_value=lo, exclude_max=lo > 0 and True,
                                         allow_nan=False).filter(lambda v: v < lo or
                                                                 (lo == 0.0 and v <= 0)),
                               st.floats(min_value=hi, exclude_min=True, allow_nan=False),
                               st.sampled_from([math.nan, math.inf, -math.inf]), junk))
    return prefix, opt, typ, lo, hi, value


def run_main(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, err.getvalue()


def note(argv, code, err):
    """Record a command run: refused (its exit status and the last line it printed, the one
    naming the problem) or accepted."""
    if code:
        lines = err.strip().splitlines()
        TRIED.refused(" ".join(argv), f"exit {code}", lines[-1] if lines else "", SCENARIO)
    else:
        TRIED.accepted(" ".join(argv), SCENARIO)


@settings(max_examples=250, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=bad_option())
def test_bad_option_values(tmp_path, case):
    import tempfile
    d = tempfile.mkdtemp(dir=tmp_path)
    prefix, opt, typ, lo, hi, value = case
    out = {"json": "{d}/c.json", "c": "{d}/c.c", "readmemh": "{d}/mem"}
    extra = [a.format(d=d) for a in OUT.get(prefix[0], [])] + \
        (["-o", out[prefix[2]].format(d=d)] if prefix[0] == "config" else [])
    argv = prefix + extra + [f"{opt}={value}"]
    code, err = run_main(argv)
    note(prefix + [f"{opt}={value}"], code, err)       # the output options left out
    assert code == 2, (argv, err)
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    name = opt.lstrip("-")
    assert opt in last or name.replace("-", "_") in last, (argv, last)
    if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)):
        assert "[" in last or "range" in last, (argv, last)     # an allowed range is given
    assert os.listdir(d) == [], (argv, os.listdir(d))


@settings(max_examples=100, deadline=None)
@given(words=st.lists(st.text(alphabet=st.sampled_from("abcdefgilmnoprstuv-="), min_size=1,
                               max_size=10), min_size=1, max_size=3))
def test_unknown_subcommands_and_options(words):
    from fpq.cli import build_parser
    known = set(build_parser()._subparsers._group_actions[0].choices)
    if words[0] in known:
        words = ["x" + words[0]] + words[1:]
    code, err = run_main(words)
    note(words, code, err)
    assert code == 2 and "Traceback" not in err
    assert "invalid choice" in err or "required" in err or "unrecognized" in err \
        or "expected" in err, err


@pytest.mark.parametrize("argv, fragment", [
    (["demo", "--seed=-1"], "--seed: -1 is out of range [0, 9223372036854775807]"),
    (["accuracy", "--seed=-1"], "--seed: -1 is out of range [0, 18446744073709551615]"),
    (["figures", "--jobs=100000"], "--jobs: 100000 is out of range [1, 256]"),
    (["trace", SCENARIO, "--out=x", "--max-events=0"], "--max-events: 0 is out of range [1"),
    (["sim", SCENARIO, "--set", "queue.v_max=0"], "queue.v_max: 0 is out of range [1, 8192]"),
    (["sim", SCENARIO, "--set", "queue.avg_tau_s=-1"],
     "queue.avg_tau_s: -1 is out of range [0.0, 10000.0] s"),
    (["verilog", "-o", "q.v", "--avg-delay=128"],
     "avg_delay: 128 must be an integer in [1, 127] clocks"),
    (["trace-csv", SCENARIO, "out.csv"], "not an FPQ trace"),
    (["config", "--format", "c", "-o", "c.c", "--set", "limit_pkts=0"],
     "limit_pkts: 0 is out of range [1, 1048575] packets"),
    (["regmap", "--format", "systemrdl", "-o", "x.rdl", "--fix", "v_max=9000"],
     "fixed: v_max: 9000 is out of range [1, 8192] bits"),
])
def test_real_command_exit_status_and_message(tmp_path, argv, fragment):
    """The installed entry point: status 2, one line naming the problem, no traceback, no
    output file."""
    r = subprocess.run([sys.executable, "-m", "fpq.cli", *argv], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    note(argv, r.returncode, r.stderr)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert fragment in r.stderr, r.stderr
    assert os.listdir(tmp_path) == []
