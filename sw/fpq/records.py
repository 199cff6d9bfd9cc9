"""Measurement records: one JSON file per measured figure set, the source of the tables that
``fpq benchmarks`` writes at the top of docs/BENCHMARKS.md.

A record holds what was measured (``results``), by which command, when, on which machine and
from which commit, so a table can say where each figure comes from and a reader can measure
it again. Commands that measure take ``--record PATH`` (``fpq bench``, ``python -m
fpq_hdl.synth``, ``fpq board build``); the project keeps its records in ``docs/benchmarks/``.
"""

import json
import os
import platform
import shlex
import subprocess
import sys
import time

from .atomic import write_text

__all__ = ["write_record", "read_records", "RECORD_VERSION"]

RECORD_VERSION = 1


def _commit():
    """The checkout's commit (with ``+`` if it has uncommitted changes), or None (also when
    installed: a git repository around the installation is not this code's)."""
    from .paths import checkout_root
    root = checkout_root()
    if root is None:
        return None
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode:
        return None
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def write_record(path, kind, results, argv=None):
    """Write a record of ``kind`` (e.g. "synth", "bench", "board") with ``results`` (any
    JSON) to ``path``; the command is ``argv`` (default: this process's)."""
    argv = list(sys.argv if argv is None else argv)
    if argv and os.path.isabs(argv[0]):
        argv[0] = os.path.basename(argv[0])      # "fpq", not the venv's path to it
    record = {
        "version": RECORD_VERSION,
        "kind": kind,
        "date": time.strftime("%Y-%m-%d"),
        "command": " ".join(shlex.quote(a) for a in argv),
        "commit": _commit(),
        "machine": {"system": platform.system(), "machine": platform.machine(),
                    "cpus": os.cpu_count(), "python": platform.python_version()},
        "results": results,
    }
    write_text(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def read_records(folder):
    """Every record in ``folder`` (``*.json``), by file name without the extension. A file
    that is not a record raises ``ValueError`` naming it."""
    out = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(folder, name)
        try:
            with open(path) as f:
                rec = json.load(f)
        except ValueError as exc:
            raise ValueError(f"{path}: not JSON ({exc})") from None
        except RecursionError:
            raise ValueError(f"{path}: not a measurement record (nested too deeply to "
                             f"read)") from None
        if not isinstance(rec, dict) or rec.get("version") != RECORD_VERSION or \
                "results" not in rec:
            raise ValueError(f"{path}: not a measurement record (version "
                             f"{RECORD_VERSION} with results)")
        out[name[:-5]] = rec
    return out
