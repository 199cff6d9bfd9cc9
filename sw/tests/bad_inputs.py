"""The bad inputs the fuzz tests try and the faults the probe tests make (``test_faults.py``,
``test_sim_faults.py``), recorded, and the table of them in docs/RELIABILITY.md.

A fuzz test notes each case it tries through a :class:`Tried` of its area: the input, shown
briefly, and the outcome, refused (the exception's type and the first line of its message)
or accepted. Recording is on only when the environment variable ``FPQ_BAD_INPUTS`` names a
folder; then every process (each pytest-xdist worker, or the one pytest process) appends
its cases to a file of its own there, one JSON object a line, and Hypothesis runs
derandomized, so that the same code tries the same cases. Otherwise a note is an empty
context (under a microsecond).

Run as a script (``make reliability``), it runs the fuzz tests with recording on, merges
the workers' files and writes the table between the markers of docs/RELIABILITY.md::

    python sw/tests/bad_inputs.py [--jobs N] [--doc PATH] [--records FOLDER]
"""

import argparse
import contextlib
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["Tried", "ENV", "FUZZ_TESTS", "load", "about", "render", "update", "main"]

#: the folder the recording goes to; unset: recording off
ENV = "FPQ_BAD_INPUTS"
ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "RELIABILITY.md"
BEGIN, END = "<!-- bad-inputs:begin -->", "<!-- bad-inputs:end -->"
#: the fuzz tests that record (the table orders them by path)
FUZZ_TESTS = ["sw/tests/test_fuzz_cli.py", "sw/tests/test_fuzz_config.py",
              "sw/tests/test_fuzz_trace.py", "sim/tests/test_fuzz_scenario.py",
              "sw/tests/test_faults.py", "sim/tests/test_sim_faults.py"]
#: the longest input and message shown in the table
SHOWN_CHARS = 60
MESSAGE_CHARS = 110
#: error kinds listed per test; the rest are summed in one row
KINDS_SHOWN = 8

_FOLDER = os.environ.get(ENV)
if _FOLDER:
    # the same cases on every run: examples from a hash of each test, no example database
    from hypothesis import settings
    settings.register_profile("bad-inputs", derandomize=True, database=None)
    settings.load_profile("bad-inputs")
    # Hypothesis also draws constants it finds in the project's modules imported so far;
    # those depend on the tests a process ran before (a worker runs some of the files), so a
    # test would try other cases in another worker. Without them the cases depend on the
    # test alone. (A private function: Hypothesis offers no setting for it.)
    from hypothesis.internal.conjecture import providers
    from hypothesis.internal.constants_ast import Constants
    _NO_CONSTANTS = Constants()
    providers._get_local_constants = lambda: _NO_CONSTANTS


def _brief(value, limit):
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split()) if "\n" in text or "\r" in text else text
    return text if len(text) <= limit else text[:limit - 3] + "..."


class Tried:
    """The cases one area of fuzz tests tries.

    Parameters
    ----------
    area : str
        What is fuzzed, as the table names it ("fpq arguments", "trace files").
    folder : str or None
        Where the records go; by default the folder named by ``FPQ_BAD_INPUTS``, and none
        (nothing recorded) when it is unset.

    A case is noted with :meth:`refused` or :meth:`accepted`, or by running the code under
    test inside ``with tried(shown):``, which notes an exception leaving the block (and
    lets it go on) or the block's end. ``shown`` is the input, a string or any object (its
    ``repr``); ``path``, a file named in the input or message, is shown by its name alone,
    so that the record does not depend on the temporary folder.
    """

    def __init__(self, area, folder=None):
        self.area = area
        self.folder = _FOLDER if folder is None else folder
        self._file = None

    def __call__(self, shown, path=None):
        if not self.folder:
            return contextlib.nullcontext()
        return self._trying(shown, path)

    @contextlib.contextmanager
    def _trying(self, shown, path):
        try:
            yield
        except BaseException as exc:
            self.refused(shown, type(exc).__name__, str(exc), path)
            raise
        self.accepted(shown, path)

    def refused(self, shown, kind, message, path=None):
        """Note a refused case: ``kind`` of error (an exception type's name, "exit 2") and
        its message."""
        if self.folder:
            self._write(shown, path, {"outcome": "refused", "kind": kind,
                                      "message": message})

    def accepted(self, shown, path=None):
        """Note an accepted case."""
        if self.folder:
            self._write(shown, path, {"outcome": "accepted"})

    def _write(self, shown, path, outcome):
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]
        shown = _brief(shown, 1000)
        if "message" in outcome:
            lines = outcome["message"].strip().splitlines()
            outcome["message"] = _brief(lines[0], 1000) if lines else ""
        if path is not None:
            path = str(path)
            name = outcome["file"] = os.path.basename(path)
            shown = shown.replace(path, name)
            if "message" in outcome:
                outcome["message"] = outcome["message"].replace(path, name)
        if self._file is None:
            os.makedirs(self.folder, exist_ok=True)
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            self._file = open(os.path.join(self.folder, f"{worker}-{os.getpid()}.jsonl"), "a",
                              encoding="utf-8")
        self._file.write(json.dumps({"area": self.area, "test": test, "input": shown,
                                     **outcome}) + "\n")
        self._file.flush()


