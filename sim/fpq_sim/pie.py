"""PIE (RFC 8033, "Proportional Integral Controller Enhanced"), a float reference model.

PIE drops arriving packets at random with a probability ``drop_prob`` that a PI controller
updates every ``t_update`` from the queueing delay (RFC 8033 Section 4.2)::

    p = alpha (qdelay - qdelay_ref) + beta (qdelay - qdelay_old)
    p is scaled down while drop_prob is small (/2048 below 1e-6, /512 below 1e-5, /128 below
    1e-4, /32 below 1e-3, /8 below 1e-2, /2 below 0.1), and capped at 0.02 once drop_prob
    >= 0.1 (Section 5.5);
    drop_prob += p; drop_prob *= 0.98 if qdelay and qdelay_old are both 0; bounded to [0, 1]

On arrival (Section 4.1): a full buffer drops (tail drop); while ``burst_allowance > 0`` no
random drop happens (Section 4.4); neither does it when ``qdelay_old < qdelay_ref / 2`` and
``drop_prob < 0.2``, nor when at most two packets are queued (the safeguards of Section 4.1);
otherwise the packet is dropped with probability ``drop_prob``, de-randomised as in Section 5.1
(``accu_prob += drop_prob``; never drop below 0.85, always at 8.5; ``accu_prob`` restarts at 0
after each drop and whenever ``drop_prob`` is 0). With ``ecn`` an ECN-capable packet chosen for
a random drop is marked and queued instead while ``drop_prob`` is at most 10 % (RFC 8033
Section 5.1's ``mark_ecnth``; above it, it is dropped), and ``accu_prob`` restarts as after a
drop. Each update lowers ``burst_allowance`` by
``t_update`` (not below 0) and resets it to ``max_burst`` when ``drop_prob`` is 0 and both the
current and the previous delay are under ``qdelay_ref / 2`` (Section 4.4).

The queueing delay is measured with per-packet timestamps, as the Linux and ns-3
implementations do by default, instead of RFC 8033 Section 4.3's departure-rate estimate: the
sojourn time of the last departed packet, 0 once the queue is empty. Defaults are the RFC's:
``qdelay_ref`` 15 ms, ``t_update`` 15 ms, ``max_burst`` 150 ms, ``alpha`` 0.125, ``beta``
1.25. Updates run
at multiples of ``t_update`` from time 0; the model catches up on them at each arrival and
departure (the delay changes only at departures, so this is exact).

Interface: ``arrive(desc)`` and ``depart(desc)`` as the FPQ queue managers (``fpq.Verdict``).
"""

import random

from fpq.queue_manager import Verdict, DROP_EARLY

from .float_aqm import FloatAqm

__all__ = ["PIE", "scale_adjustment"]

#: RFC 8033 Section 5.1 (mark_ecnth): ECN-capable packets are marked while drop_prob is at
#: most this, dropped above it
MARK_ECN_THRESHOLD = 0.1

_SCALE = ((1e-6, 2048.0), (1e-5, 512.0), (1e-4, 128.0), (1e-3, 32.0), (1e-2, 8.0),
          (1e-1, 2.0))


def scale_adjustment(p, drop_prob):
    """RFC 8033 Section 4.2's auto-tuning: divide the adjustment ``p`` while ``drop_prob`` is
    small; cap it at 0.02 once ``drop_prob >= 0.1`` (Section 5.5)."""
    for bound, div in _SCALE:
        if drop_prob < bound:
            return p / div
    return 0.02 if p > 0.02 else p


class PIE(FloatAqm):
    """PIE queue discipline (RFC 8033). ``limit_pkts`` 0 means no buffer limit; ``fifo`` holds
    the arrival times (s) of the queued packets, and ``log`` records (time, drop_prob,
    qdelay) at each update."""

    def __init__(self, tick_hz, seed=1, qdelay_ref_s=0.015, t_update_s=0.015,
                 max_burst_s=0.15, alpha=0.125, beta=1.25, derandomize=True, limit_pkts=0,
                 ecn=False):
        for name, v in (("qdelay_ref_s", qdelay_ref_s), ("t_update_s", t_update_s)):
            if not v > 0:
                raise ValueError(f"PIE: {name} {v} must be > 0")
        super().__init__(tick_hz, limit_pkts)
        self.rnd = random.Random(seed)
        self.qdelay_ref = float(qdelay_ref_s)
        self.t_update = float(t_update_s)
        self.max_burst = float(max_burst_s)
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.derandomize = bool(derandomize)
        self.ecn = bool(ecn)
        self.drop_prob = 0.0
        self.qdelay = 0.0             # current_qdelay: the last departure's sojourn time
        self.qdelay_old = 0.0
        self.burst_allowance = self.max_burst
        self.accu_prob = 0.0
        self.next_update = self.t_update

    def _catch_up(self, now):
        while self.next_update <= now:
            self.update(self.next_update)
            self.next_update += self.t_update

    def update(self, now=None):
        """One T_UPDATE step of the controller (RFC 8033 Sections 4.2, 4.4, 5.5)."""
        ref = self.qdelay_ref
        q = self.qdelay
        p = self.alpha * (q - ref) + self.beta * (q - self.qdelay_old)
        prob = self.drop_prob + scale_adjustment(p, self.drop_prob)
        if q == 0.0 and self.qdelay_old == 0.0:
            prob *= 0.98
        self.drop_prob = 0.0 if prob < 0.0 else (1.0 if prob > 1.0 else prob)
        ba = self.burst_allowance - self.t_update
        self.burst_allowance = ba if ba > 0.0 else 0.0
        if self.drop_prob == 0.0 and q < ref / 2 and self.qdelay_old < ref / 2:
            self.burst_allowance = self.max_burst
        self.qdelay_old = q
        if self.log is not None:
            self.log.append((now, self.drop_prob, q))

    def drop_early(self):
        """RFC 8033 Sections 4.1 and 5.1: whether an arrival is dropped at random."""
        if self.burst_allowance > 0.0:
            return False
        if (self.qdelay_old < self.qdelay_ref / 2 and self.drop_prob < 0.2) \
                or len(self.fifo) <= 2:
            return False
        if self.derandomize:
            if self.drop_prob == 0.0:
                self.accu_prob = 0.0
            self.accu_prob += self.drop_prob
            if self.accu_prob < 0.85:
                return False
            if self.accu_prob >= 8.5:
                return True
        return self.rnd.random() < self.drop_prob

    def arrive(self, desc):
        ts, _flow, _length, ect = desc
        now = ts / self.tick_hz
        self._catch_up(now)
        full = self._tail_drop()
        if full is not None:
            self.accu_prob = 0.0
            return full
        if self.drop_early():
            self.accu_prob = 0.0
            if self.ecn and ect and self.drop_prob <= MARK_ECN_THRESHOLD:
                return self._enqueue(now, self.drop_prob, mark=True)
            self.counters["early_drops"] += 1
            return Verdict(self.seq - 1, DROP_EARLY, 0, len(self.fifo), self.drop_prob)
        return self._enqueue(now, self.drop_prob)

    def depart(self, desc):
        ts, _length = desc
        now = ts / self.tick_hz
        self._catch_up(now)
        c = self.counters
        c["departures"] += 1
        if not self.fifo:
            c["dep_errors"] += 1
            return
        t_in = self.fifo.popleft()
        self.qdelay = (now - t_in) if self.fifo else 0.0
        self.occ_pkts = len(self.fifo)
