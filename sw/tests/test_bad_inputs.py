"""The recording of the bad inputs the fuzz tests try (``bad_inputs``) and the table made of
it: the markers in docs/RELIABILITY.md, the rows rendered from a small recording written by
hand, a recording from two pytest-xdist workers merged. Rerunning the fuzz tests to compare
the committed table would take as long as they do; ``make reliability`` does that."""

import json

import pytest

import bad_inputs
from bad_inputs import Tried, load, render, update, about, BEGIN, END, DOC


def _case(test, input, kind=None, message=None, area="A", file=None):
    r = {"area": area, "test": test, "input": input}
    r.update({"outcome": "refused", "kind": kind, "message": message} if kind else
             {"outcome": "accepted"})
    return r | ({"file": file} if file else {})


def _write(folder, name, records):
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in records))


def _rows(table):
    return table.splitlines()[2:]


def test_the_document_has_the_markers_once_in_order():
    text = DOC.read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    assert text.index(BEGIN) < text.index(END)


def test_rows_from_a_small_recording():
    """Counts per test (a parametrized test's cases together), kinds of error grouped by the
    field the message names, the most frequent first, each with its shortest input."""
    records = [
        _case("x/test_f.py::test_one", "v_max=9000", "ValueError",
              "v_max: 9000 is out of range [1, 8192]"),
        _case("x/test_f.py::test_one", "v_max=5"),
        _case("x/test_f.py::test_one", "v_max=0", "ValueError",
              "v_max: 0 is out of range [1, 8192]"),
        _case("x/test_f.py::test_one", "no run", "ScenarioError",
              "f.toml: run: missing section [run]", file="f.toml"),
        _case("x/test_f.py::test_one", "v_max=10"),
        _case("x/test_f.py::test_two[a]", "b|c", "TypeError", "a `bad` type"),
        _case("x/test_f.py::test_two[b]", "ok"),
        _case("x/test_f.py::test_two[c]", "line", "exit 2",
              "fpq x: error: bad.csv: line 12: ecn '7' must be 0 or 1", file="bad.csv",
              area="B"),
    ]
    assert _rows(render(records)) == [
        "| A: `test_one` | 5 | 3 | 2 | | `v_max=5` | accepted |",
        "| | | 2 | | ValueError: `v_max` | `v_max=0` | `v_max: 0 is out of range [1, 8192]` |",
        "| | | 1 | | ScenarioError: `run` | `no run` | `f.toml: run: missing section [run]` |",
        "| A: `test_two` | 2 | 1 | 1 | | `ok` | accepted |",
        "| | | 1 | | TypeError: `a 'bad' type` | `b\\|c` | `a 'bad' type` |",
        "| B: `test_two` | 1 | 1 | 0 | |  | |",
        "| | | 1 | | exit 2: `line N: ecn` | `line` | "
        "`fpq x: error: bad.csv: line 12: ecn '7' must be 0 or 1` |",
    ]


def test_kinds_beyond_the_cap_are_summed_in_one_row(monkeypatch):
    monkeypatch.setattr(bad_inputs, "KINDS_SHOWN", 2)
    records = [_case("t.py::test_x", f"{name}={i}", "ConfigError", f"{name}: {i} is bad")
               for name, n in (("a", 3), ("b", 2), ("c", 1), ("d", 1)) for i in range(n)]
    assert _rows(render(records)) == [
        "| A: `test_x` | 7 | 7 | 0 | |  | |",
        "| | | 3 | | ConfigError: `a` | `a=0` | `a: 0 is bad` |",
        "| | | 2 | | ConfigError: `b` | `b=0` | `b: 0 is bad` |",
        "| | | 2 | | 2 more: `c`, `d` | | |",
    ]


