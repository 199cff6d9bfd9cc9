"""``fpq board monitor``: live view of a board running the self-test SoC, over the UART.

``snapshot(client)`` reads identification, counters, telemetry and the traffic generator's
registers through a ``protocol.BusClient``; ``render(prev, cur)`` turns two snapshots into one
screen (rates from the counter differences over the board's own clock counter); ``monitor``
loops. ``--simulate`` runs the same code against the RTL in Amaranth's simulator.
"""

import sys
import time

from fpq.config import Build
from fpq.drop_probability import Mode
from fpq.fields import SECRET_FIELDS
from fpq.formats import QAVG
from fpq.queue_manager import COUNTERS
from fpq.regmap import registers, ID_VALUE

from .protocol import BusClient, BridgeError
from .traffic_generator import TG_REG, TG_ID

__all__ = ["snapshot", "render", "monitor", "open_port", "apply_settings", "parse_settings"]

_REGS = {r.name: r for r in registers(Build())}
_TELEMETRY = ("n_raw", "n", "avg", "occ_pkts", "occ_bytes", "max_queue")
_MODES = {m.value: m.name for m in Mode}


def open_port(port, baud=115200, timeout=0.5):
    """A pyserial port; a clear error if it does not exist or cannot be opened."""
    import serial
    try:
        return serial.Serial(port, baud, timeout=timeout)
    except (serial.SerialException, OSError) as exc:
        raise OSError(f"--port: cannot open {port!r}: {exc}") from None


def _identify(client):
    ident = client.read(_REGS["id"].offset)
    if ident != ID_VALUE:
        raise BridgeError(f"not an FPQ self-test design: id register reads {ident:#010x}, "
                          f"expected {ID_VALUE:#010x}")
    tg = client.read(TG_REG["tg_id"].offset)
    if tg != TG_ID:
        raise BridgeError(f"traffic generator not found: tg_id reads {tg:#010x}, "
                          f"expected {TG_ID:#010x}")


def snapshot(client):
    """One reading of everything the view shows (raw register values)."""
    s = {"build": client.read(_REGS["build"].offset),
         "status": client.read(_REGS["status"].offset),
         "mode": client.read(_REGS["mode"].offset)}
    s["time"] = client.read(TG_REG["tg_time"].offset)     # board clocks, before the counters
    for name in COUNTERS:
        s[name] = client.read_wide(_REGS[name].offset, 64)
    for name in _TELEMETRY:
        s[name] = client.read_wide(_REGS[name].offset, _REGS[name].width)
    for name, r in TG_REG.items():
        if name not in ("tg_id", "tg_time"):
            s[name] = client.read(r.offset)
    s["wall"] = time.monotonic()
    return s


def parse_settings(items):
    """``["tg_flows=100", "arrival_period=2"]`` -> {"tg_flows": 100, ...}, range-checked."""
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"--set: {item!r} must be NAME=VALUE")
        name, value = item.split("=", 1)
        name = name.strip()
        if not name.startswith("tg_"):
            name = "tg_" + name
        r = TG_REG.get(name)
        if r is None or r.access != "rw":
            allowed = ", ".join(n for n, x in TG_REG.items() if x.access == "rw")
            raise ValueError(f"--set: {name!r} is not a writable generator register "
                             f"(one of {allowed})")
        try:
            v = int(value, 0)
        except ValueError:
            raise ValueError(f"--set {name}: {value!r} is not an integer") from None
        if not r.lo <= v <= r.hi:
            raise ValueError(f"--set {name}: {v} is out of range [{r.lo}, {r.hi}]")
        out[name] = v
    return out


def apply_settings(client, settings):
    for name, v in settings.items():
        client.write(TG_REG[name].offset, v)


def _rate(prev, cur, name, clocks):
    if prev is None or clocks <= 0:
        return None
    return (cur[name] - prev[name]) / clocks


