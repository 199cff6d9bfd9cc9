"""TCP senders (Tahoe, Reno, NewReno) and the receiver, counted in packets as in ns.

The machinery follows ns-2's ``TcpAgent`` family (the simulator the papers used), which is the
BSD 4.3/4.4 algorithm counted in packets instead of bytes:

* windows in packets, starting at ``initial_window`` (1 in the papers, 10 in RFC 6928); a
  timeout restarts from one packet; the usable window is ``min(floor(cwnd), max_window)``;
* slow start (``cwnd += 1`` per new ACK while ``cwnd < ssthresh``), congestion avoidance
  (``cwnd += 1/cwnd`` per new ACK); one increase per ACK, however many packets it covers
  (so delayed ACKs slow the growth, as in ns and BSD);
* loss response ``ssthresh = max(floor(min(cwnd, max_window) / 2), 2)``;
* Tahoe: on the third duplicate ACK (fast retransmit) or a timeout, ``cwnd = 1`` and go back N:
  resend from the first unacknowledged packet in slow start;
* Reno (ns ``tcp-reno.cc``): fast retransmit, then fast recovery with ns's two-part window:
  ``cwnd = min(cwnd, max_window) / 2`` (ns ``precisionReduce_``: not rounded) plus
  ``dupwnd = 3``, ``dupwnd += 1`` per further duplicate ACK; the usable window is
  ``floor(cwnd) + dupwnd``. The first new ACK sets ``dupwnd = 0``, ends recovery and then opens
  ``cwnd`` as any new ACK does (``+1/cwnd``);
* NewReno (ns ``tcp-newreno.cc``, RFC 6582): as Reno, but a partial ACK (one that does not pass
  ``recover``) retransmits the next hole and deflates the window by the amount acknowledged
  minus one (ns ``partial_window_deflation_``), without opening ``cwnd``; duplicate ACKs keep
  being counted across it (so they keep inflating ``dupwnd``), and the retransmission timer is
  restarted only by the first partial ACK of a recovery (ns ``newreno_changes1_``, RFC 6582's
  "Impatient" variant). Only a full ACK ends recovery;
* the guard against a second fast retransmit in one window (ns ``bug_fix_``): a fast retransmit
  happens only if ``highest_ack > recover``, where ``highest_ack = snd_una - 1`` is the last
  in-order packet and ``recover`` the highest packet sent at the last fast retransmit or
  timeout; ns's ``bugfix_ss_`` exception also allows it when ``highest_ack == 0``. So duplicate
  ACKs for ``recover + 1``, which a Tahoe sender's go-back-N resends of packets the receiver
  already holds produce after a window's last hole is filled, do not trigger one;
* limited transmit (RFC 3042, ns ``singledup_``; off by default, as in the papers' ns-1): the
  first and second duplicate ACKs each send one new packet if
  ``snd_nxt < snd_una + cwnd + dupacks``;
* retransmission timer: RTT in ticks of ``tick`` seconds (0.5 s in the papers), Jacobson/Karels
  ``srtt`` (x8) and ``rttvar`` (x4) in integer ticks, ``rto = (srtt + 4 rttvar) ticks``,
  at least two ticks and ``rto_min``, times the backoff, capped at ``rto_max``; before the first
  sample ``rto = rto_init``. A sample counts the boundaries of the sender's tick clock crossed
  between sending and the ACK, as ns does without timestamps (``rtt_update``):
  ``floor((rtt + (send_time + boot_time) mod tick) / tick)``, at least 1, where ``boot_time``
  is the phase of this host's clock (ns draws it uniformly in ``[0, tick)``); with
  ``rtt_timestamps`` it is ``rtt / tick`` rounded instead (ns ``timestamps_``). One segment is
  timed at a time; a retransmission cancels the measurement (Karn's rule), and the backoff is
  kept until a new valid sample. Each timeout doubles the backoff, up to ``max_backoff``; past
  a backoff of 8 the smoothed RTT is folded into ``rttvar`` and forgotten, so the next sample
  starts the estimator afresh (ns ``rtt_backoff``, from 4.4BSD). The timer restarts on each new
  ACK.
* phase-effect remedy (ns ``overhead_``): with ``send_overhead > 0`` a packet that the window
  allows is not sent at once but after a uniform random delay in ``[0, send_overhead)``, one
  packet per delay (ns's ``delsnd_timer_``), as Floyd and Jacobson, "On traffic phase effects
  in packet-switched gateways", propose for simulations.

ECN (RFC 3168; ``ecn``, off by default as in the papers): first transmissions are
ECN-capable (ECT; retransmissions are not, Section 6.1.5). The receiver echoes a mark (CE) as
ECN-Echo on every ACK until a data packet with CWR arrives. An ACK with ECN-Echo reduces the
window once per window of data: outside loss recovery, and only if it covers every packet sent
at the last reduction (ECN, fast retransmit or timeout) and the next one (ns-2's
``highest_ack_ > recover_``: that packet carries CWR, and until it arrives the receiver still
echoes the marks already answered). Tahoe, Reno and NewReno halve ``cwnd`` (not below one
packet) with ``ssthresh`` as at a loss, and that ACK does not open the window. At a one-packet
window the sender then waits a retransmission timeout before sending again (Section 6.1.2). A
fast retransmit or timeout within the window of an ECN reduction does not reduce ``ssthresh``
again. The first new packet after any reduction carries CWR.

Counted per run (``Counters``): ``spurious_fast_retx`` are fast retransmissions that reach a
receiver which already holds the packet (a copy sent earlier got through; a fast-retransmitted
copy lost on the way is not classified), and ``duplicate_data`` every data packet that reaches a
receiver which already holds it (go-back-N resends included), and ``ecn_cuts`` the window
reductions for ECN-Echo.

A sender runs either one unlimited (bulk) transfer, or repeated transfers of ``transfer_pkts``
packets: when the last packet of a transfer is acknowledged, the transfer time is recorded and
all TCP state (window, ssthresh, RTT estimates, backoff, sequence numbers) is re-initialised
for the next one, as in the FPQ paper's experiments. Transfers are told apart by an epoch
number carried in every packet, so stale packets of an old transfer never confuse a new one.

The receiver acknowledges cumulatively. With delayed ACKs it acknowledges every
``ack_every``-th in-order packet, or when the delayed-ACK timer (started by the first
unacknowledged packet) expires: ``delack_timeout`` later (ns), or with ``delack_tick`` at the
next multiple of ``delack_timeout`` on a global clock (BSD's 200 ms fast timer);
out-of-order packets, duplicates and packets that fill a hole
are acknowledged at once.

Timers are lazy: each connection has at most one pending timer event; restarting a timer only
moves its deadline, and an event that fires before the deadline re-arms itself.
"""

