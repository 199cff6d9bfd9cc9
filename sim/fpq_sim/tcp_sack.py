"""TCP senders with SACK loss recovery: ``sack`` (NewReno congestion control) and ``cubic``
(CUBIC congestion control, RFC 9438), counted in packets like the rest of ``fpq_sim.tcp``.

Loss recovery follows RFC 6675 ("A Conservative Loss Recovery Algorithm Based on Selective
Acknowledgment (SACK) for TCP"), with one packet as the unit (SMSS):

* the scoreboard holds the packets above ``snd_una`` that some ACK has SACKed (RFC 2018
  blocks, up to three per ACK, see ``Receiver._sack_blocks``); ``Update()`` adds an ACK's
  blocks (Section 4);
* ``IsLost(s)``: at least DupThresh (3) SACKed packets above ``s``; ``SetPipe()``: for every
  packet from HighACK + 1 to HighData that is not SACKed, one if it is not lost (its original
  is in flight) plus one if it was retransmitted (``s <= HighRxt``); ``NextSeg()``'s four rules:
  (1) the first lost, unSACKed packet above HighRxt and below the highest SACKed one, (2) new
  data, (3) the first unSACKed packet above HighRxt below the highest SACKed one, (4) one rescue
  retransmission of the highest unSACKed outstanding packet per recovery (Section 4);
* a duplicate ACK is one that SACKs new data without moving ``snd_una`` (Section 2); loss
  recovery starts at the DupThresh-th one, or as soon as ``IsLost(HighACK + 1)`` (Section 5,
  steps 1, 2, 4): RecoveryPoint = HighData, the congestion response (NewReno: ``ssthresh =
  cwnd = max(FlightSize / 2, 2)``, RFC 5681; CUBIC below), retransmit ``snd_una``
  (HighRxt = RescueRxt = it), then send while ``cwnd - pipe >= 1`` (step C); every ACK below
  RecoveryPoint updates the scoreboard and pipe and sends again; an ACK above it ends recovery
  (step A). ``cwnd`` does not grow during recovery;
* a retransmission timeout ends recovery, sets RecoveryPoint = HighData and forbids a new
  recovery until HighACK reaches it (Section 5.1); the sender forgets all SACK information
  (RFC 2018 Section 8: the receiver may have reneged), goes back to ``snd_una`` with
  ``cwnd = 1``, and skips packets SACKed afterwards.

CUBIC (RFC 9438) replaces congestion avoidance and the multiplicative decrease: with ``C`` =
0.4 and ``beta`` = 0.7, in congestion avoidance ``W_cubic(t) = C (t - K)^3 + W_max``, ``K =
cbrt((W_max - cwnd_epoch) / C)``, ``t`` the time since the epoch began (the first ACK in
congestion avoidance); per ACK the window moves by ``(target - cwnd) / cwnd`` towards
``target = W_cubic(t + RTT)`` bounded to ``[cwnd, 1.5 cwnd]`` (Sections 4.2, 4.4, 4.5), unless
the Reno-friendly estimate ``W_est`` (grown by ``alpha_cubic`` x segments acked / cwnd,
``alpha_cubic = 3 (1 - beta) / (1 + beta)`` until ``W_est`` reaches ``cwnd_prior``, then 1) is
larger, which then sets ``cwnd`` (Section 4.3). The window grows only while it limits the
sending: not while the receiver's window (``max_window``) or the application (the transfer's
end, a telnet session) does, and ``t`` does not count those periods (Section 5.8, and 4.6's
condition for computing ``ssthresh`` from ``cwnd``). On a fast retransmit: ``W_max = cwnd``,
or ``cwnd (1 + beta) / 2`` if ``cwnd`` is below the previous ``W_max`` (fast convergence,
Section 4.7); ``ssthresh = max(FlightSize x beta, 2)``, ``cwnd = ssthresh`` (Section 4.6).
On a retransmission timeout (Section 4.8) ``cwnd = 1`` as in RFC 5681, and ``ssthresh =
max(beta x cwnd, 2)`` with fast convergence as at a fast retransmit, unless the window was
already reduced for this congestion: a timeout during a SACK recovery keeps the ssthresh the
recovery set, and a repeated timeout of the same data (backed off) holds it (RFC 5681 Section
3.1). FlightSize would be the wrong measure there: after a failed recovery it counts every
packet sent during the recovery too, about 1.7 windows, and the next slow start overshoots
the path again. The next epoch then starts with ``K = 0`` and ``W_max`` = ``W_est`` = the
window at its start. ECN-Echo (RFC 3168, ``fpq_sim.tcp``) is a congestion event as a loss
is, with ``cwnd`` as its basis and ``cwnd`` not below one packet. RTT is a smoothed float estimate from the same timed packets as the
retransmission timer (1/8 gain). Slow start is standard (no HyStart++); fast convergence is
always on; spurious-loss undo (Section 4.9, a MAY) is not modelled.
"""

