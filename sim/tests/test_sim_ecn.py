"""ECN end to end (RFC 3168): ECN-capable senders of every variant, receivers that echo a CE
mark until CWR, one window reduction per window of data; marks from RED and FPQ (bit-exact and
float models), CoDel (RFC 8289) and PIE (RFC 8033, below a 10 % drop probability); RED's hard
drop above max_th in the float model. Hand-worked cases use the one-sender harness (RTT 0.1 s,
no serialisation): slow start sends packets 15..30 at t = 0.4, the ACKs of 15..19 take cwnd to
21 at t = 0.5, and the ACK of packet 20 arrives next."""

import os

import pytest

from fpq import Config, Arrival, MARK, DROP_EARLY, ENQUEUE
from fpq.float_model import FloatQueueManager
from fpq_sim.codel import CoDel
from fpq_sim.engine import Packet
from fpq_sim.network import Network, run_scenario
from fpq_sim.pie import PIE
from fpq_sim.scenario import validate, ScenarioError, load, SCENARIO_DIR
from fpq_sim.tcp import VARIANTS
from conservation import run_checking_conservation
from tcp_harness import Pair

US = 1e6


def _capture(p):
    """Record every data packet the sender sends and every ACK the receiver sends."""
    data, acks = [], []
    send, ack = p.sender.output, p.receiver.output
    p.sender.output = lambda pkt: (data.append(pkt), send(pkt))
    p.receiver.output = lambda pkt: (acks.append(pkt), ack(pkt))
    return data, acks


# ---- receiver (RFC 3168 Section 6.1.3) --------------------------------------------------------
def test_receiver_echoes_ce_on_every_ack_until_cwr():
    p = Pair("reno", ecn=True)
    r, s = p.receiver, p.sender
    s.epoch = 1
    acks = []
    r.output = acks.append

    def data(seq, ce=False, cwr=False):
        pkt = Packet(s, seq, 0, 1, 576, False, ect=True, cwr=cwr)
        pkt.ce = ce
        r.on_data(pkt)
        return acks[-1].ece

    assert [data(0), data(1, ce=True), data(2), data(4), data(3)] == [False, True, True, True,
                                                                       True]
    assert data(5, cwr=True) is False              # CWR: the sender has answered
    assert data(6) is False
    assert data(7, ce=True, cwr=True) is True      # a new mark on the CWR packet itself


# ---- senders (RFC 3168 Section 6.1.2) ---------------------------------------------------------
#: window before the ECN-Echo (21 packets) -> (cwnd, ssthresh) after it
AFTER_CUT = {"tahoe": (10.5, 10), "reno": (10.5, 10), "newreno": (10.5, 10),
             "sack": (10.5, 10), "cubic": (14.7, 14.7)}


@pytest.mark.parametrize("variant", VARIANTS)
def test_one_window_reduction_per_window_and_cwr(variant):
    # packets 20 and 25 marked: the ACK of 20 (ack 21, ECN-Echo) cuts the window 21 -> half
    # (CUBIC: 0.7) and does not open it; the ACK of 25 echoes too but is in the same window
    # (sent before the cut): no second cut. The first new packet after the cut (41: the window
    # of 10 from snd_una 21 allows none until 31, and 31..40 were sent before) carries CWR;
    # the receiver echoes on every ACK until it arrives, and not after. No loss, no
    # retransmission.
    p = Pair(variant, ecn=True, mark={(20, 1), (25, 1)})
    data, acks = _capture(p)
    p.run(0.5 - 1e-9)
    assert p.sender.cwnd == 16.0                   # the ACKs of 15..19 come at t = 0.5
    p.run(0.505)
    assert p.events("ecn_cut") == [(0.5, 21)]
    cwnd, ssthresh = AFTER_CUT[variant]
    cut = [a for a in p.acks if a[1] == 21][0]
    assert cut[2] == pytest.approx(cwnd) and cut[3] == pytest.approx(ssthresh)
    p.run(1.0)
    assert p.counters.ecn_cuts == 1
    cwr = [d.seq for d in data if d.cwr]
    assert cwr == [41]
    assert all(d.ect for d in data)                # first transmissions only: all ECT
    echoed = sorted({a.ack for a in acks if a.ece})
    assert echoed == list(range(21, 42))           # from the mark to the CWR packet
    assert p.counters.data_retx == 0 and p.counters.timeouts == 0


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_mark_in_the_next_window_cuts_again(variant):
    # 45 is sent after the first cut: its echo is a new window's congestion
    p = Pair(variant, ecn=True, mark={(20, 1), (45, 1)}).run(1.5)
    assert p.counters.ecn_cuts == 2 and p.counters.data_retx == 0