import math
from dataclasses import dataclass, fields

from .engine import Packet

__all__ = ["TcpParams", "Endpoint", "Sender", "Receiver", "VARIANTS", "SACK_VARIANTS"]

VARIANTS = ("tahoe", "reno", "newreno", "sack", "cubic")
SACK_VARIANTS = ("sack", "cubic")      # senders in fpq_sim.tcp_sack; their receivers SACK

# Packet.retx values: the first transmission, a retransmission, a fast retransmission
FIRST, RETX, FAST_RETX = 0, 1, 2


@dataclass(slots=True)
class TcpParams:
    """Per-connection TCP parameters (seconds, packets), each converted to its declared type
    (``None`` kept where it is allowed). ``transfer_pkts`` None: one unlimited transfer;
    ``initial_ssthresh`` None: ``max_window``. ``variant`` must be one of ``VARIANTS``."""
    variant: str = "tahoe"
    max_window: int = 113
    tick: float = 0.5
    rto_init: float = 3.0
    rto_min: float = 0.0
    rto_max: float = 64.0
    max_backoff: int = 64
    dupack_threshold: int = 3
    delayed_ack: bool = False
    delack_timeout: float = 0.2
    ack_every: int = 2
    transfer_pkts: int | None = None
    think_time: float = 0.0
    packet_bytes: int = 576
    ack_bytes: int = 40
    initial_ssthresh: int | None = None
    delack_tick: bool = False
    limited_transmit: bool = False
    rtt_timestamps: bool = False
    send_overhead: float = 0.0
    sack_blocks: int = 3
    ecn: bool = False
    initial_window: int = 1

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ValueError(f"variant: {self.variant!r} must be one of {', '.join(VARIANTS)}")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type in (int, float, bool):
                setattr(self, f.name, f.type(value))
            elif value is not None and f.type == int | None:
                setattr(self, f.name, int(value))
        if self.initial_ssthresh is None:
            self.initial_ssthresh = self.max_window


