"""Bit-exact model of the queue averager: RED's EWMA with w_q = 2**-wq_shift and idle decay.

The average ``A`` is a QAVG raw integer (UQ20.16 packets). It is updated once per arrival, with
``q`` = the exact queue length in packets that the arrival found (before its own enqueue)::

    if idle:   A = A >> decay_table[min((t - idle_since) >> idle_cell_log, 255)];  idle = 0
    else:      A = A + ((q << 16) - A) >> wq_shift          # arithmetic shift (floor)

``idle`` is set, with ``idle_since = t_dep``, by a departure that empties the queue, and cleared
by the next arrival (as ns-2's RED does). The decay table holds the float decay
``(1-w)^(1 + idle/packet_time)`` rounded to a power of two, as Linux's RED ``Stab`` does, so
the hardware needs no multiplier in the averager's one-cycle loop.
"""

from .formats import TIME_BITS, QAVG, wrap_signed

__all__ = ["QueueAverager"]

_FX = QAVG.frac_bits


class QueueAverager:
    def __init__(self, wq_shift, idle_cell_log, decay_table):
        self.avg = 0
        self.idle = False
        self.idle_since = 0
        self.configure(wq_shift, idle_cell_log, decay_table)

    def configure(self, wq_shift, idle_cell_log, decay_table):
        self.wq_shift = wq_shift
        self.cell_log = idle_cell_log
        self.decay = list(decay_table)

    def went_idle(self, t):
        self.idle = True
        self.idle_since = t

    def update(self, q, t):
        a = self.avg
        if self.idle:
            cells = wrap_signed(t - self.idle_since, TIME_BITS)
            cells = 0 if cells < 0 else min(cells >> self.cell_log, 255)
            a >>= self.decay[cells]
            self.idle = False
        else:
            a += ((q << _FX) - a) >> self.wq_shift
        self.avg = a
        return a
