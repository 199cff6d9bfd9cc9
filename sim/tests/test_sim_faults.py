"""The probe of faults beyond bad values (issue 50), for the simulator: each class a table of
cases, each case the behaviour the project promises.

* scenario values: integers too large for a float, NaN and infinities, nested ranges,
  tables, dates and long text for every number of the schema and the queue manager's
  fields: a ScenarioError naming the key, a short message, never another exception;
* flood totals: the packets of all floods together are bounded;
* raw folders: ``fpq figures --from-raw`` on crafted folders exits 2 with one line naming
  the file or field;
* workers: ``fpq figures``, ``fpq attack``, ``fpq parity``, ``fpq sweep``, the simulator's
  bench with ``--jobs 2`` and ``bad_inputs.py``'s pytest, a signal to the main process
  only: no worker outlives it, the caller's pipes close;
* multi-file outputs: ``fpq figures`` stopped at any point leaves its outputs all old or all
  new.

The software's classes are in ``sw/tests/test_faults.py``. Every case is recorded for
docs/RELIABILITY.md."""

import copy
import datetime
import json
import math
import os
import shutil
import signal
import subprocess
import time
import tomllib

import pytest

from fpq_sim.scenario import validate, SCHEMA, ScenarioError
from bad_inputs import Tried
from fault_kit import (run_fpq, fpq_command, descendants, process_alive, signal_name,
                       temporaries)

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIO = os.path.join(HERE, "..", "scenarios", "fpq-fpq.toml")
with open(SCENARIO, "rb") as _f:
    BASE = tomllib.load(_f)
VALUES = Tried("faults: scenario values")
FLOODS = Tried("faults: flood totals")
RAW = Tried("faults: raw folders")
WORKERS = Tried("faults: workers")
SETS = Tried("faults: multi-file outputs")
#: The longest message a bad value may give.
MESSAGE_MAX = 300

#: Values no number of the schema takes
BAD_NUMBERS = {
    "10**400": 10**400, "2**1024": 2**1024, "-(2**1024)": -(2**1024), "nan": math.nan,
    "inf": math.inf, "-inf": -math.inf, "nested range [[0, 1], [1, 2]]": [[0, 1], [1, 2]],
    "[1, 2, 3]": [1, 2, 3], "[]": [], "table": {"a": 1}, "date": datetime.date(2020, 1, 1),
    "time": datetime.time(1, 2), "5 MB of digits": "9" * 5_000_000,
}
#: The queue manager's fields a scenario passes through (``fpq.Config``)
QUEUE_NUMBERS = ("p_pkts", "v_max", "t_clear_s", "n_cap", "avg_tau_s", "red_min_th",
                 "red_max_th", "red_max_p", "limit_bytes", "seed_decide", "seed_clear",
                 "rekey_hold_t_clear", "pkt_time_s")


def _apply(doc, sec, key, value):
    if sec == "":
        doc[key] = value
    elif sec == "flows":
        doc["flows"][0][key] = value
    elif sec == "floods":
        doc.setdefault("floods", [{"rate_pps": 100.0, "tuples": 1000}])[0][key] = value
    else:
        doc.setdefault(sec, {})[key] = value


def _where(sec, key):
    return {"": key, "flows": f"flows[0].{key}", "floods": f"floods[0].{key}"}.get(
        sec, f"{sec}.{key}")


NUMBER_KEYS = [(sec, k.name) for sec, keys in SCHEMA.items() for k in keys
               if k.type in ("int", "float")]
OTHER_KEYS = [(sec, k.name) for sec, keys in SCHEMA.items() for k in keys
              if k.type in ("str", "bool")]


def _value_case(sec, key, shown, value):
    doc = copy.deepcopy(BASE)
    _apply(doc, sec, key, value)
    where = _where(sec, key)
    with pytest.raises(ScenarioError) as info, VALUES(f"{where} = {shown}"):
        validate(doc)
    msg = str(info.value)
    assert msg.startswith(f"{where}: ") and len(msg) <= MESSAGE_MAX, msg[:500]


