"""Loss recovery as ns-2 does it (tcp.cc, tcp-reno.cc, tcp-newreno.cc), against hand-worked
sequences: the guard against a second fast retransmit in one window at its boundaries, the
counters of duplicate deliveries and spurious fast retransmits, limited transmit, NewReno's
timer on partial ACKs, and the estimator reset after a long backoff.

Harness: one-way delay 50 ms, RTT exactly 100 ms, no serialisation, no delayed ACKs. Common
start: t=0 send 0; t=0.1 ACK 1, cwnd 2: send 1, 2; t=0.2 cwnd 4: send 3..6; t=0.3 cwnd 8:
send 7..14; t=0.4 ACKs 8..15, cwnd 16: send 15..30 (maxseq 31).
"""

import pytest

from fpq_sim.engine import Packet
from fpq_sim.tcp import FAST_RETX, RETX, FIRST
from tcp_harness import Pair

GO_BACK_N_HOLES = {(15, 1), (17, 1), (20, 1), (26, 1)}


def test_tahoe_go_back_n_duplicates_at_recover_plus_one_do_not_fast_retransmit():
    # First copies of 15, 17, 20 and 26 lost. The receiver holds 16, 18, 19, 21..25, 27..30.
    # t=0.5: duplicate ACKs 15 from 16, 18, 19: fast retransmit; recover = 30, ssthresh 8,
    #        cwnd 1: resend 15. (The other 9 duplicates change nothing.)
    # t=0.6: ACK 17, cwnd 2: go back N: send 17, 18.
    # t=0.7: ACK 20 (17 filled), cwnd 3: send 20, 21, 22; then 18's duplicate ACK 20.
    # t=0.8: ACK 26, cwnd 4: send 26..29; 21, 22 -> two duplicate ACKs 26.
    # t=0.9: ACK 31 (26 filled the last hole), cwnd 5: send 31..35 (new data); then the
    #        go-back-N copies 27, 28, 29 the receiver already held -> three duplicate ACKs 31.
    #        highest_ack = 30 == recover: ns refuses the fast retransmit (a sender comparing
    #        snd_una = 31 with recover would resend 31, which is on its way, and go back N).
    p = Pair("tahoe", drop=GO_BACK_N_HOLES).run(1.05)
    assert p.events("fast_retx") == [(0.5, 15)]
    assert p.sends_at(0.6) == [(17, 2), (18, 2)]
    assert p.sends_at(0.7) == [(20, 2), (21, 2), (22, 2)]
    assert p.sends_at(0.8) == [(26, 2), (27, 2), (28, 2), (29, 2)]
    assert p.sends_at(0.9) == [(s, 1) for s in range(31, 36)]
    assert [a[1] for a in p.acks if a[0] == 0.9] == [31, 31, 31, 31]
    assert p.events("fast_retx_refused") == [(0.9, 31)]
    assert p.sender.recover == 30
    # slow start goes on undisturbed: ACKs 32..36 at t=1.0 take cwnd 5 -> 8 (= ssthresh),
    # then +1/8
    assert [a[2] for a in p.acks if a[0] == 1.0][:4] == [6.0, 7.0, 8.0, 8.125]
    # 18, then 21 and 22, then 27, 28 and 29 reached a receiver that held them
    assert p.counters.duplicate_data == 6
    assert p.counters.spurious_fast_retx == 0
    assert p.counters.timeouts == 0


def test_fast_retransmit_allowed_once_highest_ack_passes_recover():
    # As above, and the first copy of 32 (new data sent at t=0.9) is lost too. t=1.0: ACK 32
    # (from 31), then 33, 34, 35 -> three duplicate ACKs 32: highest_ack = 31 > recover = 30,
    # a loss in a new window: fast retransmit of 32 (ssthresh floor(6 / 2), recover 37).
    p = Pair("tahoe", drop=GO_BACK_N_HOLES | {(32, 1)}).run(1.05)
    assert p.events("fast_retx") == [(0.5, 15), (1.0, 32)]
    # ACK 32 first opens cwnd to 6 (send 36, 37); the third duplicate then halves it
    assert p.sends_at(1.0) == [(36, 1), (37, 1), (32, 2)]
    assert p.sender.recover == 37 and p.sender.ssthresh == 3


