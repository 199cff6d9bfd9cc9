"""Fuzzing of trace files (hypothesis): header fields, record fields, byte flips and
truncation of binary traces; cells, rows and bytes of CSV traces; failing writers. Every bad
file gives one TraceError naming the file and the header field, record or line and column;
writers leave nothing behind. Case counts: docs/RELIABILITY.md."""

import copy
import struct

import numpy as np
from hypothesis import given, settings, strategies as st, HealthCheck
import pytest

from fpq import Arrival, Departure, Build, Config, QueueManager
from fpq.trace import (write_trace, read_trace, write_csv, read_csv, TraceError, RECORD_DTYPE,
                       CSV_COLUMNS)
from bad_inputs import Tried

BINARY, CSV = Tried("traces (binary)"), Tried("traces (CSV)")
FUZZ = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
EVENTS = [Departure(3 * i, 50 + i) if i % 3 == 0 else
          Arrival(3 * i, (i * 7919) << 40 | 80 << 8 | 6, 100 + i, i % 2 == 0) for i in range(30)]
HEAD = struct.Struct("<8sHHIdQ")
#: a fresh model per example is a copy of this one (building the hash tables takes longer)
MODEL = QueueManager(Config(build=Build(vec_bits=64, table_depth=16), v_max=64, n_cap=15))


def _good(tmp_path, meta=None):
    path = tmp_path / "good.fpqtrace"
    write_trace(path, EVENTS, 1e6, meta if meta is not None else {"scenario": "fuzz"})
    return path, path.read_bytes()


def _files(folder):
    return sorted(p.name for p in folder.iterdir())


@FUZZ
@given(magic=st.one_of(st.just(b"FPQTRACE"), st.binary(min_size=8, max_size=8)),
       version=st.one_of(st.just(2), st.integers(0, 0xFFFF)),
       rsize=st.one_of(st.just(32), st.integers(0, 0xFFFF)),
       mlen_delta=st.one_of(st.just(0), st.integers(-30, 1 << 20)),
       tick_hz=st.one_of(st.just(1e6), st.floats(allow_nan=True, allow_infinity=True)),
       count_delta=st.one_of(st.just(0), st.integers(-31, 1 << 40)))
def test_header_fields(tmp_path, magic, version, rsize, mlen_delta, tick_hz, count_delta):
    path, data = _good(tmp_path)
    _, _, _, mlen, _, count = HEAD.unpack_from(data)
    mlen2, count2 = max(0, mlen + mlen_delta), max(0, count + count_delta)
    bad = path.with_name("bad.fpqtrace")
    bad.write_bytes(HEAD.pack(magic, version, rsize, mlen2, tick_hz, count2) + data[HEAD.size:])
    valid = (magic == b"FPQTRACE" and version == 2 and rsize == 32 and mlen2 == mlen
             and 0 < tick_hz < 1e15 and count2 == count)       # documented tick_hz range
    changed = [f"{name}={got!r}" for name, got, good in (
        ("magic", magic, b"FPQTRACE"), ("version", version, 2), ("record size", rsize, 32),
        ("metadata length", mlen2, mlen), ("tick_hz", tick_hz, 1e6), ("count", count2, count))
        if not got == good]
    shown = ", ".join(changed) or "the good header"
    if valid:
        with BINARY(shown, bad):
            header, events = read_trace(bad)
        assert events == EVENTS and header["tick_hz"] == tick_hz
        return
    with pytest.raises(TraceError) as info, BINARY(shown, bad):
        read_trace(bad)
    msg = str(info.value)
    assert msg.startswith(f"{bad}: "), msg
    assert any(word in msg for word in ("magic", "version", "record size", "tick_hz",
                                        "metadata", "records", "record ", "padding")), msg


@st.composite
def records(draw):
    """A record array of 1..20 records with mostly valid, sometimes invalid, fields; each
    field is broken in about one record of 20 to 40, so that the ts order (checked last)
    is reached too: clocks equal to the previous one or going back."""
    n = draw(st.integers(1, 20))
    rec = np.zeros(n, RECORD_DTYPE)
    raw = rec.view(np.uint8).reshape(n, 32)

    def rare(good, bad, one_in):
        return draw(st.sampled_from(bad)) if draw(st.integers(0, one_in - 1)) == 0 else \
            draw(st.sampled_from(good))
    t = 0
    for i in range(n):
        t += draw(st.sampled_from([0, 0, 1, 1, 2, 1000]))
        kind = rare([0, 1], [2, 255], 40)
        rec[i]["ts"] = max(0, t - rare([0], [1, 5000], 10))
        rec[i]["kind"] = kind
        rec[i]["flags"] = rare([0, 1], [2, 128], 40)
        rec[i]["length"] = rare([1, 576, 65535], [0], 40)
        if kind == 0 or draw(st.integers(0, 39)) == 0:
            rec[i]["src_ip"] = draw(st.integers(0, (1 << 32) - 1))
            rec[i]["dst_port"] = draw(st.integers(0, 0xFFFF))
            rec[i]["proto"] = draw(st.integers(0, 255))
        if draw(st.integers(0, 39)) == 0:
            raw[i, 25 + draw(st.integers(0, 6))] = draw(st.integers(1, 255))
    return rec


