"""The probe of faults beyond bad values (issue 50), for the software of ``sw/``: each class a
table of cases, each case the behaviour the project promises.

* signals: every catchable signal that ends a process (``fault_kit.ENDING_SIGNALS``) sent
  while a writer holds its temporary files: no ``.tmp-*`` left, each output old or new,
  never mixed;
* short writes: output to a closed pipe, a full disk (``/dev/full``) or past the file size
  limit (``RLIMIT_FSIZE``) is an error naming the output (exit 2, one line), never "wrote";
* memory: a trace reader refuses a huge or malformed file at its first bad record or header
  field with memory independent of the file's size, and converts a valid one in bounded
  memory;
* CSV digits: the CSV reader takes ASCII digits only;
* long inputs: an error quotes at most a short prefix of the input;
* documentation: REGISTERS.md's table rows, the ``enqueued`` counter's meaning, the lint
  waivers in every FuseSoC target.

The simulator's classes (scenario values, raw folders, workers, multi-file outputs) are in
``sim/tests/test_sim_faults.py``. Every case is recorded for docs/RELIABILITY.md."""

import os
import re
import signal
import struct
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from fpq import Arrival, Departure
from fpq.fields import FIELDS
from fpq.messages import bounded, MESSAGE_CHARS, QUOTED_CHARS
from fpq.trace import write_trace, write_csv, read_csv, TraceError, RECORD_DTYPE, CSV_COLUMNS
from bad_inputs import Tried
import cli_run
from fault_kit import (ENDING_SIGNALS, NAMED_ENDING_SIGNALS, MEMORY_LIMIT, signal_name,
                       temporaries, run_fpq, exit_text, last_line)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIGNALS = Tried("faults: signals while writing")
SHORT = Tried("faults: short writes")
MEMORY = Tried("faults: trace memory")
CSV_DIGITS = Tried("traces (CSV): digits")
LONG_INPUT = Tried("faults: long inputs")

EVENTS = [Departure(3 * i, 50 + i) if i % 3 == 0 else
          Arrival(3 * i, (i * 7919) << 40 | 80 << 8 | 6, 100 + i, i % 2 == 0) for i in range(30)]
HEAD = struct.Struct("<8sHHIdQ")


# ---- signals while writing ------------------------------------------------------------------

def _in_child(work, signum, at="rename", thread=False):
    """Run ``work()`` in a forked child in which the rename that completes an atomic write
    (``at="rename"``), or the creation of each temporary file (``at="create"``), first sends
    ``signum`` to the child itself (every temporary exists then; None: no signal); returns
    the child's exit status (minus the signal that ended it). With ``thread`` a second
    thread runs meanwhile, as numpy's OpenBLAS threads do in the commands: the system may
    deliver the signal to it instead of the writer's thread."""
    pid = os.fork()
    if pid == 0:                                         # the child: never returns
        code = 0
        try:
            import fpq.atomic
            real = os.replace
            real_create = fpq.atomic._create_temporary

            def replace_after_a_signal(src, dst):
                os.kill(os.getpid(), signum)
                time.sleep(0.05)            # a signal that is not held ends the sleep
                return real(src, dst)

            def create_then_signal(folder, base):
                made = real_create(folder, base)
                os.kill(os.getpid(), signum)
                time.sleep(0.05)
                return made
            if thread:
                threading.Thread(target=threading.Event().wait, daemon=True).start()
            if signum is not None and at == "rename":
                os.replace = replace_after_a_signal
            elif signum is not None:
                fpq.atomic._create_temporary = create_then_signal
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            result = work()
            code = result if isinstance(result, int) else 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        except BaseException:
            code = 99
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.fixture(scope="module", autouse=True)
def _commands_imported():
    """Every subcommand's module imported once here, not in each forked child."""
    cli_run.run(["--version"])


