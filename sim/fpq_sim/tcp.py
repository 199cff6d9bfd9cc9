"""TCP senders (Tahoe, Reno, NewReno) and the receiver, counted in packets as in ns.

The machinery follows ns-2's ``TcpAgent`` family (the simulator the papers used), which is the
BSD 4.3/4.4 algorithm counted in packets instead of bytes:

* windows in packets; the usable window is ``min(floor(cwnd), max_window)``;
* slow start (``cwnd += 1`` per new ACK while ``cwnd < ssthresh``), congestion avoidance
  (``cwnd += 1/cwnd`` per new ACK); one increase per ACK, however many packets it covers
  (so delayed ACKs slow the growth, as in ns and BSD);
* loss response ``ssthresh = max(floor(min(cwnd, max_window) / 2), 2)``;
* Tahoe: on the third duplicate ACK (fast retransmit) or a timeout, ``cwnd = 1`` and go back N:
  resend from the first unacknowledged packet in slow start;
* Reno: fast retransmit, then fast recovery: ``cwnd = ssthresh + 3``, ``+1`` per further
  duplicate ACK, and the first new ACK deflates to ``ssthresh`` and ends recovery;
* NewReno (RFC 6582): as Reno, but a partial ACK (below ``recover``) retransmits the next hole,
  deflates ``cwnd`` by the amount acknowledged minus one, restarts the timer and stays in
  recovery; only a full ACK ends it. All three refuse a second fast retransmit for losses in a
  window already being recovered (ns ``bug_fix_``: the ACK must pass ``recover``);
* retransmission timer: RTT in ticks of ``tick`` seconds (0.5 s in the papers), Jacobson/Karels
  ``srtt`` (x8) and ``rttvar`` (x4) in integer ticks, ``rto = (srtt + 4 rttvar) ticks``,
  at least two ticks and ``rto_min``, times the backoff, capped at ``rto_max``; before the first
  sample ``rto = rto_init``. One segment is timed at a time; a retransmission cancels the
  measurement (Karn's rule), and the backoff is kept until a new valid sample. Each timeout
  doubles the backoff, up to ``max_backoff``. The timer restarts on each new ACK.

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

from .engine import Packet

__all__ = ["TcpParams", "Sender", "Receiver", "VARIANTS"]

VARIANTS = ("tahoe", "reno", "newreno")


class TcpParams:
    """Per-connection TCP parameters (seconds, packets)."""
    __slots__ = ("variant", "max_window", "tick", "rto_init", "rto_min", "rto_max",
                 "max_backoff", "dupack_threshold", "delayed_ack", "delack_timeout",
                 "ack_every", "transfer_pkts", "think_time", "packet_bytes", "ack_bytes",
                 "initial_ssthresh", "delack_tick")

    def __init__(self, variant="tahoe", max_window=113, tick=0.5, rto_init=3.0, rto_min=0.0,
                 rto_max=64.0, max_backoff=64, dupack_threshold=3, delayed_ack=False,
                 delack_timeout=0.2, ack_every=2, transfer_pkts=None, think_time=0.0,
                 packet_bytes=576, ack_bytes=40, initial_ssthresh=None, delack_tick=False):
        if variant not in VARIANTS:
            raise ValueError(f"variant: {variant!r} must be one of {', '.join(VARIANTS)}")
        self.variant = variant
        self.max_window = int(max_window)
        self.tick = float(tick)
        self.rto_init = float(rto_init)
        self.rto_min = float(rto_min)
        self.rto_max = float(rto_max)
        self.max_backoff = int(max_backoff)
        self.dupack_threshold = int(dupack_threshold)
        self.delayed_ack = bool(delayed_ack)
        self.delack_timeout = float(delack_timeout)
        self.delack_tick = bool(delack_tick)
        self.ack_every = int(ack_every)
        self.transfer_pkts = None if transfer_pkts is None else int(transfer_pkts)
        self.think_time = float(think_time)
        self.packet_bytes = int(packet_bytes)
        self.ack_bytes = int(ack_bytes)
        self.initial_ssthresh = (self.max_window if initial_ssthresh is None
                                 else int(initial_ssthresh))


class Counters:
    """Packet accounting shared by all connections of a network (whole run, no warm-up)."""
    __slots__ = ("data_sent", "data_retx", "data_delivered", "acks_sent", "acks_delivered",
                 "timeouts", "fast_retx")

    def __init__(self):
        for name in self.__slots__:
            setattr(self, name, 0)

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}


class Sender:
    """A TCP sender. ``output(pkt)`` hands a data packet to the network at ``sim.now``;
    ``on_transfer(sender, start, end)`` is called when a finite transfer completes."""

    __slots__ = ("sim", "p", "index", "output", "counters", "on_transfer", "flow_key",
                 "epoch", "cwnd", "ssthresh", "snd_una", "snd_nxt", "maxseq", "dupacks",
                 "recover", "in_recovery", "rtt_active", "rtt_seq", "rtt_ts", "srtt",
                 "rttvar", "rtxcur", "backoff", "timer_deadline", "timer_event_at",
                 "transfer_start", "limit", "active", "trace", "receiver", "log")

    def __init__(self, sim, params, index, output, counters, on_transfer=None, flow_key=0,
                 log=None):
        self.sim = sim
        self.p = params
        self.index = index
        self.output = output
        self.counters = counters
        self.on_transfer = on_transfer
        self.flow_key = flow_key
        self.epoch = 0
        self.timer_deadline = math.inf
        self.timer_event_at = math.inf   # time of the one live timer event (inf: none)
        self.active = False
        self.receiver = None
        self.log = log            # a list to append (time, what, detail) to, for tests
        self._reset()

    # ---- state ----------------------------------------------------------------------------------
    def _reset(self):
        p = self.p
        self.cwnd = 1.0
        self.ssthresh = p.initial_ssthresh
        self.snd_una = 0          # first unacknowledged packet
        self.snd_nxt = 0          # next packet to send (go-back-N moves it back)
        self.maxseq = 0           # one past the highest packet ever sent
        self.dupacks = 0
        self.recover = -1         # highest packet sent when the last loss response happened
        self.in_recovery = False
        self.rtt_active = False
        self.rtt_seq = -1
        self.rtt_ts = 0.0
        self.srtt = 0             # ticks x 8; 0 = no sample yet
        self.rttvar = 0           # ticks x 4
        self.rtxcur = p.rto_init
        self.backoff = 1
        self.timer_deadline = math.inf
        self.limit = p.transfer_pkts if p.transfer_pkts is not None else math.inf

    def start(self, _=None):
        """Begin the first transfer (scheduled at the flow's start time)."""
        self.active = True
        self._begin_transfer()

    def _begin_transfer(self, _=None):
        self.epoch += 1
        self._reset()
        self.transfer_start = self.sim.now
        self._send_much()

    def window(self):
        w = int(self.cwnd)
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
    def _send_much(self):
        win = self.snd_una + self.window()
        limit = self.limit
        if win > limit:
            win = limit
        while self.snd_nxt < win:
            self._output(self.snd_nxt)
            self.snd_nxt += 1

    def _output(self, seq):
        c = self.counters
        c.data_sent += 1
        retx = seq < self.maxseq
        if retx:
            c.data_retx += 1
            if self.rtt_active and seq <= self.rtt_seq:
                self.rtt_active = False        # Karn: the sample would be ambiguous
        else:
            self.maxseq = seq + 1
            if not self.rtt_active:
                self.rtt_active = True
                self.rtt_seq = seq
                self.rtt_ts = self.sim.now
        if self.timer_deadline == math.inf:
            self._set_timer()
        if self.log is not None:
            self.log.append((self.sim.now, "send", seq))
        self.output(Packet(self, seq, 0, self.epoch, self.p.packet_bytes, False, retx))

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
        self.counters.timeouts += 1
        if self.log is not None:
            self.log.append((self.sim.now, "timeout", self.snd_una))
        self._slowdown()
        self.cwnd = 1.0
        if self.backoff < self.p.max_backoff:
            self.backoff *= 2
        self.in_recovery = False
        self.dupacks = 0
        self.recover = self.maxseq - 1
        self.rtt_active = False
        self.snd_nxt = self.snd_una          # go back N
        self.timer_deadline = math.inf
        self._send_much()                     # restarts the timer with the backed-off RTO

    def _slowdown(self):
        w = self.cwnd if self.cwnd < self.p.max_window else self.p.max_window
        s = int(w / 2)
        self.ssthresh = s if s > 2 else 2

    # ---- ACKs -----------------------------------------------------------------------------------
    def on_ack(self, pkt):
        """An ACK arrives (event)."""
        self.counters.acks_delivered += 1
        if pkt.epoch != self.epoch or not self.active:
            return                                  # from a finished transfer
        ack = pkt.ack
        if ack > self.snd_una:
            self._new_ack(ack)
        elif ack == self.snd_una and self.maxseq > self.snd_una:
            self._dup_ack()

    def _rtt_update(self):
        p = self.p
        t_rtt = int((self.sim.now - self.rtt_ts) / p.tick + 0.5)
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

    def _new_ack(self, ack):
        p = self.p
        acked = ack - self.snd_una
        if self.rtt_active and ack > self.rtt_seq:
            self.rtt_active = False
            self.backoff = 1
            self._rtt_update()
        partial = False
        if self.in_recovery:
            if p.variant == "newreno" and ack <= self.recover:
                partial = True
            else:
                self.in_recovery = False
                self.cwnd = float(self.ssthresh)
        elif self.cwnd < self.ssthresh:
            self.cwnd += 1.0
        else:
            self.cwnd += 1.0 / self.cwnd
        self.dupacks = 0
        self.snd_una = ack
        if self.snd_nxt < ack:
            self.snd_nxt = ack
        if ack >= self.limit:
            self._finish()
            return
        if partial:
            # NewReno partial ACK: the next hole is lost too; retransmit it now
            if self.log is not None:
                self.log.append((self.sim.now, "partial", ack))
            self.cwnd -= acked - 1
            if self.cwnd < 1.0:
                self.cwnd = 1.0
            self._output(ack)
        if ack < self.maxseq:
            self._set_timer()
        else:
            self._cancel_timer()
        self._send_much()

    def _dup_ack(self):
        p = self.p
        self.dupacks += 1
        if self.dupacks == p.dupack_threshold:
            if self.snd_una <= self.recover:
                return            # this window's loss is already being recovered (bug_fix_)
            self.counters.fast_retx += 1
            if self.log is not None:
                self.log.append((self.sim.now, "fast_retx", self.snd_una))
            self._slowdown()
            self.recover = self.maxseq - 1
            self.rtt_active = False
            if p.variant == "tahoe":
                self.cwnd = 1.0
                self.snd_nxt = self.snd_una
                self._set_timer()
                self._send_much()
            else:
                self.in_recovery = True
                self._output(self.snd_una)
                self.cwnd = float(self.ssthresh + p.dupack_threshold)
                self._set_timer()
                self._send_much()
        elif self.dupacks > p.dupack_threshold and self.in_recovery:
            self.cwnd += 1.0
            self._send_much()

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


class Receiver:
    """A TCP receiver. ``output(pkt)`` hands an ACK to the network at ``sim.now``;
    ``on_deliver(receiver, n)`` counts packets delivered in order (goodput)."""

    __slots__ = ("sim", "p", "index", "output", "counters", "epoch", "next", "ooo", "unacked",
                 "delack_deadline", "delack_pending", "delivered", "log", "sender")

    def __init__(self, sim, params, index, output, counters, log=None):
        self.sim = sim
        self.p = params
        self.index = index
        self.output = output
        self.counters = counters
        self.epoch = 0
        self.next = 0
        self.ooo = set()
        self.unacked = 0
        self.delack_deadline = math.inf
        self.delack_pending = False
        self.delivered = 0        # in-order packets delivered, all transfers
        self.log = log
        self.sender = None

    def on_data(self, pkt):
        """A data packet arrives (event)."""
        self.counters.data_delivered += 1
        if pkt.epoch != self.epoch:
            if pkt.epoch < self.epoch:
                return            # stale copy from a finished transfer
            self.epoch = pkt.epoch  # a new transfer: fresh receiver state
            self.next = 0
            self.ooo.clear()
            self.unacked = 0
            self.delack_deadline = math.inf
        seq = pkt.seq
        if seq == self.next:
            self.next += 1
            self.delivered += 1
            filled = False
            if self.ooo:
                ooo = self.ooo
                while self.next in ooo:
                    ooo.discard(self.next)
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
            if seq > self.next:
                self.ooo.add(seq)
            self._ack()

    def _ack(self):
        self.unacked = 0
        self.delack_deadline = math.inf
        self.counters.acks_sent += 1
        if self.log is not None:
            self.log.append((self.sim.now, "ack", self.next))
        self.output(Packet(self.sender, 0, self.next, self.epoch, self.p.ack_bytes, True))

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
