"""CoDel (RFC 8289, "Controlled Delay Active Queue Management"), a float reference model.

CoDel decides at dequeue, from the time each packet spent in the queue (its sojourn time):
when the sojourn time has stayed at or above ``target`` for at least ``interval`` (and more
than one maximum-size packet is queued), it enters the dropping state and drops head packets,
the ``count``-th drop ``interval / sqrt(count)`` after the previous one, until the sojourn time
falls below ``target`` or the queue empties. This module follows the pseudo-code of RFC 8289,
Section 5 (``dodequeue``, ``dequeue``, ``control_law``), including the Linux re-entry rule of
Section 5.5 (``count`` resumes at ``count - lastcount`` if the dropping state is re-entered
within 16 intervals). With ``ecn`` an ECN-capable head packet that would be dropped is marked
instead and sent (RFC 8289 Section 5.1, as Linux's ``codel_dequeue`` does it): it counts as a
drop for ``count`` and the control law, and ends the drops of this dequeue. Defaults are the
RFC's: ``target`` 5 ms, ``interval`` 100 ms. Arrivals
are refused only when the buffer limit is reached (tail drop, RFC 8289 Section 4.1).

The model keeps the arrival time and length of every queued packet in its own FIFO (a mirror
of the router's queue) and works in seconds (``ts / tick_hz``). Interface for
``fpq_sim.router.OutputPort``: ``arrive(desc)`` returns a verdict like the FPQ queue managers'
(``fpq.Verdict``: seq, action, n, avg, prob); ``dequeue(ts)`` is called when the link is free
and returns ``(drops, send)``: the number of head packets to drop and whether the packet then
at the head is to be sent (False: the queue ran empty); ``marked`` then tells whether that
packet is to be marked CE.
"""

import math

from .float_aqm import FloatAqm

__all__ = ["CoDel"]


class CoDel(FloatAqm):
    """CoDel queue discipline (RFC 8289). ``limit_pkts`` 0 means no buffer limit; ``fifo``
    holds the (arrival time s, length, ECN-capable) of the queued packets, and ``log`` records
    (time, what, detail) of each drop, mark and entry into the dropping state. ``ecn``: mark
    ECN-capable packets instead of dropping them."""

    def __init__(self, tick_hz, target_s=0.005, interval_s=0.1, limit_pkts=0, ecn=False):
        if not target_s > 0 or not interval_s > 0:
            raise ValueError(f"CoDel: target_s {target_s} and interval_s {interval_s} must be "
                             f"> 0")
        super().__init__(tick_hz, limit_pkts)
        self.target = float(target_s)
        self.interval = float(interval_s)
        self.bytes = 0
        self.maxpacket = 0            # the largest packet seen (RFC 8289: maxpacket_)
        self.first_above_time = 0.0
        self.drop_next = 0.0
        self.count = 0
        self.lastcount = 0
        self.dropping = False
        self.dequeue_drops = 0
        self.ecn = bool(ecn)
        self.head_ect = False         # the packet _dodequeue took is ECN-capable
        self.marked = False           # the last dequeue marks the packet it sends

    # ---- enqueue --------------------------------------------------------------------------------
    def arrive(self, desc):
        ts, _flow, length, ect = desc
        full = self._tail_drop()
        if full is not None:
            return full
        self.bytes += length
        if length > self.maxpacket:
            self.maxpacket = length
        return self._enqueue((ts / self.tick_hz, length, bool(ect)), 0.0)

    # ---- dequeue (RFC 8289 Section 5) ----------------------------------------------------------
    def control_law(self, t):
        """The time of the next drop: ``t + interval / sqrt(count)`` (RFC 8289 5.6)."""
        return t + self.interval / math.sqrt(self.count)

    def _dodequeue(self, now):
        """Take the head packet; returns ``(present, ok_to_drop)`` (RFC 8289 5.4)."""
        if not self.fifo:
            self.first_above_time = 0.0
            return False, False
        t_in, length, self.head_ect = self.fifo.popleft()
        self.bytes -= length
        sojourn = now - t_in
        ok_to_drop = False
        if sojourn < self.target or self.bytes <= self.maxpacket:
            self.first_above_time = 0.0            # went below: stay below for an interval
        elif self.first_above_time == 0.0:
            self.first_above_time = now + self.interval
        elif now >= self.first_above_time:
            ok_to_drop = True
        return True, ok_to_drop

    def dequeue(self, ts):
        """The link is free at ``ts``: ``(head packets to drop, send the next one?)``
        (RFC 8289 5.5)."""
        now = ts / self.tick_hz
        drops = 0
        self.marked = False
        present, ok = self._dodequeue(now)
        if not present:
            self.dropping = False
            return self._done(0, False)
        if self.dropping:
            if not ok:
                self.dropping = False             # sojourn below target: leave
            while now >= self.drop_next and self.dropping:
                self.count += 1
                if self._mark(now):               # marked and sent: no more drops now
                    self.drop_next = self.control_law(self.drop_next)
                    break
                drops += 1                        # drop the current packet, take the next
                self._note(now, "drop", self.count)
                present, ok = self._dodequeue(now)
                if not ok:
                    self.dropping = False
                else:
                    self.drop_next = self.control_law(self.drop_next)
        elif ok:
            if not self._mark(now):
                drops += 1
                present, ok = self._dodequeue(now)
            self.dropping = True
            delta = self.count - self.lastcount
            self.count = 1
            if delta > 1 and now - self.drop_next < 16 * self.interval:
                self.count = delta
            self.drop_next = self.control_law(now)
            self.lastcount = self.count
            self._note(now, "enter", self.count)
        return self._done(drops, present)

    def _mark(self, now):
        """Mark the head packet instead of dropping it, if it and CoDel are ECN-capable."""
        if not (self.ecn and self.head_ect):
            return False
        self.marked = True
        self.counters["marked"] += 1
        self._note(now, "mark", self.count)
        return True

    def _done(self, drops, send):
        c = self.counters
        c["early_drops"] += drops
        self.dequeue_drops += drops
        c["departures"] += 1 if send else 0
        self.occ_pkts = len(self.fifo)
        return drops, send

    def _note(self, now, what, detail):
        if self.log is not None:
            self.log.append((now, what, detail))