def _writers(folder):
    """``{name: (work, {path: (old bytes, new bytes)})}``: each writer's call and its outputs
    before and after a complete write."""
    trace_in = folder / "in.fpqtrace"
    write_trace(trace_in, EVENTS, 1e6)
    csv_new = folder / "csv-new.csv"
    write_csv(csv_new, EVENTS)
    trace_new = folder / "trace-new.fpqtrace"
    write_trace(trace_new, EVENTS, 1e6)
    from fpq.atomic import write_text
    from fpq.output_files import write_files
    a, b, t, c, cli = (folder / n for n in ("a.txt", "b.txt", "t.fpqtrace", "c.csv", "o.csv"))
    return {
        "atomic write": (lambda: write_text(a, "new a"), {a: (b"old", b"new a")}),
        "two files": (lambda: write_files({str(a): "new a", str(b): "new b"}),
                      {a: (b"old", b"new a"), b: (b"old", b"new b")}),
        "trace": (lambda: write_trace(t, EVENTS, 1e6), {t: (b"old", trace_new.read_bytes())}),
        "CSV": (lambda: write_csv(c, EVENTS), {c: (b"old", csv_new.read_bytes())}),
        "fpq trace-csv": (lambda: cli_run.main(["trace-csv", str(trace_in), str(cli)]),
                          {cli: (b"old", csv_new.read_bytes())}),
    }


def _signal_case(tmp_path, writer, signum, at="rename", thread=False):
    folder = tmp_path / "w"
    folder.mkdir()
    work, outputs = _writers(folder)[writer]
    for path in outputs:
        path.write_bytes(b"old")
    status = _in_child(work, signum, at, thread)
    left = temporaries(folder)
    states = {"old" if p.read_bytes() == old else "new" if p.read_bytes() == new else "torn"
              for p, (old, new) in outputs.items()}
    shown = f"{writer}: {signal_name(signum)}" + (
        f", at the {at}, another thread running" if thread else "")
    outcome = f"outputs {'/'.join(sorted(states))}, " + (f"left {left[0]}" if left else
                                                         "no temporary left")
    ended = status == 0 or status in (-signum, 128 + signum)
    if status == 0:
        SIGNALS.accepted(shown)
    else:
        SIGNALS.refused(shown, _ended(status, signum), outcome)
    assert ended and not left and len(states) == 1 and "torn" not in states, \
        (shown, status, outcome)


def exit_text_of(status):
    return f"exit {status}" if status >= 0 else f"killed by {signal_name(-status)}"


def _ended(status, signum):
    """How a child that got ``signum`` ended, the same words for every signal."""
    return "exit 128 + signal" if status == 128 + signum else \
        "killed by the signal" if status == -signum else exit_text_of(status)


WRITERS = ("atomic write", "two files", "trace", "CSV", "fpq trace-csv")


@pytest.mark.parametrize("signum", NAMED_ENDING_SIGNALS, ids=signal_name)
@pytest.mark.parametrize("writer", WRITERS)
def test_a_signal_while_writing_leaves_no_temporary_and_no_mixed_outputs(tmp_path, writer,
                                                                         signum):
    _signal_case(tmp_path, writer, signum)


@pytest.mark.parametrize("signum", [s for s in ENDING_SIGNALS if s not in NAMED_ENDING_SIGNALS],
                         ids=signal_name)
def test_a_real_time_signal_while_writing_leaves_no_temporary(tmp_path, signum):
    _signal_case(tmp_path, "two files", signum)


@pytest.mark.parametrize("signum", NAMED_ENDING_SIGNALS, ids=signal_name)
@pytest.mark.parametrize("at", ["create", "rename"])
def test_a_signal_to_another_thread_is_held_too(tmp_path, at, signum):
    """Blocking a signal in the writer's thread alone let it through: the system handed it
    to another thread (the commands have numpy's), and the Python handler ran in the middle
    of the held steps, leaving the temporary just made (8 of 8 runs of ``fpq config
    --format c`` with SIGTERM there) or one file of two renamed."""
    _signal_case(tmp_path, "two files", signum, at, thread=True)


# ---- multi-file outputs -------------------------------------------------------------------

SETS = Tried("faults: multi-file outputs")


def _staged_write(out, raw, results):
    """What ``fpq figures`` does: files into two folders (one inside the other here) and an
    update of a file beside them."""
    from fpq.atomic import write_text
    from fpq.output_files import staged_outputs
    with staged_outputs([out, raw], [results]) as (stage, tmp):
        for name in ("a.csv", "b.png", "c.pdf"):
            write_text(os.path.join(stage[out], name), f"new {name}")
        write_text(os.path.join(stage[raw], "run.json"), "new run.json")
        with open(tmp[results]) as f:
            old = f.read()
        write_text(tmp[results], old.replace("old", "new"))