def test_senders_without_ecn_ignore_echoes():
    p = Pair("newreno", mark={(20, 1)})
    data, _ = _capture(p)
    p.run(1.0)
    assert p.counters.ecn_cuts == 0 and not any(d.ect or d.cwr for d in data)


def test_one_packet_window_waits_a_timeout_before_sending_again():
    # the first packet is marked: at cwnd 1 the ECN-Echo (t = 0.1) cannot halve the window,
    # so the sender waits out a retransmission timeout (1.5 s: the first sample, one 0.5 s
    # tick, gives srtt 1 and rttvar 1/2 tick) before its next new packet, which carries CWR
    # (RFC 3168 Section 6.1.2)
    p = Pair("reno", ecn=True, mark={(0, 1)})
    data, _ = _capture(p)
    p.run(1.55)
    assert p.events("ecn_cut") == [(0.1, 1)] and p.sender.cwnd == 1.0
    assert p.sender.rto() == 1.5 and [x for x in p.sends if x[1] == 1] == []
    p.run(1.65)
    assert [x for x in p.sends if x[1] == 1] == [(1.6, 1, 1)] and data[1].cwr


@pytest.mark.parametrize("variant", ["reno", "newreno", "sack", "cubic"])
def test_loss_in_the_window_of_an_ecn_cut_does_not_cut_again(variant):
    # 20 marked, 22 lost: the ECN-Echo cuts the window at t = 0.5; the duplicate ACKs for
    # 22 start a fast retransmit in the same window, which keeps ssthresh (RFC 3168 6.1.2)
    p = Pair(variant, ecn=True, mark={(20, 1)}, drop={(22, 1)}).run(0.505)
    ssthresh = p.sender.ssthresh
    p.run(1.0)
    assert p.counters.ecn_cuts == 1 and p.counters.fast_retx == 1
    assert [x for x in p.sends if x[1] == 22] == [(0.4, 22, 1), (0.5, 22, 2)]
    assert p.sender.ssthresh == pytest.approx(ssthresh)


# ---- queue disciplines ------------------------------------------------------------------------
def test_codel_marks_the_packet_it_would_drop():
    # as RFC 8289's first drop at t = 0.110 (test_sim_aqm), but the head is ECN-capable: it is
    # marked and sent, count and drop_next move as for a drop; in the dropping state the next
    # scheduled drop is a mark too, and ends that dequeue's drops
    c = CoDel(US, ecn=True)
    for _ in range(20):
        c.arrive(Arrival(0, 1, 1000, True))
    d = lambda t: c.dequeue(round(t * US))
    assert d(0.010) == (0, True) and d(0.050) == (0, True)
    assert d(0.110) == (0, True) and c.marked
    assert c.dropping and c.count == 1 and c.drop_next == pytest.approx(0.210)
    assert d(0.150) == (0, True) and not c.marked
    assert d(0.500) == (0, True) and c.marked and c.count == 2
    assert c.counters["marked"] == 2 and c.counters["early_drops"] == 0
    plain = CoDel(US, ecn=True)
    for _ in range(20):
        plain.arrive(Arrival(0, 1, 1000, False))    # not ECN-capable: dropped as before
    assert [plain.dequeue(round(t * US)) for t in (0.010, 0.050, 0.110)][-1] == (1, True)
    assert not plain.marked


def test_pie_marks_below_ten_percent_and_drops_above():
    def decide(drop_prob, ect):
        q = PIE(US, ecn=True, derandomize=False)
        for i in range(5):
            q.arrive(Arrival(i, 1, 1000, ect))
        q.burst_allowance, q.qdelay_old, q.drop_prob = 0.0, 1.0, drop_prob
        q.next_update = 1e9                         # no controller update in between
        q.rnd.random = lambda: 0.0                  # the random drop happens
        return q.arrive(Arrival(10, 1, 1000, ect)).action

    assert decide(0.05, True) == MARK and decide(0.1, True) == MARK
    assert decide(0.2, True) == DROP_EARLY and decide(0.05, False) == DROP_EARLY


def _red(hard_drop, avg):
    cfg = Config(mode="red", ecn=True, red_min_th=5.0, red_max_th=15.0, red_max_p=0.1,
                 red_gentle=False)
    qm = FloatQueueManager(cfg, hard_drop=hard_drop)
    qm.w, qm.avg = 0.0, avg                         # hold the average where the test puts it
    return qm.arrive(Arrival(1, 1, 576, True)).action


