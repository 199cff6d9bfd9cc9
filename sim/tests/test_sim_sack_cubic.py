"""SACK (RFC 6675 loss recovery, RFC 2018 blocks) and CUBIC (RFC 9438) against hand-worked
cases. Harness: one-way delay 50 ms (RTT 0.1 s) unless stated, no serialisation."""

import pytest

from fpq_sim.engine import Packet
from fpq_sim.tcp_sack import cubic_k, cubic_window, CUBIC_C
from tcp_harness import Pair
from conservation import run_checking_conservation

FOUR_HOLES = {(15, 1), (17, 1), (20, 1), (26, 1)}


# ---- receiver: SACK blocks (RFC 2018 Section 4) ------------------------------------------------
def test_receiver_reports_the_most_recent_blocks_first():
    p = Pair("sack")
    r, s = p.receiver, p.sender
    s.epoch = 1
    acks = []
    r.output = acks.append

    def data(seq):
        r.on_data(Packet(s, seq, 0, 1, 576, False))
        return acks[-1].sack

    assert data(0) is None                       # in order: no blocks
    assert data(2) == ((2, 3),)
    assert data(3) == ((2, 4),)
    assert data(6) == ((6, 7), (2, 4))
    assert data(8) == ((8, 9), (6, 7), (2, 4))
    assert data(4) == ((2, 5), (8, 9), (6, 7))   # the block just extended comes first
    assert data(10) == ((10, 11), (2, 5), (8, 9))   # at most three blocks
    assert data(1) == ((10, 11), (8, 9), (6, 7))  # 1 fills the hole below 2..4
    assert acks[-1].ack == 5


# ---- sender: the scoreboard (RFC 6675 Section 4) -----------------------------------------------
def _board(sacked, snd_una=10, maxseq=30, high_rxt=-1, rescue_rxt=-1):
    s = Pair("sack").sender
    s.active, s.epoch = True, 1
    s.snd_una, s.snd_nxt, s.maxseq = snd_una, maxseq, maxseq
    s.sacked = set(sacked)
    s.high_sacked = max(sacked) if sacked else -1
    s.high_rxt, s.rescue_rxt = high_rxt, rescue_rxt
    s.in_recovery, s.recovery_point = True, maxseq - 1
    s.limit = maxseq          # no new data, unless a test says so
    return s


def test_is_lost_needs_three_sacked_packets_above():
    s = _board({12, 14, 15})
    assert [q for q in range(10, 16) if s.is_lost(q)] == [10, 11]
    assert not s.is_lost(13)                     # only 14 and 15 above it


def test_set_pipe_counts_originals_not_lost_and_retransmissions():
    # snd_una 10, HighData 19 (maxseq 20), SACKed 12, 14, 15; HighRxt 11.
    # 10: lost (3 above), retransmitted -> 1; 11: lost, retransmitted -> 1; 12 SACKed;
    # 13: 2 SACKed above -> not lost -> 1; 14, 15 SACKed; 16..19 -> 4. pipe = 7.
    s = _board({12, 14, 15}, maxseq=20, high_rxt=11)
    assert s.set_pipe() == 7


def test_next_seg_rules():
    # rule 1: the first unSACKed, lost packet above HighRxt below the highest SACKed
    s = _board({12, 14, 15}, maxseq=20, high_rxt=10)
    assert s.next_seg() == (11, 1)
    # rule 2: nothing lost above HighRxt = 11 (13 is not lost): new data, if allowed
    s = _board({12, 14, 15}, maxseq=20, high_rxt=11)
    s.limit = 100
    assert s.next_seg() == (20, 2)
    # rule 3: no new data: the first unSACKed packet above HighRxt below the highest SACKed
    s.limit = 20
    assert s.next_seg() == (13, 3)
    # rule 4: nothing else; HighACK (snd_una - 1 = 9) > RescueRxt (5): the highest
    # unSACKed outstanding packet, once
    s = _board({12, 14, 15}, maxseq=20, high_rxt=15, rescue_rxt=5)
    assert s.next_seg() == (19, 4)
    s.rescue_rxt = 9                             # HighACK not above RescueRxt: nothing
    assert s.next_seg() is None


