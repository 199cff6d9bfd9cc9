"""Scenario files: the TOML schema, its validation, and ``--set key=value`` overrides.

A scenario is a TOML document with the sections below. Every key is checked: unknown keys,
wrong types and out-of-range values raise :class:`ScenarioError` whose message names the key
(``flows[0].count: 0 is out of range [1, 100000]``), before anything runs. ``SCHEMA`` is the
single declaration; :func:`schema_markdown` renders it for ``sim/scenarios/README.md``.

Numbers written as ``[lo, hi]`` (where allowed) are drawn per flow, uniformly in the range.
"""

import copy
import hashlib
import math
import os
import re
import sys
import tomllib

import fpq
from fpq.drop_probability import Mode
from fpq.fields import FIELDS, FIELD_BY_NAME, hash_key_bytes
from fpq.keys import key_weakness
from fpq.messages import brief, QUOTED_CHARS

from .tcp import VARIANTS

__all__ = ["ScenarioError", "SCHEMA", "HOST_PROFILES", "SCENARIO_DIR", "load", "read_toml",
           "validate", "apply_set", "schema_markdown", "shipped_scenarios", "scenario_path",
           "seeded_hash_key"]


def _scenario_dir():
    """The folder of the shipped scenarios: ``fpq_sim/scenarios`` in an installed package
    (package data), ``sim/scenarios`` beside the package in a checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "scenarios")
    return installed if os.path.isdir(installed) else \
        os.path.normpath(os.path.join(here, "..", "scenarios"))


#: The folder of the scenarios shipped with the package (``fpq sim NAME`` runs one by name).
SCENARIO_DIR = _scenario_dir()


class ScenarioError(ValueError):
    """A bad scenario; the message names the key, the value and what is allowed."""


class Key:
    __slots__ = ("name", "type", "default", "lo", "hi", "choices", "doc", "ranged")

    def __init__(self, name, type, default, doc, lo=None, hi=None, choices=None, ranged=False):
        self.name, self.type, self.default, self.doc = name, type, default, doc
        self.lo, self.hi, self.choices, self.ranged = lo, hi, choices, ranged


REQUIRED = object()

#: Named host profiles (``[[flows]] hosts``): the defaults of a flow group's host keys (a key
#: written in the group wins). ``paper``: the schema's own defaults, the hosts of the papers'
#: ns runs (initial window 1, 0.5 s timer ticks, 3 s initial RTO, no RTO floor, 64 KB window,
#: Tahoe). ``modern``: today's hosts (Linux-like): NewReno congestion control with SACK
#: recovery (``tcp = "cubic"`` for CUBIC), initial window 10 (RFC 6928), a 1 ms clock with
#: timestamps, RTO at least 200 ms (Linux's TCP_RTO_MIN) and 1 s before the first sample
#: (RFC 6298), ECN-capable (RFC 3168), a 6 MB receive window (Linux's tcp_rmem maximum),
#: delayed ACKs every second packet or after 40 ms (Linux's TCP_DELACK_MIN), limited
#: transmit (RFC 3042).
HOST_PROFILES = {
    "paper": {},
    "modern": {"tcp": "sack", "initial_window_pkts": 10, "tick_s": 0.001,
               "rtt_timestamps": True, "rto_min_s": 0.2, "rto_init_s": 1.0,
               "rto_max_s": 120.0, "ecn": True, "max_window_bytes": 6291456,
               "delayed_ack": True, "delack_timeout_s": 0.04, "limited_transmit": True},
}

SCHEMA = {
    "": [
        Key("name", "str", "", "Short name, copied into results."),
        Key("description", "str", "", "Free text."),
    ],
    "run": [
        Key("duration_s", "float", REQUIRED, "Simulated time.", 1e-3, 1e6),
        Key("warmup_s", "float", 0.0, "Statistics ignore everything before this time "
            "(transfers count if they start after it).", 0.0, 1e6),
        Key("seed", "int", 1, "Seed of every random choice (delays, start times, losses, "
            "queue manager).", 0, 2**63 - 1),
    ],
    "bottleneck": [
        Key("bandwidth_bps", "float", REQUIRED, "Bottleneck (router A -> B) bandwidth.",
            1e3, 1e12),
        Key("delay_s", "float", REQUIRED, "Bottleneck propagation delay.", 0.0, 10.0),
        Key("packet_bytes", "int", 576, "Size of a data packet (headers included).", 41, 65535),
        Key("ack_bytes", "int", 40, "Size of an ACK.", 1, 1500),
        Key("loss_rate", "float", 0.0, "Uniform random loss of data packets on the bottleneck "
            "link (after the queue).", 0.0, 0.99),
        Key("reverse_bandwidth_bps", "float", 0.0, "B -> A bandwidth for ACKs (0: same as "
            "bandwidth_bps).", 0.0, 1e12),
    ],
    "queue": [
        Key("discipline", "str", "droptail", "Queue discipline of the bottleneck output queue. "
            "codel (RFC 8289) and pie (RFC 8033) are float reference models in sim/ "
            "(fpq_sim.codel, fpq_sim.pie), whatever model says.",
            choices=(*Mode.__members__, "codel", "pie")),
        Key("model", "str", "exact", "Which queue manager decides: the bit-exact golden model "
            "(fpq.QueueManager), the float model of the paper "
            "(fpq.float_model.FloatQueueManager), or the Verilated RTL "
            "(fpq_hdl.verilated.VerilatedQueueManager; needs Verilator; built "
            "on first use).", choices=("exact", "float", "rtl")),
        Key("limit_pkts", "int", 0, "Hard buffer limit in packets (0: none).", 0, 65535),
        Key("avg_delay", "int", 0, "Build-time clocks from a sample of the queue to the "
            "average the bit-exact model decides with (fpq.Build.avg_delay); 0: the build's "
            "default.", 0, 127),
        Key("tick_hz", "float", 150e6, "Clock rate of the queue manager (its time base: "
            "events are stamped with the clock they are accepted in). With the RTL in the "
            "loop every simulated clock costs simulation time: choose a low rate there.",
            1e3, 1e10),
        Key("verdict_wait", "int", 0, "Clocks after an arrival before the router can hand the "
            "queue manager its next event (it waits for the verdict). The RTL in the loop "
            "needs at least its latency (fpq_hdl.queue_manager.LATENCY); runs compared with "
            "it need the same.", 0, 1 << 20),
        Key("ns2_idle", "bool", True, "Float model only: an arrival it drops at an empty "
            "queue leaves RED's average decaying as an idle queue, as in ns-2 (fpq_sim.ns2idle; "
            "false: the model's own rule, idle only after a departure empties the queue)."),
        Key("red_hard_drop", "bool", False, "Float model, RED: with ECN (ecn = true) drop "
            "ECN-capable packets instead of marking them where RED's probability is 1 (the "
            "average at or above red_max_th, or twice it when gentle): ns-3 UseHardDrop, Linux "
            "harddrop. The bit-exact model and the RTL have no such option."),
        Key("codel_target_s", "float", 0.005, "CoDel: acceptable standing queue delay "
            "(RFC 8289 TARGET).", 1e-6, 10.0),
        Key("codel_interval_s", "float", 0.1, "CoDel: sliding window of the minimum delay "
            "(RFC 8289 INTERVAL).", 1e-6, 100.0),
        Key("pie_qdelay_ref_s", "float", 0.015, "PIE: target queueing delay (RFC 8033 "
            "QDELAY_REF).", 1e-6, 10.0),
        Key("pie_t_update_s", "float", 0.015, "PIE: period of the drop-probability update "
            "(RFC 8033 T_UPDATE).", 1e-6, 10.0),
        Key("pie_max_burst_s", "float", 0.15, "PIE: burst allowance (RFC 8033 MAX_BURST).",
            0.0, 100.0),
        Key("pie_alpha", "float", 0.125, "PIE: weight of the delay error, per second "
            "(RFC 8033 alpha).", 0.0, 100.0),
        Key("pie_beta", "float", 1.25, "PIE: weight of the delay trend, per second "
            "(RFC 8033 beta).", 0.0, 100.0),
        Key("pie_derandomize", "bool", True, "PIE: de-randomised drops (RFC 8033 Section 5.1, "
            "accu_prob)."),
    ],
    "flows": [
        Key("count", "int", REQUIRED, "Number of flows in this group.", 1, 100000),
        Key("hosts", "str", "paper", "Host profile: the defaults of this group's host keys "
            "(fpq_sim.scenario.HOST_PROFILES, listed below); keys given here win.",
            choices=tuple(HOST_PROFILES)),
        Key("tcp", "str", "tahoe", "TCP variant.", choices=VARIANTS),
        Key("access_bw_bps", "float", 0.0, "Each flow's access-link bandwidth (or [lo, hi]). "
            "Exactly one of access_bw_bps and access_bw_total_bps.", 1e3, 1e12, ranged=True),
        Key("access_bw_total_bps", "float", 0.0, "Access bandwidth shared out: each flow gets "
            "this / (flows in all groups) (the papers' 10 x (10/N) Mbit/s).", 1e3, 1e12),
        Key("access_delay_s", "float", 0.0, "Access-link propagation delay (or [lo, hi]).",
            0.0, 10.0, ranged=True),
        Key("workload", "str", "bulk", "bulk: one unlimited transfer; transfers: repeated "
            "transfers of transfer_pkts packets, TCP state re-initialised after each; telnet: "
            "an interactive session whose application writes one packet every "
            "telnet_interval_s on average (exponential; ns-2 Application/Telnet), the "
            "1997 paper's remedy against phase effects.",
            choices=("bulk", "transfers", "telnet")),
        Key("telnet_interval_s", "float", 1.0, "Mean time between a telnet session's packets "
            "(ns-2 Application/Telnet interval_ default 1 s).", 1e-3, 1e4),
        Key("transfer_pkts", "int", 10, "Packets per transfer (workload = transfers).",
            1, 10**9),
        Key("think_s", "float", 0.0, "Pause between transfers.", 0.0, 1e6),
        Key("start_s", "float", 0.0, "Start time of the group.", 0.0, 1e6),
        Key("start_jitter_s", "float", 0.0, "Each flow starts at start_s + uniform(0, this).",
            0.0, 1e6),
        Key("delayed_ack", "bool", False, "Receiver delays ACKs (every ack_every-th packet or "
            "the delayed-ACK timer)."),
        Key("delack_timeout_s", "float", 0.2, "Delayed-ACK timer.", 1e-6, 10.0),
        Key("delack_tick", "bool", False, "BSD-style delayed-ACK timer: the ACK goes at the "
            "next multiple of delack_timeout_s on a global clock (0 to delack_timeout_s after "
            "the packet) instead of delack_timeout_s after it (ns)."),
        Key("ack_every", "int", 2, "With delayed ACKs, ACK every this many in-order packets.",
            1, 64),
        Key("tick_s", "float", 0.5, "TCP timer granularity (RTT measured and RTO computed in "
            "ticks).", 1e-6, 10.0),
        Key("max_window_bytes", "int", 65536, "Maximum window (receiver window).", 1, 2**30),
        Key("rto_init_s", "float", 3.0, "Retransmission timeout before the first RTT sample.",
            1e-3, 1000.0),
        Key("rto_min_s", "float", 0.0, "Lower bound of the RTO (two ticks always apply).",
            0.0, 1000.0),
        Key("rto_max_s", "float", 64.0, "Upper bound of the backed-off RTO.", 1e-3, 1e5),
        Key("max_backoff", "int", 64, "Cap of the exponential backoff multiplier.", 1, 2**20),
        Key("dupack_threshold", "int", 3, "Duplicate ACKs that trigger fast retransmit.",
            1, 1000),
        Key("limited_transmit", "bool", False, "RFC 3042 limited transmit: the first two "
            "duplicate ACKs each send one new packet (ns-2.35's default singledup_ = 1; the "
            "papers' ns-1 had none)."),
        Key("rtt_timestamps", "bool", False, "RTT samples rounded from the measured time "
            "(ns timestamps_) instead of counted in ticks of the host's clock, whose phase is "
            "drawn per flow (ns without timestamps, the default)."),
        Key("send_overhead_pkt_times", "float", 0.0, "Phase-effect remedy of ns-2 (overhead_): "
            "a window's worth of sending waits a uniform random delay of up to this many "
            "bottleneck packet times (0: send at once, as the papers' runs do).", 0.0, 1000.0),
        Key("initial_window_pkts", "int", 1, "Initial congestion window of every transfer, in "
            "packets (RFC 6928: 10; the papers' hosts: 1). A timeout still restarts from 1.",
            1, 1000),
        Key("ecn", "bool", False, "ECN-capable hosts (RFC 3168): data packets are ECT, the "
            "receiver echoes CE marks, the sender halves its window (CUBIC: x 0.7) once per "
            "window of data. Routers mark only with [queue] ecn = true."),
    ],
    "floods": [
        Key("rate_pps", "float", REQUIRED, "Packets per second the flood sends into the "
            "bottleneck port, evenly spaced (a constant-rate source that ignores loss, "
            "fpq_sim.flood).", 1e-3, 1e7),
        Key("tuples", "int", REQUIRED, "Distinct 5-tuples in the flood's pool (spoofed UDP "
            "sources towards one victim); each spoofed packet draws one uniformly.", 1, 2**32),
        Key("spoof_every", "int", 1, "Every this many packets a new tuple is drawn; the "
            "packets between repeat it (1: a fresh draw for every packet).", 1, 10**9),
        Key("packet_bytes", "int", 64, "Size of a flood packet (IPv4 and UDP headers "
            "included).", 28, 65535),
        Key("start_s", "float", 0.0, "Time of the first packet.", 0.0, 1e6),
        Key("stop_s", "float", 0.0, "No packet at or after this time (0: until the end of "
            "the run).", 0.0, 1e6),
    ],
}
_HOSTS_KEY = next(k for k in SCHEMA["flows"] if k.name == "hosts")
_QUEUE_PASSTHROUGH = sorted(set(FIELD_BY_NAME) - {"mode", "limit_pkts", "tick_hz"})
#: The queue fields a scenario may give as hex text: the byte fields (the keys), from their
#: declaration so that a new one is parsed too.
_HEX_FIELDS = [f.name for f in FIELDS if f.type == "bytes"]
#: Seconds the default ``avg_tau_s`` of a scenario spans in bottleneck packet times: RED's
#: w_q = 2**-9 per packet at a full link, as ns-2's RED (w_q = 0.002) in the papers.
AVG_TAU_PACKETS = 512


def _check_value(where, key, value):
    if key.type == "str":
        if not isinstance(value, str):
            raise ScenarioError(f"{where}: {brief(value)} must be a string")
        if key.choices and value not in key.choices:
            raise ScenarioError(f"{where}: {brief(value)} must be one of "
                                f"{', '.join(key.choices)}")
        return value
    if key.type == "bool":
        if not isinstance(value, bool):
            raise ScenarioError(f"{where}: {brief(value)} must be true or false")
        return value
    if key.ranged and isinstance(value, list):
        if len(value) != 2 or any(isinstance(v, list) for v in value):
            raise ScenarioError(f"{where}: {brief(value)} must be a number or [lo, hi] of "
                                f"numbers")
        lo = _check_value(f"{where}[0]", key, value[0])
        hi = _check_value(f"{where}[1]", key, value[1])
        if hi < lo:
            raise ScenarioError(f"{where}: range [{lo}, {hi}] has hi < lo")
        return [lo, hi]
    return _check_number(where, key, value)


def _check_number(where, key, value):
    """``value`` as the int or float ``key`` holds, or ScenarioError naming ``where`` and the
    range. Integers of any size are compared exactly (converting one beyond a float's range
    would fail), NaN and the infinities are out of every range."""
    allowed = f"[{key.lo}, {key.hi}]"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(f"{where}: {brief(value)} is not a number (allowed range "
                            f"{allowed})")
    if key.type == "int" and isinstance(value, float) and not value.is_integer():
        raise ScenarioError(f"{where}: {brief(value)} must be an integer in {allowed}")
    if (isinstance(value, float) and not math.isfinite(value)) or \
            not key.lo <= value <= key.hi:
        raise ScenarioError(f"{where}: {brief(value)} is out of range {allowed}")
    return int(value) if key.type == "int" else float(value)


def _section(where, data, keys, extra_ok=(), defaults=None):
    """Check the table ``data`` against ``keys``: every key known, every value of its type and
    range; a missing key takes its value from ``defaults`` (a host profile), else its own."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{where or 'scenario'}: must be a table")
    known = {k.name: k for k in keys}
    out = {}
    for name in data:
        if name not in known and name not in extra_ok:
            shown = name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]{0,63}", name) else brief(name)
            raise ScenarioError(f"{where + '.' if where else ''}{shown}: unknown key; known keys: "
                                f"{', '.join(list(known) + list(extra_ok))}")
    for k in keys:
        full = f"{where}.{k.name}" if where else k.name
        if k.name in data:
            out[k.name] = _check_value(full, k, data[k.name])
        elif defaults and k.name in defaults:
            out[k.name] = _check_value(f"{full} (host profile)", k, defaults[k.name])
        elif k.default is REQUIRED:
            raise ScenarioError(f"{full}: missing (required)")
        else:
            out[k.name] = k.default
    return out