import math

from .tcp import Sender, FAST_RETX

__all__ = ["SackSender", "CubicSender", "sender_class", "cubic_k", "cubic_window", "CUBIC_C",
           "CUBIC_BETA"]

CUBIC_C = 0.4
CUBIC_BETA = 0.7


def cubic_k(w_max, cwnd_epoch, c=CUBIC_C):
    """RFC 9438 Section 4.2, Figure 2: the time until ``W_cubic`` reaches ``W_max``."""
    d = (w_max - cwnd_epoch) / c
    return math.copysign(abs(d) ** (1.0 / 3.0), d)


def cubic_window(t, k, w_max, c=CUBIC_C):
    """RFC 9438 Section 4.2, Figure 1: ``W_cubic(t) = C (t - K)^3 + W_max`` (packets)."""
    return c * (t - k) ** 3 + w_max


class SackSender(Sender):
    """NewReno congestion control with RFC 6675 SACK loss recovery (see the module)."""

    __slots__ = ("sacked", "high_rxt", "rescue_rxt", "recovery_point", "pipe", "high_sacked",
                 "rto_recovery_point")

    def _reset(self):
        super()._reset()
        self.sacked = set()
        self.high_rxt = -1
        self.rescue_rxt = -1
        self.recovery_point = -1
        self.rto_recovery_point = -1
        self.pipe = 0
        self.high_sacked = -1     # the highest SACKed packet (RFC 6675 "highest octet SACKed")

    # ---- scoreboard (RFC 6675 Section 4) -------------------------------------------------------
    def _update(self, blocks):
        """Record an ACK's SACK blocks; True if one of them SACKs a packet not SACKed before."""
        new = False
        if not blocks:
            return new
        sacked, lo, hi = self.sacked, self.snd_una, self.maxseq
        for a, b in blocks:
            for s in range(a if a > lo else lo, b if b < hi else hi):
                if s not in sacked:
                    sacked.add(s)
                    new = True
                    if s > self.high_sacked:
                        self.high_sacked = s
        return new

    def is_lost(self, seq, _threshold=None):
        """IsLost: at least DupThresh SACKed packets above ``seq``."""
        need = self.p.dupack_threshold
        n = 0
        for s in self.sacked:
            if s > seq:
                n += 1
                if n >= need:
                    return True
        return False

    def set_pipe(self):
        """SetPipe: packets believed to be in the network."""
        pipe = 0
        sacked = self.sacked
        above = sum(1 for s in sacked if s >= self.snd_una)     # SACKed packets above s
        need = self.p.dupack_threshold
        for s in range(self.snd_una, self.maxseq):
            if s in sacked:
                above -= 1
                continue
            if above < need:                                    # not lost
                pipe += 1
            if s <= self.high_rxt:
                pipe += 1
        self.pipe = pipe
        return pipe

    def next_seg(self):
        """NextSeg: ``(seq, rule)`` of the next packet to send, or None."""
        sacked = self.sacked
        start = max(self.high_rxt + 1, self.snd_una)
        hs = self.high_sacked
        need = self.p.dupack_threshold
        above = sum(1 for s in sacked if s >= start)   # SACKed packets at or above s
        first_unsacked = None
        for s in range(start, hs):
            if s in sacked:
                above -= 1
                continue
            if above >= need:                            # rule (1): IsLost(s)
                return s, 1
            if first_unsacked is None:
                first_unsacked = s
        new = self.maxseq
        if new < self.limit and new < self.snd_una + self.p.max_window:
            return new, 2
        if first_unsacked is not None:
            return first_unsacked, 3
        if self.snd_una - 1 > self.rescue_rxt:
            for s in range(self.maxseq - 1, self.snd_una - 1, -1):
                if s not in sacked:
                    return s, 4
        return None

    def _recovery_send(self):
        """Step (C): send while cwnd - pipe >= 1 packet."""
        while self.cwnd - self.pipe >= 1:
            nxt = self.next_seg()
            if nxt is None:
                break
            seq, rule = nxt
            if rule == 2:
                self._output(seq)
                self.snd_nxt = self.maxseq
            else:
                self._output(seq, FAST_RETX)
                if rule == 4:
                    self.rescue_rxt = self.recovery_point
                else:
                    self.high_rxt = seq
            self.pipe += 1

    # ---- sending outside recovery ---------------------------------------------------------------
    def _send_much(self, force=False):
        if self.in_recovery:
            self._recovery_send()
            return
        if not self.sacked:
            super()._send_much(force)
            return
        # go-back-N after a timeout: skip what the receiver has SACKed since (without the
        # send_overhead delay, a rare case)
        win = self.snd_una + self.window()
        if win > self.limit:
            win = self.limit
        sacked = self.sacked
        while self.snd_nxt < win:
            if self.snd_nxt not in sacked:
                self._output(self.snd_nxt)
            self.snd_nxt += 1

    # ---- congestion control hooks (NewReno here; CUBIC overrides) ------------------------------
    def _loss_response(self, flight):
        """Fast retransmit: ``ssthresh = cwnd = max(FlightSize / 2, 2)`` (RFC 5681 eq. 4)."""
        s = int(flight / 2)
        self.ssthresh = s if s > 2 else 2
        self.cwnd = float(self.ssthresh)

    def _timeout_response(self, flight):
        """Timeout: ``ssthresh = max(FlightSize / 2, 2)`` (RFC 5681 eq. 4), ``cwnd = 1``;
        ssthresh stays after an ECN reduction in this window."""
        if not self._ecn_answered():
            s = int(flight / 2)
            self.ssthresh = s if s > 2 else 2
        self.cwnd = 1.0

    def _open_window(self, acked):
        self._open_cwnd()

    # ---- ACKs -----------------------------------------------------------------------------------
    def on_ack(self, pkt):
        self.counters.acks_delivered += 1
        if pkt.epoch != self.epoch or not self.active:
            return
        ack = pkt.ack
        cut = pkt.ece and self._ecn_echo(ack)
        if ack > self.snd_una:
            self._new_ack_sack(ack, pkt.sack, cut)
        elif ack == self.snd_una and self.maxseq > self.snd_una:
            new = self._update(pkt.sack)
            if self.in_recovery:
                self.set_pipe()
                self._recovery_send()
            elif new:
                self._dup_ack_sack()

    def _new_ack_sack(self, ack, blocks, ecn_cut=False):
        """A new ACK with its SACK blocks; ``ecn_cut``: its ECN-Echo reduced the window, so it
        does not open it."""
        acked = ack - self.snd_una
        if self.rtt_active and ack > self.rtt_seq:
            self.rtt_active = False
            self.backoff = 1
            self._rtt_update()
        self.snd_una = ack
        if self.snd_nxt < ack:
            self.snd_nxt = ack
        if self.sacked:
            self.sacked = {s for s in self.sacked if s >= ack}
        if self.high_sacked < ack:
            self.high_sacked = -1 if not self.sacked else max(self.sacked)
        self._update(blocks)
        self.dupacks = 0
        if ack >= self.limit and self.app_interval is None:
            self._finish()
            return
        if ack < self.maxseq:
            self._set_timer()                  # RFC 6298 (5.3)
        else:
            self._cancel_timer()
        if self.in_recovery:
            if ack > self.recovery_point:      # step (A): recovery ends
                self.in_recovery = False
                self._end_recovery()
            else:                              # step (B), (C)
                if self.log is not None:
                    self.log.append((self.sim.now, "partial", ack))
                self.set_pipe()
                self._recovery_send()
                return
        elif not ecn_cut:
            self._open_window(acked)
        self._send_much()

    def _end_recovery(self):
        pass

    def _dup_ack_sack(self):
        """A duplicate ACK outside recovery (RFC 6675 Section 5, steps 1-4)."""
        p = self.p
        self.dupacks += 1
        if self.dupacks >= p.dupack_threshold or self.is_lost(self.snd_una):
            if self.snd_una - 1 < self.rto_recovery_point:
                if self.log is not None:
                    self.log.append((self.sim.now, "fast_retx_refused", self.snd_una))
                return                         # after a timeout: wait for HighACK (5.1)
            self._enter_recovery()
        elif p.limited_transmit:
            self._limited_transmit()

    def _enter_recovery(self):
        self.counters.fast_retx += 1
        if self.log is not None:
            self.log.append((self.sim.now, "fast_retx", self.snd_una))
        self.recovery_point = self.maxseq - 1
        self.recover = self.recovery_point
        if not self._ecn_answered():           # else the window was cut for it already
            self._loss_response(self.maxseq - self.snd_una)
        self._window_reduced()
        self.in_recovery = True
        self.rtt_active = False
        self._set_timer()
        seq = self.snd_una
        self._output(seq, FAST_RETX)
        self.high_rxt = self.rescue_rxt = seq
        self.set_pipe()
        self._recovery_send()

    def _forget_after_timeout(self):
        """A timeout forbids a new recovery until HighACK reaches HighData (RFC 6675 Section
        5.1) and forgets the scoreboard (RFC 2018 Section 8: the receiver may have reneged)."""
        self.rto_recovery_point = self.recovery_point = self.maxseq - 1
        self.sacked = set()
        self.high_sacked = -1
        self.high_rxt = self.snd_una - 1


