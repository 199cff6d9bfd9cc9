"""Synthetic many-flow traffic and a single-server link, to exercise the models without TCP.

Used by ``fpq demo``, ``fpq accuracy`` and ``fpq bench``. Arrivals are a Poisson process per
flow (merged: total rate ``flows * rate``, each arrival's flow drawn uniformly); the link
serves the accepted packets first-in first-out at a fixed rate and reports each departure to
the queue manager, so the events a model sees are exactly the ones a real output port would
give it. Everything is seeded and reproducible.
"""

from collections import deque
import random

from .accept_clock import AcceptClock
from .flow_hash import pack_flow
from .queue_manager import Arrival, Departure, ENQUEUE, MARK

__all__ = ["flow_keys", "poisson_arrivals", "serve_link", "LinkRun"]


def flow_keys(count, seed=0):
    """``count`` distinct IPv4 TCP 5-tuples (104-bit keys), reproducible from ``seed``."""
    rnd = random.Random(seed)
    keys, seen = [], set()
    while len(keys) < count:
        key = pack_flow(rnd.getrandbits(32), rnd.getrandbits(32), rnd.randrange(1024, 65536),
                        rnd.choice((80, 443, 5001, 8080)), 6)
        if key not in seen:
            seen.add(key)
            keys.append(key)
    return keys


def poisson_arrivals(keys, rate_per_flow, t_start, t_end, tick_hz, rnd):
    """Merged Poisson arrivals of ``keys`` in ``[t_start, t_end)`` seconds: ``[(clock, key)]``
    (``int(t * tick_hz)``; arrivals of one clock are spread by ``serve_link``'s stamping)."""
    if not keys or rate_per_flow <= 0:
        return []
    total = rate_per_flow * len(keys)
    out = []
    t = t_start + rnd.expovariate(total)
    choice = rnd.choice
    while t < t_end:
        out.append((int(t * tick_hz), choice(keys)))
        t += rnd.expovariate(total)
    return out


class LinkRun:
    """The outcome of :func:`serve_link`: every event in order, the verdicts, and samples."""
    __slots__ = ("events", "verdicts", "samples")

    def __init__(self):
        self.events = []     # Arrival / Departure, in the order the model saw them
        self.verdicts = []
        self.samples = []    # (t_seconds, n, avg, prob, occupancy) per arrival


def serve_link(model, arrivals, link_pkts_per_s, length, tick_hz, ecn=False, keep_events=True):
    """Feed ``arrivals`` ([(clock, key)], sorted) to ``model`` in front of a FIFO link that sends
    ``link_pkts_per_s`` packets of ``length`` bytes per second. Departures due at or before an
    arrival's clock are given to the model first; every event is stamped with its accept
    clock (``fpq.accept_clock``). Returns a :class:`LinkRun`."""
    service = max(1, int(round(tick_hz / link_pkts_per_s)))
    run = LinkRun()
    events, verdicts, samples = run.events, run.verdicts, run.samples
    fifo = deque()        # departure times of the accepted packets
    busy_until = 0
    arrive, depart = model.arrive, model.depart
    clock = AcceptClock()
    accepted = (ENQUEUE, MARK)
    for want, key in arrivals:
        while fifo and fifo[0] <= want:
            dep = Departure(clock.departure(fifo.popleft()), length)
            depart(dep)
            if keep_events:
                events.append(dep)
        ts = clock.arrival(want)
        arr = Arrival(ts, key, length, ecn)
        v = arrive(arr)
        if keep_events:
            events.append(arr)
        verdicts.append(v)
        samples.append((ts / tick_hz, v.n, v.avg, v.prob, len(fifo)))
        if v.action in accepted:
            start = ts if ts > busy_until else busy_until
            busy_until = start + service
            fifo.append(busy_until)
    while fifo:
        dep = Departure(clock.departure(fifo.popleft()), length)
        depart(dep)
        if keep_events:
            events.append(dep)
    return run
