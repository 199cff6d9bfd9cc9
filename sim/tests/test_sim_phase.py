"""Phase-effect remedies: ns-2's random send overhead (``overhead_``) and telnet-like
interactive sessions (the 1997 paper's five telnet sessions)."""

import math
import random

import pytest

from fpq_sim.network import Network
from fpq_sim.scenario import validate
from fpq_sim.tcp import Sender, TcpParams, Counters
from fpq_sim.engine import Simulator
from tcp_harness import Pair
from conservation import run_checking_conservation


def _ks_uniform(xs, lo, hi):
    """Kolmogorov-Smirnov distance of the sample ``xs`` from uniform on [lo, hi)."""
    xs = sorted((x - lo) / (hi - lo) for x in xs)
    n = len(xs)
    return max(max((i + 1) / n - x, x - i / n) for i, x in enumerate(xs))


def test_send_overhead_delays_each_send_uniformly():
    # One packet per round trip (window 1): each ACK releases one packet, which waits a
    # uniform random delay in [0, 10 ms) before it goes (ns delsnd_timer_). 2000 delays.
    d = 0.01
    p = Pair("tahoe", max_window=1, send_overhead=d, rng=random.Random(5)).run(215.0)
    ack_times = [a[0] for a in p.acks]
    send_times = [t for t, _, _ in p.sends]
    delays = [s - a for a, s in zip(ack_times, send_times[1:])]
    assert len(delays) > 2000
    assert all(0.0 <= x < d for x in delays)
    n = len(delays)
    assert abs(sum(delays) / n - d / 2) < 4 * d / math.sqrt(12 * n)
    assert _ks_uniform(delays, 0.0, d) < 1.63 / math.sqrt(n)     # KS 1 % critical value
    # without the option every packet leaves at the instant its ACK arrives
    q = Pair("tahoe", max_window=1).run(1.05)
    assert [t for t, _, _ in q.sends][1:] == [a[0] for a in q.acks]


def test_send_overhead_sends_the_whole_window_when_the_delay_ends():
    # ns send_much(force): when the delayed-send timer fires, everything the window then
    # allows goes at once. Slow start from cwnd 1: ACK 1 at 0.1 + delay opens two packets,
    # which leave together.
    p = Pair("tahoe", send_overhead=0.02, rng=random.Random(1)).run(0.5)
    by_time = {}
    for t, seq, _ in p.sends:
        by_time.setdefault(t, []).append(seq)
    bursts = [v for _, v in sorted(by_time.items())]
    assert bursts[0] == [0] and bursts[1] == [1, 2]
    t0 = sorted(by_time)[0]
    assert 0.0 <= t0 < 0.02            # even the first packet waits


def test_overhead_needs_a_random_source():
    with pytest.raises(ValueError, match="rng"):
        Sender(Simulator(), TcpParams(send_overhead=0.1), 0, None, Counters())


def _phase_scenario(**flows0):
    g = {"count": 2, "tcp": "newreno", "access_bw_bps": 1e7, "access_delay_s": 0.005,
         "workload": "bulk"}
    g.update(flows0)
    return {
        "name": "phase",
        "run": {"duration_s": 60.0, "warmup_s": 5.0, "seed": 4},
        "bottleneck": {"bandwidth_bps": 1e6, "delay_s": 0.02},
        "queue": {"discipline": "droptail", "limit_pkts": 15},
        "flows": [g],
    }


def test_overhead_is_given_in_bottleneck_packet_times():
    net = Network(validate(_phase_scenario(send_overhead_pkt_times=0.5)))
    assert net.senders[0].p.send_overhead == pytest.approx(0.5 * 576 * 8 / 1e6)


def test_telnet_sessions_write_poisson_packets():
    # Five telnet sessions (mean 0.5 s between writes) beside two bulk flows, 60 s: each
    # session's application writes Exp(0.5 s)-spaced packets, all of which are delivered
    # (the sessions are never window-limited), about 5 x 55 / 0.5 = 550 after the warm-up.
    doc = _phase_scenario()
    doc["flows"].append({"count": 5, "tcp": "newreno", "access_bw_bps": 1e7,
                         "access_delay_s": 0.005, "workload": "telnet",
                         "telnet_interval_s": 0.5})
    net = Network(validate(doc)).run()
    s = net.summary()
    telnet = s["flows"][2:]
    n = sum(telnet)
    assert abs(n - 550) < 4 * math.sqrt(550)
    assert min(telnet) > 60
    # the bulk flows still take most of the link
    assert sum(s["flows"][:2]) > 0.8 * s["goodput_pkts_per_s"] * 55


@pytest.mark.parametrize("extra", [{"send_overhead_pkt_times": 1.0}, {"telnet": True}])
def test_packet_conservation_with_phase_remedies(extra):
    doc = _phase_scenario(**{k: v for k, v in extra.items() if k != "telnet"})
    if "telnet" in extra:
        doc["flows"].append({"count": 5, "tcp": "tahoe", "access_bw_bps": 1e7,
                             "access_delay_s": 0.005, "workload": "telnet"})
    net = Network(validate(doc))
    run_checking_conservation(net, (7.3, 21.1, 40.0))
    assert net.port.lost_total > 0