class Counters:
    """Packet accounting shared by all connections of a network (whole run, no warm-up)."""
    __slots__ = ("data_sent", "data_retx", "data_delivered", "acks_sent", "acks_delivered",
                 "timeouts", "fast_retx", "spurious_fast_retx", "duplicate_data", "ecn_cuts")

    def __init__(self):
        for name in self.__slots__:
            setattr(self, name, 0)

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}


class Endpoint:
    """One end of a connection: what a sender and a receiver both hold.

    Parameters
    ----------
    sim : fpq_sim.engine.Simulator
    params : TcpParams
    index : int
        The connection's number in its network (``Packet.conn.index``).
    output : callable
        ``output(pkt)`` hands a packet to the network at ``sim.now``.
    counters : Counters
        The packet accounting this end adds to.
    log : list or None
        A list to append ``(time, what, detail)`` to, for tests.

    ``epoch`` is the transfer the end is in (packets of another are stale or start a new one).
    """
    __slots__ = ("sim", "p", "index", "output", "counters", "epoch", "log")

    def __init__(self, sim, params, index, output, counters, log=None):
        self.sim = sim
        self.p = params
        self.index = index
        self.output = output
        self.counters = counters
        self.epoch = 0
        self.log = log


class Sender(Endpoint):
    """A TCP sender. ``output(pkt)`` hands a data packet to the network at ``sim.now``;
    ``on_transfer(sender, start, end)`` is called when a finite transfer completes.

    ``rng`` (a ``random.Random``) draws the ``send_overhead`` delays and, with
    ``workload="telnet"``, the application's exponential write intervals; ``boot_time`` is the
    phase of this host's tick clock for RTT sampling (ns draws it in ``[0, tick)``)."""

    __slots__ = ("on_transfer", "flow_key", "cwnd", "dupwnd", "ssthresh", "snd_una",
                 "snd_nxt", "maxseq", "dupacks", "recover", "in_recovery", "first_partial",
                 "rtt_active", "rtt_seq", "rtt_ts", "srtt", "rttvar", "rtxcur", "backoff",
                 "timer_deadline", "timer_event_at", "transfer_start", "limit", "active",
                 "trace", "receiver", "rng", "boot_time", "delsnd_pending", "app_interval",
                 "ecn_cut", "last_cut", "cwr_pending", "ecn_hold")

    def __init__(self, sim, params, index, output, counters, on_transfer=None, flow_key=0,
                 log=None, rng=None, boot_time=0.0, app_interval=None):
        super().__init__(sim, params, index, output, counters, log)
        self.on_transfer = on_transfer
        self.flow_key = flow_key
        self.timer_deadline = math.inf
        self.timer_event_at = math.inf   # time of the one live timer event (inf: none)
        self.active = False
        self.receiver = None
        self.rng = rng
        self.boot_time = float(boot_time)
        self.delsnd_pending = False
        # telnet-like application: one packet written every Exp(app_interval) seconds
        self.app_interval = app_interval
        if (params.send_overhead > 0 or app_interval is not None) and rng is None:
            raise ValueError("Sender: send_overhead and app_interval need an rng")
        self._reset()

    # ---- state ----------------------------------------------------------------------------------
    def _reset(self):
        p = self.p
        self.cwnd = float(p.initial_window)   # RFC 6928 (the papers' hosts: 1)
        self.dupwnd = 0           # ns dupwnd_: the fast-recovery inflation, in packets
        self.ssthresh = p.initial_ssthresh
        self.snd_una = 0          # first unacknowledged packet (ns highest_ack_ + 1)
        self.snd_nxt = 0          # next packet to send (ns t_seqno_; go-back-N moves it back)
        self.maxseq = 0           # one past the highest packet ever sent (ns maxseq_ + 1)
        self.dupacks = 0
        self.recover = 0          # ns recover_: highest packet sent at the last loss response
        self.in_recovery = False
        self.first_partial = True
        self.rtt_active = False
        self.rtt_seq = -1
        self.rtt_ts = 0.0
        self.srtt = 0             # ticks x 8; 0 = no sample yet
        self.rttvar = 0           # ticks x 4
        self.rtxcur = p.rto_init
        self.backoff = 1
        self.timer_deadline = math.inf
        self.limit = p.transfer_pkts if p.transfer_pkts is not None else math.inf
        self.ecn_cut = -1         # highest packet sent at the last ECN reduction
        self.last_cut = -1        # ... at the last reduction of any kind (ECN, loss)
        self.cwr_pending = False  # the next new packet carries CWR
        self.ecn_hold = 0.0       # no sending before this time (ECN-Echo at a one-packet window)
        if self.app_interval is not None:
            self.limit = 0        # the application has written nothing yet

    def start(self, _=None):
        """Begin the first transfer (scheduled at the flow's start time)."""
        self.active = True
        self._begin_transfer()
        if self.app_interval is not None:
            self.sim.at(self.sim.now + self.rng.expovariate(1.0 / self.app_interval),
                        self._app_write, None)

    def _app_write(self, _):
        """The telnet-like application writes one packet (ns Application/Telnet)."""
        self.limit += 1
        self._send_much()
        self.sim.at(self.sim.now + self.rng.expovariate(1.0 / self.app_interval),
                    self._app_write, None)

    def _begin_transfer(self, _=None):
        self.epoch += 1
        self._reset()
        self.transfer_start = self.sim.now
        self._send_much()

    def window(self):
        """The usable window: ``floor(cwnd) + dupwnd``, at most ``max_window`` (ns
        ``RenoTcpAgent::window``; ``dupwnd`` is 0 outside fast recovery)."""
        w = int(self.cwnd) + self.dupwnd
        return w if w < self.p.max_window else self.p.max_window

    def rto(self):
        """The current retransmission timeout in seconds (with backoff, bounds)."""
        p = self.p
        t = self.rtxcur * self.backoff
        if t < p.rto_min:
            t = p.rto_min
        if t > p.rto_max:
            t = p.rto_max
        if t < 2 * p.tick:
            t = 2 * p.tick
        return t

    # ---- sending --------------------------------------------------------------------------------
    def _send_much(self, force=False):
        """Send what the window allows (ns ``send_much``). With ``send_overhead`` the sending
        waits a random delay first (ns ``overhead_`` and ``delsnd_timer_``): a call while that
        delay runs does nothing, and when it ends everything the window then allows goes."""
        if self.ecn_hold > self.sim.now:
            if self.ecn_hold == math.inf:
                self.ecn_hold = self.sim.now + self.rto()
                self.sim.at(self.ecn_hold, self._ecn_release, self.epoch)
            return
        win = self.snd_una + self.window()
        limit = self.limit
        if win > limit:
            win = limit
        if self.snd_nxt >= win:
            return
        if self.p.send_overhead > 0 and not force:
            if not self.delsnd_pending:
                self.delsnd_pending = True
                self.sim.at(self.sim.now + self.rng.uniform(0.0, self.p.send_overhead),
                            self._delayed_send, self.epoch)
            return
        while self.snd_nxt < win:
            self._output(self.snd_nxt)
            self.snd_nxt += 1

    def _delayed_send(self, epoch):
        self.delsnd_pending = False
        if self.active and epoch == self.epoch:
            self._send_much(force=True)

    def _output(self, seq, kind=RETX):
        """Send packet ``seq``; ``kind`` marks a retransmission as a fast one (FAST_RETX)."""
        c = self.counters
        c.data_sent += 1
        retx = seq < self.maxseq
        if retx:
            c.data_retx += 1
            if self.rtt_active and seq <= self.rtt_seq:
                self.rtt_active = False        # Karn: the sample would be ambiguous
        else:
            kind = FIRST
            self.maxseq = seq + 1
            if not self.rtt_active:
                self.rtt_active = True
                self.rtt_seq = seq
                self.rtt_ts = self.sim.now
        if self.timer_deadline == math.inf:
            self._set_timer()
        if self.log is not None:
            self.log.append((self.sim.now, "send", seq))
        pkt = Packet(self, seq, 0, self.epoch, self.p.packet_bytes, False, kind)
        if kind == FIRST and self.p.ecn:
            pkt.ect = True                     # retransmissions are not ECN-capable (6.1.5)
            if self.cwr_pending:
                pkt.cwr = True
                self.cwr_pending = False
        self.output(pkt)

    # ---- timer ----------------------------------------------------------------------------------
    def _set_timer(self):
        d = self.timer_deadline = self.sim.now + self.rto()
        if d < self.timer_event_at:
            # an earlier deadline than the live event (RTO shrank): schedule a new event; the
            # old one finds it is no longer the live one and does nothing
            self.timer_event_at = d
            self.sim.at(d, self._timer_event, d)

    def _cancel_timer(self):
        self.timer_deadline = math.inf

    def _timer_event(self, t):
        if t != self.timer_event_at:
            return
        self.timer_event_at = math.inf
        d = self.timer_deadline
        if d == math.inf:
            return
        if d > t:
            self.timer_event_at = d
            self.sim.at(d, self._timer_event, d)
            return
        self._timeout()

    def _timeout(self):
        """Retransmission timeout (ns ``TcpAgent::timeout``, ``RenoTcpAgent::timeout``): the
        congestion response (``_timeout_response``), the timer backed off, recovery left
        (``_forget_after_timeout``), and go back N from ``snd_una``."""
        self.counters.timeouts += 1
        if self.log is not None:
            self.log.append((self.sim.now, "timeout", self.snd_una))
        self._timeout_response(self.maxseq - self.snd_una)
        if self.backoff < self.p.max_backoff:
            self.backoff *= 2
        if self.backoff > 8:
            # backed off this far: fold srtt into rttvar and start the estimator afresh with
            # the next sample (ns rtt_backoff, 4.4BSD tcp_timers)
            self.rttvar += self.srtt >> 3
            self.srtt = 0
        self.in_recovery = False
        self.dupacks = 0
        self.recover = self.maxseq - 1
        self._window_reduced()
        self.ecn_hold = 0.0
        self._forget_after_timeout()
        self.rtt_active = False
        self.snd_nxt = self.snd_una          # go back N
        self.timer_deadline = math.inf
        self._set_timer()                     # with the backed-off RTO
        self._send_much()

    def _timeout_response(self, flight):
        """ns Reno's response to a timeout: ``ssthresh`` from the window, as at a fast
        retransmit (``_slowdown``; ``flight`` is not used), then ``cwnd = 1``."""
        self.dupwnd = 0                       # before the halving, as ns Reno does
        if not self._ecn_answered():
            self._slowdown()
        self.cwnd = 1.0

    def _forget_after_timeout(self):
        """What a timeout makes the sender forget besides its window and RTT sample: nothing
        here (the SACK senders' scoreboard, ``fpq_sim.tcp_sack``)."""

    def _limited_transmit(self):
        """RFC 3042 / ns ``send_one``: an early duplicate ACK sends one new packet if the
        window, the transfer and ``cwnd + dupacks`` allow it."""
        seq = self.snd_nxt
        # ns: t_seqno_ <= highest_ack_ + cwnd_ + dupacks_, highest_ack_ = snd_una - 1
        if (seq < self.snd_una + self.p.max_window and seq < self.limit
                and seq <= self.snd_una - 1 + self.cwnd + self.dupacks):
            self._output(seq)
            self.snd_nxt = seq + 1

    def _ecn_answered(self):
        """Whether an ECN reduction already answered the congestion of this window of data
        (its packets are not all acknowledged yet): a loss in it does not cut ssthresh again
        (RFC 3168 Section 6.1.2)."""
        return self.snd_una <= self.ecn_cut

    def _ecn_echo(self, ack):
        """An ACK with ECN-Echo: reduce the window if this window of data has not been
        answered yet (see the module; RFC 3168 Section 6.1.2). Returns whether it did."""
        # ns-2's test highest_ack > recover: the ACK covers the first packet sent after the
        # last reduction too, the one carrying CWR; until then the receiver may still be
        # echoing the marks already answered
        if not self.p.ecn or self.in_recovery or ack <= self.last_cut + 1:
            return False
        one_packet = self.cwnd < 2.0
        self._ecn_response()
        self.ecn_cut = self.maxseq - 1
        self._window_reduced()
        self.counters.ecn_cuts += 1
        if self.log is not None:
            self.log.append((self.sim.now, "ecn_cut", ack))
        if one_packet:
            self.ecn_hold = math.inf          # from the RTO this ACK leaves (_send_much)
        return True

    def _window_reduced(self):
        """After any reduction of the window: the next new packet carries CWR, and ECN-Echo
        waits for the next window of data."""
        self.cwr_pending = True
        self.last_cut = self.maxseq - 1

    def _ecn_release(self, epoch):
        if self.active and epoch == self.epoch:
            self._send_much()

    def _ecn_response(self):
        """The window reduction for ECN-Echo: ``cwnd`` halved, not below one packet;
        ``ssthresh`` as at a loss (``_slowdown``)."""
        half = self._slowdown() / 2
        self.cwnd = half if half > 1.0 else 1.0

    def _slowdown(self):
        w = self.cwnd + self.dupwnd
        if w > self.p.max_window:
            w = self.p.max_window
        s = int(w / 2)
        self.ssthresh = s if s > 2 else 2
        return w

    # ---- ACKs -----------------------------------------------------------------------------------
    def on_ack(self, pkt):
        """An ACK arrives (event)."""
        self.counters.acks_delivered += 1
        if pkt.epoch != self.epoch or not self.active:
            return                                  # from a finished transfer
        ack = pkt.ack
        cut = pkt.ece and self._ecn_echo(ack)
        if ack > self.snd_una:
            self._new_ack(ack, cut)
        elif ack == self.snd_una and self.maxseq > self.snd_una:
            self._dup_ack()

    def _rtt_update(self):
        p = self.p
        now = self.sim.now
        tao = now - self.rtt_ts
        if p.rtt_timestamps:
            t_rtt = int(tao / p.tick + 0.5)
        else:
            # ticks of this host's clock crossed between sending and now (ns rtt_update)
            tickoff = math.fmod(self.rtt_ts + self.boot_time, p.tick)
            t_rtt = int((tao + tickoff) / p.tick)
        if t_rtt < 1:
            t_rtt = 1
        if self.srtt:
            delta = t_rtt - (self.srtt >> 3)
            self.srtt += delta
            if self.srtt <= 0:
                self.srtt = 1
            if delta < 0:
                delta = -delta
            delta -= self.rttvar >> 2
            self.rttvar += delta
            if self.rttvar <= 0:
                self.rttvar = 1
        else:
            self.srtt = t_rtt << 3
            self.rttvar = t_rtt << 1
        self.rtxcur = (((self.rttvar << 3) + self.srtt) >> 3) * p.tick

    def _open_cwnd(self):
        """ns ``opencwnd``: slow start below ssthresh, else ``+1/cwnd`` per new ACK."""
        if self.cwnd < self.ssthresh:
            self.cwnd += 1.0
        else:
            self.cwnd += 1.0 / self.cwnd

    def _new_ack(self, ack, ecn_cut=False):
        """A new ACK; ``ecn_cut``: it carried an ECN-Echo that reduced the window, so it does
        not open it."""
        acked = ack - self.snd_una
        if self.in_recovery and self.p.variant == "newreno" and ack <= self.recover:
            self._partial_ack(ack, acked)
            return
        if self.rtt_active and ack > self.rtt_seq:
            self.rtt_active = False
            self.backoff = 1
            self._rtt_update()
        if self.in_recovery:
            # Reno's first new ACK, NewReno's full ACK: deflate and leave recovery
            self.in_recovery = False
            self.dupwnd = 0
        self.first_partial = True
        if not ecn_cut:
            self._open_cwnd()
        self.dupacks = 0
        self.snd_una = ack
        if self.snd_nxt < ack:
            self.snd_nxt = ack
        if ack >= self.limit and self.app_interval is None:
            self._finish()
            return
        if ack < self.maxseq:
            self._set_timer()
        else:
            self._cancel_timer()
        self._send_much()

    def _partial_ack(self, ack, acked):
        """NewReno partial ACK (ns ``partialnewack_helper``): deflate by ``acked - 1``,
        retransmit the next hole; the timer restarts only on the first partial ACK."""
        if self.log is not None:
            self.log.append((self.sim.now, "partial", ack))
        if self.first_partial:
            self.first_partial = False
            self._set_timer()
        if self.dupwnd > acked:
            self.dupwnd -= acked - 1
        else:
            self.cwnd -= acked - self.dupwnd
            self.dupwnd = 1       # ns: stays > 0 to flag fast recovery
        if self.cwnd < 1.0:
            self.cwnd = 1.0
        self.snd_una = ack
        if self.snd_nxt < ack:
            self.snd_nxt = ack
        self._output(ack, FAST_RETX)
        self._send_much()

    def _fast_retx_allowed(self):
        """ns ``dupack_action``'s guard: ``highest_ack > recover`` (``bug_fix_``), or
        ``highest_ack == 0`` (``bugfix_ss_``: the first data packet was lost)."""
        highest_ack = self.snd_una - 1
        return highest_ack > self.recover or highest_ack == 0

    def _dup_ack(self):
        p = self.p
        self.dupacks += 1
        if self.dupacks == p.dupack_threshold:
            if not self._fast_retx_allowed():
                if self.log is not None:
                    self.log.append((self.sim.now, "fast_retx_refused", self.snd_una))
                return
            self.counters.fast_retx += 1
            if self.log is not None:
                self.log.append((self.sim.now, "fast_retx", self.snd_una))
            # after an ECN reduction in this window, the window stays as it is
            w = 2.0 * self.cwnd if self._ecn_answered() else self._slowdown()
            self.recover = self.maxseq - 1
            self._window_reduced()
            self.rtt_active = False
            self._set_timer()
            if p.variant == "tahoe":
                self.cwnd = 1.0
                self.snd_nxt = self.snd_una
                self._send_much()
            else:
                self.in_recovery = True
                self.first_partial = True
                half = w / 2
                self.cwnd = half if half > 1.0 else 1.0
                self._output(self.snd_una, FAST_RETX)
                self.dupwnd = p.dupack_threshold
                self._send_much()
        elif self.dupacks > p.dupack_threshold:
            if self.in_recovery:
                self.dupwnd += 1
                self._send_much()
        elif p.limited_transmit:
            self._limited_transmit()

    def _finish(self):
        self._cancel_timer()
        now = self.sim.now
        if self.on_transfer is not None:
            self.on_transfer(self, self.transfer_start, now)
        if self.p.think_time > 0:
            self.active = False
            self.epoch += 1       # ignore late ACKs while thinking
            self.sim.at(now + self.p.think_time, self._restart, None)
        else:
            self._begin_transfer()

    def _restart(self, _):
        self.active = True
        self._begin_transfer()


