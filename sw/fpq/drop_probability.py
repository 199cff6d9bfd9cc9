"""Bit-exact model of the drop/mark probability (PROB raw integer, ``p * 2**32``, saturated).

All modes share one datapath, ``p = offset + rate * (A - base)``, with the product formed as
``((mant * D) << 1) >> shift`` (see ``formats.RATE``) and the sum saturated at ``2**32`` (p=1):

============  ===================================  ========  =========  ==========
mode          region of the average A              rate      base       offset
============  ===================================  ========  =========  ==========
fpq           any                                  r[n]      0          0
red           A < min_th                           -> p = 0
red           min_th <= A < max_th                 slope1    min_th     0
red           A >= max_th, not gentle              -> p = 1
red gentle    max_th <= A < 2 max_th               slope2    max_th     max_p
red gentle    A >= 2 max_th                        -> p = 1
droptail      any                                  -> p = 0
============  ===================================  ========  =========  ==========

``r[n] = l_t(n) / q_t(n)`` comes from the host-filled table (:func:`rate_table`, from the FPQ
paper's Fig. 5, :func:`lt_qt_float`), so ``p = l_t * q_a / q_t``, the FPQ paper's Fig. 6;
``slope1 = max_p / (max_th - min_th)`` and ``slope2 = (1 - max_p) / max_th`` are
host-computed registers.
"""

import enum

from .formats import PROB_ONE, RATE

__all__ = ["Mode", "probability", "rate_table", "lt_qt_float"]


class Mode(enum.IntEnum):
    """The queue discipline: a member's value is the ``mode`` register's, its name the
    ``mode`` field's (``Config(mode="red")``; ``Mode["red"]``)."""
    droptail = 0
    red = 1
    fpq = 2


# looked up once: ``probability`` is on the per-arrival path
_FPQ, _RED = Mode.fpq, Mode.red
_MB = RATE.mant_bits
_MMASK = (1 << _MB) - 1


def scale(word, d):
    """``rate * D`` in PROB units for a packed RATE word and a QAVG raw difference ``d``."""
    return (((word & _MMASK) * d) << 1) >> (word >> _MB)


def probability(mode, avg, rate_word, regs):
    """Probability for average ``avg`` (QAVG raw). ``rate_word`` is ``r[n]`` (FPQ only)."""
    if mode == _FPQ:
        p = (((rate_word & _MMASK) * avg) << 1) >> (rate_word >> _MB)  # scale(), inlined: hot
    elif mode == _RED:
        lo = regs["red_min_th"]
        hi = regs["red_max_th"]
        if avg < lo:
            return 0
        if avg < hi:
            p = scale(regs["red_slope1"], avg - lo)
        elif regs["red_gentle"] and avg < 2 * hi:
            p = regs["red_max_p"] + scale(regs["red_slope2"], avg - hi)
        else:
            return PROB_ONE
    else:
        return 0
    return PROB_ONE if p > PROB_ONE else p


def lt_qt_float(n, p_pkts, plus_one=False):
    """FPQ paper Fig. 5: ``(q_t, l_t)`` for a flow count ``n`` (``n < 1`` is treated as 1)."""
    n = max(float(n), 1.0)
    q_t = max(p_pkts / (2 * n - 1), 6 * n)
    window = (q_t + p_pkts) / n + (1 if plus_one else 0)
    l_t = min((0.87 / window) ** 2, 0.021)
    return q_t, l_t


def rate_table(config):
    """The r(N) table of ``config`` (an ``fpq.Config``): ``r(n) = l_t / q_t`` for n =
    0..table_depth-1 (:func:`lt_qt_float` of the count ``Config.n_effective`` gives), as
    packed RATE words."""
    v = config.values
    out = []
    for n in range(config.build.table_depth):
        q_t, l_t = lt_qt_float(config.n_effective(n), v["p_pkts"], v["lt_plus_one"])
        out.append(RATE.pack(*RATE.encode(l_t / q_t, "rate_table")))
    return out
