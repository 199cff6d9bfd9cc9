"""Trace files of arrival and departure descriptors: compact binary, and CSV export.

Binary layout (all little-endian)::

    offset  size  field
    0       8     magic  b"FPQTRACE"
    8       2     version (2)
    10      2     record size in bytes (32)
    12      4     metadata length M in bytes
    16      8     tick_hz (float64): the queue manager's clock rate (clocks per second)
    24      8     record count R
    32      M     metadata: UTF-8 JSON object (scenario, seed, ...)
    32+M    pad   zero bytes up to a multiple of 8
    ...     32*R  records

    record: ts u64 | kind u8 (0 arrival, 1 departure) | flags u8 (bit 0: ECN-capable) |
            length u16 (bytes, 1..65535) | src_ip u32 | dst_ip u32 | src_port u16 |
            dst_port u16 | proto u8 | 7 zero bytes

``ts`` is the clock in which the queue manager accepts the event (``fpq.QueueManager``'s
contract). Departures carry zeros in the 5-tuple. Records are in the order the queue manager
sees them, in clock order with at most one arrival and one departure per clock, the departure
first (``fpq.accept_clock`` stamps events that way). Version 1 traces carried arrival times of
an earlier contract, in which verdicts did not depend on the clock; they are refused. Readers
check everything and name the first bad record; writers write to a temporary file and rename
it, so a failed write leaves no partial file. Readers, writers and the CSV converter work a chunk
at a time (``CHUNK_RECORDS`` records, 2 MiB; the metadata is at most ``METADATA_MAX``, 1 MiB):
their memory does not grow with the file, and a bad file is refused at its first bad record.
"""

import json
import os
import re
import stat
import struct

import numpy as np

from .atomic import atomic_path
from .flow_hash import pack_flow, unpack_flow
from .formats import FLOW_BITS
from .messages import brief
from .queue_manager import Arrival, Departure

__all__ = ["write_trace", "read_trace", "write_csv", "read_csv", "TraceError", "RECORD_DTYPE",
           "CSV_LINE_MAX", "TraceReader", "convert_to_csv", "CHUNK_RECORDS", "METADATA_MAX"]

MAGIC = b"FPQTRACE"
VERSION = 2
_HEAD = struct.Struct("<8sHHIdQ")
RECORD_DTYPE = np.dtype([("ts", "<u8"), ("kind", "u1"), ("flags", "u1"), ("length", "<u2"),
                         ("src_ip", "<u4"), ("dst_ip", "<u4"), ("src_port", "<u2"),
                         ("dst_port", "<u2"), ("proto", "u1"), ("pad", "V7")])
assert RECORD_DTYPE.itemsize == 32
CSV_COLUMNS = ("ts", "kind", "src_ip", "dst_ip", "src_port", "dst_port", "proto", "length", "ecn")


class TraceError(ValueError):
    """A malformed trace; the message names the file, the record and the field."""


#: The output path that means standard output.
STDOUT = "-"
#: Records read, checked and converted at a time (2 MiB of a file): what the readers and the
#: converter hold at once beyond the metadata, whatever the file's size.
CHUNK_RECORDS = 1 << 16
#: The longest metadata a trace may hold, in bytes (a writer's JSON is a few KiB): a longer
#: length in a header is refused before anything is read.
METADATA_MAX = 1 << 20


def _write_all(f, data):
    """All of ``data`` to the binary file ``f`` (a buffered ``write`` may take less)."""
    view = memoryview(data)
    while view:
        view = view[f.write(view):]


def _write_out(path, chunks, check=None):
    """Write the byte strings ``chunks()`` yields to ``path`` atomically, or to standard
    output for ``-``: there ``check()`` (a pass over the input that raises what writing
    would) runs first, so that a bad input writes nothing there either."""
    if path == STDOUT:
        from .output_files import write_stdout
        if check is not None:
            check()
        for data in chunks():
            write_stdout(data)
        return
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            for data in chunks():
                _write_all(f, data)