@pytest.mark.parametrize("variant", ["tahoe", "reno", "newreno"])
@pytest.mark.parametrize("snd_una,recover,allowed", [
    (31, 30, False),     # highest_ack == recover: the boundary
    (30, 30, False),     # below it
    (32, 30, True),      # highest_ack == recover + 1
    (1, 0, True),        # highest_ack == 0: ns bugfix_ss_ (the first data packet lost)
    (1, 5, True),        # the same exception, whatever recover says
    (0, 0, False),       # nothing acknowledged yet (highest_ack == -1)
])
def test_fast_retransmit_guard_boundaries(variant, snd_una, recover, allowed):
    # ns dupack_action: recovered = highest_ack_ > recover_ (bug_fix_), or highest_ack_ == 0
    s = Pair(variant).sender
    s.snd_una, s.recover = snd_una, recover
    assert s._fast_retx_allowed() is allowed


def test_first_data_packet_lost_may_fast_retransmit():
    # ns bugfix_ss_: with one duplicate ACK as the threshold, losing packet 1 (sent with 2 at
    # t=0.1) gives a duplicate ACK 1 at t=0.2 from 2; highest_ack = 0 is not > recover = 0,
    # but the exception allows the fast retransmit instead of a 3 s timeout.
    p = Pair("tahoe", drop={(1, 1)}, dupack_threshold=1).run(0.35)
    assert p.events("fast_retx") == [(0.2, 1)]
    assert p.sends_at(0.2) == [(1, 2)]
    assert p.counters.timeouts == 0


def test_reno_second_hole_waits_for_the_timer_not_a_second_fast_retransmit():
    # Reno, 15 and 17 lost. t=0.5: duplicates from 16, 18, 19: fast retransmit of 15, cwnd
    # 16 / 2 = 8, dupwnd 3, recover 30; 11 more duplicates (20..30): dupwnd 14, the window
    # ends at 15 + 8 + 14 = 37: send 31..36. t=0.6: ACK 17 (the resent 15) ends Reno's
    # recovery (cwnd 8 + 1/8, window ends at 25: nothing to send); 31..36 bring six duplicate
    # ACKs 17: highest_ack 16 <= recover 30, so the third is refused and 17 waits for the
    # timer, restarted at 0.6 with rto 1.5 s: timeout at 2.1 s.
    p = Pair("reno", drop={(15, 1), (17, 1)}).run(2.15)
    assert p.events("fast_retx") == [(0.5, 15)]
    assert p.sends_at(0.5) == [(15, 2)] + [(s, 1) for s in range(31, 37)]
    assert [a[1:3] for a in p.acks if a[0] == 0.6] == [(17, 8.125)] * 7
    assert p.events("fast_retx_refused") == [(0.6, 17)]
    assert p.events("timeout") == [(2.1, 17)]


def test_limited_transmit_sends_one_new_packet_per_early_duplicate():
    # Reno with limited transmit (RFC 3042, ns singledup_), 7 lost. t=0.4, cwnd 8, una 7:
    # dup 1 (from 8): 15 <= highest_ack 6 + cwnd 8 + dupacks 1: send 15; dup 2: send 16;
    # dup 3: fast retransmit of 7, cwnd 4 + dupwnd 3 = 7 (window ends at 14 < snd_nxt 17);
    # dups 4..7 (11..14): dupwnd 4..7, the last opens the window to 18: send 17.
    p = Pair("reno", drop={(7, 1)}, limited_transmit=True).run(0.45)
    assert p.sends_at(0.4) == [(15, 1), (16, 1), (7, 2), (17, 1)]
    q = Pair("reno", drop={(7, 1)}).run(0.45)       # without: 15..17 only after dup 5..7
    assert q.sends_at(0.4) == [(7, 2), (15, 1), (16, 1), (17, 1)]


def test_limited_transmit_respects_the_window_formula():
    # cwnd 2.5 (fractional): ns sends while t_seqno_ <= highest_ack_ + cwnd_ + dupacks_.
    # With una 10 (highest_ack 9), snd_nxt 12, one duplicate: 12 <= 9 + 2.5 + 1 = 12.5: send;
    # a second: 13 <= 13.5: send; a variant of the formula with snd_una instead of
    # highest_ack would also send at 13.5 -> the third packet must not go.
    p = Pair("tahoe", limited_transmit=True, dupack_threshold=5)
    s = p.sender
    s.active, s.epoch = True, 1
    s.snd_una, s.snd_nxt, s.maxseq, s.cwnd, s.ssthresh = 10, 12, 12, 2.5, 2
    ack = Packet(s, 0, 10, 1, 40, True)
    s.on_ack(ack)
    s.on_ack(ack)
    assert [seq for _, seq, _ in p.sends] == [12, 13]
    s.cwnd = 2.4                     # 14 <= 9 + 2.4 + 3 = 14.4: sends; with 2.0: 14 <= 14
    s.on_ack(ack)
    s.cwnd = 1.9                     # 15 <= 9 + 1.9 + 4 = 14.9: no
    s.on_ack(ack)
    assert [seq for _, seq, _ in p.sends] == [12, 13, 14]