class CubicSender(SackSender):
    """CUBIC congestion control (RFC 9438) with RFC 6675 SACK loss recovery."""

    __slots__ = ("w_max", "cwnd_prior", "k", "t_epoch", "cwnd_epoch", "w_est", "srtt_s",
                 "after_timeout", "t_last_ca")

    def _reset(self):
        super()._reset()
        self.w_max = 0.0
        self.cwnd_prior = 0.0
        self.k = 0.0
        self.t_epoch = None
        self.cwnd_epoch = 0.0
        self.w_est = 0.0
        self.srtt_s = 0.0
        self.after_timeout = False
        self.t_last_ca = 0.0      # the last ACK in congestion avoidance (app-limited periods)

    def _rtt_update(self):
        rtt = self.sim.now - self.rtt_ts
        self.srtt_s = rtt if self.srtt_s == 0.0 else self.srtt_s + (rtt - self.srtt_s) / 8
        super()._rtt_update()

    def _start_epoch(self, now):
        self.t_epoch = now
        self.cwnd_epoch = self.cwnd
        self.w_est = self.cwnd
        if self.w_max == 0.0 and not self.after_timeout:
            self.cwnd_prior = self.cwnd        # the first slow start ended without a loss (4.10)
        if self.after_timeout or self.w_max < self.cwnd:
            # no loss yet, or the first epoch after a timeout: K = 0, W_max = cwnd (4.8)
            self.w_max = self.cwnd
            self.k = 0.0
            self.after_timeout = False
        else:
            self.k = cubic_k(self.w_max, self.cwnd_epoch)

    def _cwnd_limited(self):
        """Whether the congestion window limits the sending: neither the receiver's window nor
        the application's data (the transfer's end, a telnet session's writes) does."""
        w = int(self.cwnd)
        return w < self.p.max_window and self.snd_una + w <= self.limit

    def _open_window(self, acked):
        if self.cwnd < self.ssthresh:
            self.cwnd += 1.0
            return
        now = self.sim.now
        if self.t_epoch is None:
            self._start_epoch(now)
        elif not self._cwnd_limited():
            # application- or receiver-limited: no growth, and t skips the period (5.8)
            self.t_epoch += now - self.t_last_ca
            self.t_last_ca = now
            return
        self.t_last_ca = now
        t = now - self.t_epoch
        cwnd = self.cwnd
        alpha = (1.0 if self.w_est >= self.cwnd_prior
                 else 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA))
        self.w_est += alpha * acked / cwnd
        if cubic_window(t, self.k, self.w_max) < self.w_est:
            self.cwnd = self.w_est                              # Reno-friendly region
            return
        target = cubic_window(t + self.srtt_s, self.k, self.w_max)
        if target < cwnd:
            target = cwnd
        elif target > 1.5 * cwnd:
            target = 1.5 * cwnd
        self.cwnd = cwnd + (target - cwnd) / cwnd

    def _congestion_event(self, basis):
        """Fast convergence and the multiplicative decrease (4.6, 4.7): ``W_max`` and
        ``cwnd_prior`` from the window before it, ``ssthresh = max(beta x basis, 2)``; the
        epoch ends. Returns ``beta x basis``."""
        cwnd = self.cwnd
        self.w_max = cwnd * (1.0 + CUBIC_BETA) / 2.0 if cwnd < self.w_max else cwnd
        self.cwnd_prior = cwnd
        s = basis * CUBIC_BETA
        self.ssthresh = s if s > 2.0 else 2.0
        self.t_epoch = None
        return s

    def _loss_response(self, flight):
        s = self._congestion_event(flight)
        self.cwnd = s if s > 2.0 else 2.0

    def _ecn_response(self):
        """ECN-Echo: the same congestion event with ``cwnd`` as its basis, ``cwnd`` not below
        one packet (4.6)."""
        w = self.cwnd
        s = self._congestion_event(w if w < self.p.max_window else float(self.p.max_window))
        self.cwnd = s if s > 1.0 else 1.0

    def _timeout_response(self, flight):
        """RFC 9438 Section 4.8 (see the module): ``ssthresh`` from ``cwnd`` unless this
        congestion already reduced it, ``cwnd = 1``, and the next epoch starts afresh."""
        if self.backoff == 1 and not self.in_recovery and not self._ecn_answered():
            w = self.cwnd
            self._congestion_event(w if w < self.p.max_window else float(self.p.max_window))
        self.t_epoch = None
        self.cwnd = 1.0
        self.after_timeout = True


def sender_class(variant):
    """The sender class of a TCP variant."""
    return {"sack": SackSender, "cubic": CubicSender}.get(variant, Sender)