class Receiver(Endpoint):
    """A TCP receiver. ``output(pkt)`` hands an ACK to the network at ``sim.now``;
    ``on_deliver(receiver, n)`` counts packets delivered in order (goodput)."""

    __slots__ = ("next", "ooo", "unacked", "delack_deadline", "delack_pending", "delivered",
                 "sender", "sack", "arrivals", "ece")

    def __init__(self, sim, params, index, output, counters, log=None):
        super().__init__(sim, params, index, output, counters, log)
        self.next = 0
        self.ooo = set()
        self.unacked = 0
        self.delack_deadline = math.inf
        self.delack_pending = False
        self.delivered = 0        # in-order packets delivered, all transfers
        self.sender = None
        self.sack = params.variant in SACK_VARIANTS
        self.arrivals = {}        # SACK: out-of-order packet -> when it (last) arrived
        self.ece = False          # echo ECN-Echo on every ACK until a packet with CWR

    def on_data(self, pkt):
        """A data packet arrives (event)."""
        self.counters.data_delivered += 1
        if pkt.epoch != self.epoch:
            if pkt.epoch < self.epoch:
                return            # stale copy from a finished transfer
            self.epoch = pkt.epoch  # a new transfer: fresh receiver state
            self.next = 0
            self.ooo.clear()
            self.arrivals.clear()
            self.unacked = 0
            self.delack_deadline = math.inf
            self.ece = False
        if pkt.cwr:
            self.ece = False
        if pkt.ce:
            self.ece = True
        seq = pkt.seq
        if seq == self.next:
            self.next += 1
            self.delivered += 1
            filled = False
            if self.ooo:
                ooo = self.ooo
                while self.next in ooo:
                    ooo.discard(self.next)
                    self.arrivals.pop(self.next, None)
                    self.next += 1
                    self.delivered += 1
                filled = True
            if filled or not self.p.delayed_ack:
                self._ack()
            else:
                self.unacked += 1
                if self.unacked >= self.p.ack_every:
                    self._ack()
                elif self.delack_deadline == math.inf:
                    d = self.p.delack_timeout
                    if self.p.delack_tick:      # BSD: the next tick of a global d-second clock
                        self.delack_deadline = (math.floor(self.sim.now / d) + 1) * d
                    else:                       # ns: d seconds after this packet
                        self.delack_deadline = self.sim.now + d
                    if not self.delack_pending:
                        self.delack_pending = True
                        self.sim.at(self.delack_deadline, self._delack_event, None)
        else:
            if seq > self.next and seq not in self.ooo:
                self.ooo.add(seq)
                if self.sack:
                    self.arrivals[seq] = self.counters.data_delivered
            else:                 # the receiver already holds this packet
                c = self.counters
                c.duplicate_data += 1
                if pkt.retx == FAST_RETX:
                    c.spurious_fast_retx += 1
            self._ack()

    def _ack(self):
        self.unacked = 0
        self.delack_deadline = math.inf
        self.counters.acks_sent += 1
        if self.log is not None:
            self.log.append((self.sim.now, "ack", self.next))
        blocks = self._sack_blocks() if self.sack and self.ooo else None
        self.output(Packet(self.sender, 0, self.next, self.epoch, self.p.ack_bytes, True,
                           sack=blocks, ece=self.ece))

    def _sack_blocks(self):
        """RFC 2018 Section 4: up to ``sack_blocks`` blocks of contiguous out-of-order data,
        the one holding the most recently received packet first, then the others from the
        most recently to the least recently changed."""
        seqs = sorted(self.ooo)
        arrivals = self.arrivals
        blocks = []
        start = prev = seqs[0]
        latest = arrivals.get(start, 0)
        for s in seqs[1:]:
            if s != prev + 1:
                blocks.append((latest, start, prev + 1))
                start, latest = s, 0
            prev = s
            a = arrivals.get(s, 0)
            if a > latest:
                latest = a
        blocks.append((latest, start, prev + 1))
        blocks.sort(reverse=True)
        return tuple((a, b) for _, a, b in blocks[:self.p.sack_blocks])

    def _delack_event(self, _):
        self.delack_pending = False
        d = self.delack_deadline
        if d == math.inf:
            return
        if d > self.sim.now:
            self.delack_pending = True
            self.sim.at(d, self._delack_event, None)
            return
        if self.log is not None:
            self.log.append((self.sim.now, "delack_timer", self.next))
        self._ack()