def test_sack_recovers_four_holes_in_one_round_trip():
    # 15..30 sent at t=0.4 (cwnd 16); first copies of 15, 17, 20, 26 lost. At t=0.5 the
    # duplicate ACKs SACK 16; 18; 19 (third new-SACK duplicate: recovery, RecoveryPoint 30,
    # FlightSize 16 -> ssthresh = cwnd = 8, resend 15: pipe 13 (15 rxt; 17 and 20..30 not
    # yet lost), nothing more); 21 (pipe 11); 22 (10); 23 (8: 20 now lost); 24 (7: send
    # 17, rule 1); 25 (send 20, rule 1); 27 (26 has one SACKed packet above: not lost; send
    # new 31, rule 2); 28 (send 32); 29 (26 now lost: send 26, then 33); 30 (send 34).
    p = Pair("sack", drop=FOUR_HOLES).run(0.55)
    assert p.events("fast_retx") == [(0.5, 15)]
    assert p.sends_at(0.5) == [(15, 2), (17, 2), (20, 2), (31, 1), (32, 1), (26, 2), (33, 1),
                               (34, 1)]
    assert p.sender.ssthresh == 8 and p.sender.cwnd == 8.0
    p.run(0.65)
    # t=0.6: ACKs 17, 20, 26, 26, 26 (partial: 33 arrives after 26), then 33 > RecoveryPoint
    # ends recovery with cwnd 8; 34, 35 open it in congestion avoidance (+1/8, +1/8.125)
    assert [a[1] for a in p.acks if a[0] == 0.6] == [17, 20, 26, 26, 26, 33, 34, 35]
    assert not p.sender.in_recovery
    assert p.counters.timeouts == 0 and p.counters.fast_retx == 1
    assert p.counters.duplicate_data == 0


def test_newreno_needs_more_round_trips_for_the_same_holes():
    # the comparison point: NewReno resends one hole per round trip
    p = Pair("newreno", drop=FOUR_HOLES).run(1.0)
    assert [t for t, _ in p.events("partial")] == [0.6, 0.7, 0.8]


def test_sack_timeout_forgets_the_scoreboard_and_waits_for_the_recovery_point():
    # 15 lost twice: recovery at t=0.5, its retransmission lost, the timer (rto 1.5 s,
    # restarted by the last new ACK at t=0.5... by the fast retransmit) fires: RecoveryPoint
    # = HighData, scoreboard cleared, cwnd 1, resend 15.
    p = Pair("sack", drop={(15, 1), (15, 2)}).run(1.95)
    s = p.sender
    assert s.in_recovery and s.sacked
    high = s.maxseq - 1
    p.run(2.05)
    assert p.events("timeout") == [(2.0, 15)]
    assert not s.in_recovery and s.rto_recovery_point == high
    assert s.cwnd == 1.0 and s.sacked == set()      # RFC 2018 Section 8: may have reneged
    assert p.sends_at(2.0) == [(15, 3)]


# ---- CUBIC (RFC 9438) ----------------------------------------------------------------------------
def test_cubic_formula_values():
    # W_max 100, cwnd_epoch 70: K = cbrt(30 / 0.4) = cbrt(75) = 4.2172 s;
    # W(0) = 0.4 (-cbrt 75)^3 + 100 = 70; W(K) = 100; W(2K) = 130
    k = cubic_k(100.0, 70.0)
    assert k == pytest.approx(75 ** (1 / 3))
    assert cubic_window(0.0, k, 100.0) == pytest.approx(70.0)
    assert cubic_window(k, k, 100.0) == pytest.approx(100.0)
    assert cubic_window(2 * k, k, 100.0) == pytest.approx(130.0)
    assert CUBIC_C == 0.4


def test_cubic_window_follows_the_rfc_curve_after_a_loss():
    # RTT 0.5 s, no window limit. Slow start: at t = 3.0 ACKs 32..63 take cwnd to 64 and
    # send 63..126; 63 is lost. t = 3.5: the third SACK duplicate -> W_max = cwnd = 64,
    # ssthresh = cwnd = 0.7 x FlightSize (64) = 44.8; K = cbrt((64 - 44.8) / 0.4) = cbrt(48).
    # After recovery, cwnd must follow W_cubic: at least W(t) and at most W(t + RTT), give
    # or take a packet (the per-ACK steps aim at W(t + RTT)).
    p = Pair("cubic", delay=0.25, drop={(63, 1)}, max_window=10000).run(3.6)
    s = p.sender
    assert p.events("fast_retx") == [(3.5, 63)]
    assert s.w_max == 64.0 and s.ssthresh == pytest.approx(44.8)
    p.run(4.3)
    assert s.t_epoch is not None and not s.in_recovery
    assert s.cwnd_epoch == pytest.approx(44.8)
    assert s.k == pytest.approx(48 ** (1 / 3))
    t0, k = s.t_epoch, 48 ** (1 / 3)
    rtt = 0.5
    for dt in (0.5, 1.0, 2.0, 3.0, k, 5.0, 6.0, 7.0):
        p.run(t0 + dt)
        lo = cubic_window(dt, k, 64.0) - 1.0
        hi = cubic_window(dt + rtt, k, 64.0) + 1.0
        assert lo <= s.cwnd <= hi, (dt, s.cwnd, lo, hi)
    assert s.w_est < s.cwnd                     # the cubic region, not the Reno-friendly one