def _set_state(folder):
    """``{file: content}`` of every file under ``folder``."""
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("signum", NAMED_ENDING_SIGNALS, ids=signal_name)
@pytest.mark.parametrize("when", ["writing", "committing"])
def test_a_signal_leaves_a_set_of_outputs_all_old_or_all_new(tmp_path, when, signum):
    out, raw, results = tmp_path / "fig", tmp_path / "fig" / "raw", tmp_path / "R.md"
    raw.mkdir(parents=True)
    for path in (out / "a.csv", out / "b.png", out / "c.pdf", raw / "run.json", results):
        path.write_text("old " + path.name if path != results else "text: old")
    (out / "mine.txt").write_text("a file of the user's")
    old = _set_state(tmp_path)
    new = {k: ("text: new" if k == "R.md" else v.replace("old", "new")) for k, v in old.items()}

    def work():
        import shutil
        if when == "committing":          # the old folder's removal, inside the commit
            real = shutil.rmtree
            shutil.rmtree = lambda *a, **k: (os.kill(os.getpid(), signum), real(*a, **k))
        _staged_write(str(out), str(raw), str(results))
    status = _in_child(work, signum if when == "writing" else None)
    state = _set_state(tmp_path)
    left = temporaries(tmp_path)
    outcome = ("all old" if state == old else "all new" if state == new else "mixed") + \
        (f", left {left[0]}" if left else "")
    SETS.refused(f"staged outputs, {signal_name(signum)} while {when}", _ended(status, signum),
                 outcome)
    ended = status in (0, 128 + signum, -signum)          # done, or ended by the signal
    assert ended and state in (old, new) and not left, (status, outcome, state)


@pytest.mark.parametrize("step", ["copying the old folder into its stage",
                                  "giving a temporary the old file's mode"])
def test_a_failure_while_preparing_an_output_leaves_no_temporary(tmp_path, monkeypatch, step):
    """A stage or temporary that failed half-way was not yet noted for removal and stayed."""
    import errno
    import fpq.atomic
    import fpq.output_files
    from fpq.atomic import write_text
    from fpq.output_files import staged_outputs
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.txt").write_text("old")

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    if step.startswith("copying"):
        real = fpq.output_files.shutil.copytree
        monkeypatch.setattr(fpq.output_files.shutil, "copytree",
                            lambda *a, **k: (real(*a, **k), full_disk()))
        with pytest.raises(OSError), staged_outputs([out]):
            pass
    else:
        monkeypatch.setattr(fpq.atomic, "_keep_owner_and_mode", full_disk)
        with pytest.raises(OSError):
            write_text(out / "a.txt", "new")
    assert temporaries(tmp_path) == [] and (out / "a.txt").read_text() == "old"


def test_staged_outputs_make_missing_folders_and_refuse_a_file_in_their_place(tmp_path):
    from fpq.output_files import staged_outputs
    from fpq.atomic import OutputPathError, write_text
    with staged_outputs([tmp_path / "new" / "out"]) as (stage, _):
        write_text(os.path.join(stage[tmp_path / "new" / "out"], "x"), "x")
    assert (tmp_path / "new" / "out" / "x").read_text() == "x"
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputPathError, match="is not a folder"):
        with staged_outputs([tmp_path / "file"]):
            pass
    assert temporaries(tmp_path) == []


def test_staged_outputs_into_the_working_folder_move_the_files_in(tmp_path, monkeypatch):
    """The working folder cannot be swapped for its stage (the process would be left in the
    removed old one): the stage lies inside it and its files move in."""
    from fpq.output_files import staged_outputs
    from fpq.atomic import write_text
    (tmp_path / "keep.txt").write_text("the user's")
    (tmp_path / "a.csv").write_text("old")
    monkeypatch.chdir(tmp_path)
    with staged_outputs(["."]) as (stage, _):
        assert os.path.dirname(os.path.abspath(stage["."])) == str(tmp_path)
        write_text(os.path.join(stage["."], "a.csv"), "new")
        write_text(os.path.join(stage["."], "sub", "b.csv"), "new b")
    assert os.getcwd() == str(tmp_path)
    assert _set_state(tmp_path) == {"a.csv": "new", "keep.txt": "the user's",
                                    "sub/b.csv": "new b"}