def validate(doc):
    """Check a parsed scenario; returns a new, complete dict (defaults filled in)."""
    if not isinstance(doc, dict):
        raise ScenarioError("scenario: must be a table")
    sections = ("run", "bottleneck", "queue", "flows", "floods")
    top = {k: v for k, v in doc.items() if k not in sections}
    # the sections are known keys too (an unknown key's message lists them)
    out = _section("", top, SCHEMA[""], extra_ok=sections)
    for name in ("run", "bottleneck"):
        if name not in doc:
            raise ScenarioError(f"{name}: missing section [{name}]")
        out[name] = _section(name, doc[name], SCHEMA[name])
    if out["run"]["warmup_s"] >= out["run"]["duration_s"]:
        raise ScenarioError(f"run.warmup_s: {out['run']['warmup_s']} must be less than "
                            f"run.duration_s ({out['run']['duration_s']})")
    out["queue"] = _queue_section(doc.get("queue", {}))
    try:
        queue_config(out)
    except fpq.ConfigError as exc:
        raise ScenarioError(f"queue.{exc}") from None
    flows = doc.get("flows")
    if not isinstance(flows, list) or not flows:
        raise ScenarioError("flows: missing: at least one [[flows]] group is required")
    out["flows"] = [_flow_group(f"flows[{i}]", group, out["bottleneck"])
                    for i, group in enumerate(flows)]
    if sum(g["count"] for g in out["flows"]) > 100000:
        raise ScenarioError("flows: more than 100000 flows in total")
    floods = doc.get("floods", [])
    if not isinstance(floods, list):
        raise ScenarioError("floods: must be an array of tables ([[floods]] groups)")
    out["floods"] = [_flood_group(f"floods[{i}]", group, out["run"]["duration_s"])
                     for i, group in enumerate(floods)]
    _check_flood_total(out)
    return out


