"""The bottleneck output queue: a FIFO whose admission the queue manager decides.

Per arriving packet the port calls the queue manager's ``arrive`` (the golden model
``fpq.QueueManager``, the float model ``fpq.float_model.FloatQueueManager``, or anything with
the same interface, e.g. the Verilated RTL) with an :class:`fpq.Arrival` descriptor; the
manager keeps its own occupancy and answers ENQUEUE / MARK / DROP_EARLY / DROP_FORCED. Accepted
packets wait here; when a packet leaves the queue for the wire the port calls ``depart``.

The queue length the manager sees is the number of packets waiting, not counting the one being
transmitted (as in ns's RED queue). A packet that finds the link idle is enqueued and departs
at once. Descriptors carry the clock the queue manager accepts them in: the first clock at or
after ``int(t * tick_hz)`` that its input order allows (``fpq.accept_clock.AcceptClock``, with
``verdict_wait`` clocks after each arrival for a queue manager that answers late, the RTL).

A MARK verdict (an ECN-capable packet, ``Packet.ect``, that the manager would have dropped
early, with ECN enabled in its configuration) sets the packet's CE mark and queues it.

Events: one when a packet reaches the port, one when its transmission ends; the receiver's
arrival is scheduled from there (propagation delay), after the optional uniform random loss.

A discipline that drops at dequeue (CoDel, ``fpq_sim.codel``) has a ``dequeue(ts)`` method
instead of ``depart``: when the link is free the port asks it how many head packets to drop
and whether the packet then at the head goes; those drops count as early drops; its
``marked`` tells whether it marks that packet instead of dropping it (ECN).
"""

from collections import deque

from fpq import Arrival, Departure, MARK
from fpq.accept_clock import AcceptClock

__all__ = ["OutputPort", "DELAY_BIN_S"]

#: Queueing delays are counted in bins this wide (s) for their percentiles; delays of 10 s or
#: more share the last bin.
DELAY_BIN_S = 1e-4
_DELAY_BINS = 100000


