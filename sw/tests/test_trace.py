"""Trace files: binary and CSV round trips, exact errors, the accept-clock order, nothing
half-written."""
import copy
import os
import struct

from hypothesis import given, settings, strategies as st, HealthCheck
import pytest

from fpq import Arrival, Departure, pack_flow, Config, Build, QueueManager
from fpq.trace import (write_trace, read_trace, write_csv, read_csv, TraceError, RECORD_DTYPE)

ORDER = ("events must be in clock order with at most one arrival and one departure per clock, "
         "the departure first")

arrival = st.builds(Arrival, st.just(0), st.integers(0, (1 << 104) - 1), st.integers(1, 65535),
                    st.booleans())
departure = st.builds(Departure, st.just(0), st.integers(1, 65535))


@st.composite
def event_lists(draw):
    """Events in the queue manager's order: clocks rising, a clock shared only by a departure
    and the arrival after it; from clock 0 or up to the largest a record holds."""
    evs = draw(st.lists(st.one_of(arrival, departure), max_size=60))
    t = draw(st.sampled_from([0, (1 << 64) - 1 - 60 * (1 << 40)]))
    out, prev = [], None
    for ev in evs:
        dt = draw(st.integers(0, 1 << 40))
        if prev is not None and dt == 0 and not (type(prev) is Departure and type(ev) is Arrival):
            dt = 1
        t += dt
        prev = ev
        out.append(ev._replace(ts=t))
    return out


# a fresh model per example is a copy of this one (building the hash tables takes longer)
MODEL = QueueManager(Config(build=Build(vec_bits=64, table_depth=16), v_max=64, n_cap=15))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
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
    # what a trace holds, the queue manager takes in that order
    copy.deepcopy(MODEL).run(back)


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
    with pytest.raises(TraceError, match=r"record 1: departure at clock 1 after the arrival at "
                                         r"clock 5: events must be in clock order"):
        read_trace(_bad(tmp_path, bad))
    bad[start + 32:start + 40] = struct.pack("<Q", 5)   # the departure in the arrival's clock
    with pytest.raises(TraceError, match="record 1: departure at clock 5 after the arrival at "
                                         "clock 5"):
        read_trace(_bad(tmp_path, bad))


FLOW = pack_flow(1, 2, 3, 4, 6)


@pytest.mark.parametrize("events, bad", [
    ([Arrival(5, FLOW, 100), Arrival(5, FLOW, 100)], "arrival at clock 5 after the arrival"),
    ([Departure(5, 100), Departure(5, 100)], "departure at clock 5 after the departure"),
    ([Arrival(5, FLOW, 100), Departure(5, 100)], "departure at clock 5 after the arrival"),
    ([Departure(5, 100), Arrival(5, FLOW, 100), Departure(5, 100)],
     "departure at clock 5 after the arrival"),
    ([Departure(5, 100), Arrival(5, FLOW, 100), Arrival(6, FLOW, 100)], None),
])
def test_one_arrival_and_one_departure_per_clock_the_departure_first(tmp_path, events, bad):
    # the queue manager's order (QueueManager refuses the same events): writer, binary
    # reader and CSV reader agree
    path, csv = tmp_path / "o.fpqtrace", tmp_path / "o.csv"
    i = len(events) - 1
    if bad is None:
        write_trace(path, events, 1e6)
        write_csv(csv, events)
        assert read_trace(path)[1] == read_csv(csv) == events
        copy.deepcopy(MODEL).run(events)
        return
    for write in (lambda: write_trace(path, events, 1e6), lambda: write_csv(csv, events)):
        with pytest.raises(TraceError, match=f"^event {i}: {bad} at clock 5: {ORDER}$"):
            write()
    with pytest.raises(ValueError, match="must be an integer clock >= 6"):
        copy.deepcopy(MODEL).run(events)
    # the same records written past the writer's check: the readers name them
    write_trace(path, events[:i], 1e6)
    rec = bytearray(path.read_bytes())
    write_trace(path, events[i:], 1e6)
    last = path.read_bytes()[-RECORD_DTYPE.itemsize:]
    struct.pack_into("<Q", rec, 24, len(events))
    path.write_bytes(bytes(rec) + last)
    with pytest.raises(TraceError, match=f"record {i}: {bad} at clock 5: {ORDER}"):
        read_trace(path)
    write_csv(csv, events[:i])
    kind = "dep" if type(events[i]) is Departure else "arr"
    row = "5,dep,,,,,,100," if kind == "dep" else "5,arr,0.0.0.1,0.0.0.2,3,4,6,100,0"
    csv.write_text(csv.read_text() + row + "\n")
    with pytest.raises(TraceError, match=f"line {i + 2}: {bad} at clock 5: {ORDER}"):
        read_csv(csv)


def test_clocks_of_any_size_up_to_what_a_record_holds(tmp_path):
    path = tmp_path / "big.fpqtrace"
    top = [Departure((1 << 64) - 2, 10), Arrival((1 << 64) - 1, FLOW, 10)]
    write_trace(path, top, 1e6)
    assert read_trace(path)[1] == top
    for ts in ((1 << 64), -1, 5.0):
        with pytest.raises(TraceError, match=r"event 0: ts .* is out of range \[0, 2\*\*64\)"):
            write_trace(path, [Departure(ts, 10)], 1e6)
    assert read_trace(path)[1] == top