#: The most packets all floods of a scenario may send together (each group's, too).
FLOOD_PACKETS_MAX = 10**9


def _flood_packets(f, end):
    """The packets the flood group ``f`` sends in a run ending at ``end`` seconds."""
    return f["rate_pps"] * ((f["stop_s"] or end) - f["start_s"])


def _check_flood_total(sc):
    """The floods' packets together at most ``FLOOD_PACKETS_MAX``: each flood packet is an
    event of the simulation, and many groups within the limit each would still run for
    days."""
    end = sc["run"]["duration_s"]
    total = sum(_flood_packets(f, end) for f in sc["floods"])
    if total > FLOOD_PACKETS_MAX:
        raise ScenarioError(f"floods: {len(sc['floods'])} groups send {total:.4g} packets in "
                            f"total; allowed: the sum of rate_pps x (stop_s - start_s) over "
                            f"all groups <= {FLOOD_PACKETS_MAX:,}")


def _queue_section(queue):
    """The validated ``[queue]`` table, its configuration fields in ``params``."""
    q = _section("queue", queue, SCHEMA["queue"], extra_ok=_QUEUE_PASSTHROUGH)
    params = {k: v for k, v in queue.items() if k in _QUEUE_PASSTHROUGH}
    for name in _HEX_FIELDS:
        if name in params and isinstance(params[name], str):
            try:
                params[name] = bytes.fromhex(params[name])
            except ValueError:
                raise ScenarioError(f"queue.{name}: {brief(params[name])} is not hex") from None
    q["params"] = params
    if q["red_hard_drop"] and (q["model"] != "float" or q["discipline"] != "red"):
        raise ScenarioError(f"queue.red_hard_drop: true needs discipline 'red' and model "
                            f"'float' (not {q['discipline']!r} with {q['model']!r}: the "
                            f"bit-exact model and the RTL have no hard drop)")
    if q["discipline"] in ("codel", "pie") and q["model"] == "rtl":
        raise ScenarioError(f"queue.model: 'rtl' decides only droptail, red and fpq, not "
                            f"{q['discipline']!r} (a float reference model)")
    return q