def test_cubic_fast_convergence_and_multiplicative_decrease():
    s = Pair("cubic").sender
    s.cwnd, s.w_max = 50.0, 64.0
    s._loss_response(40)                        # cwnd below the last W_max: release bandwidth
    assert s.w_max == pytest.approx(50 * 1.7 / 2)
    assert s.ssthresh == pytest.approx(28.0) and s.cwnd == pytest.approx(28.0)
    assert s.cwnd_prior == 50.0
    s.cwnd = 60.0
    s._loss_response(2)                         # W_max = cwnd above it; ssthresh at least 2
    assert s.w_max == 60.0 and s.ssthresh == 2.0


def test_cubic_reno_friendly_region():
    # W_cubic far below W_est: cwnd = W_est, grown by alpha_cubic = 3 (1 - 0.7) / 1.7 per
    # window while W_est < cwnd_prior, then by 1
    s = Pair("cubic").sender
    s.cwnd, s.ssthresh, s.t_epoch, s.k, s.w_max = 10.0, 5.0, 0.0, 10.0, 100.0
    s.w_est, s.cwnd_prior = 10.0, 20.0
    s._open_window(1)
    assert s.cwnd == pytest.approx(10.0 + (0.9 / 1.7) / 10.0)
    s.w_est, s.cwnd_prior, s.cwnd = 10.0, 5.0, 10.0
    s._open_window(2)
    assert s.cwnd == pytest.approx(10.0 + 2 / 10.0)


def test_cubic_timeout_restarts_with_k_zero():
    # After a timeout the first epoch takes K = 0 and W_max = cwnd at its start (4.8).
    p = Pair("cubic", drop={(15, 1), (15, 2)}).run(2.05)
    s = p.sender
    assert p.events("timeout")[0][0] == 2.0 and s.cwnd == 1.0 and s.after_timeout
    p.run(4.0)
    assert s.t_epoch is not None and s.k == 0.0 and not s.after_timeout
    assert s.w_max == pytest.approx(s.cwnd_epoch)


def test_cubic_epoch_after_a_timeout_ignores_the_old_w_max():
    s = Pair("cubic").sender
    s.after_timeout, s.w_max, s.cwnd = True, 100.0, 20.0
    s._start_epoch(0.0)
    assert s.k == 0.0 and s.w_max == 20.0
    s.after_timeout, s.w_max, s.cwnd = False, 100.0, 20.0     # after a loss: K from W_max
    s._start_epoch(0.0)
    assert s.k == pytest.approx((80 / 0.4) ** (1 / 3)) and s.w_max == 100.0


def test_cubic_growth_per_ack_is_capped_at_half_a_window_per_window():
    # far into the convex region W_cubic(t + RTT) > 1.5 cwnd: target = 1.5 cwnd, so one ACK
    # adds (1.5 cwnd - cwnd) / cwnd = 0.5 packet (RFC 9438 Section 4.5)
    s = Pair("cubic").sender
    s.cwnd, s.ssthresh, s.w_max, s.k, s.t_epoch, s.srtt_s = 10.0, 5.0, 10.0, 0.0, -10.0, 0.1
    s.w_est, s.cwnd_prior = 10.0, 10.0
    s._open_window(1)
    assert s.cwnd == pytest.approx(10.5)


@pytest.mark.parametrize("tcp", ["sack", "cubic"])
@pytest.mark.parametrize("discipline,limit,loss", [("droptail", 12, 0.02), ("red", 0, 0.0),
                                                   ("codel", 0, 0.01)])
def test_packet_conservation_with_sack_and_cubic(tcp, discipline, limit, loss):
    from fpq_sim.network import Network
    from fpq_sim.scenario import validate
    q = {"discipline": discipline, "limit_pkts": limit}
    if discipline == "red":
        q.update(red_min_th=5.0, red_max_th=45.0, red_max_p=0.02)
    net = Network(validate({
        "name": "c", "run": {"duration_s": 40.0, "warmup_s": 5.0, "seed": 3},
        "bottleneck": {"bandwidth_bps": 1e6, "delay_s": 0.045, "loss_rate": loss},
        "queue": q,
        "flows": [{"count": 30, "tcp": tcp, "access_bw_total_bps": 1e8,
                   "access_delay_s": [0.0, 0.01], "workload": "transfers",
                   "transfer_pkts": 30, "start_jitter_s": 1.0, "delayed_ack": True},
                  {"count": 3, "tcp": tcp, "access_bw_bps": 2e6, "access_delay_s": 0.01,
                   "workload": "bulk", "start_s": 2.0}]}))
    run_checking_conservation(net, (3.3, 11.7, 25.0, 31.9))
    assert net.port.lost_total > 0 and net.counters.fast_retx > 0
    s = net.summary()
    assert s["utilisation"] > 0.9 and s["transfers"]["count"] > 50