@pytest.mark.parametrize("shown", list(BAD_NUMBERS))
@pytest.mark.parametrize("sec, key", NUMBER_KEYS, ids=[_where(*k) for k in NUMBER_KEYS])
def test_a_bad_number_in_a_scenario_is_named(sec, key, shown):
    _value_case(sec, key, shown, BAD_NUMBERS[shown])


@pytest.mark.parametrize("shown", ["10**400", "table", "nested range [[0, 1], [1, 2]]",
                                   "5 MB of digits"])
@pytest.mark.parametrize("sec, key", OTHER_KEYS, ids=[_where(*k) for k in OTHER_KEYS])
def test_a_bad_text_or_flag_in_a_scenario_is_named(sec, key, shown):
    value = BAD_NUMBERS[shown]
    if key in ("name", "description") and isinstance(value, str):
        return                               # free text: any string is one
    _value_case(sec, key, shown, value)


@pytest.mark.parametrize("shown", ["10**400", "2**1024", "nan",
                                   "nested range [[0, 1], [1, 2]]", "table", "date",
                                   "5 MB of digits"])
@pytest.mark.parametrize("key", QUEUE_NUMBERS)
def test_a_bad_queue_manager_field_in_a_scenario_is_named(key, shown):
    _value_case("queue", key, shown, BAD_NUMBERS[shown])


#: ``fpq sim`` command lines with a bad value: (shown, --set or file text)
SIM_CASES = {
    "--set run.seed=<5000 digits>": ["--set", "run.seed=" + "9" * 5000],
    "--set flows.0.count=<a 1 MB word>": ["--set", "flows.0.count=" + "x" * (1 << 20)],
    "--set queue.discipline=[[1]]": ["--set", "queue.discipline=[[1]]"],
    "file: run.seed = <5000 digits>": "seed = " + "9" * 5000,
}


@pytest.mark.parametrize("case", list(SIM_CASES))
def test_fpq_sim_exits_2_with_one_short_line(tmp_path, case):
    from cli_run import run
    given = SIM_CASES[case]
    scenario = SCENARIO
    if isinstance(given, str):
        text = open(SCENARIO).read().replace("seed = 1\n", given + "\n", 1)
        scenario = tmp_path / "s.toml"
        scenario.write_text(text)
        given = []
    code, out, err = run(["sim", str(scenario), *given, "--json", str(tmp_path / "o.json")])
    lines = err.strip().splitlines()
    VALUES.refused(f"fpq sim, {case}", f"exit {code}",
                   (lines[-1] if lines else "").replace(str(tmp_path) + "/", ""),
                   path=scenario)
    assert code == 2 and len(lines) == 1, err[:2000]
    assert len(lines[0]) <= MESSAGE_MAX + len(str(scenario)), lines[0][:500]
    # the key, or for a number TOML cannot convert in a file, its line
    assert any(named in lines[0] for named in ("run.seed", "flows[0].count", "flows.0.count",
                                               "queue.discipline", "line 10")), lines[0][:500]