def test_version_1_traces_are_refused(tmp_path):
    # version 1 held arrival times of the earlier contract, not accept clocks
    path, data = _good(tmp_path)
    with pytest.raises(TraceError, match=r"version 1 is not supported \(only 2, whose ts is the "
                                         r"queue manager's accept clock; re-record the trace\)"):
        read_trace(_bad(tmp_path, data[:8] + struct.pack("<H", 1) + data[10:]))


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
    with pytest.raises(TraceError, match="event 1: departure at clock 3 after the departure at "
                                         "clock 9: " + ORDER):
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


# ---- bounded memory on bad or huge input ---------------------------------------------------

#: Reads ``sys.argv[1]`` with the reader named by ``sys.argv[2]`` in a fresh process and
#: prints the error and the process's peak resident memory in MiB.
PEAK = """
import resource, sys
from fpq.trace import read_trace, read_csv, TraceError
try:
    (read_trace if sys.argv[2] == "binary" else read_csv)(sys.argv[1])
    print("read")
except TraceError as exc:
    print(exc)
# this process's own peak (VmHWM of its memory map): ru_maxrss keeps the parent's peak
# across fork and exec, so under a big test worker it reported the worker's size
try:
    with open("/proc/self/status") as f:
        hwm = [l for l in f if l.startswith("VmHWM:")][0]
    print(int(hwm.split()[1]) // 1024)
except OSError:
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def _read_in_child(path, reader):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", PEAK, str(path), reader], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    message, peak_mib = r.stdout.strip().rsplit("\n", 1)
    return message, int(peak_mib)


@pytest.mark.parametrize("source", ["sparse 2 GiB", "/dev/zero"])
@pytest.mark.parametrize("reader", ["binary", "csv"])
def test_a_huge_or_endless_file_is_refused_in_little_memory(tmp_path, source, reader):
    """A 2 GiB file of zeros (sparse: no disk space) and /dev/zero are refused after their
    first bytes. Reading the whole file first took 2 GiB of memory for the sparse file and
    ended in a MemoryError for /dev/zero (the CSV reader too, and for the sparse file). The
    reading process peaks at about 30 MiB here (numpy loaded); the limit is 200 MiB."""
    if source == "/dev/zero":
        path = "/dev/zero"
    else:
        path = tmp_path / "zeros"
        with open(path, "wb") as f:
            f.truncate(2 << 30)
    message, peak_mib = _read_in_child(path, reader)
    expected = ("magic b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00' is not b'FPQTRACE': not an "
                "FPQ trace" if reader == "binary" else
                "line 1: longer than 1024 bytes: not a line of an FPQ CSV trace")
    assert message == f"{path}: {expected}"
    assert peak_mib < 200, peak_mib


def test_a_fifo_is_read_up_to_what_its_header_says(tmp_path):
    """A trace from a pipe: the size is unknown, the header's lengths bound what is read; a
    writer that stops early gives the truncation error, one that goes on past the records
    the padding error."""
    import threading
    path, data = _good(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for content, error in ((data, None), (data[:-5], "holds 59 bytes after the header: "
                                                     "truncated or padded"),
                           (data + b"x", "holds more bytes after the header: truncated or "
                                         "padded")):
        writer = threading.Thread(target=lambda: open(fifo, "wb").write(bytes(content)))
        writer.start()
        try:
            if error is None:
                assert len(read_trace(fifo)[1]) == 2
            else:
                with pytest.raises(TraceError, match=error):
                    read_trace(fifo)
        finally:
            writer.join(timeout=10)


def test_deeply_nested_metadata_is_a_trace_error(tmp_path):
    """JSON nested deeper than Python's recursion allows: before the check a RecursionError
    escaped (a traceback from ``fpq trace-csv``)."""
    path, data = _good(tmp_path)
    _, _, _, mlen, _, _ = struct.unpack_from("<8sHHIdQ", data)
    deep = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    meta = deep + b"\0" * ((-(32 + len(deep))) % 8)
    head = bytearray(data[:32])
    head[12:16] = struct.pack("<I", len(deep))
    records = data[32 + mlen + (-(32 + mlen)) % 8:]
    bad = _bad(tmp_path, bytes(head) + meta + records)
    with pytest.raises(TraceError, match=f"^{bad}: metadata is nested too deeply to read$"):
        read_trace(bad)


def test_ipv6_flows_are_refused_naming_the_build_option(tmp_path):
    """A trace record holds the IPv4 5-tuple: a 296-bit IPv6 flow key is refused, and the
    error says where IPv6 builds run."""
    from fpq import pack_flow6
    flow = pack_flow6(1 << 127, 2, 3, 4, 6)
    with pytest.raises(TraceError, match=r"event 0: flow .* is not a 104-bit flow key .*"
                                         r"Build.flow_key 'ipv6'"):
        write_trace(tmp_path / "t.fpqt", [Arrival(5, flow, 100)], 1e6)
    assert not (tmp_path / "t.fpqt").exists()