# ---- child programs ---------------------------------------------------------------------------

_PARENT = """
import signal, subprocess, sys
from fpq.terminate import signals_as_exit, ending_with_this_process
with signals_as_exit():
    subprocess.run(["sleep", "60"], preexec_fn=ending_with_this_process())
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL],
                         ids=signal_name)
def test_a_child_program_ends_with_the_command(signum):
    """A program a command runs (pytest in bad_inputs.py, ns-3 in the cross-check) ends
    when the command does, by a signal it handles or by SIGKILL, which it cannot."""
    from fault_kit import descendants, process_alive
    # the signal's default action in the command, as a shell gives it: under ``nohup`` (or a
    # runner that ignores SIGHUP) the test's process ignores SIGHUP, the command inherits
    # that, and ``signals_as_exit`` leaves an ignored signal ignored, as it should
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE,
                              preexec_fn=None if signum == signal.SIGKILL else
                              lambda: signal.signal(signum, signal.SIG_DFL))
    children = []
    try:
        deadline = time.monotonic() + 30
        while not children and time.monotonic() < deadline:
            children = [pid for pid in descendants(parent.pid, 0.05)
                        if open(f"/proc/{pid}/cmdline", "rb").read().startswith(b"sleep")]
        parent.send_signal(signum)
        parent.communicate(timeout=10)
        deadline = time.monotonic() + 5
        while any(map(process_alive, children)) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [pid for pid in children if process_alive(pid)]
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert children and not left


# ---- short writes -------------------------------------------------------------------------

def _good_trace(folder):
    path = folder / "in.fpqtrace"
    write_trace(path, EVENTS, 1e6)
    return path


#: (command, its arguments with {out} for the output and {in} for an input trace)
WRITING_COMMANDS = {
    "trace-csv": ["trace-csv", "{in}", "{out}"],
    "config": ["config", "--format", "json", "--key", "a7c2e95b1f3d6084c9e1b72a5f0d3c8e4b6a9f21",
               "-o", "{out}"],
    "regmap": ["regmap", "--format", "json", "-o", "{out}"],
}


#: (command, its arguments, how its error lines begin): commands whose output or report is
#: printed to standard output (Python's own ``sys.stdout`` took a write past the file size
#: limit for success, and argparse a failed help text)
PRINTING_COMMANDS = {
    "sim": (["sim", "fpq-fpq", "--set", "run.duration_s=5", "--set", "run.warmup_s=1"],
            "fpq sim"),
    "sim --json -": (["sim", "fpq-fpq", "--set", "run.duration_s=5", "--set", "run.warmup_s=1",
                      "--json", "-"], "fpq sim"),
    "trace --out -": (["trace", "fpq-fpq", "--duration", "5", "--out", "-"], "fpq trace"),
    "accuracy": (["accuracy", "--flows", "10"], "fpq accuracy"),
    "benchmarks": (["benchmarks"], "fpq benchmarks"),
    "sim --help": (["sim", "--help"], "fpq"),
}
#: the sinks a command's standard output can be
STDOUT_SINKS = ("closed pipe", "full disk", "standard output past the file size limit")


def _sink(kind, folder):
    """``(stdout for the child, the output argument)`` of a sink kind."""
    if kind == "standard output past the file size limit":
        return os.open(folder / "stdout.file", os.O_WRONLY | os.O_CREAT, 0o644), "-"
    if kind == "closed pipe":
        r, w = os.pipe()
        os.close(r)                 # the reader is gone before the first byte is written
        return w, "-"
    if kind == "full disk":
        return os.open("/dev/full", os.O_WRONLY), "-"
    if kind == "pipe closed after 100 bytes":           # `| head -c 100`
        r, w = os.pipe()

        def head():
            os.read(r, 100)
            os.close(r)
        threading.Thread(target=head, daemon=True).start()
        return w, "-"
    return subprocess.DEVNULL, str(folder / "out.file")


SHORT_CASES = [(command, sink) for command in WRITING_COMMANDS
               for sink in STDOUT_SINKS + ("file size limit",)] + \
    [("trace-csv", "pipe closed after 100 bytes")]


@pytest.mark.parametrize("command, sink", SHORT_CASES)
def test_a_short_write_is_an_error_naming_the_output(tmp_path, command, sink):
    stdout, out = _sink(sink, tmp_path)
    # the CSV of 200,000 events (13 MB) does not fit in a pipe's buffer
    trace = _valid_trace(tmp_path / "in.fpqtrace", 200_000) if "after" in sink else \
        _good_trace(tmp_path)
    argv = [a.replace("{out}", out).replace("{in}", str(trace))
            for a in WRITING_COMMANDS[command]]
    try:
        ran = run_fpq(argv, stdout=stdout, fsize=200 if "file size limit" in sink else None)
    finally:
        if isinstance(stdout, int) and stdout >= 0:
            os.close(stdout)
    line = last_line(ran.stderr)
    named = "standard output" if out == "-" else "out.file"
    shown = f"fpq {command} to a {sink}"
    SHORT.refused(shown, exit_text(ran), line.replace(str(tmp_path) + "/", ""))
    assert ran.status == 2, ran
    assert line.startswith(f"fpq {command}: error: ") and named in line, ran
    assert "wrote" not in ran.stderr and "Traceback" not in ran.stderr, ran
    assert "Exception ignored" not in ran.stderr, ran
    assert temporaries(tmp_path) == [] and not (tmp_path / "out.file").exists()


@pytest.mark.parametrize("sink", STDOUT_SINKS)
@pytest.mark.parametrize("command", PRINTING_COMMANDS)
def test_printed_output_that_cannot_be_written_is_an_error_naming_standard_output(
        tmp_path, command, sink):
    argv, prefix = PRINTING_COMMANDS[command]
    stdout, _ = _sink(sink, tmp_path)
    try:
        ran = run_fpq(argv, stdout=stdout, fsize=100 if "file size limit" in sink else None)
    finally:
        os.close(stdout)
    line = last_line(ran.stderr)
    SHORT.refused(f"fpq {command} to a {sink}", exit_text(ran), line)
    assert ran.status == 2, ran
    assert line.startswith(f"{prefix}: error: ") and "standard output" in line, ran
    assert "wrote" not in ran.stderr and "Traceback" not in ran.stderr, ran
    assert "Exception ignored" not in ran.stderr, ran


# ---- memory of trace readers --------------------------------------------------------------

#: What a refused or converted file may cost beyond the command's memory on a tiny trace.
MEMORY_BOUND = 64 << 20


def _header(count, mlen=2, tick_hz=1e6):
    return HEAD.pack(b"FPQTRACE", 2, 32, mlen, tick_hz, count)


def _sparse(path, head, size):
    """A file of ``size`` bytes, ``head`` then a hole (zeros on disk that take no space)."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    return path


