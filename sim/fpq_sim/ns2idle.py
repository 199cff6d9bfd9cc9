"""ns-2's idle rule around the float queue manager (``fpq.float_model.FloatQueueManager``).

RED's average decays over the time its queue is idle. The float model marks the queue idle
when a departure empties it, and busy again at the next arrival, even one it then drops. ns-2
does the same in ``REDQueue::enque``, but its ``Queue::recv`` calls ``deque()`` right after
``enque()`` whenever the link is free, and ``REDQueue::deque()`` on an empty queue marks it
idle again from that moment (``idle_ = 1; idletime_ = now``); a transmission in progress does
the same when it ends. So in ns-2 an arrival that RED drops at an empty queue does not stop
the idle decay. Without that, once RED's average is above max_th with the queue empty, every
arrival is dropped, each decays the average by one sample only, and senders backing off their
timers send so rarely that the router can refuse every packet for minutes (seen in our
parking-lot and many-flow runs). :class:`Ns2IdleRule` wraps the float model and restores ns-2's
behaviour: after a drop that leaves the queue empty, the queue is idle again from the arrival,
or, if a packet is on the wire, from the end of its transmission. Scenario key
``queue.ns2_idle`` (default true) applies it to the float model; the bit-exact model's averager
is outside sim/ and is used as it is.
"""

__all__ = ["Ns2IdleRule"]


class Ns2IdleRule:
    """A float queue manager whose dropped arrivals at an empty queue leave it idle.
    ``port_busy()`` tells whether the link is sending a packet; the port calls
    :meth:`link_idle` when its link goes idle (``OutputPort.on_idle``)."""

    def __init__(self, qm, port_busy=None):
        self.qm = qm
        self.depart = qm.depart
        self.port_busy = port_busy
        self.idle_restarts = 0

    def arrive(self, desc):
        qm = self.qm
        v = qm.arrive(desc)
        if v[1] >= 2 and qm.occ_pkts == 0 and not (self.port_busy and self.port_busy()):
            qm.idle = True                  # ns-2: Queue::recv -> deque() finds it empty
            qm.idle_since = desc[0] / qm.config.tick_hz
            self.idle_restarts += 1
        return v

    def link_idle(self, now):
        """The link finished sending and the queue is empty (ns-2: the link's deque())."""
        qm = self.qm
        if qm.occ_pkts == 0 and not qm.idle:
            qm.idle = True
            qm.idle_since = now
            self.idle_restarts += 1

    def __getattr__(self, name):
        return getattr(self.qm, name)
