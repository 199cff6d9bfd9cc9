"""TCP machinery against hand-worked sequences (one-way delay 50 ms, RTT exactly 100 ms, no
serialisation, no delayed ACKs unless stated).

The common start, worked by hand: t=0 send 0 (cwnd 1); t=0.1 ACK 1 -> cwnd 2, send 1, 2;
t=0.2 ACKs 2, 3 -> cwnd 3, 4, send 3..6; t=0.3 ACKs 4..7 -> cwnd 5..8, send 7..14.
"""

import pytest

from fpq_sim.tcp import TcpParams
from tcp_harness import Pair


def test_slow_start_without_loss():
    p = Pair("tahoe").run(0.35)
    assert p.sends_at(0.0) == [(0, 1)]
    assert p.sends_at(0.1) == [(1, 1), (2, 1)]
    assert p.sends_at(0.2) == [(s, 1) for s in range(3, 7)]
    assert p.sends_at(0.3) == [(s, 1) for s in range(7, 15)]
    assert [a[2] for a in p.acks] == [2, 3, 4, 5, 6, 7, 8]


def test_tahoe_fast_retransmit_window_one_then_slow_start():
    # 7 is lost. t=0.4: 8, 9, 10 arrive -> three duplicate ACKs for 7 -> ssthresh = 8/2 = 4,
    # cwnd = 1, go back to 7 and resend it alone; the other 4 dup ACKs change nothing.
    # t=0.5: ACK 15 (receiver had 8..14) -> cwnd 2, send 15, 16; t=0.6: ACKs 16, 17 -> cwnd
    # 3, 4 (slow start up to ssthresh), send 17..20; t=0.7: ACK 18 -> cwnd 4 + 1/4.
    p = Pair("tahoe", drop={(7, 1)}).run(0.75)
    assert p.events("fast_retx") == [(0.4, 7)]
    assert p.sends_at(0.4) == [(7, 2)]
    at_04 = [a for a in p.acks if a[0] == 0.4]
    assert [a[1] for a in at_04] == [7] * 7
    assert all(cwnd == 1 and ssth == 4 for _, _, cwnd, ssth in at_04[2:])
    assert p.sends_at(0.5) == [(15, 1), (16, 1)]
    assert [a[1:3] for a in p.acks if a[0] == 0.5] == [(15, 2.0)]
    assert p.sends_at(0.6) == [(17, 1), (18, 1), (19, 1), (20, 1)]
    assert [a[1:3] for a in p.acks if a[0] == 0.6] == [(16, 3.0), (17, 4.0)]
    assert p.acks[[a[0] for a in p.acks].index(0.7)][1:3] == (18, 4.25)
    assert p.counters.timeouts == 0


def test_tahoe_timeout_window_one_and_slow_start():
    # Everything sent at t=0.3 (7..14) is lost: no dup ACKs, the timer fires. RTT samples so
    # far: 0.1 s = 0 ticks -> 1 tick, so srtt 1, rttvar 1/2 -> rto = 1 + 4*0.5 = 3 ticks =
    # 1.5 s, restarted by the last new ACK at t=0.2 (ACK 3... ACK 7 at 0.3): expiry 1.8 s.
    p = Pair("tahoe", drop={(s, 1) for s in range(7, 15)}).run(2.05)
    assert p.events("timeout") == [(1.8, 7)]
    assert p.sends_at(1.8) == [(7, 2)]
    # 7..14 are all retransmissions now: no RTT sample (Karn), the backoff stays doubled
    assert p.sender.ssthresh == 4 and p.sender.backoff == 2 and p.sender.srtt == 8
    assert p.sends_at(1.9) == [(8, 2), (9, 2)]                # cwnd 2: slow start again


def test_reno_fast_recovery():
    # 7 is lost. t=0.4, dup ACK 3: resend 7, ssthresh 4, cwnd 4 + 3 = 7 (una 7: nothing new);
    # dup 4 -> cwnd 8 (window ends at 15 = snd_nxt), dup 5 -> 9: send 15, dup 6 -> 10: 16,
    # dup 7 -> 11: 17. t=0.5: ACK 15 ends recovery: dupwnd 0, cwnd 4 (= 8 / 2), then opened
    # as by any new ACK (ns opencwnd, cwnd >= ssthresh): 4 + 1/4; window 4: send 18.
    p = Pair("reno", drop={(7, 1)}).run(0.55)
    assert p.events("fast_retx") == [(0.4, 7)]
    assert p.sends_at(0.4) == [(7, 2), (15, 1), (16, 1), (17, 1)]
    at_04 = [a[2] for a in p.acks if a[0] == 0.4]
    assert at_04 == [8, 8, 7, 8, 9, 10, 11]
    at_05 = [a for a in p.acks if a[0] == 0.5]
    assert at_05[0][1:] == (15, 4.25, 4)
    assert p.sends_at(0.5)[0] == (18, 1)
    assert p.counters.timeouts == 0 and not p.sender.in_recovery