def _valid_records(n, first=0):
    """Records ``first`` .. ``first + n - 1`` of a valid trace: clocks 3 apart, every third
    record a departure, the arrivals' 5-tuples drawn at random (seeded by ``first``)."""
    rng = np.random.default_rng(first)
    i = np.arange(first, first + n, dtype=np.uint64)
    rec = np.zeros(n, RECORD_DTYPE)
    rec["ts"] = i * 3
    rec["kind"] = i % 3 == 0
    arr = rec["kind"] == 0
    rec["length"] = 40 + i % 1460
    rec["flags"][arr] = 1
    for name, hi in (("src_ip", 1 << 32), ("dst_ip", 1 << 32), ("src_port", 1 << 16),
                     ("dst_port", 1 << 16), ("proto", 256)):
        rec[name][arr] = rng.integers(0, hi, int(arr.sum()))
    return rec


def _valid_trace(path, n):
    with open(path, "wb") as f:
        f.write(_header(n) + b"{}" + b"\0" * 6)
        for first in range(0, n, 1 << 20):
            f.write(_valid_records(min(1 << 20, n - first), first).tobytes())
    return path


GIB = 1 << 30
#: (name, file maker in a folder, what the message names): files a reader must refuse
REFUSED_FILES = {
    "256 MiB of zero records": (lambda d: _zero_records(d, 256 << 20), "record 0"),
    "4 GiB of zero records": (lambda d: _zero_records(d, 4 * GIB), "record 0"),
    "2 GiB metadata length": (lambda d: _sparse(d / "m.fpqtrace", _header(0, mlen=2 * GIB),
                                                32 + 2 * GIB), "metadata"),
    "4 GiB metadata length": (lambda d: _sparse(d / "m.fpqtrace", _header(0, mlen=4 * GIB - 8),
                                                32 + 4 * GIB - 8), "metadata"),
    "1 GiB valid then a bad record": (lambda d: _bad_after_valid(d, GIB), "record "),
    "count 2^40 on a short file": (lambda d: _sparse(d / "c.fpqtrace", _header(1 << 40), 4096),
                                   "header says"),
}