_ORDER = ("in clock order with at most one arrival and one departure per clock, the "
          "departure first")


def _order_error(i, kind, ts, prev_kind, prev_ts):
    names = ("arrival", "departure")
    return (f"event {i}: {names[kind]} at clock {ts} after the {names[prev_kind]} at clock "
            f"{prev_ts}: events must be {_ORDER}")


def _event_record(i, ev):
    """``(ts, kind, record tuple)`` of event ``i``; TraceError for a flow or a clock a record
    cannot hold."""
    if type(ev) is Departure:
        ts, length = ev
        kind, flags, fields = 1, 0, (0, 0, 0, 0, 0)
    else:
        ts, flow, length, ecn = ev
        kind, flags = 0, int(bool(ecn))
        if not 0 <= flow < (1 << FLOW_BITS):
            raise TraceError(f"event {i}: flow {brief(flow)} is not a 104-bit flow key (a "
                             f"trace record holds the IPv4 5-tuple; the flows of a "
                             f"build with Build.flow_key 'ipv6' run in the golden model "
                             f"and the RTL, not in traces)")
        fields = unpack_flow(flow)
    if not isinstance(ts, int) or not 0 <= ts < (1 << 64):
        raise TraceError(f"event {i}: ts {brief(ts)} is out of range [0, 2**64)")
    return ts, kind, (ts, kind, flags, length, *fields, b"\0" * 7)


def _record_chunks(events, chunk=CHUNK_RECORDS):
    """The records of ``events`` (a sequence of Arrival / Departure), checked, as arrays of at
    most ``chunk`` records: a bad event raises TraceError naming it."""
    prev, prev_kind = -1, 1
    for first in range(0, len(events), chunk):
        rows = []
        for i, ev in enumerate(events[first:first + chunk], first):
            ts, kind, row = _event_record(i, ev)
            if ts < prev or (ts == prev and not (prev_kind == 1 and kind == 0)):
                raise TraceError(_order_error(i, kind, ts, prev_kind, prev))
            if not 1 <= row[3] <= 0xFFFF:
                raise TraceError(f"event {i}: length {brief(row[3])} is out of range "
                                 f"[1, 65535]")
            prev, prev_kind = ts, kind
            rows.append(row)
        yield np.array(rows, RECORD_DTYPE)


def _check_events(events):
    for _ in _record_chunks(events):
        pass


def write_trace(path, events, tick_hz, metadata=None):
    """Write ``events`` (a sequence of Arrival / Departure) to ``path`` (``-``: standard
    output); ``tick_hz`` is the clock rate. Records are made and written
    ``CHUNK_RECORDS`` at a time."""
    meta = json.dumps(metadata or {}, sort_keys=True).encode()
    if len(meta) > METADATA_MAX:
        raise TraceError(f"metadata: {len(meta)} bytes of JSON is more than a trace holds "
                         f"({METADATA_MAX})")
    pad = (-(_HEAD.size + len(meta))) % 8

    def chunks():
        yield _HEAD.pack(MAGIC, VERSION, RECORD_DTYPE.itemsize, len(meta), float(tick_hz),
                         len(events)) + meta + b"\0" * pad
        for rec in _record_chunks(events):
            yield rec.tobytes()
    _write_out(path, chunks, check=lambda: _check_events(events))