def test_newreno_restarts_the_timer_only_on_the_first_partial_ack():
    # 7, 9 and 11 lost: fast retransmit at t=0.4; partial ACK 9 at t=0.5 restarts the timer
    # (rto 1.5 s: srtt 1 tick, rttvar 1/2 tick), partial ACK 11 at t=0.6 does not (ns
    # newreno_changes1_, RFC 6582 "Impatient"): the deadline stays 0.5 + 1.5 = 2.0 s.
    p = Pair("newreno", drop={(7, 1), (9, 1), (11, 1)}).run(0.65)
    assert p.events("partial") == [(0.5, 9), (0.6, 11)]
    assert p.sends_at(0.6)[0] == (11, 2)
    assert p.sender.rto() == 1.5
    assert p.sender.timer_deadline == pytest.approx(2.0)


def test_long_backoff_forgets_srtt():
    # Packet 0 gives one sample (1 tick: srtt 8, rttvar 2, rto 3 ticks = 1.5 s); packet 1 is
    # lost four times: timeouts at 1.6 (backoff 2), 4.6 (4), 10.6 (8) and 22.6 (16). Past a
    # backoff of 8, ns folds srtt into rttvar (2 + 8 >> 3 = 3) and sets srtt to 0.
    p = Pair("tahoe", drop={(1, n) for n in range(1, 5)})
    p.run(10.7)
    assert [t for t, _ in p.events("timeout")] == [1.6, 4.6, 10.6]
    assert (p.sender.srtt, p.sender.rttvar, p.sender.backoff) == (8, 2, 8)
    p.run(22.65)
    assert (p.sender.srtt, p.sender.rttvar, p.sender.backoff) == (0, 3, 16)
    assert p.sender.rto() == 24.0                # rtxcur 1.5 s x 16 until the next sample
    p.run(22.85)                                 # the next sample starts afresh: 1 tick
    assert (p.sender.srtt, p.sender.rttvar, p.sender.backoff) == (8, 2, 1)


def test_receiver_counts_duplicates_and_spurious_fast_retransmits():
    p = Pair("tahoe")
    r, s = p.receiver, p.sender
    s.epoch = 1

    def data(seq, kind):
        r.on_data(Packet(s, seq, 0, 1, 576, False, kind))

    data(0, FIRST)
    data(2, FIRST)                  # out of order: held
    data(2, FAST_RETX)              # held already: a spurious fast retransmission
    data(1, FAST_RETX)              # fills the hole: a needed one
    data(0, RETX)                   # held already: a duplicate, not a fast retransmission
    data(1, FAST_RETX)              # held already: spurious
    assert r.next == 3
    assert p.counters.duplicate_data == 3
    assert p.counters.spurious_fast_retx == 2


def test_reno_timeout_during_recovery_halves_the_uninflated_window():
    # Reno, 15 lost and its fast retransmission too. t=0.5: fast retransmit, cwnd 16 / 2 = 8,
    # ssthresh 8; the duplicate ACKs of every new packet inflate dupwnd (to 112 here) until
    # the timer, restarted at 0.5 with rto 1.5 s, fires at 2.0: ns Reno clears dupwnd before
    # the halving, so ssthresh = floor(8 / 2) = 4, and resends 15 alone.
    p = Pair("reno", drop={(15, 1), (15, 2)}).run(1.95)
    assert p.sender.in_recovery and p.sender.cwnd == 8.0 and p.sender.dupwnd > 8
    p.run(2.05)
    assert p.events("timeout") == [(2.0, 15)]
    assert (p.sender.ssthresh, p.sender.cwnd, p.sender.dupwnd) == (4, 1.0, 0)
    assert p.sends_at(2.0) == [(15, 3)]
