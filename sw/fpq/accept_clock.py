"""Accept clocks for events that happen at given times: the queue manager's input order.

The queue manager (model and RTL) takes at most one arrival and one departure per clock, the
departure first, and decides from the clock each event is accepted in. A source of events in
continuous time (the TCP simulator's router, a synthetic link) stamps each event with the first
clock at or after its time that this order allows: an arrival waits for the next clock after
another arrival, a departure after an arrival waits for the next clock; a departure followed
by an arrival shares its clock. In hardware that is a small FIFO in front of each port.

``verdict_wait`` models a source that needs each verdict before it can go on (the simulator's
router does: an enqueued packet may start its transmission at once): no event is accepted
within ``verdict_wait`` clocks after an arrival. With the RTL in that loop the wait is its
latency, so the golden model run on the same clocks sees the same events (``fpq demo``).
"""

__all__ = ["AcceptClock"]


class AcceptClock:
    """``arrival(want)`` and ``departure(want)`` return the accept clock of an event wanted at
    clock ``want`` (an integer, e.g. ``int(t * tick_hz)``), given the events stamped before it.
    """
    __slots__ = ("last_arr", "last_dep", "wait")

    def __init__(self, verdict_wait=0):
        if not isinstance(verdict_wait, int) or isinstance(verdict_wait, bool) or \
                not 0 <= verdict_wait <= 1 << 20:
            raise ValueError(f"verdict_wait: {verdict_wait!r} must be an integer in "
                             f"[0, {1 << 20}] clocks")
        self.wait = max(1, verdict_wait)
        self.last_arr = -(1 << 62)
        self.last_dep = -1

    def arrival(self, want):
        c = self.last_arr + self.wait
        if c < want:
            c = want
        if c < self.last_dep:
            c = self.last_dep
        self.last_arr = c
        return c

    def departure(self, want):
        c = self.last_arr + self.wait
        if c < want:
            c = want
        if c <= self.last_dep:
            c = self.last_dep + 1
        self.last_dep = c
        return c