def _read_stream(f, size):
    """Up to ``size`` bytes from ``f``, read in chunks (fewer at the end of the file): what is
    kept is only ever what the file really held."""
    parts, left = [], size
    while left:
        part = f.read(min(left, CHUNK_RECORDS * RECORD_DTYPE.itemsize))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _read_header(f, path, size):
    """The header and metadata of the trace ``f`` (``size``: its size, None for a pipe),
    checked; returns the header dict. The file is then at its first record."""
    head = f.read(_HEAD.size)
    if len(head) < _HEAD.size:
        raise TraceError(f"{path}: {len(head) if size is None else size} bytes is too "
                         f"short for the {_HEAD.size}-byte header")
    magic, version, rsize, mlen, tick_hz, count = _HEAD.unpack(head)
    if magic != MAGIC:
        raise TraceError(f"{path}: magic {magic!r} is not {MAGIC!r}: not an FPQ trace")
    if version != VERSION:
        raise TraceError(f"{path}: version {version} is not supported (only {VERSION}, "
                         f"whose ts is the queue manager's accept clock; re-record the "
                         f"trace)")
    if rsize != RECORD_DTYPE.itemsize:
        raise TraceError(f"{path}: record size {rsize} is not {RECORD_DTYPE.itemsize}")
    if not (tick_hz > 0 and tick_hz < 1e15):
        raise TraceError(f"{path}: tick_hz {tick_hz} is out of range (0, 1e15)")
    if mlen > METADATA_MAX:
        raise TraceError(f"{path}: metadata length {mlen} is more than a trace holds "
                         f"({METADATA_MAX} bytes)")
    start = _HEAD.size + mlen + (-(_HEAD.size + mlen)) % 8
    if size is not None:
        if start > size:
            raise TraceError(f"{path}: metadata length {mlen} runs past the end of the "
                             f"file")
        if size - start != count * rsize:
            raise _length_error(path, count, rsize, size - start)
    meta_and_pad = _read_stream(f, start - _HEAD.size)
    if len(meta_and_pad) < start - _HEAD.size:
        raise TraceError(f"{path}: metadata length {mlen} runs past the end of the file")
    try:
        meta = json.loads(meta_and_pad[:mlen] or b"{}")
    except ValueError as exc:
        raise TraceError(f"{path}: metadata is not valid JSON ({exc})") from None
    except RecursionError:
        raise TraceError(f"{path}: metadata is nested too deeply to read") from None
    if not isinstance(meta, dict):
        raise TraceError(f"{path}: metadata must be a JSON object, got {type(meta).__name__}")
    if any(meta_and_pad[mlen:]):
        raise TraceError(f"{path}: padding after the metadata must be zero bytes")
    return {"tick_hz": tick_hz, "metadata": meta, "count": count}


def _read_chunk(f, path, n, done, count):
    """The next ``n`` records of ``f`` (``done`` read so far, of ``count``)."""
    data = _read_stream(f, n * RECORD_DTYPE.itemsize)
    if len(data) < n * RECORD_DTYPE.itemsize:          # a pipe, or a file that shrank
        raise _length_error(path, count, RECORD_DTYPE.itemsize,
                            done * RECORD_DTYPE.itemsize + len(data))
    return np.frombuffer(data, RECORD_DTYPE)


class TraceReader:
    """``with TraceReader(path) as trace: for rec in trace.chunks(): ...``: a trace read as
    it goes, in bounded memory.

    Opening reads and checks the header and the metadata (``header``: tick_hz, metadata,
    count); :meth:`chunks` yields the records as arrays of at most ``chunk_records``, each
    checked before it is yielded, so that a bad file is refused at its first bad record
    after reading at most one chunk past it. What it holds at once: the metadata (at most
    ``METADATA_MAX`` bytes) and one chunk (``CHUNK_RECORDS`` records, 2 MiB), whatever the
    file's size. A file without a size (a FIFO, ``/dev/zero``) is read up to the lengths its
    header gives, and must end there.
    """

    def __init__(self, path, chunk_records=CHUNK_RECORDS):
        self.path, self.chunk_records = path, chunk_records
        self._f = open(path, "rb")
        try:
            st = os.fstat(self._f.fileno())
            self.regular = stat.S_ISREG(st.st_mode)
            self.header = _read_header(self._f, path, st.st_size if self.regular else None)
            self._records_at = self._f.tell() if self.regular else None
        except BaseException:
            self._f.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()

    def chunks(self):
        """The records, checked, ``chunk_records`` at a time; readable again from the start
        on a regular file (a converter's second pass)."""
        if self.regular:
            self._f.seek(self._records_at)
        count, done, prev = self.header["count"], 0, None
        while done < count:
            rec = _read_chunk(self._f, self.path, min(self.chunk_records, count - done),
                              done, count)
            _check(self.path, rec, done, prev)
            prev = (int(rec["ts"][-1]), int(rec["kind"][-1]))
            done += rec.size
            yield rec
        if not self.regular and self._f.read(1):
            raise _length_error(self.path, count, RECORD_DTYPE.itemsize, "more")