#: The number options of the simulator's commands, each with the arguments it needs to get as
#: far as checking them: (command, option, the rest of the command line)
NUMBER_OPTIONS = [
    ("trace", "--duration", ["fpq-fpq", "--out", "{tmp}/t.fpqtrace"]),
    ("trace", "--max-events", ["fpq-fpq", "--out", "{tmp}/t.fpqtrace"]),
    ("figures", "--jobs", ["--quick", "--out", "{tmp}/f", "--raw", "{tmp}/r",
                           "--results-md", "{tmp}/R.md"]),
    *[("demo", option, ["--no-rtl", "--out", "{tmp}/demo"]) for option in (
        "--flows", "--duration", "--synthetic-flows", "--arrivals", "--seed")],
    *[("attack", option, ["--out", "{tmp}/a.md"]) for option in (
        "--rate", "--tuples", "--rates", "--pool", "--n-cap", "--seeds", "--duration",
        "--warmup", "--jobs")],
    ("parity", "--seeds", []),
    ("parity", "--jobs", []),
    ("sweep", "--seeds", ["fpq-fpq", "--vary", "flows.0.count=3", "--out", "{tmp}/sw"]),
    ("sweep", "--jobs", ["fpq-fpq", "--vary", "flows.0.count=3", "--out", "{tmp}/sw"]),
    ("sweep", "--vary flows.0.count=", ["fpq-fpq", "--out", "{tmp}/sw"]),
    ("sweep", "--vary bottleneck.bandwidth_bps=", ["fpq-fpq", "--out", "{tmp}/sw"]),
]
#: Values none of them takes (``--max-events`` takes any large count: no limit)
OPTION_VALUES = {"10**400": "1" + "0" * 400, "nan": "nan", "inf": "inf", "1e400": "1e400",
                 "nested range [[0, 1], [1, 2]]": "[[0,1],[1,2]]", "5000 letters": "x" * 5000}


@pytest.mark.parametrize("shown", list(OPTION_VALUES))
@pytest.mark.parametrize("command, option, rest", NUMBER_OPTIONS,
                         ids=[f"{c} {o.split('.')[0]}" for c, o, _ in NUMBER_OPTIONS])
def test_a_bad_number_option_exits_2_naming_it(tmp_path, command, option, rest, shown):
    """``fpq attack --tuples`` with an integer beyond a float's range ended in an
    OverflowError traceback; every other option here gave exit 2."""
    from cli_run import run
    if option == "--max-events" and shown == "10**400":
        pytest.skip("a count that large means no limit")
    value = OPTION_VALUES[shown]
    given = [option, value] if not option.endswith("=") else \
        [option.split()[0], option.split()[1] + value]
    code, out, err = run([command, *given, *(a.format(tmp=tmp_path) for a in rest)])
    lines = err.strip().splitlines()
    VALUES.refused(f"fpq {command} {option.split('=')[0]} {shown}", f"exit {code}",
                   (lines[-1] if lines else "")[:MESSAGE_MAX].replace(str(tmp_path) + "/", ""))
    named = option.split()[-1].rstrip("=")
    assert code == 2 and "Traceback" not in err and named in lines[-1], err[-2000:]
    assert not any(tmp_path.iterdir())


# ---- flood totals ---------------------------------------------------------------------------

FLOOD_CASES = {
    "1000 groups of 1e9 packets": ([{"rate_pps": 1e7, "tuples": 1000, "stop_s": 100.0}] * 1000,
                                   False),
    "2 groups of 6e8 packets": ([{"rate_pps": 6e6, "tuples": 10, "stop_s": 100.0}] * 2, False),
    "1 group of 1e9 packets": ([{"rate_pps": 1e7, "tuples": 10, "stop_s": 100.0}], True),
    "4 groups of 2.5e8 packets": ([{"rate_pps": 2.5e6, "tuples": 10, "stop_s": 100.0}] * 4,
                                  True),
}


@pytest.mark.parametrize("case", list(FLOOD_CASES))
def test_the_packets_of_all_floods_are_bounded(case):
    floods, ok = FLOOD_CASES[case]
    doc = copy.deepcopy(BASE)
    doc["floods"] = copy.deepcopy(floods)
    if ok:
        with FLOODS(case):
            validate(doc)
        return
    with pytest.raises(ScenarioError) as info, FLOODS(case):
        validate(doc)
    assert str(info.value).startswith("floods: ") and "1,000,000,000" in str(info.value), \
        info.value


# ---- raw folders ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def raw_folder(tmp_path_factory):
    """The raw folder of a ``fpq figures --quick --only phase`` run (18 runs) and its
    outputs."""
    folder = tmp_path_factory.mktemp("figures")
    ran = run_fpq(["figures", "--quick", "--only", "phase", "--jobs", "1", "--no-progress",
                   "--out", str(folder / "fig"), "--raw", str(folder / "raw"),
                   "--results-md", str(folder / "R.md")], timeout=600)
    assert ran.status == 0, ran
    return folder


