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
it, so a failed write leaves no partial file.
"""

import io
import json
import os
import stat
import struct
import sys

import numpy as np

from .atomic import atomic_path
from .flow_hash import pack_flow, unpack_flow
from .formats import FLOW_BITS
from .queue_manager import Arrival, Departure

__all__ = ["write_trace", "read_trace", "write_csv", "read_csv", "TraceError", "RECORD_DTYPE",
           "CSV_LINE_MAX"]

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


def _atomic_write(path, write):
    """``write(f)`` into ``path`` atomically; ``-`` is standard output, written only once
    ``write`` has returned (a failure writes nothing there either)."""
    if path == STDOUT:
        buf = io.BytesIO()
        write(buf)
        sys.stdout.flush()
        sys.stdout.buffer.write(buf.getvalue())
        sys.stdout.buffer.flush()
        return
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            write(f)


_ORDER = ("in clock order with at most one arrival and one departure per clock, the "
          "departure first")


def _order_error(i, kind, ts, prev_kind, prev_ts):
    names = ("arrival", "departure")
    return (f"event {i}: {names[kind]} at clock {ts} after the {names[prev_kind]} at clock "
            f"{prev_ts}: events must be {_ORDER}")


def _to_records(events):
    rec = np.zeros(len(events), RECORD_DTYPE)
    prev, prev_kind = -1, 1
    for i, ev in enumerate(events):
        if type(ev) is Departure:
            ts, length = ev
            kind, flags, fields = 1, 0, (0, 0, 0, 0, 0)
        else:
            ts, flow, length, ecn = ev
            kind, flags = 0, int(bool(ecn))
            if not 0 <= flow < (1 << FLOW_BITS):
                raise TraceError(f"event {i}: flow {flow!r} is not a 104-bit flow key (a "
                                 f"trace record holds the IPv4 5-tuple; the flows of a "
                                 f"build with Build.flow_key 'ipv6' run in the golden model "
                                 f"and the RTL, not in traces)")
            fields = unpack_flow(flow)
        if not isinstance(ts, int) or not 0 <= ts < (1 << 64):
            raise TraceError(f"event {i}: ts {ts!r} is out of range [0, 2**64)")
        if ts < prev or (ts == prev and not (prev_kind == 1 and kind == 0)):
            raise TraceError(_order_error(i, kind, ts, prev_kind, prev))
        if not 1 <= length <= 0xFFFF:
            raise TraceError(f"event {i}: length {length!r} is out of range [1, 65535]")
        prev, prev_kind = ts, kind
        rec[i] = (ts, kind, flags, length, *fields, b"\0" * 7)
    return rec


def write_trace(path, events, tick_hz, metadata=None):
    """Write ``events`` (Arrival / Departure) to ``path`` (``-``: standard output); ``tick_hz``
    is the clock rate."""
    rec = _to_records(events)
    meta = json.dumps(metadata or {}, sort_keys=True).encode()
    pad = (-(_HEAD.size + len(meta))) % 8

    def write(f):
        f.write(_HEAD.pack(MAGIC, VERSION, RECORD_DTYPE.itemsize, len(meta), float(tick_hz),
                           len(rec)))
        f.write(meta + b"\0" * pad)
        f.write(rec.tobytes())
    _atomic_write(path, write)


#: Bytes read at a time from a file whose size the system does not report (a pipe, a FIFO,
#: a character device): what is kept is only ever what the file really held.
_CHUNK = 1 << 20


def _read_stream(f, size):
    """Up to ``size`` bytes from ``f``, read in chunks (fewer at the end of the file)."""
    parts, left = [], size
    while left:
        part = f.read(min(left, _CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def read_records(path):
    """Read and check a trace; returns ``(header dict, numpy record array)``.

    The file is read as it goes: the header first, then, once its lengths agree with the
    file's size, the metadata and the records (no more memory than the file's real content:
    a 2 GiB file of zeros is refused after its first 32 bytes). A file without a size (a
    FIFO, ``/dev/zero``) is read in chunks up to the lengths its header gives."""
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        size = st.st_size if stat.S_ISREG(st.st_mode) else None
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
        if size is not None:
            rec = np.empty(count, RECORD_DTYPE)
            view, got = memoryview(rec.view(np.uint8)), 0
            while got < count * rsize:
                n = f.readinto(view[got:])
                if not n:                     # the file shrank while it was read
                    raise _length_error(path, count, rsize, got)
                got += n
        else:
            body = _read_stream(f, count * rsize)
            if len(body) < count * rsize or f.read(1):
                raise _length_error(path, count, rsize,
                                    len(body) if len(body) < count * rsize else "more")
            rec = np.frombuffer(body, RECORD_DTYPE, count=count)
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
    _check(path, rec)
    return {"tick_hz": tick_hz, "metadata": meta, "count": count}, rec


def _length_error(path, count, rsize, held):
    return TraceError(f"{path}: header says {count} records ({count * rsize} bytes) but the "
                      f"file holds {held} bytes after the header: truncated or padded")


def _check(path, rec):
    def first(mask, what):
        bad = np.flatnonzero(mask)
        if bad.size:
            i = int(bad[0])
            raise TraceError(f"{path}: record {i}: {what} (value {rec[i][what.split()[0]]})")
    first(rec["kind"] > 1, "kind must be 0 (arrival) or 1 (departure)")
    first(rec["flags"] > 1, "flags must be 0 or 1 (bit 0: ECN-capable)")
    first(rec["length"] == 0, "length must be in [1, 65535]")
    raw = rec.view(np.uint8).reshape(-1, RECORD_DTYPE.itemsize)
    first(raw[:, 25:].any(axis=1), "pad (record bytes 25..31) must be zero")
    dep = rec["kind"] == 1
    for name in ("src_ip", "dst_ip", "src_port", "dst_port", "proto"):
        first(dep & (rec[name] != 0), f"{name} must be 0 in a departure")
    if rec.size > 1:
        ts, kind = rec["ts"], rec["kind"]
        back = (ts[1:] < ts[:-1]) | ((ts[1:] == ts[:-1]) & ~((kind[:-1] == 1) & (kind[1:] == 0)))
        bad = np.flatnonzero(back)
        if bad.size:
            i = int(bad[0]) + 1
            raise TraceError(f"{path}: record {i}: " + _order_error(
                i, int(kind[i]), int(ts[i]), int(kind[i - 1]), int(ts[i - 1]))[len(f"event {i}: "):])


def records_to_events(rec):
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
    """Read a trace: ``(header, [Arrival | Departure, ...])``."""
    header, rec = read_records(path)
    return header, records_to_events(rec)


def _ip(x):
    return ".".join(str((x >> s) & 0xFF) for s in (24, 16, 8, 0))


def write_csv(path, events):
    """CSV export to ``path`` (``-``: standard output), one event per line, columns
    ``CSV_COLUMNS`` (IP addresses dotted). Events
    are checked as for the binary format first; a bad one raises TraceError, nothing written."""
    _to_records(events)
    def write(f):
        f.write((",".join(CSV_COLUMNS) + "\n").encode())
        lines = []
        for ev in events:
            if type(ev) is Departure:
                lines.append(f"{ev.ts},dep,,,,,,{ev.length},")
            else:
                s, d, sp, dp, pr = unpack_flow(ev.flow)
                lines.append(f"{ev.ts},arr,{_ip(s)},{_ip(d)},{sp},{dp},{pr},{ev.length},"
                             f"{int(bool(ev.ecn))}")
        f.write(("\n".join(lines) + ("\n" if lines else "")).encode())
    _atomic_write(path, write)


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


def _int_field(col, name, lo, hi):
    text = col[name]
    if not text.strip().isdigit():
        raise ValueError(f"{name} {text!r} must be an integer in [{lo}, {hi}]")
    v = int(text)
    if not lo <= v <= hi:
        raise ValueError(f"{name} {v} is out of range [{lo}, {hi}]")
    return v


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
            raise ValueError(f"{extra[0]} {col[extra[0]]!r} must be empty in a departure")
        return Departure(ts, length)
    if col["kind"] != "arr":
        raise ValueError(f"kind {col['kind']!r} must be arr or dep")

    def ip(name):
        parts = col[name].split(".")
        if len(parts) != 4 or not all(p.isdigit() and int(p) <= 255 for p in parts):
            raise ValueError(f"{name} {col[name]!r} is not a dotted IPv4 address")
        a, b, c, d = (int(p) for p in parts)
        return (a << 24) | (b << 16) | (c << 8) | d
    if col["ecn"] not in ("0", "1"):
        raise ValueError(f"ecn {col['ecn']!r} must be 0 or 1")
    flow = pack_flow(ip("src_ip"), ip("dst_ip"), _int_field(col, "src_port", 0, 0xFFFF),
                     _int_field(col, "dst_port", 0, 0xFFFF), _int_field(col, "proto", 0, 0xFF))
    return Arrival(ts, flow, length, col["ecn"] == "1")