def read_records(path):
    """Read and check a trace; returns ``(header dict, numpy record array)``. The file is
    read and checked a chunk at a time (:class:`TraceReader`): a bad file is refused at its
    first bad record, in memory bounded by that record's position."""
    with TraceReader(path) as trace:
        chunks = list(trace.chunks())
    rec = np.concatenate(chunks) if chunks else np.zeros(0, RECORD_DTYPE)
    return trace.header, rec


def _length_error(path, count, rsize, held):
    return TraceError(f"{path}: header says {count} records ({count * rsize} bytes) but the "
                      f"file holds {held} bytes after the header: truncated or padded")


#: The rules a record must follow, in the order they are checked: its message (whose first
#: word names the field) and a function of the records and their raw bytes giving the
#: records that break it.
_RULES = [("kind must be 0 (arrival) or 1 (departure)", lambda rec, raw: rec["kind"] > 1),
          ("flags must be 0 or 1 (bit 0: ECN-capable)", lambda rec, raw: rec["flags"] > 1),
          ("length must be in [1, 65535]", lambda rec, raw: rec["length"] == 0),
          ("pad (record bytes 25..31) must be zero", lambda rec, raw: raw[:, 25:].any(axis=1))]
_RULES += [(f"{name} must be 0 in a departure",
            lambda rec, raw, name=name: (rec["kind"] == 1) & (rec[name] != 0))
           for name in ("src_ip", "dst_ip", "src_port", "dst_port", "proto")]


def _check(path, rec, first=0, prev=None):
    """Raise TraceError for the first bad record of ``rec`` (record ``first`` of the file;
    ``prev``, ``(ts, kind)`` of the record before it, or None): the lowest record breaking
    any rule, and of its broken rules the first in ``_RULES``' order, then the clock order
    (``_ORDER``)."""
    raw = rec.view(np.uint8).reshape(-1, RECORD_DTYPE.itemsize)
    bad = [(int(np.argmax(mask)), k) for k, (_, rule) in enumerate(_RULES)
           for mask in [rule(rec, raw)] if mask.any()]
    ts, kind = rec["ts"], rec["kind"]
    if prev is not None:
        ts = np.concatenate([np.array([prev[0]], ts.dtype), ts])
        kind = np.concatenate([np.array([prev[1]], kind.dtype), kind])
    back = np.flatnonzero((ts[1:] < ts[:-1]) |
                          ((ts[1:] == ts[:-1]) & ~((kind[:-1] == 1) & (kind[1:] == 0))))
    if back.size:
        bad.append((int(back[0]) + (prev is None), len(_RULES)))
    if not bad:
        return
    i, k = min(bad)
    if k < len(_RULES):
        what = _RULES[k][0]
        raise TraceError(f"{path}: record {first + i}: {what} (value "
                         f"{rec[i][what.split()[0]]})")
    j = i + (prev is not None)           # index in ts/kind, which start with the previous
    raise TraceError(f"{path}: record {first + i}: " + _order_error(
        0, int(kind[j]), int(ts[j]), int(kind[j - 1]), int(ts[j - 1]))[len("event 0: "):])


