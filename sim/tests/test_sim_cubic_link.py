"""CUBIC (RFC 9438) on a real link: a lone bulk flow through a drop-tail bottleneck with one
bandwidth-delay product of buffer (100 ms RTT, 1500-byte packets) must fill it under every host
option, and its window must follow W(t) = C (t - K)^3 + W_max between losses.

The host options are the ones that used to break CUBIC's clocking into a loop of timeouts
(each timeout set ssthresh to 0.7 x all outstanding data, about 1.7 windows after a failed
recovery): delayed ACKs, 0.5 s timer ticks, the phase-effect remedy (``send_overhead_pkt_times``
= 1), and the remedy with either of the others. 10 Mbit/s runs here; 100 Mbit/s (833 packets
per window) is behind the ``long`` marker."""

import pytest

from fpq_sim.network import Network
from fpq_sim.scenario import validate
from fpq_sim.tcp_sack import cubic_window

HOST_OPTIONS = {
    "plain": {},
    "delayed_ack": {"delayed_ack": True},
    "tick_0.5s": {"tick_s": 0.5},
    "send_overhead": {"send_overhead_pkt_times": 1.0},
    "send_overhead+delayed_ack": {"send_overhead_pkt_times": 1.0, "delayed_ack": True},
    "send_overhead+tick_0.5s": {"send_overhead_pkt_times": 1.0, "tick_s": 0.5},
}


def lone_flow(bandwidth, options, duration, flows=1, seed=1):
    """``flows`` CUBIC bulk flows, RTT 100 ms, a one-BDP drop-tail buffer, ``options`` on the
    hosts (fine 10 ms timer ticks, RTO at least 200 ms otherwise)."""
    pkt = 1500
    bdp = round(bandwidth * 0.1 / 8 / pkt)
    group = {"count": flows, "tcp": "cubic", "access_bw_bps": 10 * bandwidth,
             "access_delay_s": 0.005, "workload": "bulk", "max_window_bytes": 2**30,
             "tick_s": 0.01, "rto_min_s": 0.2, "rto_init_s": 1.0, "start_jitter_s": 0.1}
    group.update(options)
    return Network(validate({
        "name": "cubic-link", "run": {"duration_s": duration, "warmup_s": duration / 4,
                                      "seed": seed},
        "bottleneck": {"bandwidth_bps": bandwidth, "delay_s": 0.045, "packet_bytes": pkt},
        "queue": {"discipline": "droptail", "limit_pkts": bdp},
        "flows": [group]}))


def _fills(bandwidth, option, duration):
    net = lone_flow(bandwidth, HOST_OPTIONS[option], duration)
    net.run()
    s = net.summary()
    assert s["utilisation"] >= 0.95, (option, s["utilisation"], s["tcp"])
    assert s["drops"] > 0                 # it did probe the buffer: losses, not a window cap


@pytest.mark.parametrize("option", HOST_OPTIONS)
def test_lone_cubic_flow_fills_10_mbit(option):
    _fills(10e6, option, 40.0)


@pytest.mark.long
@pytest.mark.parametrize("option", HOST_OPTIONS)
def test_lone_cubic_flow_fills_100_mbit(option):
    _fills(100e6, option, 30.0)


#: How far below W(t) the window may lag (packets): one ACK per packet keeps it within a
#: packet; delayed ACKs and the random send delays give fewer or later ACKs per round trip, so
#: the per-ACK steps towards W(t + RTT) trail further behind.
LAG = {"plain": 1.0, "tick_0.5s": 1.0, "delayed_ack": 5.0, "send_overhead": 5.0}


@pytest.mark.parametrize("option", LAG)
def test_cubic_window_follows_w_t_between_losses(option):
    # sampled every 50 ms in congestion avoidance, outside recovery, in the cubic region
    # (W_cubic(t) >= W_est): W(t) - lag <= cwnd <= W(t + RTT), the target of the per-ACK step
    net = lone_flow(10e6, HOST_OPTIONS[option], 40.0)
    s, sim = net.senders[0], net.sim
    checked, epochs = [], set()

    def sample(_):
        if s.t_epoch is not None and not s.in_recovery and s.cwnd >= s.ssthresh:
            t = sim.now - s.t_epoch
            w = cubic_window(t, s.k, s.w_max)
            if w >= s.w_est:
                hi = cubic_window(t + s.srtt_s, s.k, s.w_max)
                assert w - LAG[option] <= s.cwnd <= hi + 0.5, (sim.now, s.cwnd, w, hi)
                checked.append(t - s.k)
                epochs.add(s.t_epoch)
        sim.at(sim.now + 0.05, sample, None)

    sim.at(1.0, sample, None)
    net.run()
    assert len(checked) > 400 and len(epochs) >= 3       # several epochs, most of the run
    assert min(checked) < -1.0 and max(checked) > 0.5    # the concave and the convex part