def load(folder):
    """The records of every process's file in ``folder``, in a fixed order: by file name
    (a test runs in one process, so each test's cases keep the order it tried them)."""
    records = []
    for path in sorted(Path(folder).glob("*.jsonl")):
        with open(path, encoding="utf-8") as f:
            records += [json.loads(line) for line in f if line.strip()]
    return records


#: a command's error prefix ("fpq sim: error: ") and argparse's "argument "
_COMMAND = re.compile(r"^fpq[\w -]*: error: (?:argument )?")
#: a record, line or event number and the field named after it
_NUMBERED = re.compile(r"^(record|line|event) \d+: (?:(?!not\b|has\b|is\b)(\w+)(?= ))?")
#: a key path, an option or a quoted key, then ": "
_KEY = re.compile(r"^(--[\w-]+|[A-Za-z_][\w.\[\]-]*|'[^']*'|\"[^\"]*\"): ")
#: a field's words, then a value or a verb: "record size 0 is", "metadata is not"
_WORDS = re.compile(r"^([a-z_]\w*(?: [a-z_]\w*)*?) (?=[-\d'\"]|b['\"]|nan\b|inf\b|is\b|"
                    r"must\b|runs\b|says\b)")
#: a message about an unknown name: "unknown configuration field(s): v_maxx; known: ..."
_UNKNOWN = re.compile(r"^unknown [\w ()]+")
#: values in a message, for its shape
_VALUE = re.compile(r"b?'(?:[^'\\]|\\.)*'|b?\"(?:[^\"\\]|\\.)*\"|(?<![\w.-])-?\d[\w.]*|"
                    r"\bnan\b|\binf\b")
#: how much of a message's shape names its kind
SHAPE_CHARS = 48


def _shape(text):
    """``text`` with its values (numbers, quoted text) replaced by N and '...': the kind of
    message, for one that names no field."""
    text = _VALUE.sub(lambda m: "'...'" if m.group(0)[-1] in "'\"" else "N", text)
    return text if len(text) <= SHAPE_CHARS else text[:SHAPE_CHARS - 3] + "..."


def about(message, file=None):
    """What ``message`` is about: the field, option or key path it names at its start (list
    indices and record, line and event numbers as N; a key unknown to the schema as
    "(unknown key)"), or else its shape (values replaced). ``file``, a file name the message
    starts with, is skipped."""
    text = _COMMAND.sub("", message)
    if file and text.startswith(f"{file}: "):
        text = text[len(file) + 2:]
    m = _NUMBERED.match(text)
    if m:
        rest = text[m.end():]
        return f"{m.group(1)} N: {m.group(2) or _shape(rest)}"
    m = _KEY.match(text)
    if m:
        if text[m.end():].startswith("unknown key"):
            return "(unknown key)"
        return re.sub(r"\[\d+\]", "[N]", m.group(1))
    m = _WORDS.match(text) or _UNKNOWN.match(text)
    if m:
        return m.group(m.lastindex or 0)
    return _shape(text)


def _printable(text, limit):
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _code(text, limit):
    """``text`` as inline code in a table cell."""
    return "`" + _printable(text, limit).replace("`", "'").replace("|", "\\|") + "`"


def _count(n):
    return f"{n:,}"


def _order(records):
    """``records`` by test file, each file's in the order they were tried: the same whichever
    worker ran which file (a file runs on one worker, ``--dist loadfile``)."""
    return sorted(records, key=lambda r: r["test"].split("::", 1)[0])