def records_to_events(rec):
    """The Arrival / Departure events of the records ``rec``."""
    out = []
    for ts, kind, flags, length, s, d, sp, dp, pr in zip(
            rec["ts"].tolist(), rec["kind"].tolist(), rec["flags"].tolist(),
            rec["length"].tolist(), rec["src_ip"].tolist(), rec["dst_ip"].tolist(),
            rec["src_port"].tolist(), rec["dst_port"].tolist(), rec["proto"].tolist()):
        if kind:
            out.append(Departure(ts, length))
        else:
            out.append(Arrival(ts, (s << 72) | (d << 40) | (sp << 24) | (dp << 8) | pr, length,
                               bool(flags)))
    return out


def read_trace(path):
    """Read a trace: ``(header, [Arrival | Departure, ...])``, built a chunk at a time (no
    copy of the whole file besides the list)."""
    events = []
    with TraceReader(path) as trace:
        for rec in trace.chunks():
            events += records_to_events(rec)
    return trace.header, events


def _ip_texts(col):
    """Dotted-quad text of each address of the uint32 array ``col``."""
    return [f"{a}.{b}.{c}.{d}" for a, b, c, d in zip((col >> 24).tolist(),
                                                      ((col >> 16) & 0xFF).tolist(),
                                                      ((col >> 8) & 0xFF).tolist(),
                                                      (col & 0xFF).tolist())]


def _csv_text(rec):
    """The CSV lines of the records ``rec``, as bytes (columns ``CSV_COLUMNS``)."""
    lines = []
    for ts, kind, length, s, d, sp, dp, pr, ecn in zip(
            rec["ts"].tolist(), rec["kind"].tolist(), rec["length"].tolist(),
            _ip_texts(rec["src_ip"]), _ip_texts(rec["dst_ip"]), rec["src_port"].tolist(),
            rec["dst_port"].tolist(), rec["proto"].tolist(), rec["flags"].tolist()):
        lines.append(f"{ts},dep,,,,,,{length}," if kind else
                     f"{ts},arr,{s},{d},{sp},{dp},{pr},{length},{ecn}")
    return ("\n".join(lines) + "\n").encode() if lines else b""


_CSV_HEADER = (",".join(CSV_COLUMNS) + "\n").encode()


def write_csv(path, events):
    """CSV export to ``path`` (``-``: standard output), one event per line, columns
    ``CSV_COLUMNS`` (IP addresses dotted). Events are checked as for the binary format
    first; a bad one raises TraceError, nothing written. Written ``CHUNK_RECORDS`` lines at
    a time."""
    _check_events(events)

    def chunks():
        yield _CSV_HEADER
        for rec in _record_chunks(events):
            yield _csv_text(rec)
    _write_out(path, chunks)


def convert_to_csv(source, path):
    """Convert the binary trace ``source`` to CSV at ``path`` (``-``: standard output), a
    chunk at a time: memory independent of the trace's size (:class:`TraceReader`: one
    chunk of records and its CSV text, a few MiB). A bad record stops the conversion with
    TraceError and nothing written; for standard output the trace is checked in a first
    pass when it can be read twice (a regular file), else the CSV written up to the bad
    record stays there (the command then exits with an error). Returns the header."""
    with TraceReader(source) as trace:
        def chunks():
            yield _CSV_HEADER
            for rec in trace.chunks():
                yield _csv_text(rec)

        def check():
            for _ in trace.chunks():
                pass
        _write_out(path, chunks, check=check if trace.regular else None)
    return trace.header


#: The longest line ``read_csv`` takes, in bytes: a row :func:`write_csv` writes is at most
#: 81 with its newline (``18446744073709551615,arr,255.255.255.255,...``); the rest is room
#: for spaces and quotes. A longer line is refused before more of the file is read.
CSV_LINE_MAX = 1024


