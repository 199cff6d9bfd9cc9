"""CoDel (RFC 8289) and PIE (RFC 8033) float reference models against sequences worked by hand
from the RFCs' pseudo-code, and both in the network (drops at dequeue, packet conservation)."""

import math

import pytest

from fpq.queue_manager import Arrival, Departure, ENQUEUE, DROP_FORCED
from fpq_sim.codel import CoDel
from fpq_sim.pie import PIE, scale_adjustment
from fpq_sim.network import Network
from fpq_sim.scenario import validate
from conservation import run_checking_conservation

US = 1e6          # model clock: microseconds


def arrive(qm, t, length=1000):
    return qm.arrive(Arrival(round(t * US), 1, length))


# ---- CoDel ------------------------------------------------------------------------------------
def test_codel_enters_dropping_after_an_interval_above_target_and_follows_the_control_law():
    """RFC 8289 Section 5, target 5 ms, interval 100 ms, 1000-byte packets (maxpacket 1000)."""
    c = CoDel(US)
    for _ in range(20):
        arrive(c, 0.0)                                   # 20 packets queued at t = 0
    d = lambda t: c.dequeue(round(t * US))
    # sojourn 4 ms < target: below, nothing happens
    assert d(0.004) == (0, True) and c.first_above_time == 0.0
    # 10 ms >= target with 18 packets behind: first_above_time = now + interval
    assert d(0.010) == (0, True) and c.first_above_time == pytest.approx(0.110)
    assert d(0.050) == (0, True) and not c.dropping      # above, but not for an interval yet
    # t = 0.110 >= first_above_time: drop the head, take the next; enter dropping with
    # count 1 (count - lastcount = 0), drop_next = now + interval / sqrt(1)
    assert d(0.110) == (1, True)
    assert c.dropping and c.count == 1 and c.lastcount == 1
    assert c.drop_next == pytest.approx(0.210)
    assert d(0.150) == (0, True)                         # before drop_next: no drop
    # t = 0.211 (past drop_next): the second drop; count 2; the next is scheduled from
    # drop_next, not from now: 0.210 + 0.1 / sqrt(2)
    assert d(0.211) == (1, True)
    assert c.count == 2 and c.drop_next == pytest.approx(0.210 + 0.1 / math.sqrt(2))
    nxt = 0.210 + 0.1 / math.sqrt(2) + 0.1 / math.sqrt(3)
    assert d(0.300) == (1, True) and c.count == 3 and c.drop_next == pytest.approx(nxt)
    # t = 0.500 is past several scheduled drops: the while loop drops until drop_next > now:
    # counts 4, 5, 6, 7 at drop_next + 0.1/sqrt(4), + 0.1/sqrt(5), + 0.1/sqrt(6): 4 drops
    for k in (4, 5, 6, 7):
        nxt += 0.1 / math.sqrt(k)
    assert nxt > 0.5 > nxt - 0.1 / math.sqrt(7)
    assert d(0.500) == (4, True) and c.count == 7 and c.drop_next == pytest.approx(nxt)
    assert len(c.fifo) == 5
    assert d(0.520) == (1, True) and c.count == 8        # 0.520 >= 0.5118: drop 8
    after8 = nxt + 0.1 / math.sqrt(8)
    assert d(0.530) == (0, True) and c.dropping           # 2 packets (2000 B) still behind
    # one packet (1000 B = maxpacket) left behind the head: below, leave dropping
    assert d(0.540) == (0, True) and not c.dropping and c.first_above_time == 0.0
    assert len(c.fifo) == 1
    # The queue builds again: 10 more packets at 0.600. The old head (sojourn 0.6 s, 10
    # behind) sets first_above_time = 0.700; at 0.701 the dropping state is re-entered
    # 0.154 s after the last drop_next (< 16 intervals) with count - lastcount = 8 - 1 = 7 > 1:
    # count resumes at 7 (RFC 8289 5.5), drop_next = 0.701 + 0.1 / sqrt(7).
    for _ in range(10):
        arrive(c, 0.600)
    assert d(0.600) == (0, True) and c.first_above_time == pytest.approx(0.700)
    assert 0.701 - after8 < 1.6
    assert d(0.701) == (1, True)
    assert c.count == 7 and c.lastcount == 7
    assert c.drop_next == pytest.approx(0.701 + 0.1 / math.sqrt(7))


def test_codel_reentry_long_after_starts_count_at_one():
    # Re-entering the dropping state more than 16 intervals after drop_next: count = 1.
    c = CoDel(US)
    c.count, c.lastcount, c.drop_next = 9, 2, 0.0
    for _ in range(5):
        arrive(c, 2.0)
    assert c.dequeue(round(2.01 * US)) == (0, True)       # first_above_time = 2.11
    assert c.dequeue(round(2.111 * US)) == (1, True)
    assert c.count == 1 and c.drop_next == pytest.approx(2.211)


