"""Host profiles (``[[flows]] hosts``): the papers' hosts by default, today's hosts by name;
the initial window (RFC 6928)."""

import pytest

from fpq_sim.network import tcp_params
from fpq_sim.scenario import validate, ScenarioError, HOST_PROFILES, SCHEMA
from tcp_harness import Pair


def _group(**keys):
    doc = {"name": "p", "run": {"duration_s": 1.0},
           "bottleneck": {"bandwidth_bps": 10e6, "delay_s": 0.01, "packet_bytes": 1500},
           "flows": [{"count": 1, "access_bw_bps": 1e8, **keys}]}
    sc = validate(doc)
    return sc["flows"][0], tcp_params(sc["flows"][0], sc["bottleneck"])


def test_paper_profile_is_the_schema_defaults():
    g, p = _group()
    defaults = {k.name: k.default for k in SCHEMA["flows"]}
    assert g["hosts"] == "paper" and HOST_PROFILES["paper"] == {}
    assert all(g[k] == v for k, v in defaults.items() if k not in ("count", "access_bw_bps"))
    assert (p.variant, p.initial_window, p.tick, p.ecn, p.max_window) == ("tahoe", 1, 0.5,
                                                                          False, 43)


def test_modern_profile_and_a_key_given_beside_it():
    g, p = _group(hosts="modern")
    assert (p.variant, p.initial_window, p.tick, p.rto_min, p.rto_init, p.ecn) == \
        ("sack", 10, 0.001, 0.2, 1.0, True)
    assert p.max_window == 6291456 // 1500 and p.delayed_ack and p.delack_timeout == 0.04
    assert p.limited_transmit and p.rtt_timestamps
    g, p = _group(hosts="modern", tcp="cubic", ecn=False)     # the group's keys win
    assert (p.variant, p.ecn, p.initial_window) == ("cubic", False, 10)


def test_unknown_profile_names_the_key():
    with pytest.raises(ScenarioError, match=r"flows\[0\]\.hosts: 'linux' must be one of "
                                            r"paper, modern"):
        _group(hosts="linux")


def test_initial_window_sends_ten_packets_at_once_and_a_timeout_restarts_from_one():
    # SACK hosts (the modern profile's): the first packet lost, the nine others SACKed at
    # t = 0.1 start a recovery at once
    p = Pair("sack", initial_window=10, drop={(0, 1)}).run(0.15)
    assert p.sends_at(0.0) == [(s, 1) for s in range(10)]
    assert p.events("fast_retx") == [(0.1, 0)]
    # the whole initial window lost: the timer (3 s before a sample) restarts from one packet
    q = Pair("sack", initial_window=10, drop={(s, 1) for s in range(10)}).run(3.05)
    assert q.events("timeout") == [(3.0, 0)] and q.sends_at(3.0) == [(0, 2)]
    assert q.sender.cwnd == 1.0