def test_float_red_hard_drop_above_max_th():
    assert _red(False, 20.0) == MARK                # above max_th, ECN: marked
    assert _red(True, 20.0) == DROP_EARLY           # UseHardDrop / harddrop: dropped
    assert _red(True, 2.0) == ENQUEUE               # below min_th: nothing to decide


def test_hard_drop_needs_the_float_red():
    doc = {"name": "x", "run": {"duration_s": 1.0}, "bottleneck": {"bandwidth_bps": 1e6,
           "delay_s": 0.01}, "queue": {"discipline": "red", "red_hard_drop": True},
           "flows": [{"count": 1, "access_bw_bps": 1e7}]}
    with pytest.raises(ScenarioError, match="queue.red_hard_drop"):
        validate(doc)
    doc["queue"]["model"] = "float"
    assert validate(doc)["queue"]["red_hard_drop"]


# ---- end to end ---------------------------------------------------------------------------------
def _dumbbell(tcp, queue, ecn=True, seed=2):
    q = {"ecn": ecn, **queue}
    if q.get("discipline") in ("red", "fpq", None):
        q.setdefault("limit_pkts", 300)
    return Network(validate({
        "name": "ecn", "run": {"duration_s": 20.0, "warmup_s": 5.0, "seed": seed},
        "bottleneck": {"bandwidth_bps": 10e6, "delay_s": 0.02, "packet_bytes": 1500},
        "queue": q,
        "flows": [{"count": 10, "tcp": tcp, "access_bw_total_bps": 1e8, "ecn": ecn,
                   "access_delay_s": [0.0, 0.02], "workload": "bulk", "tick_s": 0.01,
                   "rto_min_s": 0.2, "max_window_bytes": 2**20, "start_jitter_s": 1.0}]}))


QUEUES = {
    "red_exact": {"discipline": "red", "red_min_th": 5.0, "red_max_th": 25.0},
    "red_float": {"discipline": "red", "model": "float", "red_min_th": 5.0,
                  "red_max_th": 25.0},
    "fpq_exact": {"discipline": "fpq", "p_pkts": 20.0},
    "fpq_float": {"discipline": "fpq", "model": "float", "p_pkts": 20.0},
    "codel": {"discipline": "codel"},
    "pie": {"discipline": "pie"},
}


@pytest.mark.parametrize("queue", QUEUES)
@pytest.mark.parametrize("tcp", VARIANTS)
def test_ecn_marks_replace_early_drops_end_to_end(tcp, queue):
    net = _dumbbell(tcp, QUEUES[queue])
    run_checking_conservation(net, (7.3, 20.0))
    s = net.summary()
    assert s["marks"] > 100 and s["tcp"]["ecn_cuts"] > 20
    # the congestion answered by marks: early drops only where the discipline must drop
    # (PIE above 10 %, RED / FPQ at p = 1: none of them here)
    assert s["early_drops"] < 0.1 * s["marks"]
    assert s["utilisation"] > 0.9


@pytest.mark.parametrize("queue", ["red_exact", "codel"])
def test_without_ecn_the_same_network_drops(queue):
    s = _dumbbell("newreno", QUEUES[queue], ecn=False)
    s.run()
    out = s.summary()
    assert out["marks"] == 0 and out["tcp"]["ecn_cuts"] == 0 and out["early_drops"] > 100


@pytest.mark.long
def test_rtl_in_the_loop_marks_as_the_golden_model():
    """The Verilated RTL decides with ECN on: the same marks, so the same run, as the bit-exact
    model (as test_sim_long's comparison without ECN; built on first use)."""
    pytest.importorskip("fpq_hdl.verilated")
    from fpq_hdl.queue_manager import LATENCY
    sets = ["run.duration_s=20", "run.warmup_s=5", "flows.0.count=40", "queue.tick_hz=1e5",
            f"queue.verdict_wait={LATENCY}", "queue.ecn=true", "flows.0.ecn=true"]
    path = os.path.join(SCENARIO_DIR, "fpq-fpq.toml")
    a = run_scenario(load(path, sets + ["queue.model=exact"]))
    b = run_scenario(load(path, sets + ["queue.model=rtl"]))
    skip = {"model", "wall_seconds", "events_per_second"}
    assert {k: v for k, v in a.items() if k not in skip} == \
        {k: v for k, v in b.items() if k not in skip}
    assert a["marks"] > 0 and a["tcp"]["ecn_cuts"] > 0