def test_reno_two_losses_in_a_window_wait_for_the_timer():
    # Classic Reno leaves recovery at the first new ACK, even a partial one; the second hole
    # (9) then waits for the retransmission timer (no second fast retransmit in the window).
    p = Pair("reno", drop={(7, 1), (9, 1)}).run(3.0)
    assert p.events("fast_retx") == [(0.4, 7)]
    assert p.counters.timeouts == 1
    assert p.events("timeout")[0][1] == 9


def test_newreno_partial_ack():
    # 7 and 9 lost. t=0.4: 8 -> dup 1, 10 -> dup 2, 11 -> dup 3: resend 7, ssthresh 4, cwnd
    # 8 / 2 = 4 and dupwnd 3 (window 7), recover = 14; 12 -> dupwnd 4, 13 -> 5: send 15,
    # 14 -> 6: send 16.
    # t=0.5: the resent 7 fills one hole: ACK 9 <= recover: partial ACK, resend 9 at once,
    # deflate by 2 - 1 (dupwnd 6 -> 5; window 4 + 5 = 9, ends at 18): send 17. The duplicate
    # ACK count is not reset (ns partialnewack), so 15 and 16's duplicate ACKs keep inflating:
    # dupwnd 6, 7: send 18, 19.
    # t=0.6: resent 9 -> ACK 17 > recover: full ACK, dupwnd 0, cwnd 4 opened by 1/4.
    p = Pair("newreno", drop={(7, 1), (9, 1)}).run(0.65)
    assert p.events("fast_retx") == [(0.4, 7)]
    assert p.sends_at(0.4) == [(7, 2), (15, 1), (16, 1)]
    assert p.events("partial") == [(0.5, 9)]
    assert p.sends_at(0.5) == [(9, 2), (17, 1), (18, 1), (19, 1)]
    at_05 = [a[1:3] for a in p.acks if a[0] == 0.5]
    assert at_05 == [(9, 9.0), (9, 10.0), (9, 11.0)]
    first_06 = [a for a in p.acks if a[0] == 0.6][0]
    assert first_06[1:3] == (17, 4.25)
    assert p.counters.timeouts == 0 and not p.sender.in_recovery


def test_rto_doubles_up_to_its_cap():
    # Nothing gets through: no RTT sample, so rto = rto_init = 3 s, doubled per timeout,
    # capped at rto_max = 64 s: expiries after 3, 6, 12, 24, 48, 64, 64 s.
    p = Pair("tahoe", drop_all=True, rto_init=3.0, rto_max=64.0).run(250.0)
    times = [t for t, _ in p.events("timeout")]
    gaps = [round(b - a, 6) for a, b in zip([0.0] + times, times)]
    assert gaps == [3, 6, 12, 24, 48, 64, 64]
    assert all(seq == 0 for _, seq, _ in p.sends)          # always packet 0 again


def test_backoff_multiplier_cap():
    p = Pair("tahoe", drop_all=True, rto_init=1.0, rto_max=1000.0, max_backoff=4).run(60.0)
    times = [t for t, _ in p.events("timeout")]
    gaps = [round(b - a, 6) for a, b in zip([0.0] + times, times)]
    assert gaps[:6] == [1, 2, 4, 4, 4, 4]


def test_karn_keeps_backoff_until_a_valid_sample():
    # Packet 0 is lost twice: timeouts at 3 s and 3 + 6 = 9 s; its third copy is acked at
    # 9.1 s, an ambiguous sample (Karn: not used), so the backoff (4) stays; packets 1, 2
    # are timed afresh and their ACK at 9.2 s gives a sample and resets the backoff.
    p = Pair("tahoe", drop={(0, 1), (0, 2)}, rto_init=3.0).run(9.15)
    assert [t for t, _ in p.events("timeout")] == [3.0, 9.0]
    assert p.sender.backoff == 4 and p.sender.srtt == 0
    assert p.sender.rto() == pytest.approx(12.0)
    p.sim.run(9.25)
    assert p.sender.backoff == 1 and p.sender.srtt == 8      # 1 tick, scaled by 8