def render(records):
    """The markdown table of ``records``: for each area, a row per test (a parametrized
    test's cases together) with the cases tried, refused and accepted (and the shortest
    input accepted), then a row per kind of error it gave, most frequent first: the error
    (exception type, or exit status) and what the message names (:func:`about`), how many
    cases gave it, and one of them, the shortest input, with its message. At most
    ``KINDS_SHOWN`` kinds a test; the rest are summed in one row."""
    areas = {}
    for r in _order(records):
        name = r["test"].split("::", 1)[-1].split("[", 1)[0]
        areas.setdefault(r["area"], {}).setdefault(name, []).append(r)
    rows = ["| area, test | cases | refused | accepted | error: about | example input | "
            "its message |",
            "|---|---|---|---|---|---|---|"]
    shortest = lambda rs: min(rs, key=lambda r: (len(r["input"]), r["input"],  # noqa: E731
                                                 r.get("message", "")))
    for area, tests in areas.items():
        for name, cases in tests.items():
            refused = [r for r in cases if r["outcome"] == "refused"]
            accepted = [r for r in cases if r["outcome"] == "accepted"]
            example = f"{_code(shortest(accepted)['input'], SHOWN_CHARS)} | accepted" \
                if accepted else " |"
            rows.append(f"| {area}: `{name}` | {_count(len(cases))} | {_count(len(refused))} "
                        f"| {_count(len(accepted))} | | {example} |")
            kinds = {}
            for r in refused:
                kinds.setdefault((r["kind"], about(r["message"], r.get("file"))), []).append(r)
            ordered = sorted(kinds.items(), key=lambda kv: (-len(kv[1]), kv[0]))
            for (kind, field), group in ordered[:KINDS_SHOWN]:
                ex = shortest(group)
                rows.append(f"| | | {_count(len(group))} | | {kind}: "
                            f"{_code(field, SHOWN_CHARS)} | {_code(ex['input'], SHOWN_CHARS)} | "
                            f"{_code(ex['message'], MESSAGE_CHARS)} |")
            rest = ordered[KINDS_SHOWN:]
            if rest:
                named = ", ".join(_code(f, SHOWN_CHARS) for (_, f), _ in rest[:KINDS_SHOWN])
                more = ", ..." if len(rest) > KINDS_SHOWN else ""
                rows.append(f"| | | {_count(sum(len(g) for _, g in rest))} | | "
                            f"{len(rest)} more: {named}{more} | | |")
    return "\n".join(rows) + "\n"


def update(doc_text, table, header):
    """``doc_text`` with the part between the markers replaced by ``header`` and ``table``;
    a ValueError when the markers are missing or out of order."""
    start, end = doc_text.find(BEGIN), doc_text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the markers {BEGIN} ... {END} are missing or out of order")
    return doc_text[:start + len(BEGIN)] + "\n" + header + "\n\n" + table + doc_text[end:]


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Run the fuzz tests recording every bad input they try; write the table "
                    "into docs/RELIABILITY.md.")
    parser.add_argument("--jobs", type=int, default=1,
                        help="pytest-xdist workers (1: one process, no xdist)")
    parser.add_argument("--doc", type=Path, default=DOC, help="the document to update")
    parser.add_argument("--records", type=Path,
                        help="an empty folder to keep the workers' records in (by default a "
                             "temporary one)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs: {args.jobs} is out of range [1, ...]")
    import hypothesis
    if args.records is not None and args.records.exists() and any(args.records.iterdir()):
        parser.error(f"--records: {str(args.records)!r} is not empty")
    with contextlib.ExitStack() as stack:
        folder = str(args.records) if args.records is not None else \
            stack.enter_context(tempfile.TemporaryDirectory())
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FUZZ_TESTS]
        cmd += ["-n", str(args.jobs), "--dist", "loadfile"] if args.jobs > 1 else \
            ["-p", "no:xdist"]
        start = time.monotonic()
        # a signal that ends this script ends pytest and its workers too, and they die with it
        from fpq.terminate import signals_as_exit, ending_with_this_process
        with signals_as_exit():
            done = subprocess.run(cmd, cwd=ROOT, env={**os.environ, ENV: folder},
                                  preexec_fn=ending_with_this_process())
        seconds = time.monotonic() - start
        if done.returncode:
            print("the fuzz tests failed; docs not updated", file=sys.stderr)
            return done.returncode
        records = load(folder)
    header = (f"Generated {datetime.date.today().isoformat()} by `make reliability` "
              f"(`python sw/tests/bad_inputs.py`: the fuzz tests, Hypothesis "
              f"{hypothesis.__version__} derandomized, every case recorded): "
              f"{_count(len(records))} cases.")
    from fpq.atomic import write_text
    write_text(args.doc, update(args.doc.read_text(encoding="utf-8"), render(records), header))
    print(f"{len(records)} cases in {seconds:.1f} s; {args.doc} updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
