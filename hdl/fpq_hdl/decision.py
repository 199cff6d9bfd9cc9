"""Decision: early drop (FPQ compare, RED spacing), ECN mark, hard limits, queue occupancy."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpq.formats import PROB, RAND_BITS, LENGTH_BITS, QPKTS_BITS, QBYTES_BITS, TIME_BITS
from fpq.drop_probability import MODE_FPQ, MODE_RED
from fpq.queue_manager import ENQUEUE, MARK, DROP_EARLY, DROP_FORCED

from .layouts import config_layout, check_optimise

__all__ = ["Decision"]


class Decision(wiring.Component):
    """Steps 3-6 of ``fpq.queue_manager.QueueManager.arrive`` and all of ``depart``.

    **Cycle 0, early decision.** FPQ: ``u < p``. RED: Floyd's uniform spacing, accumulate
    ``p`` since the last early drop and drop when the sum reaches a random threshold. The
    model's ``acc``/``thresh`` pair is kept as the single register ``D = thresh - acc``:
    ``acc + p >= thresh`` is ``p >= D`` and ``acc += p`` is ``D -= p``, so the one-clock
    recurrence is one compare and one subtract side by side instead of an add then a compare
    (bit-exact: the same integers). ``p == 0`` reloads ``D = u``.

    **Cycle 1, occupancy.** A departure in the slot applies first (saturating at zero, errors
    counted, an emptying departure starts the idle time); then the arrival: early and not
    (ECN enabled and ECN-capable) is an early drop; else over ``limit_pkts`` or ``limit_bytes``
    a forced drop; else enqueue (or mark). The arrival also reports the queue it found and the
    idle time for the averager.

    Latency: 2 clocks (outputs registered); throughput one arrival and one departure per clock.

    Parameters
    ----------
    build : fpq.Build
    optimise : str
        "speed" (default): the byte-limit check ``occ - dep + len > limit`` as ``occ > limit -
        len + dep``, its right side formed a clock early for the slot with and without its
        departure, so that the occupancy's one-clock recurrence holds one compare and no
        adder in front of it. "area": the occupancy after the departure, plus the length,
        compared with the limit in the recurrence; the sum is also the new occupancy (two
        adders and one compare instead of five adders, two compares and 85 flip-flops). As
        nothing then needs them at cycle 0, the arrival's and departure's fields (``ecn``,
        ``length``, ``ts``, ``dep_length``, ``dep_ts``) are taken at cycle 1, a clock after
        ``valid`` and ``dep_valid`` (``fields_at``): a source that has them a clock later
        anyway (the queue manager's RAM delay line) needs no register for them.

    Attributes
    ----------
    valid, p, u, ecn, length, ts : In
        Arrival (cycle 0; the fields ``ecn``, ``length``, ``ts`` at cycle ``fields_at``):
        probability, its random number, ECN-capable, bytes, timestamp.
    dep_valid, dep_length, dep_ts : In
        Departure in the same slot (cycle 0; its fields at cycle ``fields_at``); it applies
        before the arrival.
    fields_at : int
        Not a port: the cycle of the fields, 0 with ``optimise="speed"``, 1 with "area".
    config : In(config_layout(build))
        Uses ``mode``, ``ecn``, ``limit_pkts``, ``limit_bytes``.
    clear_max_queue : In(1)
    out_valid, action, q : Out
        The arrival's action and the queue length (packets) it found (cycle 2).
    idle, idle_diff : Out
        The queue was idle at this arrival, for ``idle_diff`` ticks (wrapped, signed).
    out_dep_valid, dep_error : Out
        The slot's departure and whether it was an error (cycle 2).
    occ_pkts, occ_bytes, max_queue : Out
        Occupancy registers (``max_queue`` follows ``occ_pkts`` a clock later).
    """

    LATENCY = 2

    def __init__(self, build, optimise="speed"):
        self.optimise = check_optimise(optimise)
        self.fields_at = int(optimise == "area")
        super().__init__({
            "valid": In(1), "p": In(PROB.width), "u": In(RAND_BITS), "ecn": In(1),
            "length": In(LENGTH_BITS), "ts": In(TIME_BITS),
            "dep_valid": In(1), "dep_length": In(LENGTH_BITS), "dep_ts": In(TIME_BITS),
            "config": In(config_layout(build)), "clear_max_queue": In(1),
            "out_valid": Out(1), "action": Out(2), "q": Out(QPKTS_BITS),
            "idle": Out(1), "idle_diff": Out(signed(TIME_BITS)),
            "out_dep_valid": Out(1), "dep_error": Out(1),
            "occ_pkts": Out(QPKTS_BITS), "occ_bytes": Out(QBYTES_BITS),
            "max_queue": Out(QPKTS_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        self.mode, self.ecn_enable = cfg.mode, cfg.ecn
        self.limit_pkts, self.limit_bytes = cfg.limit_pkts, cfg.limit_bytes
        # ---- cycle 0: early decision ------------------------------------------------------
        dist = Signal(PROB.width, init=(1 << 32) - 1)   # RED: thresh - acc
        early = Signal()
        with m.If(self.valid):
            with m.If(self.mode == MODE_FPQ):
                m.d.sync += early.eq(self.u < self.p)
            with m.Elif(self.mode == MODE_RED):
                with m.If(self.p == 0):
                    m.d.sync += [early.eq(0), dist.eq(self.u)]
                with m.Elif(self.p >= dist):
                    m.d.sync += [early.eq(1), dist.eq(self.u)]
                with m.Else():
                    m.d.sync += [early.eq(0), dist.eq(dist - self.p)]
            with m.Else():
                m.d.sync += early.eq(0)
        v1, dv1 = Signal(), Signal()
        m.d.sync += [v1.eq(self.valid), dv1.eq(self.dep_valid)]
        if self.fields_at == 0:
            ecn1, len1, ts1 = Signal(), Signal(LENGTH_BITS), Signal(TIME_BITS)
            dlen1, dts1 = Signal(LENGTH_BITS), Signal(TIME_BITS)
            m.d.sync += [ecn1.eq(self.ecn), len1.eq(self.length), ts1.eq(self.ts),
                         dlen1.eq(self.dep_length), dts1.eq(self.dep_ts)]
        else:
            ecn1, len1, ts1 = self.ecn, self.length, self.ts
            dlen1, dts1 = self.dep_length, self.dep_ts
        if self.optimise == "speed":
            # per-slot constants for the occupancy recurrence, formed before it: the byte
            # limit check ``occ - dep + len > limit`` becomes ``occ > limit - len + dep``,
            # one compare
            wb = QBYTES_BITS + 2
            k_nodep, k_dep = Signal(signed(wb)), Signal(signed(wb))
            delta = Signal(signed(LENGTH_BITS + 1))
            m.d.sync += [k_nodep.eq(self.limit_bytes - self.length),
                         k_dep.eq(self.limit_bytes - self.length + self.dep_length),
                         delta.eq(self.length - self.dep_length)]

        # ---- cycle 1: occupancy -------------------------------------------------------------
        occ_p, occ_b = self.occ_pkts, self.occ_bytes
        idle, idle_since = Signal(), Signal(TIME_BITS)
        # the departure: every candidate result is formed in parallel, then selected
        empty = occ_p == 0
        short = dlen1 > occ_b                      # departing more bytes than queued
        dep_p = dv1 & ~empty
        op1 = Mux(dep_p, occ_p - 1, occ_p)
        went_idle = dv1 & (occ_p == 1)
        idle1 = idle | went_idle
        since1 = Mux(went_idle, dts1, idle_since)
        # the arrival
        drop_early = early & ~(self.ecn_enable & ecn1)
        over_p = Mux(dep_p, occ_p > self.limit_pkts, occ_p >= self.limit_pkts)
        # (the occupancy is unsigned: as a signed 32-bit number, queues above 2 GiB compared
        # as negative and were never over the byte limit)
        if self.optimise == "speed":
            over_b = Mux(dv1, Mux(short, k_nodep < 0, occ_b > k_dep), occ_b > k_nodep)
        else:
            # the bytes after the departure, and after the arrival too (one bit wider: the
            # compare sees the carry)
            ob1 = Mux(dv1, Mux(short, 0, occ_b - dlen1), occ_b)
            ob2 = Signal(QBYTES_BITS + 1)
            m.d.comb += ob2.eq(ob1 + len1)
            over_b = ob2 > self.limit_bytes
        forced = over_p | over_b
        enq = v1 & ~drop_early & ~forced
        action = Mux(drop_early, DROP_EARLY, Mux(forced, DROP_FORCED,
                                                 Mux(early, MARK, ENQUEUE)))
        with m.If(enq):
            m.d.sync += occ_p.eq(Mux(dep_p, occ_p, occ_p + 1))
        with m.Else():
            m.d.sync += occ_p.eq(op1)
        if self.optimise == "speed":
            with m.If(enq):
                with m.If(dv1):
                    m.d.sync += occ_b.eq(Mux(short, len1, occ_b + delta))
                with m.Else():
                    m.d.sync += occ_b.eq(occ_b + len1)
            with m.Elif(dv1):
                m.d.sync += occ_b.eq(Mux(short, 0, occ_b - dlen1))
        else:
            m.d.sync += occ_b.eq(Mux(enq, ob2, ob1))
        # the largest occupancy, a clock behind (only enqueues raise the occupancy)
        with m.If(self.clear_max_queue):
            m.d.sync += self.max_queue.eq(0)
        with m.Elif(occ_p > self.max_queue):
            m.d.sync += self.max_queue.eq(occ_p)
        with m.If(v1):
            m.d.sync += idle.eq(0)
        with m.Else():
            m.d.sync += idle.eq(idle1)
        m.d.sync += idle_since.eq(since1)
        m.d.sync += [self.out_valid.eq(v1), self.action.eq(action), self.q.eq(op1),
                     self.idle.eq(idle1), self.idle_diff.eq(ts1 - since1),
                     self.out_dep_valid.eq(dv1), self.dep_error.eq(dv1 & (empty | short))]
        return m
