"""Faults for the probe tests (``test_faults.py`` here, ``sim/tests/test_sim_faults.py``): the
signals that end a process, a child process run with a fault (a closed pipe, a full disk, a
file size or memory limit) and its exit status, last error line and peak memory, and the
temporaries a writer may leave.

The probe's cases are listed per class (signals, short writes, memory, ...) so that the tests
can run each class's table and ``make reliability`` records every case (``bad_inputs``)."""

import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["ENDING_SIGNALS", "NAMED_ENDING_SIGNALS", "signal_name", "temporaries", "Ran",
           "run_fpq", "fpq_command", "exit_text", "MEMORY_LIMIT", "last_line",
           "process_alive", "descendants"]

#: The signals whose default action ends a process and that a program can catch, as they
#: arrive from outside (``kill``, a terminal, a job's limits): Linux's "Term" and "Core"
#: actions, without SIGKILL and SIGSTOP (not catchable), SIGPIPE (Python ignores it: a
#: write to a closed pipe fails instead, see the short-write cases) and the faults of the
#: program itself (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS), after which no
#: Python code can run safely.
NAMED_ENDING_SIGNALS = [getattr(signal, name) for name in (
    "SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM",
    "SIGPROF", "SIGXCPU", "SIGXFSZ", "SIGIO", "SIGPWR", "SIGSTKFLT") if hasattr(signal, name)]
ENDING_SIGNALS = NAMED_ENDING_SIGNALS + (
    list(range(signal.SIGRTMIN, signal.SIGRTMAX + 1)) if hasattr(signal, "SIGRTMIN") else [])

#: The address-space limit of a child in the memory cases: a reader that allocates in
#: proportion to its input fails here instead of taking the shared machine's memory.
MEMORY_LIMIT = 1 << 30


def signal_name(signum):
    """``SIGTERM``, or ``SIGRTMIN+3`` for a real-time signal."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"SIGRTMIN+{signum - signal.SIGRTMIN}"


def temporaries(folder):
    """The names the writers give their temporary files and staging folders (``.tmp-*``)
    found anywhere under ``folder``."""
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob(".tmp-*"))


def fpq_command():
    """The ``fpq`` command installed beside the interpreter running the tests."""
    return [os.path.join(os.path.dirname(sys.executable), "fpq")]


#: ``fpq`` (its console script's function) run so that, at exit, the process writes its own
#: peak resident memory (VmHWM, kB) to the file named by ``FAULT_KIT_PEAK``. The peak the
#: system reports to a parent (``ru_maxrss``) keeps the peak of the process that forked the
#: child, the test runner's, across fork and exec.
_MEASURED = """
import atexit, os, sys
from importlib.metadata import entry_points
def peak():
    with open("/proc/self/status") as f:
        hwm = [line for line in f if line.startswith("VmHWM:")][0].split()[1]
    with open(os.environ["FAULT_KIT_PEAK"], "w") as f:
        f.write(hwm)
atexit.register(peak)
main, = [e.load() for e in entry_points(group="console_scripts") if e.name == "fpq"]
sys.argv[0] = "fpq"
sys.exit(main())
"""


class Ran:
    """A finished child: ``status`` (its exit status, or minus the signal that ended it),
    ``stderr`` (text), ``stdout`` (bytes, when captured) and ``peak_rss`` (bytes)."""

    def __init__(self, status, stderr, stdout, peak_rss):
        self.status, self.stderr, self.stdout, self.peak_rss = status, stderr, stdout, peak_rss

    def __repr__(self):
        return f"Ran(status={self.status}, stderr={self.stderr[-300:]!r})"


def _limits(fsize=None, memory=None):
    """A ``preexec_fn`` that sets the child's file size and address-space limits."""
    def apply():
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    return apply


def run_fpq(argv, stdout=subprocess.PIPE, fsize=None, memory=None, timeout=120, cwd=None):
    """Run ``fpq argv`` in a child process; ``stdout`` an open file descriptor (a pipe's
    closed-reader end, ``/dev/full``) or ``subprocess.PIPE``; ``fsize`` and ``memory`` its
    limits in bytes. Returns a :class:`Ran` with the child's peak resident memory (None if
    it did not exit normally)."""
    peak_file = tempfile.NamedTemporaryFile(prefix="peak-", delete=False)
    peak_file.close()
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONDONTWRITEBYTECODE": "1", "FAULT_KIT_PEAK": peak_file.name}
    proc = subprocess.Popen([sys.executable, "-c", _MEASURED, *argv], stdout=stdout,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                            preexec_fn=_limits(fsize, memory))
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    with open(peak_file.name) as f:
        peak = f.read().strip()
    os.unlink(peak_file.name)
    return Ran(proc.returncode, err.decode("utf-8", "replace"), out or b"",
               int(peak) * 1024 if peak else None)


def last_line(text):
    """The last non-empty line of ``text`` ("" if none)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def exit_text(ran):
    """``exit 2`` or ``killed by SIGXFSZ``: how a child ended, for the record."""
    return f"exit {ran.status}" if ran.status >= 0 else f"killed by {signal_name(-ran.status)}"


def process_alive(pid):
    """Whether ``pid`` is a live process (not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def descendants(pid, wait=0.0):
    """The pids of the live processes below ``pid`` (its children, theirs, ...), after
    ``wait`` seconds."""
    time.sleep(wait)
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