def _a_run(raw):
    return sorted(p for p in raw.iterdir() if not p.name.startswith("_"))[0]


def _edit_json(path, edit):
    data = json.loads(path.read_text())
    data = edit(data)
    path.write_text(json.dumps(data))


#: (crafted folder, what the message must name): each edits a copy of a good raw folder
RAW_CASES = {
    "_meta.json missing": (lambda raw: (raw / "_meta.json").unlink(), "_meta.json"),
    "_meta.json not JSON": (lambda raw: (raw / "_meta.json").write_text("{"), "_meta.json"),
    "_meta.json a list": (lambda raw: (raw / "_meta.json").write_text("[]"), "_meta.json"),
    "_meta.json without where": (lambda raw: _edit_json(raw / "_meta.json", lambda d: {
        k: v for k, v in d.items() if k != "where"}), "where"),
    "_meta.json where a number": (lambda raw: _edit_json(raw / "_meta.json", lambda d: dict(
        d, where=5)), "where"),
    "_meta.json wall NaN": (lambda raw: _edit_json(raw / "_meta.json", lambda d: dict(
        d, wall=math.nan)), "wall"),
    "a run not JSON": (lambda raw: _a_run(raw).write_text("{"), "{run}"),
    "a run not UTF-8": (lambda raw: _a_run(raw).write_bytes(b'{"a": "\xff"}'), "{run}"),
    "a run a JSON list": (lambda raw: _a_run(raw).write_text("[1, 2]"), "{run}"),
    "a run's key nested lists": (lambda raw: _edit_json(_a_run(raw), lambda d: dict(
        d, key=[["phase"], [1]])), "key"),
    "a run's key a number": (lambda raw: _edit_json(_a_run(raw), lambda d: dict(d, key=7)),
                             "key"),
    # an OverflowError traceback (math.isfinite) before
    "a run's key holding 10**400": (lambda raw: _edit_json(_a_run(raw), lambda d: dict(
        d, key=["phase", 10**400, 1])), "key"),
    "a run's seed 10**400": (lambda raw: _edit_json(_a_run(raw), lambda d: dict(
        d, key=d["key"][:-1] + [10**400])), "key"),
    "a run without flows": (lambda raw: _edit_json(_a_run(raw), lambda d: {
        k: v for k, v in d.items() if k != "flows"}), "flows"),
    "a run's flows a string": (lambda raw: _edit_json(_a_run(raw), lambda d: dict(
        d, flows="many")), "flows"),
    "a folder named x.json": (lambda raw: (raw / "x.json").mkdir(), "x.json"),
    # read as NaN and infinity before, and shown in the tables as if measured
    "a run holding NaN": (lambda raw: _edit_json(_a_run(raw), lambda d: dict(
        d, wall_seconds=math.nan)), "{run}"),
    "a run holding -Infinity": (lambda raw: _edit_json(_a_run(raw), lambda d: dict(
        d, flows=[-math.inf, 1.0])), "{run}"),
    "a run holding 1e400": (lambda raw: _a_run(raw).write_text(
        _a_run(raw).read_text().replace('"flows": [', '"flows": [1e400, ', 1)), "{run}"),
}


@pytest.mark.parametrize("case", list(RAW_CASES))
def test_from_raw_on_a_crafted_folder_exits_2_naming_it(tmp_path, raw_folder, case):
    from cli_run import run
    raw = tmp_path / "raw"
    shutil.copytree(raw_folder / "raw", raw)
    craft, named = RAW_CASES[case]
    named = named.replace("{run}", _a_run(raw).name)
    craft(raw)
    code, out, err = run(["figures", "--from-raw", "--quick", "--raw", str(raw), "--out",
                          str(tmp_path / "fig"), "--results-md", str(tmp_path / "R.md"),
                          "--no-progress"])
    lines = err.strip().splitlines()
    RAW.refused(f"--from-raw, {case}", f"exit {code}",
                (lines[-1] if lines else "").replace(str(tmp_path) + "/", ""))
    assert code == 2 and len(lines) == 1, err[-3000:]
    assert named in lines[0] and len(lines[0]) <= MESSAGE_MAX + len(str(raw)), lines[0]