def _out_of_order(prev_ts, prev_kind, ts, kind):
    """The queue manager's order broken: a clock going back, or a clock shared other than by
    a departure and the arrival after it."""
    return ts < prev_ts or (ts == prev_ts and not (prev_kind == 1 and kind == 0))


def _first_problem(rec):
    """(record index, field word) of the first record breaking the documented format, and of
    its broken fields the first in the order the reader checks them (kind, flags, length,
    pad, departure tuple, then the ts order with the record before)."""
    raw = rec.view(np.uint8).reshape(-1, 32)
    checks = [("kind", lambda r, i: r["kind"] > 1), ("flags", lambda r, i: r["flags"] > 1),
              ("length", lambda r, i: r["length"] == 0),
              ("pad", lambda r, i: raw[i, 25:].any())]
    checks += [(f, lambda r, i, f=f: r["kind"] == 1 and r[f] != 0)
               for f in ("src_ip", "dst_ip", "src_port", "dst_port", "proto")]
    for i, r in enumerate(rec):
        for field, bad in checks:
            if bad(r, i):
                return i, field
        if i and _out_of_order(rec[i - 1]["ts"], rec[i - 1]["kind"], r["ts"], r["kind"]):
            return i, ("arrival", "departure")[r["kind"]] + f" at clock {r['ts']} "
    return None


@FUZZ
@given(rec=records())
def test_record_fields(tmp_path, rec):
    path, data = _good(tmp_path, meta={})
    start = len(data) - len(EVENTS) * 32
    bad = path.with_name("rec.fpqtrace")
    head = bytearray(data[:start])
    struct.pack_into("<Q", head, 24, len(rec))
    bad.write_bytes(bytes(head) + rec.tobytes())
    problem = _first_problem(rec)
    shown = f"{len(rec)} records, " + (f"record {problem[0]}: {problem[1].strip()} broken"
                                       if problem else "all valid")
    if problem is None:
        with BINARY(shown, bad):
            _, events = read_trace(bad)
        assert len(events) == len(rec)
        assert [type(e) is Departure for e in events] == [bool(k) for k in rec["kind"]]
        copy.deepcopy(MODEL).run(events)        # the queue manager takes them in this order
        return
    with pytest.raises(TraceError) as info, BINARY(shown, bad):
        read_trace(bad)
    i, field = problem
    msg = str(info.value)
    assert msg.startswith(f"{bad}: record {i}: {field}"), (msg, problem)


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=6),
       cut=st.integers(0, 2000))
def test_byte_flips_and_truncation(tmp_path, flips, cut):
    path, data = _good(tmp_path)
    data = bytearray(data)
    for pos, b in flips:
        data[pos % len(data)] = b
    shown = [f"byte {pos % len(data)} = {b}" for pos, b in flips]
    if cut % 3 == 0:
        data = data[:cut]
        shown.append(f"cut at {cut}")
    shown = ", ".join(shown) or "unchanged"
    bad = path.with_name("flip.fpqtrace")
    bad.write_bytes(bytes(data))
    try:
        with BINARY(shown, bad):
            header, events = read_trace(bad)
    except TraceError as exc:
        assert str(exc).startswith(f"{bad}: "), exc
        return
    assert len(events) == header["count"]     # what was accepted is a well-formed trace
    assert all(1 <= e.length <= 65535 for e in events)
    kinds = [int(type(e) is Departure) for e in events]
    assert not any(_out_of_order(a.ts, ka, b.ts, kb)
                   for a, ka, b, kb in zip(events, kinds, events[1:], kinds[1:]))


CELL = st.one_of(st.text(max_size=8), st.sampled_from(["", "-1", "65536", "256", "1.5", "0x10",
                                                       "1.2.3", "1.2.3.256", "arr", "dep", "2",
                                                       "18446744073709551616", " 7"]),
                 st.sampled_from(["<prev ts>", "<next ts>"]))   # in the ts column: a neighbour's


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(1, len(EVENTS)), st.sampled_from(CSV_COLUMNS),
                                CELL), min_size=1, max_size=3))