def _flow_group(where, group, bottleneck):
    """One validated ``[[flows]]`` group: its host profile's defaults, then its own keys."""
    if not isinstance(group, dict):
        raise ScenarioError(f"{where}: must be a table")
    profile = _check_value(f"{where}.hosts", _HOSTS_KEY, group.get("hosts", "paper"))
    g = _section(where, group, SCHEMA["flows"], defaults=HOST_PROFILES[profile])
    has_bw, has_total = "access_bw_bps" in group, "access_bw_total_bps" in group
    if has_bw == has_total:
        raise ScenarioError(f"{where}.access_bw_bps: give exactly one of access_bw_bps and "
                            f"access_bw_total_bps")
    if g["max_window_bytes"] < bottleneck["packet_bytes"]:
        raise ScenarioError(f"{where}.max_window_bytes: {g['max_window_bytes']} is less "
                            f"than one packet ({bottleneck['packet_bytes']} bytes)")
    if g["rto_max_s"] < g["rto_min_s"]:
        raise ScenarioError(f"{where}.rto_max_s: {g['rto_max_s']} must be >= rto_min_s")
    return g


def _flood_group(where, group, end):
    """One validated ``[[floods]]`` group of a run that ends at ``end`` seconds."""
    f = _section(where, group, SCHEMA["floods"])
    if f["start_s"] >= end:
        raise ScenarioError(f"{where}.start_s: {f['start_s']} must be less than "
                            f"run.duration_s ({end})")
    if f["stop_s"] and f["stop_s"] <= f["start_s"]:
        raise ScenarioError(f"{where}.stop_s: {f['stop_s']} must be greater than start_s "
                            f"({f['start_s']}), or 0 for the end of the run")
    if _flood_packets(f, end) > FLOOD_PACKETS_MAX:
        raise ScenarioError(f"{where}.rate_pps: {f['rate_pps']} packets/s over "
                            f"{(f['stop_s'] or end) - f['start_s']:g} s is more than 1e9 "
                            f"packets; allowed: rate_pps x (stop_s - start_s) <= 1e9")
    return f