@pytest.mark.parametrize("shown, value", [("true", True), ("a text", "x"),
                                          ("10**400", 10**400), ("-1", -1)])
@pytest.mark.parametrize("field", sorted(__import__("fpq_sim.figures.runner",
                                                    fromlist=["MEASURES"]).MEASURES))
def test_a_saved_measure_that_is_no_number_is_named_when_read(tmp_path, field, shown, value):
    """A saved run's counts, rates and fractions as the figures read them: true was taken
    for 1 and an integer beyond a float's range crashed the averages."""
    from fpq_sim.figures.runner import load_raw, RawFolderError
    (tmp_path / "sweep-fpq-20-1.json").write_text(json.dumps(
        {"key": ["sweep", "fpq", 20, 1], field: value}))
    run, = load_raw(str(tmp_path)).values()
    with pytest.raises(RawFolderError) as info, \
            RAW(f"a saved run's {field} = {shown}, as read"):
        run[field]
    assert str(info.value).startswith(f"--from-raw: sweep-fpq-20-1.json: {field}: ")


# ---- workers ----------------------------------------------------------------------------------

#: The commands that start workers: (argv, the processes they start below the command)
def _command(name, folder):
    python = [os.path.join(os.path.dirname(fpq_command()[0]), "python")]
    return {
        "figures": (fpq_command() + [
            "figures", "--quick", "--only", "sweep", "--jobs", "2", "--no-progress",
            "--out", str(folder / "fig"), "--raw", str(folder / "raw"),
            "--results-md", str(folder / "R.md")], 2),
        "attack": (fpq_command() + [
            "attack", "--seeds", "2", "--jobs", "2", "--no-progress", "--out",
            str(folder / "a.md"), "--plot", str(folder / "a.png")], 2),
        "parity": (fpq_command() + ["parity", "--seeds", "2", "--jobs", "2"], 2),
        "sweep": (fpq_command() + [
            "sweep", "fpq-fpq", "--vary", "flows.0.count=10,20", "--seeds", "1-4", "--set",
            "run.duration_s=500", "--jobs", "2", "--no-progress", "--out",
            str(folder / "sweep")], 2),
        "bench": (python + ["-m", "fpq_sim.bench", "--jobs", "2"], 2),
        # pytest and its two xdist workers
        "bad_inputs": (python + [os.path.join(HERE, "..", "..", "sw", "tests", "bad_inputs.py"),
                                 "--jobs", "2", "--doc", str(folder / "R.md")], 3),
    }[name]


def _workers_case(tmp_path, command, signum):
    argv, started = _command(command, tmp_path)
    (tmp_path / "R.md").write_text("a document bad_inputs would update\n")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    workers = []
    try:
        # the bench times single runs for a minute or more before it starts its workers
        deadline = time.monotonic() + 300
        while len(descendants(proc.pid)) < started and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)                     # the workers are running their first jobs
        workers = descendants(proc.pid)
        os.kill(proc.pid, signum)
        t0 = time.monotonic()
        try:
            _, err = proc.communicate(timeout=5)     # both pipes closed by every holder
            closed = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            closed, err = None, b""
        time.sleep(0.2)
        left = [pid for pid in workers if process_alive(pid)]
    finally:                       # whatever the outcome, nothing of the command stays
        for pid in descendants(proc.pid) + workers + [proc.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.communicate()
    shown = f"fpq {command} --jobs 2, {signal_name(signum)} to the main process"
    outcome = (f"{len(workers)} workers, {len(left)} left; pipes "
               + ("closed within 5 s" if closed is not None else "open after 5 s"))
    WORKERS.refused(shown, f"exit {proc.returncode}" if proc.returncode >= 0 else
                    f"killed by {signal_name(-proc.returncode)}", outcome)
    assert len(workers) >= started and not left and closed is not None, (outcome, err[-2000:])
    assert temporaries(tmp_path) == []


def test_figures_workers_end_with_the_main_process(tmp_path):
    _workers_case(tmp_path, "figures", signal.SIGTERM)


def test_the_fuzz_recorder_s_pytest_ends_with_it(tmp_path):
    """``bad_inputs.py`` ran pytest with no handler for SIGTERM or SIGHUP: pytest and its
    workers lived on and held the caller's pipes (3 of 3 tries)."""
    _workers_case(tmp_path, "bad_inputs", signal.SIGTERM)


@pytest.mark.long
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP,
                                    signal.SIGKILL], ids=signal_name)
