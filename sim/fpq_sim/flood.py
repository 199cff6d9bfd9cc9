"""Floods of spoofed 5-tuples: a constant-rate, unresponsive source beside the TCP flows.

A flood (a ``[[floods]]`` group of a scenario, ``fpq_sim.scenario``) sends ``rate_pps``
packets of ``packet_bytes`` bytes a second, evenly spaced (packet k at ``start_s + k /
rate_pps``), before ``stop_s`` (0: the end of the run), straight into the bottleneck port (its
own access path is not modelled, so the rate is the rate at the router). Every
``spoof_every``-th packet (1: every packet) carries a 5-tuple drawn uniformly from a pool of
``tuples`` distinct tuples; the packets between repeat the last one. The source does not react
to loss (UDP-like); packets the bottleneck forwards reach a sink that counts them.

The pool is ``tuples`` UDP 5-tuples towards one victim address (10.2.0.1 port 53), their
source addresses a bijection of the pool index (so distinct by construction, no table kept:
a pool of 2^32 costs nothing) and their source ports drawn from the index.

What a flood does to FPQ's flow counter: each new tuple sets its bit of the vector, and the
clears remove a random bit ``v_max / t_clear`` times a second, so ``expected_flow_count``
gives the bits a flood keeps set; about ``v_max / t_clear`` new tuples a second keep half the
vector set, and the target queue q_t(N) = 6 N of FPQ grows with it until ``n_cap`` bounds N.
"""

import math

from .engine import Packet

__all__ = ["Flood", "FloodAccounting", "SpoofedTuple", "pool_tuple", "expected_flow_count"]

VICTIM_IP = 0x0A020001
VICTIM_PORT = 53
UDP = 17
_GOLDEN = 0x9E3779B1            # odd: multiplication by it permutes the 32-bit integers


def pool_tuple(index, salt):
    """The 104-bit 5-tuple of pool entry ``index`` (0 <= index < 2^32) for a flood whose
    pool is chosen by ``salt`` (a 32-bit integer): the source address is
    ``((index ^ salt) * 0x9E3779B1) mod 2^32``, a bijection of the index, so entries are
    distinct; the source port mixes the index's bits."""
    src = ((index ^ salt) * _GOLDEN) & 0xFFFFFFFF
    port = 1024 + ((src >> 7) ^ (index * 40503)) % 64512
    return (src << 72) | (VICTIM_IP << 40) | (port << 24) | (VICTIM_PORT << 8) | UDP


class FloodSink:
    """The flood's receiver: counts the packets the bottleneck forwarded."""
    __slots__ = ("delivered",)

    def __init__(self):
        self.delivered = 0

    def on_data(self, pkt):
        self.delivered += 1


class SpoofedTuple:
    """What a flood packet carries in place of a TCP connection: its 5-tuple (``flow_key``,
    read by the bottleneck port) and the sink (``receiver``)."""
    __slots__ = ("flow_key", "receiver", "index")

    def __init__(self, flow_key, receiver, index):
        self.flow_key = flow_key
        self.receiver = receiver
        self.index = index


class Flood:
    """One validated ``[[floods]]`` group ``spec`` on ``sim``, feeding ``port_arrive`` (the
    bottleneck port's ``arrive``) until ``end_s``. ``rng`` (a ``random.Random``) draws the
    pool (its salt) and the tuple of each spoofed packet. Counts ``arrivals`` (packets
    handed to the port) and, in its sink, ``delivered``; ``tuples_drawn`` counts draws."""

    def __init__(self, sim, spec, port_arrive, rng, end_s):
        self.sim = sim
        self.rate = spec["rate_pps"]
        self.tuples = spec["tuples"]
        self.every = spec["spoof_every"]
        self.size = spec["packet_bytes"]
        self.start = spec["start_s"]
        self.stop = spec["stop_s"] or math.inf
        self.end = end_s
        self.rng = rng
        self.salt = rng.getrandbits(32)
        self.sink = FloodSink()
        self.port_arrive = port_arrive
        self.arrivals = 0
        self.tuples_drawn = 0
        self.current = None
        if self.start < min(self.stop, self.end):
            sim.at(self.start, self._send, 0)

    def _send(self, k):
        if k % self.every == 0:
            index = self.rng.randrange(self.tuples)
            self.current = SpoofedTuple(pool_tuple(index, self.salt), self.sink, index)
            self.tuples_drawn += 1
        self.arrivals += 1
        self.port_arrive(Packet(self.current, k, 0, 0, self.size, False))
        t = self.start + (k + 1) / self.rate
        if t < self.stop and t < self.end:
            self.sim.at(t, self._send, k + 1)

    def reset_stats(self):
        """Start the counts afresh (end of the warm-up)."""
        self.arrivals = 0
        self.sink.delivered = 0