def test_csv_cells(tmp_path, edits):
    good = tmp_path / "good.csv"
    write_csv(good, EVENTS)
    lines = good.read_text().splitlines()
    shown = []
    for row, col, text in edits:
        cells = lines[row].split(",")
        if text in ("<prev ts>", "<next ts>"):      # a clock shared with a neighbour
            other = lines[row - 1 if text == "<prev ts>" else min(row + 1, len(EVENTS))]
            text = other.split(",")[0] if col == "ts" and other[0].isdigit() else "x"
        cells[CSV_COLUMNS.index(col)] = text.replace(",", ";").replace("\n", " ")\
            .replace("\r", " ").replace('"', "'")
        lines[row] = ",".join(cells)
        shown.append(f"line {row + 1} {col} = {cells[CSV_COLUMNS.index(col)]!r}")
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")
    try:
        with CSV("; ".join(shown), bad):
            events = read_csv(bad)
    except TraceError as exc:
        msg = str(exc)
        assert msg.startswith(f"{bad}: line "), msg
        line = int(msg.split("line ")[1].split(":")[0])
        rows = {row for row, _, _ in edits}        # an edited ts may break the next line's order
        assert line - 1 in rows or (line - 2 in rows and "clock order" in msg), (msg, edits)
        return
    # accepted: each edited line still reads as a well-formed event, in the queue manager's
    # order
    assert len(events) == len(EVENTS)
    kinds = [int(type(e) is Departure) for e in events]
    assert not any(_out_of_order(a.ts, ka, b.ts, kb)
                   for a, ka, b, kb in zip(events, kinds, events[1:], kinds[1:]))


@FUZZ
@given(data=st.binary(max_size=400), keep_header=st.booleans())
def test_csv_bytes(tmp_path, data, keep_header):
    bad = tmp_path / "bytes.csv"
    bad.write_bytes(((",".join(CSV_COLUMNS) + "\n").encode() if keep_header else b"") + data)
    try:
        with CSV(("header + " if keep_header else "") + repr(data), bad):
            read_csv(bad)
    except TraceError as exc:
        assert str(exc).startswith(f"{bad}: line "), exc


@FUZZ
@given(bad_at=st.integers(0, len(EVENTS) - 1),
       what=st.sampled_from(["length", "ts", "order", "flow"]),
       csv=st.booleans())
def test_failed_writes_leave_the_old_file_and_no_temporary(tmp_path, bad_at, what, csv):
    import tempfile
    folder = type(tmp_path)(tempfile.mkdtemp(dir=tmp_path))
    path = folder / ("out.csv" if csv else "out.fpqtrace")
    path.write_bytes(b"old content")
    events = list(EVENTS)
    ev = events[bad_at]
    if what == "length":
        events[bad_at] = ev._replace(length=0 if bad_at % 2 else 70000)
    elif what == "ts":
        events[bad_at] = ev._replace(ts=-1)
    elif what == "order":           # the previous event's clock, or one before it where a
        prev = events[bad_at - 1] if bad_at else Departure(0, 1)    # departure then an arrival
        share = type(prev) is Departure and type(ev) is Arrival     # may share it
        events[bad_at] = ev._replace(ts=prev.ts - share if bad_at else -1)
    elif type(ev) is Arrival:
        events[bad_at] = ev._replace(flow=1 << 104)
    else:
        events[bad_at] = ev._replace(length=0)
    with pytest.raises(TraceError) as info, \
            (CSV if csv else BINARY)(f"write: event {bad_at} = {events[bad_at]}", path):
        if csv:
            write_csv(path, events)
        else:
            write_trace(path, events, 1e6)
    assert str(info.value).startswith(f"event {bad_at}: ")
    assert path.read_bytes() == b"old content"
    assert _files(folder) == [path.name]


def test_metadata_must_be_an_object_and_padding_zero(tmp_path):
    path, data = _good(tmp_path, meta={})
    _, _, _, mlen, _, _ = HEAD.unpack_from(data)
    assert mlen == 2
    bad = bytearray(data)
    bad[HEAD.size:HEAD.size + 2] = b"[]"
    (tmp_path / "m.fpqtrace").write_bytes(bytes(bad))
    with pytest.raises(TraceError, match="metadata must be a JSON object"), \
            BINARY("metadata []", tmp_path / "m.fpqtrace"):
        read_trace(tmp_path / "m.fpqtrace")
    bad = bytearray(data)
    bad[HEAD.size + 3] = 7
    (tmp_path / "p.fpqtrace").write_bytes(bytes(bad))
    with pytest.raises(TraceError, match="padding after the metadata must be zero"), \
            BINARY("padding byte 7", tmp_path / "p.fpqtrace"):
        read_trace(tmp_path / "p.fpqtrace")