def _csv_lines(f, path):
    """The lines of the binary file ``f`` as text, each checked for length and UTF-8."""
    lineno, offset = 0, 0
    while True:
        raw = f.readline(CSV_LINE_MAX + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > CSV_LINE_MAX:
            raise TraceError(f"{path}: line {lineno}: longer than {CSV_LINE_MAX} bytes: not "
                             f"a line of an FPQ CSV trace")
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceError(f"{path}: line {lineno}: not UTF-8 text (byte "
                             f"{offset + exc.start})") from None
        offset += len(raw)


def read_csv(path):
    """Read a CSV written by :func:`write_csv` back into events; the same checks as the binary
    reader (ranges, order). Errors name the file, the line and the column. The file is read
    line by line, a line at most ``CSV_LINE_MAX`` bytes."""
    import csv
    out = []
    with open(path, "rb") as f:
        reader = csv.reader(_csv_lines(f, path))
        lineno, prev, prev_kind = 1, -1, 1
        try:
            head = next(reader, None)
            if tuple(head or ()) != CSV_COLUMNS:
                raise TraceError(f"{path}: line 1: header must be {','.join(CSV_COLUMNS)}")
            for row in reader:
                lineno = reader.line_num
                try:
                    ev = _csv_event(row)
                except ValueError as exc:
                    raise TraceError(f"{path}: line {lineno}: {exc}") from None
                kind = int(type(ev) is Departure)
                if ev.ts < prev or (ev.ts == prev and not (prev_kind == 1 and kind == 0)):
                    raise TraceError(f"{path}: line {lineno}: " + _order_error(
                        0, kind, ev.ts, prev_kind, prev)[len("event 0: "):])
                prev, prev_kind = ev.ts, kind
                out.append(ev)
        except csv.Error as exc:
            raise TraceError(f"{path}: line {reader.line_num}: not valid CSV ({exc})") from None
    return out


#: An unsigned integer in ASCII digits: ``str.isdigit`` also takes other scripts' digits
#: (Arabic-Indic, fullwidth, superscripts), which ``int`` then reads or refuses.
_DIGITS = re.compile(r"[0-9]+", re.ASCII)


def _int_field(col, name, lo, hi):
    text = col[name]
    if not _DIGITS.fullmatch(text.strip()):
        raise ValueError(f"{name} {brief(text)} must be an integer in [{lo}, {hi}] (ASCII "
                         f"digits)")
    v = int(text)
    if not lo <= v <= hi:
        raise ValueError(f"{name} {brief(v)} is out of range [{lo}, {hi}]")
    return v


def _ip(col, name):
    """The IPv4 address in dotted-quad text ``col[name]`` as an integer."""
    parts = col[name].split(".")
    if len(parts) != 4 or not all(_DIGITS.fullmatch(p) and int(p) <= 255 for p in parts):
        raise ValueError(f"{name} {brief(col[name])} is not a dotted IPv4 address")
    a, b, c, d = (int(p) for p in parts)
    return (a << 24) | (b << 16) | (c << 8) | d


def _csv_event(row):
    if len(row) != len(CSV_COLUMNS):
        raise ValueError(f"has {len(row)} columns, expected {len(CSV_COLUMNS)} "
                         f"({','.join(CSV_COLUMNS)})")
    col = dict(zip(CSV_COLUMNS, row))
    ts = _int_field(col, "ts", 0, (1 << 64) - 1)
    length = _int_field(col, "length", 1, 0xFFFF)
    if col["kind"] == "dep":
        extra = [n for n in CSV_COLUMNS[2:7] + ("ecn",) if col[n]]
        if extra:
            raise ValueError(f"{extra[0]} {brief(col[extra[0]])} must be empty in a "
                             f"departure")
        return Departure(ts, length)
    if col["kind"] != "arr":
        raise ValueError(f"kind {brief(col['kind'])} must be arr or dep")
    if col["ecn"] not in ("0", "1"):
        raise ValueError(f"ecn {brief(col['ecn'])} must be 0 or 1")
    flow = pack_flow(_ip(col, "src_ip"), _ip(col, "dst_ip"),
                     _int_field(col, "src_port", 0, 0xFFFF),
                     _int_field(col, "dst_port", 0, 0xFFFF), _int_field(col, "proto", 0, 0xFF))
    return Arrival(ts, flow, length, col["ecn"] == "1")
