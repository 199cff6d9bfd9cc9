"""What the float reference AQMs (``fpq_sim.codel``, ``fpq_sim.pie``) share: a mirror of the
router's FIFO, tail drop when it holds ``limit_pkts`` packets (RFC 8289 Section 4.1, RFC 8033
Section 4.1), and the verdicts and counters of the FPQ queue managers (``fpq.Verdict``,
``fpq.queue_manager.COUNTERS``), so that ``fpq_sim.router.OutputPort`` drives all alike."""

import math
from collections import deque

from fpq.queue_manager import Verdict, ENQUEUE, MARK, DROP_FORCED, COUNTERS

__all__ = ["FloatAqm"]


class FloatAqm:
    """The FIFO and accounting of a float AQM model.

    Parameters
    ----------
    tick_hz : float
        The clock of the descriptors' timestamps (``ts / tick_hz`` seconds).
    limit_pkts : int
        The buffer: an arrival that finds this many packets queued is dropped (0: no limit).

    Attributes: ``fifo`` (one entry per queued packet, of the subclass's choosing),
    ``occ_pkts`` and ``max_queue`` (packets queued now and at most), ``counters``, ``seq``
    (arrivals so far), ``log`` (None, or a list a test sets to read what the model did).
    """

    def __init__(self, tick_hz, limit_pkts=0):
        self.tick_hz = float(tick_hz)
        self.limit_pkts = int(limit_pkts) or math.inf
        self.fifo = deque()
        self.seq = 0
        self.occ_pkts = 0
        self.max_queue = 0
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.log = None

    def _tail_drop(self):
        """Count an arrival; the forced-drop verdict if the buffer is full, else None."""
        c = self.counters
        c["arrivals"] += 1
        self.seq += 1
        if len(self.fifo) >= self.limit_pkts:
            c["forced_drops"] += 1
            return Verdict(self.seq - 1, DROP_FORCED, 0, len(self.fifo), 1.0)
        return None

    def _enqueue(self, entry, prob, mark=False):
        """Queue the arrival as ``entry``; its verdict (MARK if ``mark``: ECN instead of an
        early drop), with drop probability ``prob``."""
        self.fifo.append(entry)
        self.counters["enqueued"] += 1
        self.counters["marked"] += mark
        self.occ_pkts = len(self.fifo)
        if self.occ_pkts > self.max_queue:
            self.max_queue = self.occ_pkts
        return Verdict(self.seq - 1, MARK if mark else ENQUEUE, 0, self.occ_pkts, prob)