def test_delayed_ack_timer_and_every_second_packet():
    # t=0 send 0; it arrives at 0.05 alone: the delayed-ACK timer (0.2 s) sends ACK 1 at 0.25;
    # the sender gets it at 0.3: cwnd 2, send 1, 2; they arrive at 0.35: the second one is
    # acknowledged at once (ACK 3), no timer involved.
    p = Pair("tahoe", delayed_ack=True, delack_timeout=0.2).run(0.36)
    assert p.events("delack_timer") == [(0.25, 1)]
    assert p.events("ack") == [(0.25, 1), (0.35, 3)]
    assert p.sends_at(0.3) == [(1, 1), (2, 1)]


def test_delayed_ack_on_a_global_tick():
    # BSD style: packet 0 arrives at 0.05; the 0.2 s clock ticks at 0.2: ACK then (not 0.25).
    # ACK 1 reaches the sender at 0.25: send 1, 2, which arrive at 0.3: ACK 3 at once.
    p = Pair("tahoe", delayed_ack=True, delack_timeout=0.2, delack_tick=True).run(0.31)
    assert p.events("delack_timer") == [(0.2, 1)]
    assert p.events("ack") == [(0.2, 1), (0.3, 3)]


def test_out_of_order_packet_is_acked_at_once_with_delayed_acks():
    p = Pair("tahoe", delayed_ack=True, drop={(1, 1)}).run(0.36)
    # 1 is lost, 2 arrives at 0.35 out of order: immediate duplicate ACK 1
    assert (0.35, 1) in p.events("ack")


@pytest.mark.parametrize("variant", ["tahoe", "reno", "newreno"])
def test_repeated_transfers_reinitialise_state(variant):
    # 10-packet transfers over a clean path: each takes the same slow-start sequence
    # (1, 2, 4, 3 packets: 4 RTTs = 0.4 s), whatever happened before.
    p = Pair(variant, transfer_pkts=10).run(2.05)
    durations = [round(b - a, 9) for a, b in p.transfers]
    assert durations == [0.4] * 5
    assert p.sender.epoch == 6


def test_stale_packets_of_a_finished_transfer_are_ignored():
    # A copy of an old transfer's data packet (e.g. a go-back-N duplicate still in flight) and
    # an old ACK arrive in the middle of transfer 3 (t = 0.85 s: 0.05 s into it): neither the
    # receiver nor the sender may take them for the new transfer's packets.
    from fpq_sim.engine import Packet
    p = Pair("tahoe", transfer_pkts=10).run(0.85)
    assert p.sender.epoch == 3
    r_next, s_state = p.receiver.next, (p.sender.snd_una, p.sender.cwnd, p.sender.snd_nxt)
    p.receiver.on_data(Packet(p.sender, 5, 0, 2, 576, False))
    p.sender.on_ack(Packet(p.sender, 0, 8, 2, 40, True))
    assert p.receiver.next == r_next
    assert (p.sender.snd_una, p.sender.cwnd, p.sender.snd_nxt) == s_state
    p.sim.run(2.05)
    assert [round(b - a, 9) for a, b in p.transfers] == [0.4] * 5


# One-way delay 0.6 s: every RTT is 1.2 s = 2.4 ticks of 0.5 s. Without timestamps a sample
# counts the ticks of the host's clock (phase 0 here) crossed in flight (ns).
# First sample (packet 0 sent at 0, ACK 1 at 1.2 s): floor(2.4) = 2 ticks: srtt = 2
# (x8 = 16), rttvar = 1 (x4 = 4), rto = srtt + 4 rttvar = 6 ticks = 3 s.
# Second (packet 1 sent at 1.2 s, 0.2 s into a tick; ACK at 2.4 s): floor(2.8) = 2:
# delta 0, rttvar += |0| - 4/4 -> 3 (0.75 tick), rto = (3*8 + 16) >> 3 = 5 ticks = 2.5 s.
# Third (packet 3 sent at 2.4 s, 0.4 s into a tick; ACK 4 at 3.6 s): floor(3.2) = 3:
# delta 1, srtt 17; rttvar += 1 - (3 >> 2 = 0) -> 4; rto = (32 + 17) >> 3 = 6 ticks = 3 s.
# With rtt_timestamps (ns timestamps_) every sample is 2.4 ticks rounded to 2, whatever the
# clock's phase: the third sample then gives delta 0, rttvar 3 - 0 -> 3, rto 2.5 s.
@pytest.mark.parametrize("rtt_timestamps,expected", [
    (False, [(16, 4, 3.0), (16, 3, 2.5), (17, 4, 3.0)]),
    (True, [(16, 4, 3.0), (16, 3, 2.5), (16, 3, 2.5)]),
])
def test_jacobson_karels_estimates_in_ticks(rtt_timestamps, expected):
    p = Pair("tahoe", delay=0.6, rtt_timestamps=rtt_timestamps)
    rtos = []
    for t in (1.25, 2.45, 3.65):
        p.run(t)
        rtos.append((p.sender.srtt, p.sender.rttvar, p.sender.rto()))
    assert rtos == expected