def test_codel_empty_queue_leaves_dropping_and_tail_drops_at_its_limit():
    c = CoDel(US, limit_pkts=3)
    verdicts = [arrive(c, 0.0)[1] for _ in range(4)]
    assert verdicts == [ENQUEUE, ENQUEUE, ENQUEUE, DROP_FORCED]
    for t in (0.001, 0.002, 0.003):
        c.dequeue(round(t * US))
    c.dropping = True
    assert c.dequeue(round(0.004 * US)) == (0, False)
    assert not c.dropping and c.first_above_time == 0.0


def test_codel_does_not_drop_with_one_packet_behind():
    # sojourn far above target, but bytes() <= maxpacket after the dequeue: never ok to drop
    c = CoDel(US)
    arrive(c, 0.0)
    arrive(c, 0.0)
    assert c.dequeue(round(0.2 * US)) == (0, True)
    assert c.first_above_time == 0.0


# ---- PIE ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("p,drop_prob,expected", [
    (0.011875, 0.0, 0.011875 / 2048),
    (0.011875, 5e-6, 0.011875 / 512),
    (0.011875, 5e-5, 0.011875 / 128),
    (0.011875, 5e-4, 0.011875 / 32),
    (0.011875, 5e-3, 0.011875 / 8),
    (0.011875, 0.05, 0.011875 / 2),
    (0.011875, 0.1, 0.011875),          # no scaling from 0.1 on, under the cap
    (0.1375, 0.3, 0.02),                # cap of Section 5.5
    (-0.2, 0.3, -0.2),                  # the cap bounds increases only
])
def test_pie_scales_the_adjustment_as_in_rfc_8033(p, drop_prob, expected):
    assert scale_adjustment(p, drop_prob) == pytest.approx(expected, rel=1e-12)


def _pie(**kw):
    q = PIE(US, **kw)
    return q


def test_pie_update_arithmetic():
    q = _pie()
    # (alpha, beta) = (0.125, 1.25): delay 35 ms, previous 25 ms, drop_prob 0.05:
    # p = 0.125 x 0.020 + 1.25 x 0.010 = 0.015, halved (drop_prob < 0.1) -> 0.0575
    q.drop_prob, q.qdelay, q.qdelay_old, q.burst_allowance = 0.05, 0.035, 0.025, 0.0
    q.update()
    assert q.drop_prob == pytest.approx(0.0575)
    assert q.qdelay_old == 0.035
    # decay: no delay now nor before: p = -0.125 x 0.015 = -0.001875 (unscaled at 0.5),
    # then x 0.98
    q.drop_prob, q.qdelay, q.qdelay_old = 0.5, 0.0, 0.0
    q.update()
    assert q.drop_prob == pytest.approx((0.5 - 0.001875) * 0.98)
    # bounded at 0: p = 0.125 x (-0.015) + 1.25 x (0 - 0.2) = -0.251875, / 8 -> below 0
    q.drop_prob, q.qdelay, q.qdelay_old = 0.001, 0.0, 0.2
    q.update()
    assert q.drop_prob == 0.0
    # bounded at 1
    q.drop_prob, q.qdelay, q.qdelay_old = 0.995, 0.5, 0.0
    q.update()
    assert q.drop_prob == 1.0


def test_pie_burst_allowance_runs_down_and_is_restored():
    # binary-exact times: t_update 1/16 s, max_burst 1/4 s, reference delay 1/8 s
    q = _pie(t_update_s=0.0625, max_burst_s=0.25, qdelay_ref_s=0.125)
    q.qdelay = 0.1                              # above ref / 2: no restoration
    allowances = []
    for _ in range(5):
        q.update()
        allowances.append(q.burst_allowance)
    assert allowances == [0.1875, 0.125, 0.0625, 0.0, 0.0]
    # restoration: drop_prob 0 and both delays under ref / 2
    q.drop_prob, q.qdelay, q.qdelay_old = 0.0, 0.03, 0.03
    q.update()
    assert q.drop_prob == 0.0 and q.burst_allowance == 0.25
    # not when the previous delay was above ref / 2
    q.burst_allowance, q.qdelay, q.qdelay_old = 0.0, 0.0, 0.07
    q.update()
    assert q.burst_allowance == 0.0


class _Never:
    """A random source whose draws never fall under a drop probability below 0.99."""
    def random(self):
        return 0.99