def _zero_records(folder, size):
    """A trace of ``size`` bytes with a matching header and records of zeros (length 0)."""
    return _sparse(folder / "z.fpqtrace", _header((size - 40) // 32) + b"{}" + b"\0" * 6,
                   size - (size - 40) % 32)


def _bad_after_valid(folder, size):
    """A trace of ``size`` bytes whose first 64 Ki records are valid, then a hole of zero
    records (length 0)."""
    n = (size - 40) // 32
    path = folder / "v.fpqtrace"
    with open(path, "wb") as f:
        f.write(_header(n) + b"{}" + b"\0" * 6 + _valid_records(1 << 16).tobytes())
        f.truncate(40 + 32 * n)
    return path


@pytest.fixture(scope="module")
def baseline_rss(tmp_path_factory):
    """The peak memory of ``fpq trace-csv`` converting a 30-event trace."""
    folder = tmp_path_factory.mktemp("baseline")
    ran = run_fpq(["trace-csv", str(_good_trace(folder)), str(folder / "o.csv")])
    assert ran.status == 0, ran
    return ran.peak_rss


@pytest.mark.parametrize("case", list(REFUSED_FILES))
def test_a_huge_or_malformed_trace_is_refused_in_bounded_memory(tmp_path, case, baseline_rss):
    make, named = REFUSED_FILES[case]
    path = make(tmp_path)
    ran = run_fpq(["trace-csv", str(path), str(tmp_path / "o.csv")], memory=MEMORY_LIMIT)
    line = last_line(ran.stderr)
    extra = ran.peak_rss - baseline_rss
    MEMORY.refused(f"{case}, trace-csv", exit_text(ran), line.replace(str(tmp_path) + "/", ""))
    assert ran.status == 2 and f": {named}" in line, ran
    assert "Traceback" not in ran.stderr and not (tmp_path / "o.csv").exists()
    assert extra < MEMORY_BOUND, (extra >> 20, ran)


def _convert_in_bounded_memory(tmp_path, baseline_rss, n):
    path = _valid_trace(tmp_path / "ok.fpqtrace", n)
    out = tmp_path / "ok.csv"
    ran = run_fpq(["trace-csv", str(path), str(out)], memory=MEMORY_LIMIT, timeout=3600)
    extra = ran.peak_rss - baseline_rss
    MEMORY.accepted(f"{n:,} valid events ({path.stat().st_size >> 20} MiB), trace-csv")
    assert ran.status == 0, ran
    with open(out, "rb") as f:
        lines = sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 24), b""))
    assert lines == n + 1
    assert extra < MEMORY_BOUND, (extra >> 20, ran)
    return extra


def test_a_valid_trace_converts_in_bounded_memory(tmp_path, baseline_rss):
    _convert_in_bounded_memory(tmp_path, baseline_rss, 300_000)


@pytest.mark.long
def test_a_ten_million_event_trace_converts_in_bounded_memory(tmp_path, baseline_rss):
    _convert_in_bounded_memory(tmp_path, baseline_rss, 10_000_000)


# ---- CSV digits -----------------------------------------------------------------------------

#: digits other than ASCII's that str.isdigit() accepts: Arabic-Indic, fullwidth, Devanagari,
#: superscript two, mathematical bold
OTHER_DIGITS = ["\u0661\u0662", "\uff11\uff12", "\u0967", "\u00b2", "\U0001d7d7"]