def test_rtt_sample_depends_on_the_clock_phase():
    # RTT 0.1 s with 0.5 s ticks: a packet sent 0.45 s into a tick sees one tick boundary
    # (floor((0.1 + 0.45) / 0.5) = 1), one sent at the start of a tick sees none (0 -> 1 as
    # well, the floor of 1); with 0.05 s ticks and phase 0.03: floor((0.1 + 0.03) / 0.05) = 2.
    p = Pair("tahoe", tick=0.05, boot_time=0.03).run(0.15)
    assert p.sender.srtt == 2 << 3
    q = Pair("tahoe", tick=0.05, boot_time=0.0).run(0.15)
    assert q.sender.srtt == 2 << 3            # floor(0.1 / 0.05) = 2 exactly
    r = Pair("tahoe", tick=0.05, boot_time=0.04, delay=0.06).run(0.15)
    assert r.sender.srtt == 3 << 3            # floor((0.12 + 0.04) / 0.05) = 3


def test_rto_has_a_floor_of_two_ticks_and_rto_min():
    p = Pair("tahoe", delay=0.01).run(0.5)        # RTT 20 ms: 0 ticks -> 1 tick
    assert p.sender.srtt == 8 and p.sender.rto() == 1.5   # 1 + 4 * 0.5 ticks
    q = Pair("tahoe", delay=0.01, rto_min=2.0).run(0.5)
    assert q.sender.rto() == 2.0
    r = Pair("tahoe", delay=0.01, tick=0.1).run(0.5)
    assert r.sender.rto() == pytest.approx(0.3)           # 1 + 4 * 0.5 ticks of 0.1 s
    f = Pair("tahoe", rto_init=0.2, tick=0.5)             # no sample yet: 0.2 s < 2 ticks
    assert f.sender.rto() == 1.0


@pytest.mark.parametrize("variant", ["tahoe", "reno", "newreno"])
def test_maximum_window_caps_packets_in_flight(variant):
    # max_window 4: slow start would send 8 at t=0.3; at most 4 may be outstanding, so from
    # then on exactly 4 packets leave per round trip (and cwnd keeps growing, as in ns).
    p = Pair(variant, max_window=4).run(1.05)
    assert p.sends_at(0.2) == [(3, 1), (4, 1), (5, 1), (6, 1)]   # still below the cap
    for t in (0.3, 0.4, 0.5, 0.6, 0.7):
        assert len(p.sends_at(t)) == 4
    seqs = [s for _, s, _ in p.sends]
    acked = max(a[1] for a in p.acks)
    assert max(seqs) < acked + 4
    assert p.sender.cwnd > 4


def test_tcp_params_take_their_declared_types():
    # scenario values arrive as TOML numbers of either kind: each parameter is converted to
    # its type, None kept where it means "unlimited" / "the maximum window"
    p = TcpParams(variant="reno", max_window=7.0, tick=1, delayed_ack=1, transfer_pkts=10.0)
    assert (p.max_window, p.tick, p.delayed_ack, p.transfer_pkts) == (7, 1.0, True, 10)
    assert [type(v) for v in (p.max_window, p.tick, p.delayed_ack, p.transfer_pkts)] == \
        [int, float, bool, int]
    assert p.initial_ssthresh == 7 and TcpParams().transfer_pkts is None
    assert TcpParams(initial_ssthresh=5.0).initial_ssthresh == 5
    with pytest.raises(ValueError, match="variant: 'vegas' must be one of tahoe, reno"):
        TcpParams(variant="vegas")