def test_pie_drop_early_safeguards_and_derandomisation():
    q = _pie()
    q.rnd = _Never()
    for _ in range(5):
        q.fifo.append(0.0)
    q.drop_prob, q.qdelay_old, q.burst_allowance = 0.3, 0.02, 0.01
    assert not q.drop_early()                    # burst allowance left
    q.burst_allowance = 0.0
    q.qdelay_old, q.drop_prob = 0.007, 0.19      # qdelay_old < 7.5 ms and p < 0.2
    assert not q.drop_early()
    q.qdelay_old, q.drop_prob = 0.02, 0.3
    q.fifo.clear()
    q.fifo.extend([0.0, 0.0])                    # two packets queued
    assert not q.drop_early()
    q.fifo.extend([0.0, 0.0, 0.0])
    # accu_prob grows by 0.3 per arrival: no drop while < 0.85; between 0.85 and 8.5 the
    # random draw decides (never, here); at 0.3 x 29 = 8.7 >= 8.5 the drop is certain
    results = [q.drop_early() for _ in range(29)]
    assert results == [False] * 28 + [True]
    q.drop_prob = 0.0
    assert not q.drop_early() and q.accu_prob == 0.0   # drop_prob 0 restarts accu_prob


def test_pie_updates_on_schedule_with_timestamp_delays():
    # 30 packets at t = 0. A departure at 10 ms: qdelay 10 ms. The update due at 15 ms runs at
    # the next event (an arrival at 16 ms): p = 0.125 (0.010 - 0.015) + 1.25 (0.010 - 0)
    # = 0.011875, scaled by 1/2048 (drop_prob 0). The departure at 40 ms first runs the update
    # due at 30 ms with qdelay still 10 ms: p = -0.000625, / 512 (drop_prob < 1e-5); then the
    # update due at 45 ms (at the arrival at 46 ms) sees 40 ms: p = 0.125 x 0.025 + 1.25 x 0.030
    # = 0.040625, / 512 again.
    q = _pie()
    q.log = []
    for _ in range(30):
        arrive(q, 0.0)
    q.depart(Departure(round(0.010 * US), 1000))
    assert q.qdelay == pytest.approx(0.010)
    arrive(q, 0.016)
    p1 = 0.011875 / 2048
    assert q.drop_prob == pytest.approx(p1)
    q.depart(Departure(round(0.040 * US), 1000))
    p2 = p1 - 0.000625 / 512
    assert q.drop_prob == pytest.approx(p2)
    arrive(q, 0.046)
    assert q.drop_prob == pytest.approx(p2 + 0.040625 / 512)
    assert [round(t, 9) for t, _, _ in q.log] == [0.015, 0.030, 0.045]
    assert q.burst_allowance == pytest.approx(0.15 - 3 * 0.015)
    # an emptied queue reads as zero delay
    for _ in range(30):                          # 32 arrived, 2 departed
        q.depart(Departure(round(0.050 * US), 1000))
    assert q.qdelay == 0.0


# ---- in the network -----------------------------------------------------------------------------
def _net(discipline, count=40, limit=0, tcp="newreno"):
    return validate({
        "name": "aqm",
        "run": {"duration_s": 40.0, "warmup_s": 5.0, "seed": 2},
        "bottleneck": {"bandwidth_bps": 1e6, "delay_s": 0.045},
        "queue": {"discipline": discipline, "limit_pkts": limit},
        "flows": [{"count": count, "tcp": tcp, "access_bw_total_bps": 1e8,
                   "access_delay_s": [0.0, 0.01], "workload": "transfers",
                   "transfer_pkts": 10, "start_jitter_s": 1.0, "delayed_ack": True}],
    })


@pytest.mark.parametrize("discipline,limit", [("codel", 0), ("codel", 30), ("pie", 0),
                                              ("pie", 30)])
def test_packet_conservation_with_codel_and_pie(discipline, limit):
    net = Network(_net(discipline, count=60, limit=limit))

    def queue_agrees(net):
        assert net.qm.occ_pkts == len(net.port.queue)

    run_checking_conservation(net, (3.3, 11.7, 25.0, 31.9), queue_agrees)
    assert net.port.early_drops > 0


def test_codel_and_pie_keep_the_delay_far_under_drop_tails():
    """40 flows of 10-packet transfers through 1 Mbit/s, no buffer limit: drop-tail never
    drops and queues them all; CoDel and PIE drop and keep the delay under a fifth of it."""
    out = {d: Network(_net(d)).run().summary() for d in ("codel", "pie", "droptail")}
    assert out["droptail"]["drops"] == 0
    for d in ("codel", "pie"):
        assert out[d]["avg_delay_s"] < out["droptail"]["avg_delay_s"] / 5
        assert out[d]["early_drops"] > 0
    assert out["codel"]["model"] == "float" and out["codel"]["early_drops"] > 0


def test_rtl_model_is_refused_for_codel():
    doc = _net("codel")
    from fpq_sim.scenario import ScenarioError
    d = {"name": "x", "run": {"duration_s": 1.0}, "bottleneck": {"bandwidth_bps": 1e6,
         "delay_s": 0.01}, "queue": {"discipline": "codel", "model": "rtl"},
         "flows": [{"count": 1, "access_bw_bps": 1e7}]}
    with pytest.raises(ScenarioError, match="queue.model"):
        validate(d)
    assert doc["queue"]["codel_target_s"] == 0.005      # the RFC default
