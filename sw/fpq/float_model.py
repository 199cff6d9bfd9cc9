"""Floating-point model of the FPQ paper (Figs. 4-7) and of Floyd's RED, for research and as
the accuracy reference of the bit-exact model.

Same interface as :class:`fpq.queue_manager.QueueManager` (``arrive``/``depart``, verdicts with
``n``, ``avg`` in packets and ``prob`` in [0, 1]), but:

* time is continuous (``ts / tick_hz`` seconds); clears follow Fig. 4: on each arrival
  ``n_clear = floor(v_max (t - t_last) / t_clear)``; if positive, clear that many bits drawn
  uniformly *with replacement* and advance ``t_last`` by exactly ``n_clear * t_clear / v_max``
  (the rate the hardware keeps), or, with ``clear_literal``, set ``t_last = t`` as the
  paper's code does. The paper sets the arrival's bit first, then clears; so does this model;
* the average queue is RED's per-arrival float EWMA, with the weight
  ``w_q = 1 - exp(-pkt_time_s / avg_tau_s)`` (:func:`float_wq`) and ns-2's idle rule
  (``avg *= (1-w)^m`` for the ``m`` packet times the queue was idle), updated before the
  decision (no publication delay);
* FPQ drops with probability ``l_a = l_t q_a / q_t`` (saturated at 1), RED with Floyd's
  ``p_a = p_b / (1 - count p_b)``; random numbers come from Python's ``random.Random``;
* with ECN enabled (``Config.ecn``) an ECN-capable arrival that would be dropped early is
  marked instead (as in the bit-exact model); with ``hard_drop`` RED drops it anyway where
  its probability is 1 (the average at or above ``max_th``, or ``2 max_th`` when gentle): ns-3's
  ``UseHardDrop``, Linux's ``harddrop``. The bit-exact model and the RTL have no such option.

It shares the 5-tuple hash with the bit-exact model (so both count the same collisions).
"""

import math
import random

from .config import Config
from .drop_probability import lt_qt_float
from .flow_hash import FlowHash
from .queue_manager import Verdict, ENQUEUE, MARK, DROP_EARLY, DROP_FORCED, COUNTERS

__all__ = ["FloatQueueManager", "float_wq"]


def float_wq(config):
    """The per-arrival EWMA weight of ``config`` (a :class:`fpq.Config`),
    ``1 - exp(-pkt_time_s / avg_tau_s)`` (Adaptive RED's rule for a time constant; 1 when
    ``avg_tau_s`` is 0)."""
    if config.avg_tau_s == 0:
        return 1.0
    return -math.expm1(-config.pkt_time_s / config.avg_tau_s)


class FloatQueueManager:
    def __init__(self, config=None, seed=None, hard_drop=False):
        cfg = self.config = config or Config()
        self.hard_drop = bool(hard_drop)
        self.rnd = random.Random(cfg.seed_decide if seed is None else seed)
        self.clear_rnd = random.Random(cfg.seed_clear if seed is None else seed + 1)
        self.hash = FlowHash.of(cfg)
        self.bits = bytearray(cfg.v_max)
        self.n = 0
        self.t_last = 0.0
        self.avg = 0.0
        self.idle = False
        self.idle_since = 0.0
        self.count = -1
        self.occ_pkts = 0
        self.occ_bytes = 0
        self.max_queue = 0
        self.seq = 0
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.w = float_wq(cfg)

    def count_flows(self, flow, t):
        """FPQ paper Fig. 4 (connection_count)."""
        cfg = self.config
        h = (self.hash(flow) * cfg.v_max) >> 32
        if not self.bits[h]:
            self.bits[h] = 1
            self.n += 1
        n_clear = math.floor(cfg.v_max * (t - self.t_last) / cfg.t_clear_s)
        if n_clear > 0:
            if cfg.clear_literal:
                self.t_last = t
            else:
                self.t_last += n_clear * cfg.t_clear_s / cfg.v_max
            rb = self.clear_rnd.randrange
            bits = self.bits
            for _ in range(n_clear):
                r = rb(cfg.v_max)
                if bits[r]:
                    bits[r] = 0
                    self.n -= 1
        return self.n

    def probability(self, n):
        cfg = self.config
        if cfg.mode == "fpq":
            q_t, l_t = lt_qt_float(cfg.n_effective(min(n, cfg.n_cap)), cfg.p_pkts,
                                   cfg.lt_plus_one)
            return min(1.0, l_t * self.avg / q_t)
        if cfg.mode == "red":
            lo, hi, max_p = cfg.red_min_th, cfg.red_max_th, cfg.red_max_p
            a = self.avg
            if a < lo:
                return 0.0
            if a < hi:
                return max_p * (a - lo) / (hi - lo)
            if cfg.red_gentle and a < 2 * hi:
                return max_p + (1 - max_p) * (a - hi) / hi
            return 1.0
        return 0.0

    def arrive(self, desc):
        ts, flow, length, ecn = desc
        cfg = self.config
        t = ts / cfg.tick_hz
        n = self.count_flows(flow, t)
        # averager (ns-2 RED estimator, with the idle period as m empty samples)
        if self.idle:
            m = (t - self.idle_since) / cfg.pkt_time_s
            self.avg *= (1 - self.w) ** m
            self.idle = False
        self.avg += self.w * (self.occ_pkts - self.avg)
        p = self.probability(n)
        early = False
        if cfg.mode == "fpq":
            early = self.rnd.random() < p
        elif cfg.mode == "red":
            if p == 0.0:
                self.count = -1
            elif p >= 1.0:
                early = True
                self.count = 0
            else:
                self.count += 1
                cp = self.count * p
                p_a = 1.0 if cp >= 1 else p / (1 - cp)
                if self.rnd.random() < p_a:
                    early = True
                    self.count = 0
        c = self.counters
        c["arrivals"] += 1
        q = self.occ_pkts
        hard = self.hard_drop and p >= 1.0 and cfg.mode == "red"
        if early and not (cfg.ecn and ecn and not hard):
            action = DROP_EARLY
            c["early_drops"] += 1
        elif q + 1 > cfg.limit_pkts or self.occ_bytes + length > cfg.limit_bytes:
            action = DROP_FORCED
            c["forced_drops"] += 1
        else:
            action = MARK if early else ENQUEUE
            c["marked"] += early
            c["enqueued"] += 1
            self.occ_pkts += 1
            self.occ_bytes += length
            self.max_queue = max(self.max_queue, self.occ_pkts)
        v = Verdict(self.seq, action, min(n, cfg.n_cap), self.avg, p)
        self.seq += 1
        return v

    def depart(self, desc):
        ts, length = desc
        c = self.counters
        c["departures"] += 1
        if self.occ_pkts == 0 or length > self.occ_bytes:
            c["dep_errors"] += 1
        self.occ_bytes = max(0, self.occ_bytes - length)
        if self.occ_pkts:
            self.occ_pkts -= 1
            if self.occ_pkts == 0:
                self.idle = True
                self.idle_since = ts / self.config.tick_hz

    def run(self, events):
        from .queue_manager import Departure
        out = []
        for ev in events:
            if type(ev) is Departure:
                self.depart(ev)
            else:
                out.append(self.arrive(ev))
        return out

    @property
    def n_raw(self):
        return self.n