class OutputPort:
    __slots__ = ("sim", "qm", "bandwidth", "delay", "loss_rate", "rng", "tick_hz", "queue",
                 "busy", "tx_end", "arrivals", "drops", "early_drops", "forced_drops",
                 "wire_losses", "lost_total", "saturated_drops", "marks", "p_one", "departures",
                 "q_area", "q_last", "busy_time", "trace", "n_sum", "delay_sum",
                 "delay_hist", "on_drop",
                 "on_depart", "on_idle", "clock", "_arrive", "_depart", "_dequeue")

    def __init__(self, sim, qm, bandwidth, delay, tick_hz, loss_rate=0.0, rng=None, trace=None,
                 p_one=None, verdict_wait=0):
        self.sim = sim
        self.qm = qm
        self._arrive = qm.arrive
        self._dequeue = getattr(qm, "dequeue", None)     # drops at dequeue (CoDel)
        self._depart = qm.depart if self._dequeue is None else None
        self.on_drop = None       # called with each dropped packet (per-flow loss statistics)
        self.on_depart = None     # called with (packet, its queueing delay) as it starts out
        self.on_idle = None       # called with the time the link goes idle, queue empty
        self.bandwidth = float(bandwidth)
        self.delay = float(delay)
        self.loss_rate = float(loss_rate)
        self.rng = rng
        self.tick_hz = float(tick_hz)
        self.clock = AcceptClock(verdict_wait)
        # the verdict's probability that means "drop everything" (PROB_ONE raw for the bit-exact
        # model, 1.0 for the float model): counts the drops made with p saturated
        self.p_one = p_one
        self.queue = deque()
        self.busy = False
        self.tx_end = 0.0
        self.trace = trace        # a list: Arrival / Departure descriptors are appended
        self.lost_total = 0       # drops and wire losses of the whole run (never reset)
        self.reset_stats(0.0)

    def reset_stats(self, now):
        """Start the statistics afresh at ``now`` (end of the warm-up)."""
        self.arrivals = 0
        self.drops = 0
        self.early_drops = 0
        self.forced_drops = 0
        self.wire_losses = 0
        self.saturated_drops = 0
        self.marks = 0            # packets marked CE (ECN) instead of dropped
        self.n_sum = 0            # sum over arrivals of the flow count N the manager used
        self.departures = 0
        self.delay_sum = 0.0      # queueing delay (arrival at the port to start of sending)
        self.delay_hist = [0] * (_DELAY_BINS + 1)     # ... counted in bins of DELAY_BIN_S
        self.q_area = 0.0
        self.q_last = now
        self.busy_time = (self.tx_end - now) if self.busy else 0.0

    def arrive(self, pkt):
        """A data packet reaches the port (event)."""
        now = self.sim.now
        ts = self.clock.arrival(int(now * self.tick_hz))
        desc = Arrival(ts, pkt.conn.flow_key, pkt.size, pkt.ect)
        if self.trace is not None:
            self.trace.append(desc)
        verdict = self._arrive(desc)
        action = verdict[1]
        self.arrivals += 1
        self.n_sum += verdict[2]
        if action >= 2:                      # DROP_EARLY, DROP_FORCED
            self.drops += 1
            if self.p_one is not None and verdict[4] >= self.p_one:
                self.saturated_drops += 1
            self.lost_total += 1
            if action == 2:
                self.early_drops += 1
            else:
                self.forced_drops += 1
            if self.on_drop is not None:
                self.on_drop(pkt)
            return
        if action == MARK:
            pkt.ce = True
            self.marks += 1
        q = self.queue
        self.q_area += len(q) * (now - self.q_last)
        self.q_last = now
        q.append((pkt, now))
        if not self.busy:
            self._start(now)

    def _start(self, now):
        q = self.queue
        self.q_area += len(q) * (now - self.q_last)
        self.q_last = now
        if self._dequeue is not None:
            drops, send = self._dequeue(int(now * self.tick_hz))
            for _ in range(drops):
                dropped, _t = q.popleft()
                self.drops += 1
                self.early_drops += 1
                self.lost_total += 1
                if self.on_drop is not None:
                    self.on_drop(dropped)
            if not send:
                self.busy = False
                return
            pkt, t_in = q.popleft()
            if self.qm.marked:
                pkt.ce = True
                self.marks += 1
        else:
            pkt, t_in = q.popleft()
            desc = Departure(self.clock.departure(int(now * self.tick_hz)), pkt.size)
            if self.trace is not None:
                self.trace.append(desc)
            self._depart(desc)
        self.departures += 1
        d = now - t_in
        self.delay_sum += d
        i = int(d * (1.0 / DELAY_BIN_S))
        self.delay_hist[i if i < _DELAY_BINS else _DELAY_BINS] += 1
        if self.on_depart is not None:
            self.on_depart(pkt, now - t_in)
        tx = pkt.size * 8.0 / self.bandwidth
        self.busy = True
        self.busy_time += tx
        self.tx_end = now + tx
        self.sim.at(now + tx, self._done, pkt)

    def _done(self, pkt):
        now = self.sim.now
        if self.loss_rate and self.rng.random() < self.loss_rate:
            self.wire_losses += 1
            self.lost_total += 1
        else:
            self.sim.at(now + self.delay, self._next_hop(pkt), pkt)
        if self.queue:
            self._start(now)
        else:
            self.busy = False
            if self.on_idle is not None:
                self.on_idle(now)

    def _next_hop(self, pkt):
        """What a packet reaches at the far end of the link: its receiver."""
        return pkt.conn.receiver.on_data

    def finish_stats(self, now):
        """Close the time integrals at ``now`` (end of the run)."""
        self.q_area += len(self.queue) * (now - self.q_last)
        self.q_last = now
        if self.busy and self.tx_end > now:
            self.busy_time -= self.tx_end - now
            self.tx_end = now

    def delay_quantile(self, q):
        """The ``q`` quantile of the queueing delays since the statistics began (s, the lower
        edge of its bin of ``DELAY_BIN_S``), or None if no packet left the queue."""
        if not self.departures:
            return None
        need, seen = q * self.departures, 0
        for i, n in enumerate(self.delay_hist):
            seen += n
            if n and seen >= need:
                return i * DELAY_BIN_S
        return None

    def in_queue(self):
        return [pkt for pkt, _ in self.queue]