def test_sack_limited_transmit_sends_one_new_packet_per_early_duplicate():
    # 7 lost; t=0.4, cwnd 8, una 7, 7..14 sent. SACK 8 (dup 1): 15 <= highest_ack 6 + cwnd 8
    # + dupacks 1: send 15; SACK 9 (dup 2): send 16; SACK 10: IsLost(7), recovery with
    # FlightSize 17 - 7 = 10: cwnd = ssthresh = 5, retransmit 7 (pipe 7: 11..16 and the
    # retransmission); SACKs 11..14 bring pipe to 6, 5, 4 and 4 again after 17: send 17, 18.
    # Without limited transmit FlightSize is 15 - 7 = 8: cwnd 4, and 15 goes only at SACK 12.
    p = Pair("sack", drop={(7, 1)}, limited_transmit=True).run(0.45)
    assert p.sends_at(0.4) == [(15, 1), (16, 1), (7, 2), (17, 1), (18, 1)]
    assert (p.sender.cwnd, p.sender.ssthresh) == (5.0, 5)
    q = Pair("sack", drop={(7, 1)}).run(0.45)
    assert q.sends_at(0.4) == [(7, 2), (15, 1), (16, 1), (17, 1)]
    assert (q.sender.cwnd, q.sender.ssthresh) == (4.0, 4)


def test_cubic_timeout_in_recovery_keeps_the_recovery_ssthresh():
    # 15 lost twice: recovery at t=0.5 with FlightSize 16 -> ssthresh 11.2; SACK recovery then
    # sends new data up to the 113-packet window. Its retransmission lost, the timer fires at
    # t=2.0 with 113 packets outstanding: 0.7 x that (79.1) would overshoot the path again;
    # the congestion was already answered, so ssthresh stays (RFC 9438 4.8, one reduction)
    p = Pair("cubic", drop={(15, 1), (15, 2)}).run(1.9)
    s = p.sender
    assert s.in_recovery and s.ssthresh == pytest.approx(11.2)
    assert s.maxseq - s.snd_una == 113
    p.run(2.05)
    assert p.events("timeout") == [(2.0, 15)]
    assert s.ssthresh == pytest.approx(11.2) and s.cwnd == 1.0 and s.after_timeout


def test_cubic_timeout_takes_ssthresh_from_cwnd_and_holds_it_when_repeated():
    # a 20-packet transfer whose last packet (19) is lost: no duplicate ACKs, so the timer
    # fires at t=2.0 outside recovery with cwnd 20 (slow start) and one packet outstanding:
    # ssthresh = 0.7 x cwnd = 14 (0.7 x FlightSize would give 2), W_max = 20, cwnd 1
    p = Pair("cubic", drop={(19, 1), (19, 2)}, transfer_pkts=20).run(1.9)
    s = p.sender
    assert s.cwnd == 20.0 and s.maxseq - s.snd_una == 1
    p.run(2.05)
    assert p.events("timeout") == [(2.0, 19)]
    assert s.ssthresh == pytest.approx(14.0) and s.w_max == 20.0 and s.cwnd == 1.0
    # the go-back-N copy is lost too: the second timeout (backed off, 3 s later) holds
    # ssthresh (RFC 5681 Section 3.1)
    p.run(5.05)
    assert p.events("timeout") == [(2.0, 19), (5.0, 19)]
    assert s.ssthresh == pytest.approx(14.0) and s.cwnd == 1.0


def test_cubic_window_stops_growing_when_the_receiver_window_limits_it():
    # RFC 9438 Section 5.8: no growth (and no time counted) while max_window, not cwnd, limits
    s = Pair("cubic", max_window=20).sender
    s.cwnd, s.ssthresh, s.w_max, s.k, s.t_epoch, s.srtt_s = 20.0, 5.0, 20.0, 0.0, 0.0, 0.1
    s.w_est, s.cwnd_prior, s.t_last_ca = 20.0, 20.0, 0.0
    s.sim.now = 3.0
    s._open_window(1)
    assert s.cwnd == 20.0 and s.t_epoch == 3.0