def render(prev, cur, clk_hz=None):
    """The one-screen view (text). Rates need ``prev``; per second needs ``clk_hz``."""
    b = cur["build"]
    vec_bits, table_depth, avg_delay = 1 << (b & 31), 1 << ((b >> 5) & 31), (b >> 10) & 127
    clocks = ((cur["time"] - prev["time"]) & 0xFFFFFFFF) if prev else 0
    lines = [f"FPQ self-test   mode {_MODES.get(cur['mode'], cur['mode'])}   vec_bits {vec_bits}"
             f"   table_depth {table_depth}   avg_delay {avg_delay}   status {cur['status']:#06x}",
             ""]
    avg = cur["avg"] / (1 << QAVG.frac_bits)
    lines.append(f"  N (active flows)  {cur['n_raw']:>12d}     n used {cur['n']:>8d}")
    lines.append(f"  average queue     {avg:>12.2f} pkts   occupancy {cur['occ_pkts']:>8d} pkts "
                 f"{cur['occ_bytes']:>10d} B   max {cur['max_queue']} pkts")
    drops = cur["early_drops"] + cur["forced_drops"]
    total_rate = drops / cur["arrivals"] if cur["arrivals"] else 0.0
    line = f"  drop rate         {100 * total_rate:>11.2f} % (since clear)"
    if prev and cur["arrivals"] > prev["arrivals"]:
        d = (drops - prev["early_drops"] - prev["forced_drops"]) / (cur["arrivals"] - prev["arrivals"])
        line += f"   {100 * d:6.2f} % (last interval)"
    lines += [line, "", f"  {'counter':14s} {'total':>16s} {'per clock':>10s} {'per s':>14s}"]
    for name in COUNTERS:
        r = _rate(prev, cur, name, clocks)
        per_clk = f"{r:10.4f}" if r is not None else " " * 10
        per_s = f"{r * clk_hz:14.4g}" if (r is not None and clk_hz) else ""
        lines.append(f"  {name:14s} {cur[name]:>16d} {per_clk} {per_s}")
    lines += ["", f"  generator: {'on' if cur['tg_enable'] else 'off'}, one arrival / "
              f"{cur['tg_arrival_period']} clk from {cur['tg_flows']} flows "
              f"({'random' if cur['tg_pattern'] else 'round robin'}), {cur['tg_length']} B, "
              f"drain one / {cur['tg_drain_period']} clk",
              f"  generator backlog {cur['tg_backlog']}, sent {cur['tg_sent']}, stalled "
              f"{cur['tg_stalls']} clk" + ("   BAD_WRITE" if cur["tg_status"] & 1 else "")]
    return "\n".join(lines)


def monitor(port, interval=1.0, count=0, clk_hz=None, settings=None, out=sys.stdout,
            clear=True, sleep=time.sleep):
    """Identify the board, apply ``settings``, then print a fresh view every ``interval`` s
    (``count`` views, 0 = until interrupted). Returns the last snapshot."""
    client = BusClient(port, retries=1)
    _identify(client)
    apply_settings(client, settings or {})
    prev, cur, shown = None, None, 0
    try:
        while True:
            cur = snapshot(client)
            text = render(prev, cur, clk_hz)
            out.write(("\x1b[H\x1b[2J" if clear else "") + text + "\n")
            out.flush()
            shown += 1
            if count and shown >= count:
                break
            prev = cur
            sleep(interval)
    except KeyboardInterrupt:
        pass
    return cur


def read_build(client, build=None):
    """The board's ``fpq.Build`` from its ``build`` register. The register does not say which
    fields a build fixes (``Build.fixed``, bit 17 set): for such a board pass its ``build``
    (e.g. ``BOARDS[name].build``); it is checked against the register and returned."""
    from fpq.regmap import BUILD_FIXED_BIT, build_word
    b = client.read(_REGS["build"].offset)
    if build is not None:
        word = build_word(build)
        if word != b:
            raise BridgeError(f"build: the board's build register is {b:#x}, the given build "
                              f"({build}) would be {word:#x}")
        return build
    if b >> BUILD_FIXED_BIT & 1:
        raise BridgeError("build: the board's bitstream fixes configuration fields (build "
                          "register bit 17), which the register does not list: name the "
                          "board (fpq board monitor --board NAME) or pass its Build")
    from fpq.flow_hash import HASH_INPUTS
    from fpq.regmap import BUILD_PLAIN_HASH_BIT, BUILD_HASH_INPUT_SHIFT, BUILD_IPV6_BIT
    hash_input = (b >> BUILD_HASH_INPUT_SHIFT) & 3
    if hash_input >= len(HASH_INPUTS):
        raise BridgeError(f"build: the board's build register {b:#x} names hash input "
                          f"{hash_input}, which this fpq does not know (0 .. "
                          f"{len(HASH_INPUTS) - 1})")
    return Build(vec_bits=1 << (b & 31), table_depth=1 << ((b >> 5) & 31),
                 avg_delay=(b >> 10) & 127, hash_input=HASH_INPUTS[hash_input],
                 hash_mix=not b >> BUILD_PLAIN_HASH_BIT & 1,
                 flow_key="ipv6" if b >> BUILD_IPV6_BIT & 1 else "ipv4")


