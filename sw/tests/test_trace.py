"""Trace files: binary and CSV round trips, exact errors, nothing half-written."""
import os
import struct

from hypothesis import given, settings, strategies as st, HealthCheck
import pytest

from fpq import Arrival, Departure, pack_flow
from fpq.trace import (write_trace, read_trace, write_csv, read_csv, TraceError, RECORD_DTYPE)

arrival = st.builds(Arrival, st.just(0), st.integers(0, (1 << 104) - 1), st.integers(1, 65535),
                    st.booleans())
departure = st.builds(Departure, st.just(0), st.integers(1, 65535))


@st.composite
def event_lists(draw):
    evs = draw(st.lists(st.one_of(arrival, departure), max_size=60))
    t, out = 0, []
    for ev in evs:
        t += draw(st.integers(0, 1 << 40))
        out.append(ev._replace(ts=t))
    return out


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=event_lists())
def test_binary_and_csv_round_trip(tmp_path, events):
    path = tmp_path / "t.fpqtrace"
    write_trace(path, events, 150e6, {"scenario": "x"})
    header, back = read_trace(path)
    assert back == events
    assert header["tick_hz"] == 150e6 and header["metadata"] == {"scenario": "x"}
    assert os.path.getsize(path) % 8 == 0
    write_csv(tmp_path / "t.csv", events)
    assert read_csv(tmp_path / "t.csv") == events


def _good(tmp_path):
    path = tmp_path / "good.fpqtrace"
    write_trace(path, [Arrival(5, pack_flow(1, 2, 3, 4, 6), 100, True), Departure(9, 100)], 1e6)
    return path, bytearray(path.read_bytes())


def _bad(tmp_path, data):
    p = tmp_path / "bad.fpqtrace"
    p.write_bytes(bytes(data))
    return p


def test_header_errors_name_the_problem(tmp_path):
    path, data = _good(tmp_path)
    with pytest.raises(TraceError, match="magic .* not an FPQ trace"):
        read_trace(_bad(tmp_path, b"NOTTRACE" + data[8:]))
    with pytest.raises(TraceError, match="version 9 is not supported"):
        read_trace(_bad(tmp_path, data[:8] + struct.pack("<H", 9) + data[10:]))
    with pytest.raises(TraceError, match="truncated or padded"):
        read_trace(_bad(tmp_path, data[:-5]))
    with pytest.raises(TraceError, match="too short"):
        read_trace(_bad(tmp_path, data[:10]))


def test_record_errors_name_record_and_field(tmp_path):
    path, data = _good(tmp_path)
    start = len(data) - 2 * RECORD_DTYPE.itemsize
    bad = bytearray(data)
    bad[start + 8] = 7          # record 0 kind
    with pytest.raises(TraceError, match=r"record 0: kind must be 0 \(arrival\) or 1"):
        read_trace(_bad(tmp_path, bad))
    bad = bytearray(data)
    bad[start + 32:start + 40] = struct.pack("<Q", 1)   # record 1 ts earlier than record 0
    with pytest.raises(TraceError, match="record 1: ts 1 is earlier than record 0's 5"):
        read_trace(_bad(tmp_path, bad))


@settings(max_examples=200)
@given(data=st.binary(max_size=200), cut=st.integers(0, 200))
def test_garbage_gives_trace_error_only(tmp_path_factory, data, cut):
    d = tmp_path_factory.mktemp("g")
    path, good = _good(d)
    for blob in (data, bytes(good[:cut]) + data):
        p = d / "g.fpqtrace"
        p.write_bytes(blob)
        try:
            read_trace(p)
        except TraceError:
            pass


def test_writer_checks_and_leaves_no_partial_file(tmp_path):
    path = tmp_path / "out.fpqtrace"
    with pytest.raises(TraceError, match="event 1: ts 3 is earlier than the previous event's 9"):
        write_trace(path, [Departure(9, 10), Departure(3, 10)], 1e6)
    with pytest.raises(TraceError, match=r"event 0: length 0 is out of range \[1, 65535\]"):
        write_trace(path, [Departure(9, 0)], 1e6)
    assert list(tmp_path.iterdir()) == []
    # an existing file survives a failed rewrite untouched
    write_trace(path, [Departure(1, 10)], 1e6)
    before = path.read_bytes()
    with pytest.raises(TraceError):
        write_trace(path, [Departure(2, 70000)], 1e6)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.fpqtrace"]


def test_csv_errors_name_line_and_column(tmp_path):
    p = tmp_path / "t.csv"
    write_csv(p, [Arrival(1, pack_flow(1, 2, 3, 4, 6), 60, False)])
    text = p.read_text().replace("0.0.0.1", "0.0.0.300")
    p.write_text(text)
    with pytest.raises(TraceError, match=r"line 2: src_ip '0.0.0.300' is not a dotted IPv4"):
        read_csv(p)
    p.write_text("ts,kind\n")
    with pytest.raises(TraceError, match="line 1: header must be"):
        read_csv(p)