class FloodAccounting:
    """Splits the bottleneck port's statistics between the floods' packets and the rest (the
    TCP flows'): hooks the port's ``on_drop`` and ``on_depart`` and counts the floods'
    drops, departures and queueing delay; the TCP share is the port's total minus these."""

    def __init__(self, port, floods):
        self.port = port
        self.floods = floods
        port.on_drop = self._drop
        port.on_depart = self._depart
        self.reset_stats()

    def reset_stats(self):
        self.drops = 0
        self.departures = 0
        self.delay_sum = 0.0
        for f in self.floods:
            f.reset_stats()

    def _drop(self, pkt):
        if type(pkt.conn) is SpoofedTuple:
            self.drops += 1

    def _depart(self, pkt, delay):
        if type(pkt.conn) is SpoofedTuple:
            self.departures += 1
            self.delay_sum += delay

    def summary(self):
        """``(tcp, floods)``: the bottleneck statistics of each class since the warm-up."""
        port = self.port
        arrivals = sum(f.arrivals for f in self.floods)
        floods = {"arrivals": arrivals, "drops": self.drops,
                  "drop_rate": self.drops / arrivals if arrivals else 0.0,
                  "delivered": sum(f.sink.delivered for f in self.floods),
                  "avg_delay_s": self.delay_sum / self.departures if self.departures else 0.0}
        return tcp_class(port, arrivals, self.drops, self.departures, self.delay_sum), floods


def tcp_class(port, flood_arrivals=0, flood_drops=0, flood_departures=0, flood_delay=0.0):
    """The TCP flows' share of the port's statistics: arrivals, drops by the queue manager,
    their ratio, and the mean queueing delay of their packets that left the queue."""
    arrivals = port.arrivals - flood_arrivals
    drops = port.drops - flood_drops
    departures = port.departures - flood_departures
    return {"arrivals": arrivals, "drops": drops,
            "drop_rate": drops / arrivals if arrivals else 0.0,
            "avg_delay_s": (port.delay_sum - flood_delay) / departures if departures else 0.0}


def expected_flow_count(rate_pps, tuples, spoof_every, v_max, t_clear_s):
    """The bits of FPQ's vector a flood keeps set in steady state, in expectation.

    New tuples come at ``rate_pps / spoof_every`` a second, each from the pool of ``tuples``,
    so each tuple at ``a = rate_pps / (spoof_every tuples)`` a second; a bit that ``k``
    tuples hash to is set at ``k a`` a second (Poisson, as uniform draws are) and cleared at
    ``1 / t_clear`` a second (a random one of ``v_max`` bits ``v_max / t_clear`` times a
    second), so it is set with probability ``k a t_clear / (k a t_clear + 1)``. ``k`` is
    binomial(tuples, 1 / v_max) for a hash that spreads the pool uniformly. For a pool much
    larger than the vector this is ``v_max x / (1 + x)`` with ``x = rate_pps t_clear /
    (spoof_every v_max)``: half the vector at ``v_max / t_clear`` new tuples a second."""
    a_t = rate_pps / (spoof_every * tuples) * t_clear_s
    q = 1.0 / v_max
    mean = tuples * q
    sd = math.sqrt(tuples * q * (1 - q))
    lo, hi = max(0, int(mean - 12 * sd - 2)), min(tuples, int(mean + 12 * sd + 3))
    total = 0.0
    log_q, log_1q = math.log(q) if q < 1 else 0.0, math.log1p(-q) if q < 1 else -math.inf
    for k in range(max(lo, 1), hi + 1):
        if q == 1.0:
            pk = 1.0 if k == tuples else 0.0
        else:
            pk = math.exp(math.lgamma(tuples + 1) - math.lgamma(k + 1)
                          - math.lgamma(tuples - k + 1) + k * log_q + (tuples - k) * log_1q)
        total += pk * (k * a_t) / (k * a_t + 1)
    return v_max * total