@pytest.mark.parametrize("digits", OTHER_DIGITS, ids=ascii)
@pytest.mark.parametrize("column", ["ts", "src_ip", "dst_port", "proto", "length"])
def test_the_csv_reader_takes_ascii_digits_only(tmp_path, column, digits):
    good = tmp_path / "good.csv"
    write_csv(good, EVENTS)
    lines = good.read_text().splitlines()
    cells = lines[2].split(",")
    i = CSV_COLUMNS.index(column)
    cells[i] = f"1.2.3.{digits}" if column == "src_ip" else digits
    lines[2] = ",".join(cells)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(TraceError) as info, CSV_DIGITS(f"line 3 {column} = {cells[i]!r}", bad):
        read_csv(bad)
    assert str(info.value).startswith(f"{bad}: line 3: {column} "), info.value


# ---- long inputs ---------------------------------------------------------------------------

#: The longest message a bad value may give beyond the file's path.
MESSAGE_MAX = 300


@pytest.mark.parametrize("column", CSV_COLUMNS)
def test_a_csv_error_quotes_a_short_prefix_of_a_long_cell(tmp_path, column):
    good = tmp_path / "good.csv"
    write_csv(good, EVENTS)
    lines = good.read_text().splitlines()
    cells = lines[1].split(",")
    cells[CSV_COLUMNS.index(column)] = "9" * 400 + "x" * 500
    lines[1] = ",".join(cells)
    bad = tmp_path / "long.csv"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError) as info, \
            LONG_INPUT(f"CSV line 2 {column} = 900 characters", bad):
        read_csv(bad)
    assert len(str(info.value)) - len(str(bad)) <= MESSAGE_MAX, info.value


#: (case, fpq's arguments, a file to write first as (name, text) or None, what the message
#: names): long input through the command line; ``{d}`` is the test's folder. An argument
#: is at most 128 KiB (the kernel's limit), a file's value megabytes.
LONG_ARGUMENTS = {
    "--config with an unknown field of 5 MB": (
        ["config", "--format", "json", "-o", "{d}/o.json", "--config", "{d}/c.json"],
        ("c.json", '{"' + "x" * 5_000_000 + '": 1}'), "unknown configuration field"),
    "--config with 1,000 unknown fields": (
        ["config", "--format", "json", "-o", "{d}/o.json", "--config", "{d}/c.json"],
        ("c.json", "{" + ", ".join(f'"field{i:04}": 1' for i in range(1000)) + "}"),
        "and 997 more"),
    "--key of 100 kB": (["config", "--format", "json", "-o", "{d}/o.json", "--key", "z" * 100_000],
                        None, "--key"),
    "a --format choice of 100 kB": (["regmap", "--format", "x" * 100_000], None,
                                    "argument --format"),
    "an --arrivals integer of 100 kB": (["bench", "--arrivals", "x" * 100_000], None,
                                        "argument --arrivals"),
    "--flows of 100 kB": (["accuracy", "--flows", "x" * 100_000], None, "--flows"),
    "an input path of 100 kB": (["trace-csv", "{d}/" + "x" * 100_000, "{d}/o.csv"], None,
                                "File name too long"),
    "a scenario name of 100 kB": (["sim", "x" * 100_000], None, "scenario"),
}


@pytest.mark.parametrize("case", LONG_ARGUMENTS)
def test_an_error_quotes_a_short_prefix_of_a_long_argument(tmp_path, case):
    argv, given, named = LONG_ARGUMENTS[case]
    if given is not None:
        (tmp_path / given[0]).write_text(given[1])
    argv = [a.replace("{d}", str(tmp_path)) for a in argv]
    code, out, err = cli_run.run(argv)
    line = last_line(err)
    LONG_INPUT.refused(f"fpq {argv[0]}: {case}", f"exit {code}",
                       line.replace(str(tmp_path) + "/", ""))
    assert code == 2 and "Traceback" not in err, err[-2000:]
    assert named in line and line.startswith(f"fpq {argv[0]}: error: "), line[:500]
    # the input, a run of one character, is quoted by a short prefix
    assert not re.search(r"(.)\1{%d}" % QUOTED_CHARS, line), line[:2000]
    assert len(line) - line.count(str(tmp_path)) * len(str(tmp_path)) <= MESSAGE_CHARS
    assert len(err) < 2 * MESSAGE_CHARS, err[:2000]