def configure(client, tick_hz, wait=None, tables_to_load=("rate_table",), build=None,
              **fields):
    """Load an ``fpq.Config`` (defaults plus ``fields``) into the board: every configuration
    register (``Config.registers()``, the derived ones included: ``clear_period``,
    ``wq_shift`` and ``avg_sample_period`` from ``avg_tau_s``, ``rekey_hold``), the r(N)
    table, then COMMIT. ``tick_hz`` is the board clock: the queue manager's time base, in
    which those registers count. Raises ``BridgeError`` naming the register if the board
    rejects the commit. ``wait`` (optional) is called between status polls;
    ``tables_to_load`` limits which tables are written (``()``: registers only; the board
    keeps its active table). ``build``: the board's build, needed when it fixes fields
    (``read_build``); the fixed registers are not written but read and checked against it,
    except a fixed key, which reads 0.

    Keys (``fpq.fields.SECRET_FIELDS``, ``hash_key``): one given in ``fields`` must not be
    weak (``fpq.keys.check_key``); every other one the build does not fix is drawn from
    the operating system (``fpq.keys.random_key``), never ``Config``'s public default.
    The board's key registers are write-only: the returned ``Config`` is the only copy.
    Returns the ``Config``."""
    build = read_build(client, build)
    cfg = _config_with_keys(build, tick_hz, fields)
    regs = registers(build)
    _write_registers(client, regs, cfg.registers())
    _write_tables(client, build, cfg, tables_to_load)
    _commit(client, regs, wait)
    return cfg


def _config_with_keys(build, tick_hz, fields):
    """The ``fpq.Config`` of ``build`` with ``fields``; each key (``SECRET_FIELDS``) the build
    does not fix is ``fields``' (checked: not weak) or drawn from the operating system."""
    from fpq.config import Config
    from fpq.keys import hardware_keys
    fields = dict(fields)
    # the board's fixed key is its bitstream's, which the host does not know: not checked
    keys, _ = hardware_keys(build, {name: (fields.pop(name), name)
                                    for name in list(fields) if name in SECRET_FIELDS},
                            check_fixed=False)
    return Config(build=build, tick_hz=tick_hz, **fields, **keys)


def _write_registers(client, regs, raw):
    """Clear the board's error flags, check each fixed register (a key excepted) against
    ``raw`` (``Config.registers()``) and write each configuration register's shadow."""
    from fpq.regmap import CONTROL_CLEAR_ERRORS
    client.write(_REGS["control"].offset, CONTROL_CLEAR_ERRORS)
    for r in regs:
        if r.kind == "fixed" and not r.secret:
            value = client.read_wide(r.offset, r.width)
            if value != raw[r.name]:
                raise BridgeError(f"{r.name}: the board's fixed value {value:#x} is not the "
                                  f"build's {raw[r.name]:#x}: another bitstream?")
        if r.kind == "config":
            for w in range(r.words):
                client.write(r.offset + 4 * w, (raw[r.name] >> (32 * w)) & 0xFFFFFFFF)


def _write_tables(client, build, cfg, tables_to_load):
    """Write ``cfg``'s contents of each table named in ``tables_to_load`` (the inactive
    bank); ``ValueError`` for a name that is not a table of ``build``'s register map."""
    from fpq.regmap import tables
    unknown = set(tables_to_load) - {t.name for t in tables(build)}
    if unknown:
        raise ValueError(f"tables_to_load: {', '.join(sorted(unknown))} is not a table of "
                         f"the register map ({', '.join(t.name for t in tables(build))})")
    contents = {"rate_table": cfg.rate_table()}
    for t in tables(build):
        if t.name not in tables_to_load:
            continue
        for i, v in enumerate(contents[t.name]):
            client.write(t.offset + 4 * i, v)


def _commit(client, regs, wait):
    """COMMIT, then poll STATUS until the board is no longer busy (``wait`` between polls, at
    most 1000 polls); ``BridgeError`` if it stays busy or rejects the commit (naming the
    register, one of ``regs``)."""
    from fpq.regmap import CONTROL_COMMIT, STATUS_BITS, STATUS_REJECT_INDEX_SHIFT
    client.write(_REGS["control"].offset, CONTROL_COMMIT)
    for _ in range(1000):
        status = client.read(_REGS["status"].offset)
        if not status & (1 << STATUS_BITS["BUSY"]):
            break
        if wait:
            wait()
    else:
        raise BridgeError("commit did not finish: STATUS.BUSY stays set")
    if status & (1 << STATUS_BITS["COMMIT_REJECTED"]):
        idx = (status >> STATUS_REJECT_INDEX_SHIFT) & 0xFF
        raise BridgeError(f"the board rejected the configuration: register "
                          f"{regs[idx].name!r} (index {idx}) is out of range")