@pytest.mark.parametrize("command", ["figures", "attack", "parity", "sweep", "bench",
                                     "bad_inputs"])
def test_workers_end_with_the_main_process(tmp_path, command, signum):
    _workers_case(tmp_path, command, signum)


# ---- multi-file outputs -------------------------------------------------------------------

def _interrupted(folder, argv, written, after, shown):
    """Run ``fpq argv``, send it SIGTERM after ``after`` seconds, and check that the files
    ``written()`` lists (``{name: inode}``: a replaced file has a new inode) are all old or
    all new, and that nothing is left under ``folder``."""
    old = written()
    proc = subprocess.Popen(fpq_command() + argv, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    time.sleep(after)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    new = written()
    kept = sorted(p for p in old if new.get(p) == old[p])
    changed = sorted(p for p in new if new[p] != old.get(p))
    state = "all old" if not changed else "all new" if not kept else \
        f"mixed: {len(changed)} new, {len(kept)} old"
    left = temporaries(folder)
    SETS.refused(f"{shown}, SIGTERM after {after:g} s",
                 f"exit {proc.returncode}" if proc.returncode >= 0 else
                 f"killed by {signal_name(-proc.returncode)}",
                 state + (f", left {left[0]}" if left else ""))
    assert not (kept and changed) and not left, (state, left, err[-2000:])


def _interrupted_rebuild(tmp_path, raw_folder, after):
    folder = tmp_path / "set"
    shutil.copytree(raw_folder, folder)
    results_md = folder / "R.md"

    def written():
        """The files --from-raw writes: all but the record of the runs, ``_meta.json``."""
        files = [p for sub in ("fig", "raw") for p in (folder / sub).iterdir()
                 if p.name != "_meta.json"] + [results_md]
        return {str(p.relative_to(folder)): p.stat().st_ino for p in files if p.exists()}
    argv = ["figures", "--from-raw", "--quick", "--raw", str(folder / "raw"), "--out",
            str(folder / "fig"), "--results-md", str(results_md), "--no-progress"]
    _interrupted(folder, argv, written, after, "fpq figures --from-raw")


@pytest.mark.parametrize("after", [1.5])
def test_an_interrupted_figures_rebuild_leaves_all_old_or_all_new(tmp_path, raw_folder, after):
    _interrupted_rebuild(tmp_path, raw_folder, after)


@pytest.mark.long
@pytest.mark.parametrize("after", [0.5, 1.0, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0])
def test_an_interrupted_figures_rebuild_at_any_time(tmp_path, raw_folder, after):
    _interrupted_rebuild(tmp_path, raw_folder, after)


@pytest.mark.long
@pytest.mark.parametrize("after", [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5])
def test_an_interrupted_demo_leaves_all_old_or_all_new(tmp_path, after):
    out = tmp_path / "demo"
    argv = ["demo", "--no-rtl", "--flows", "2", "--duration", "10", "--synthetic-flows", "2",
            "--arrivals", "200", "--out", str(out)]
    assert run_fpq(argv).status == 0
    _interrupted(tmp_path, argv, lambda: {p.name: p.stat().st_ino for p in out.iterdir()},
                 after, "fpq demo")