def queue_config(sc):
    """The fpq.Config of the bottleneck queue manager for a validated scenario."""
    q, b = sc["queue"], sc["bottleneck"]
    params = dict(q["params"])
    pkt_time = b["packet_bytes"] * 8.0 / b["bandwidth_bps"]
    params.setdefault("pkt_time_s", pkt_time)
    params.setdefault("avg_tau_s", AVG_TAU_PACKETS * pkt_time)
    params["tick_hz"] = q["tick_hz"]
    params.setdefault("seed_decide", (sc["run"]["seed"] * 2 + 1) % 2**64)
    params.setdefault("seed_clear", (sc["run"]["seed"] * 2 + 2) % 2**64)
    if q["limit_pkts"]:
        params["limit_pkts"] = q["limit_pkts"]
    build = fpq.Build(avg_delay=q["avg_delay"]) if q.get("avg_delay") else None
    params.setdefault("hash_key", seeded_hash_key(params["seed_decide"],
                                                  hash_key_bytes(build or fpq.Build())))
    # CoDel and PIE are not modes of the FPQ queue manager: its configuration then only
    # carries the clock and the buffer limit (mode droptail)
    mode = q["discipline"] if q["discipline"] in Mode.__members__ else Mode.droptail.name
    return fpq.Config(build=build, mode=mode, **params)


