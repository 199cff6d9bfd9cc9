"""The event loop, packets and plain links of the simulator.

Time is a float in seconds. An event is ``(time, sequence, function, argument)`` on a binary
heap; ties run in the order they were scheduled (the sequence number), so a run is fully
determined by the scenario and its seed.

Few events per packet is what makes a pure-Python simulator usable. A :class:`Link` that only
ever feeds one FIFO in order (an access link, the reverse path) needs no events of its own:
it keeps the time its transmitter becomes free and computes each packet's arrival at the far
end when the packet is handed to it (serialisation ``size*8/bandwidth`` after the transmitter
is free, then the propagation delay). Chains of such links collapse into one event at the end
(:meth:`Link.pass_through`). Only the router output queue (``fpq_sim.router``), where packets
from many links meet and the queue discipline decides, has arrival and departure events.
"""

from heapq import heappush, heappop

__all__ = ["Simulator", "Packet", "Link"]


class Simulator:
    """A heap of timed callbacks. ``at(t, fn, arg)`` schedules ``fn(arg)`` at time ``t``."""
    __slots__ = ("now", "heap", "seq", "events")

    def __init__(self):
        self.now = 0.0
        self.heap = []
        self.seq = 0
        self.events = 0

    def at(self, t, fn, arg):
        self.seq += 1
        heappush(self.heap, (t, self.seq, fn, arg))

    def run(self, until):
        """Run every event with time <= ``until``; then the clock reads ``until``."""
        heap = self.heap
        n = 0
        try:
            while heap and heap[0][0] <= until:
                t, _, fn, arg = heappop(heap)
                self.now = t
                fn(arg)
                n += 1
        finally:
            self.events += n
        self.now = until

    def pending(self):
        """The arguments of all scheduled events (used to count packets in flight)."""
        return [e[3] for e in self.heap]


class Packet:
    """A TCP segment or ACK. ``seq`` counts packets from 0 within a transfer (``epoch``);
    an ACK carries ``ack`` = the next packet the receiver expects. ``retx`` of a data packet:
    0 first transmission, 1 retransmission, 2 fast retransmission (``fpq_sim.tcp``). ECN
    (RFC 3168): ``ect`` the data packet is ECN-capable, ``ce`` a router marked it (Congestion
    Experienced), ``cwr`` the sender reduced its window (Congestion Window Reduced), ``ece``
    an ACK echoes a mark (ECN-Echo)."""
    __slots__ = ("conn", "seq", "ack", "epoch", "size", "is_ack", "retx", "sack", "ect", "ce",
                 "cwr", "ece")

    def __init__(self, conn, seq, ack, epoch, size, is_ack, retx=False, sack=None, ect=False,
                 cwr=False, ece=False):
        self.conn = conn
        self.seq = seq
        self.ack = ack
        self.epoch = epoch
        self.size = size
        self.is_ack = is_ack
        self.retx = retx
        self.sack = sack          # an ACK's SACK blocks: ((start, end), ...), end exclusive
        self.ect = ect
        self.ce = False
        self.cwr = cwr
        self.ece = ece

    def __repr__(self):
        kind = f"ack {self.ack}" if self.is_ack else f"seq {self.seq}"
        return f"<Packet flow {self.conn.index} epoch {self.epoch} {kind}>"


class Link:
    """A point-to-point link with an unlimited FIFO at its transmitter: bandwidth (bit/s),
    propagation delay (s). Packets handed to it must arrive in time order (true for a link fed
    by one sender, or by events in time order)."""
    __slots__ = ("bandwidth", "delay", "free_at")

    def __init__(self, bandwidth, delay):
        self.bandwidth = float(bandwidth)
        self.delay = float(delay)
        self.free_at = 0.0

    def pass_through(self, t, size):
        """A packet of ``size`` bytes handed over at ``t``: the time its last bit arrives."""
        start = self.free_at if self.free_at > t else t
        end = start + size * 8.0 / self.bandwidth
        self.free_at = end
        return end + self.delay