@pytest.mark.parametrize("message, file, field", [
    ("fpq demo: error: argument --duration: invalid float value: 'x'", None, "--duration"),
    ("fpq sim: error: s.toml: queue.v_max: 0 is out of range", "s.toml", "queue.v_max"),
    ("flows[3].count: 0 is out of range [1, 100000]", None, "flows[N].count"),
    ("'-,': unknown key; known keys: name", None, "(unknown key)"),
    ("t.fpqtrace: record 7: kind must be 0 or 1", "t.fpqtrace", "record N: kind"),
    ("t.fpqtrace: record size 0 is not 32", "t.fpqtrace", "record size"),
    ("t.fpqtrace: magic b\"'x\" is not b'FPQTRACE'", "t.fpqtrace", "magic"),
    ("b.csv: line 1: not UTF-8 text (byte 0)", "b.csv", "line N: not UTF-8 text (byte N)"),
    ("t.fpqtrace: 0 bytes is too short for the 32-byte header", "t.fpqtrace",
     "N bytes is too short for the N-byte header"),
    ("unknown configuration field(s): v_maxx; known: mode", None,
     "unknown configuration field(s)"),
])
def test_what_a_message_is_about(message, file, field):
    assert about(message, file) == field


def test_two_workers_recordings_merge(tmp_path):
    """Each worker writes its own file; merged, the table is the same whichever worker ran
    which test file, and every case of both is counted."""
    one = [_case("sw/tests/test_b.py::test_p", "p=0", "ValueError", "p: 0 is bad"),
           _case("sw/tests/test_b.py::test_p", "p=1")]
    two = [_case("sim/tests/test_a.py::test_q", "q=0", "ValueError", "q: 0 is bad")] * 3
    for folder, (gw0, gw1) in ((tmp_path / "ab", (one, two)), (tmp_path / "ba", (two, one))):
        folder.mkdir()
        _write(folder, "gw0-11.jsonl", gw0)
        _write(folder, "gw1-12.jsonl", gw1)
    merged = load(tmp_path / "ab")
    assert len(merged) == 5
    assert render(merged) == render(load(tmp_path / "ba"))
    assert _rows(render(merged)) == [
        "| A: `test_q` | 3 | 3 | 0 | |  | |",
        "| | | 3 | | ValueError: `q` | `q=0` | `q: 0 is bad` |",
        "| A: `test_p` | 2 | 1 | 1 | | `p=1` | accepted |",
        "| | | 1 | | ValueError: `p` | `p=0` | `p: 0 is bad` |",
    ]


def test_tried_records_each_outcome_and_lets_the_exception_go_on(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "sw/tests/test_z.py::test_k[7] (call)")
    tried = Tried("files", folder=str(tmp_path))
    bad = tmp_path / "sub" / "in.toml"
    with pytest.raises(ValueError), tried({"v": 0}, path=bad):
        raise ValueError(f"{bad}: v: 0 is out of range\nsecond line")
    with tried(f"read {bad}", path=bad):
        pass
    tried.refused("--x=1", "exit 2", "fpq: error: --x: 1 is out of range")
    assert [p.name.split("-")[0] for p in tmp_path.glob("*.jsonl")] == ["gw3"]
    assert load(tmp_path) == [
        {"area": "files", "test": "sw/tests/test_z.py::test_k[7]", "input": "{'v': 0}",
         "outcome": "refused", "kind": "ValueError", "message": "in.toml: v: 0 is out of range",
         "file": "in.toml"},
        {"area": "files", "test": "sw/tests/test_z.py::test_k[7]", "input": "read in.toml",
         "outcome": "accepted", "file": "in.toml"},
        {"area": "files", "test": "sw/tests/test_z.py::test_k[7]", "input": "--x=1",
         "outcome": "refused", "kind": "exit 2", "message": "fpq: error: --x: 1 is out of range"},
    ]


def test_off_records_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tried = Tried("files", folder="")
    with pytest.raises(KeyError), tried("k"):
        raise KeyError("k")
    tried.accepted("x")
    tried.refused("y", "exit 2", "no")
    assert list(tmp_path.iterdir()) == []


def test_update_replaces_only_between_the_markers():
    doc = f"# T\n\nbefore\n{BEGIN}\nold table\n{END}\nafter\n"
    assert update(doc, "| new |\n", "Generated today.") == \
        f"# T\n\nbefore\n{BEGIN}\nGenerated today.\n\n| new |\n{END}\nafter\n"
    with pytest.raises(ValueError, match="markers"):
        update("no markers here", "| new |\n", "x")
    with pytest.raises(ValueError, match="markers"):
        update(f"{END}\n{BEGIN}\n", "| new |\n", "x")