def test_a_long_message_keeps_its_start_and_its_end():
    quoted = bounded("x: '" + "y" * 10_000 + "' must be one of a, b")
    assert quoted.startswith("x: 'yyy") and quoted.endswith(" must be one of a, b")
    assert "(10002 characters)" in quoted and len(quoted) < 100
    plain = bounded("z: " + "w" * 10_000 + " is out of range [1, 2]")
    assert plain.startswith("z: www") and plain.endswith("is out of range [1, 2]")
    assert len(plain) <= MESSAGE_CHARS and "characters left out" in plain
    assert bounded("a short message") == "a short message"


# ---- documentation -------------------------------------------------------------------------

def _cells(row):
    """The cells of a Markdown table row; ``\\|`` is a bar inside a cell."""
    return re.split(r"(?<!\\)\|", row.strip())[1:-1]


def test_every_register_map_row_has_its_table_s_columns():
    from fpq.regmap import to_markdown
    header = None
    for line in to_markdown().splitlines():
        if not line.startswith("|"):
            header = None
            continue
        if header is None:
            header = len(_cells(line))
        assert len(_cells(line)) == header, line


def test_the_enqueued_counter_says_it_counts_marked_packets():
    from fpq.regmap import to_markdown
    row = next(line for line in to_markdown().splitlines() if "| `enqueued` |" in line)
    assert "marked" in _cells(row)[-1], row


def test_the_lint_waivers_are_in_every_fusesoc_target():
    """A core that depends on ours gets the filesets of our default target (FuseSoC takes a
    dependency's ``default`` target whatever target the top core runs), so the waivers must
    be there, for Verilator at least, not only in ``lint``."""
    yaml = pytest.importorskip("yaml")
    with open(os.path.join(ROOT, "fpq_core.core")) as f:
        core = yaml.safe_load(f)
    waivers = [name for name, fs in core["filesets"].items()
               if any("verilator_waivers.vlt" in (e if isinstance(e, str) else next(iter(e)))
                      for e in fs["files"])]
    assert waivers
    for name, target in core["targets"].items():
        # a fileset, or one for Verilator only ("tool_verilator ? (lint_waivers)")
        used = {re.sub(r"^tool_verilator\s*\?\s*\((\w+)\)$", r"\1", f.strip())
                for f in target["filesets"]}
        assert set(waivers) <= used, name


# ---- configuration fields -------------------------------------------------------------------

CONFIG = Tried("faults: config fields")
#: A bad value of each kind, as ``--set`` text and as a ``--config`` JSON value
CONFIG_VALUES = {"400 digits": ("9" * 400, "9" * 400), "a list": ("[1, 2]", "[1, 2]"),
                 "a table": ("{}", '{"a": 1}'), "NaN": ("nan", "NaN"),
                 "100 kB of text": ("x" * 100_000, '"' + "x" * 100_000 + '"')}
CONFIG_FIELDS = [f.name for f in FIELDS if f.type in ("int", "float", "enum", "bool")]


def _config_case(tmp_path, name, how, kind):
    text, json_text = CONFIG_VALUES[kind]
    if how == "--set":
        given = ["--set", f"{name}={text}"]
    else:
        (tmp_path / "c.json").write_text(f'{{"{name}": {json_text}}}')
        given = ["--config", str(tmp_path / "c.json")]
    shown = f"fpq config {how} {name} = {kind}"
    try:
        code, out, err = cli_run.run(["config", "--format", "json", "-o",
                                      str(tmp_path / "o.json"), *given])
    except Exception as exc:                   # a traceback instead of exit 2
        CONFIG.refused(shown, f"traceback: {type(exc).__name__}", str(exc))
        raise
    lines = err.strip().splitlines()
    CONFIG.refused(shown, f"exit {code}",
                   (lines[-1] if lines else "").replace(str(tmp_path) + "/", ""))
    assert code == 2 and len(lines) == 1, err[-2000:]
    assert name in lines[0] and len(lines[0]) <= MESSAGE_MAX + len(str(tmp_path)), lines[0][:500]
    assert not (tmp_path / "o.json").exists()


CONFIG_CASES = [(name, how, kind) for name in CONFIG_FIELDS for how in ("--set", "--config")
                for kind in CONFIG_VALUES]


@pytest.mark.parametrize("name, how, kind", CONFIG_CASES)
def test_a_bad_configuration_field_exits_2_naming_it(tmp_path, name, how, kind):
    _config_case(tmp_path, name, how, kind)
