"""CoDel (RFC 8289, "Controlled Delay Active Queue Management"), a float reference model.

CoDel decides at dequeue, from the time each packet spent in the queue (its sojourn time):
when the sojourn time has stayed at or above ``target`` for at least ``interval`` (and more
than one maximum-size packet is queued), it enters the dropping state and drops head packets,
the ``count``-th drop ``interval / sqrt(count)`` after the previous one, until the sojourn time
falls below ``target`` or the queue empties. This module follows the pseudo-code of RFC 8289,
Section 5 (``dodequeue``, ``dequeue``, ``control_law``), including the Linux re-entry rule of
Section 5.5 (``count`` resumes at ``count - lastcount`` if the dropping state is re-entered
within 16 intervals). Defaults are the RFC's: ``target`` 5 ms, ``interval`` 100 ms. Arrivals
are refused only when the buffer limit is reached (tail drop, RFC 8289 Section 4.1).

The model keeps the arrival time and length of every queued packet in its own FIFO (a mirror
of the router's queue) and works in seconds (``ts / tick_hz``). Interface for
``fpq_sim.router.OutputPort``: ``arrive(desc)`` returns a verdict like the FPQ queue managers'
(``fpq.Verdict``: seq, action, n, avg, prob); ``dequeue(ts)`` is called when the link is free
and returns ``(drops, send)``: the number of head packets to drop and whether the packet then
at the head is to be sent (False: the queue ran empty).
"""

import math

from .float_aqm import FloatAqm

__all__ = ["CoDel"]


class CoDel(FloatAqm):
    """CoDel queue discipline (RFC 8289). ``limit_pkts`` 0 means no buffer limit; ``fifo``
    holds the (arrival time s, length) of the queued packets, and ``log`` records
    (time, what, detail) of each drop and each entry into the dropping state."""

    def __init__(self, tick_hz, target_s=0.005, interval_s=0.1, limit_pkts=0):
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

    # ---- enqueue --------------------------------------------------------------------------------
    def arrive(self, desc):
        ts, _flow, length, _ecn = desc
        full = self._tail_drop()
        if full is not None:
            return full
        self.bytes += length
        if length > self.maxpacket:
            self.maxpacket = length
        return self._enqueue((ts / self.tick_hz, length), 0.0)

    # ---- dequeue (RFC 8289 Section 5) ----------------------------------------------------------
    def control_law(self, t):
        """The time of the next drop: ``t + interval / sqrt(count)`` (RFC 8289 5.6)."""
        return t + self.interval / math.sqrt(self.count)

    def _dodequeue(self, now):
        """Take the head packet; returns ``(present, ok_to_drop)`` (RFC 8289 5.4)."""
        if not self.fifo:
            self.first_above_time = 0.0
            return False, False
        t_in, length = self.fifo.popleft()
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
        present, ok = self._dodequeue(now)
        if not present:
            self.dropping = False
            return self._done(0, False)
        if self.dropping:
            if not ok:
                self.dropping = False             # sojourn below target: leave
            while now >= self.drop_next and self.dropping:
                drops += 1                        # drop the current packet, take the next
                self.count += 1
                self._note(now, "drop", self.count)
                present, ok = self._dodequeue(now)
                if not ok:
                    self.dropping = False
                else:
                    self.drop_next = self.control_law(self.drop_next)
        elif ok:
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