def seeded_hash_key(seed, nbytes):
    """A ``hash_key`` of ``nbytes`` bytes drawn from ``seed`` (the queue manager's
    ``seed_decide``), the same for the same seed: each seed's runs hash their flows with a
    key of their own, as routers with random keys would, so that the collisions of one key
    do not repeat in every run of a point. The bytes are SHA-256 of the seed and a draw
    number; a weak key (``fpq.keys.key_weakness``, about 2 % of draws) is drawn again, as
    ``fpq.keys.random_key`` does."""
    for draw in range(1000):
        key = b"".join(hashlib.sha256(f"fpq_sim hash_key {seed} {draw} {i}".encode()).digest()
                       for i in range(-(-nbytes // 32)))[:nbytes]
        if key_weakness(key) is None:
            return key
    raise AssertionError(f"seeded_hash_key: no strong key in 1000 draws for seed {seed}")


def read_toml(path):
    """The TOML document in ``path``; ``ScenarioError`` naming the file if it is not one.
    Values nested deeper than Python's recursion allows (``tomllib`` recurses once per
    level: a few hundred levels of arrays or inline tables) are such an error."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not valid TOML: not UTF-8 text (byte {exc.start})") \
            from None
    except RecursionError:
        raise ScenarioError(f"{path}: scenario: nested too deeply to read (a scenario's "
                            f"values are at most a list in a table)") from None
    except ValueError:          # an integer of more digits than Python converts
        raise ScenarioError(f"{path}: not valid TOML: {_long_number(path)}") from None


def _long_number(path):
    """Where the file ``path`` holds an integer of more digits than Python converts (more
    than ``sys.get_int_max_str_digits()``, which ``tomllib`` then refuses)."""
    limit = sys.get_int_max_str_digits()
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            if re.search(rb"[0-9_]{%d,}" % (limit + 1), line):
                return f"an integer of more than {limit} digits (at line {lineno})"
    return f"an integer of more than {limit} digits"


def shipped_scenarios():
    """The names of the shipped scenarios (file names without ``.toml``), sorted."""
    if not os.path.isdir(SCENARIO_DIR):
        return []
    return sorted(name[:-len(".toml")] for name in os.listdir(SCENARIO_DIR)
                  if name.endswith(".toml"))


def scenario_path(scenario, argument="scenario"):
    """The file of ``scenario``: an existing file as given, else the shipped scenario of that
    name (with or without ``.toml``). Anything else raises ``ScenarioError`` naming
    ``argument`` and the shipped names."""
    if os.path.exists(scenario):
        return scenario
    name = os.path.basename(scenario)
    name = name[:-len(".toml")] if name.endswith(".toml") else name
    if scenario in (name, name + ".toml") and name in shipped_scenarios():
        return os.path.join(SCENARIO_DIR, name + ".toml")
    names = shipped_scenarios()
    raise ScenarioError(f"{argument}: {brief(scenario)} is neither a file nor a shipped scenario "
                        f"({'one of: ' + ', '.join(names) if names else 'none installed'})")


def load(path, sets=(), validator=validate):
    """Read, override (``sets``: ``key=value`` strings) and validate a scenario file.

    ``validator`` checks the document and returns the validated scenario: ``validate`` for a
    dumbbell, ``fpq_sim.parkinglot.validate_parking_lot`` for a parking lot. Its
    ``ScenarioError`` comes back naming the file."""
    doc = read_toml(path)
    for s in sets:
        apply_set(doc, s)
    try:
        return validator(doc)
    except ScenarioError as exc:
        raise ScenarioError(f"{path}: {exc}") from None


def apply_set(doc, assignment):
    """Apply ``section.key=value`` (``flows.0.count=75`` or ``flows[0].count=75``) in place.
    The value is read as a TOML value (``3``, ``0.5``, ``true``, ``[0, 0.01]``, ``"fpq"``);
    a bare word is taken as a string."""
    if "=" not in assignment:
        raise ScenarioError(f"--set {brief(assignment)}: must be key=value")
    path, raw = assignment.split("=", 1)
    path = path.strip().replace("[", ".").replace("]", "")
    parts = [p for p in path.split(".") if p]
    if not parts:
        raise ScenarioError(f"--set {brief(assignment)}: empty key")
    path = path if len(path) <= QUOTED_CHARS else brief(path)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    except RecursionError:
        raise ScenarioError(f"--set {path}: the value is nested too deeply to read") from None
    except ValueError:          # an integer of more digits than Python converts
        raise ScenarioError(f"--set {path}: {brief(raw.strip())} has more digits than a "
                            f"number of a scenario") from None
    node = doc
    for i, part in enumerate(parts[:-1]):
        where = ".".join(parts[:i + 1])
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ScenarioError(f"--set {path}: {where}: no such flow group (there are "
                                    f"{len(node)})")
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.setdefault(part, {})
        else:
            raise ScenarioError(f"--set {path}: {where} is not a table")
    if not isinstance(node, dict):
        raise ScenarioError(f"--set {path}: cannot set a key inside a non-table")
    node[parts[-1]] = value
    return doc


def with_overrides(sc, **sets):
    """A copy of a validated scenario with ``{"flows.0.count": 75, ...}`` applied, revalidated."""
    doc = copy.deepcopy(sc)
    doc["queue"] = {k: v for k, v in doc["queue"].items() if k != "params"}
    doc["queue"].update(sc["queue"]["params"])
    for k, v in sets.items():
        parts = k.replace("[", ".").replace("]", "").split(".")
        node = doc
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        node[parts[-1]] = v
    # re-derive the access-bandwidth choice: only the keys the user wrote are kept
    for g, orig in zip(doc["flows"], sc["flows"]):
        for name in ("access_bw_bps", "access_bw_total_bps"):
            if g.get(name) == 0.0 and orig.get(name) == 0.0:
                del g[name]
    return validate(doc)


def schema_markdown():
    """The schema as Markdown tables."""
    lines = []
    titles = {"": "Top level", "run": "[run]", "bottleneck": "[bottleneck]",
              "queue": "[queue]", "flows": "[[flows]] (one or more groups)",
              "floods": "[[floods]] (none or more: spoofed-tuple floods, fpq_sim.flood)"}
    for sec, keys in SCHEMA.items():
        lines += [f"### {titles[sec]}", "", "| key | type | default | allowed | meaning |",
                  "|---|---|---|---|---|"]
        for k in keys:
            default = "required" if k.default is REQUIRED else repr(k.default)
            if k.choices:
                allowed = " / ".join(k.choices)
            elif k.lo is not None:
                allowed = f"[{k.lo:g}, {k.hi:g}]" + (" or [lo, hi]" if k.ranged else "")
            else:
                allowed = ""
            lines.append(f"| `{k.name}` | {k.type} | {default} | {allowed} | {k.doc} |")
        lines.append("")
        if sec == "queue":
            lines += ["Any other key of `[queue]` is a field of the queue manager's "
                      "configuration (`fpq.Config`, see docs/REGISTERS.md), checked with the "
                      "same ranges: " + ", ".join(f"`{n}`" for n in _QUEUE_PASSTHROUGH) + ". "
                      "`pkt_time_s` defaults to one bottleneck packet time, `avg_tau_s` to "
                      f"{AVG_TAU_PACKETS} of them (RED's w_q = 2^-9 per packet at a full link), "
                      "and the seeds derive from `run.seed`. `ecn` also makes CoDel and PIE mark "
                      "ECN-capable packets instead of dropping them (RFC 8289, RFC 8033 below "
                      "a 10 % drop probability).", ""]
        if sec == "floods":
            lines += [f"All floods together send at most {FLOOD_PACKETS_MAX:,} packets (the sum "
                      "of `rate_pps` x (`stop_s` - `start_s`) over the groups, `stop_s` 0 "
                      "counting as `run.duration_s`): each packet is an event of the "
                      "simulation.", ""]
        if sec == "flows":
            lines += _profiles_markdown()
    return "\n".join(lines)


def _profiles_markdown():
    """The host profiles as a table: each profile's keys that differ from the schema's."""
    lines = ["Host profiles (`hosts`): the keys each sets, the others at the defaults above.", "",
             "| profile | keys |", "|---|---|"]
    for name, keys in HOST_PROFILES.items():
        text = ", ".join(f"`{k} = {v!r}`" for k, v in keys.items()) or "the defaults above"
        lines.append(f"| `{name}` | {text} |")
    return lines + [""]
