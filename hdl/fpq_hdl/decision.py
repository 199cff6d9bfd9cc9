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
        "speed" (default): the occupancy's one-clock recurrence holds only compares and sums
        of the occupancy with registers, side by side, and a select per bit: the slot's byte
        threshold ``limit - length + dep`` and the other operands are formed a clock early,
        and the packet limit, empty and one-packet checks are flags registered with the packet
        occupancy (``_occupancy_speed``). The configuration must be stable a clock before a
        slot enters. On the ECP5, alone: 114.7 / 126.7 MHz (seeds 1 / 2), 1029 LUTs, against
        110.3 MHz and 1332 LUTs with the byte threshold alone formed early (2026-11-24).
        "area": the occupancy after the departure, plus the length, compared with the limit
        in the recurrence; the sum is also the new occupancy (two adders and one compare, in
        series, and none of the speed form's operand and flag registers). As nothing then
        needs them at cycle 0, the arrival's and departure's fields (``ecn``,
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
            # (the departure's length is used at cycle 0 only, ``dlen1`` unused)
            action, q, dep_error, went_idle = self._occupancy_speed(m, early, v1, dv1, ecn1,
                                                                    len1)
        else:
            action, q, dep_error, went_idle = self._occupancy_area(m, early, v1, dv1, ecn1,
                                                                   len1, dlen1)
        occ_p = self.occ_pkts
        idle, idle_since = Signal(), Signal(TIME_BITS)
        idle1 = idle | went_idle
        since1 = Mux(went_idle, dts1, idle_since)
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
        m.d.sync += [self.out_valid.eq(v1), self.action.eq(action), self.q.eq(q),
                     self.idle.eq(idle1), self.idle_diff.eq(ts1 - since1),
                     self.out_dep_valid.eq(dv1), self.dep_error.eq(dep_error)]
        return m

    @staticmethod
    def _action(early, drop_early, forced):
        return Mux(drop_early, DROP_EARLY, Mux(forced, DROP_FORCED, Mux(early, MARK, ENQUEUE)))

    def _occupancy_speed(self, m, early, v1, dv1, ecn1, len1):
        """Cycle 1 with a short one-clock recurrence: everything that does not depend on the
        occupancy is formed a clock early, at cycle 0, and the packet occupancy's compares
        are registered flags of the slot, formed a clock early for each way it can move.

        Bytes: with ``dep = dep_length`` if the slot has a departure, else 0, the departure
        is short (more bytes than queued) if ``dep > occ``; if not, the arrival is over the
        byte limit if ``occ > limit - length + dep``, and the occupancy becomes ``occ - dep``
        (no enqueue) or ``occ + (length - dep)`` (enqueue). A short departure empties the
        queue, and the arrival then enqueues its length alone if ``length <= limit``. So the
        recurrence is four carry chains side by side, each from the occupancy and a
        register (two compares, two sums), then one 5-input select per bit.

        Packets: the packet limit (``occ - dep >= limit``), the empty queue and the queue of
        one packet are flags registered with the occupancy: for each of its moves (-1, 0,
        +1) the next flags are compares of the occupancy now with ``limit - 1 .. limit + 2``,
        0, 1 and 2, selected by the move. ``limit - 1``, ``limit + 1`` and ``limit + 2`` are
        registers of the configuration: it must be stable a clock before a slot enters
        (cycle 0), which the queue manager's commit (only while idle) gives by far."""
        occ_p, occ_b = self.occ_pkts, self.occ_bytes
        lim = self.limit_pkts
        # ---- cycle 0: the slot's operands, registered
        wb = QBYTES_BITS + 2
        k = Signal(signed(wb))                   # over the byte limit if occ > k
        dep = Signal(LENGTH_BITS)                # bytes departing, 0 without a departure
        grow = Signal(signed(LENGTH_BITS + 1))   # change of an enqueue, after the departure
        fits = Signal()                          # the arrival alone is within the byte limit
        with m.If(self.dep_valid):
            m.d.sync += [k.eq(self.limit_bytes - self.length + self.dep_length),
                         dep.eq(self.dep_length), grow.eq(self.length - self.dep_length)]
        with m.Else():
            m.d.sync += [k.eq(self.limit_bytes - self.length), dep.eq(0),
                         grow.eq(self.length)]
        m.d.sync += fits.eq(self.length <= self.limit_bytes)
        lims = [Signal(QPKTS_BITS + 2, name=f"limit_pkts_{n}") for n in ("m1", "p1", "p2")]
        m.d.sync += [lims[0].eq(lim - 1), lims[1].eq(lim + 1), lims[2].eq(lim + 2)]
        # ---- cycle 1: the flags of this slot (registered below, a clock ago)
        empty, one = Signal(init=1), Signal()
        at_limit, over_limit = Signal(), Signal()     # occ >= limit, occ > limit
        dep_p = dv1 & ~empty
        drop_early = early & ~(self.ecn_enable & ecn1)
        over_p = Mux(dep_p, over_limit, at_limit)
        # no enqueue whatever the bytes: from registers only, beside the carry chains
        kill = ~v1 | drop_early | over_p
        short = dep > occ_b
        refuse = kill | (occ_b > k)
        enq = Mux(short, ~kill & fits, ~refuse)
        with m.If(short):
            m.d.sync += occ_b.eq(Mux(kill | ~fits, 0, len1))
        with m.Elif(refuse):
            m.d.sync += occ_b.eq(occ_b - dep)
        with m.Else():
            m.d.sync += occ_b.eq(occ_b + grow)
        op1 = Mux(dep_p, occ_p - 1, occ_p)
        m.d.sync += occ_p.eq(Mux(enq, Mux(dep_p, occ_p, occ_p + 1), op1))
        # the next slot's flags: compares of the occupancy now, for each move
        up, down = enq & ~dep_p, ~enq & dep_p
        ge = [occ_p >= lims[0], occ_p >= lim, occ_p >= lims[1], occ_p >= lims[2]]
        eq = [occ_p == 0, occ_p == 1, occ_p == 2]

        def moved(if_up, if_same, if_down):
            return Mux(up, if_up, Mux(down, if_down, if_same))
        m.d.sync += [at_limit.eq(moved(ge[0], ge[1], ge[2])),
                     over_limit.eq(moved(ge[1], ge[2], ge[3])),
                     empty.eq(moved(0, eq[0], eq[1])),
                     one.eq(moved(eq[0], eq[1], eq[2]))]
        forced = ~enq
        return (self._action(early, drop_early, forced), op1, dv1 & (empty | short),
                dv1 & one)

    def _occupancy_area(self, m, early, v1, dv1, ecn1, len1, dlen1):
        """Cycle 1 as the model writes it: the departure, then the arrival's sum compared."""
        occ_p, occ_b = self.occ_pkts, self.occ_bytes
        empty = occ_p == 0
        short = dlen1 > occ_b                      # departing more bytes than queued
        dep_p = dv1 & ~empty
        op1 = Mux(dep_p, occ_p - 1, occ_p)
        drop_early = early & ~(self.ecn_enable & ecn1)
        over_p = Mux(dep_p, occ_p > self.limit_pkts, occ_p >= self.limit_pkts)
        # the bytes after the departure, and after the arrival too (one bit wider: the
        # compare sees the carry; the occupancy is unsigned: as a signed 32-bit number,
        # queues above 2 GiB compared as negative and were never over the byte limit)
        ob1 = Mux(dv1, Mux(short, 0, occ_b - dlen1), occ_b)
        ob2 = Signal(QBYTES_BITS + 1)
        m.d.comb += ob2.eq(ob1 + len1)
        over_b = ob2 > self.limit_bytes
        forced = over_p | over_b
        enq = v1 & ~drop_early & ~forced
        m.d.sync += [occ_p.eq(Mux(enq, Mux(dep_p, occ_p, occ_p + 1), op1)),
                     occ_b.eq(Mux(enq, ob2, ob1))]
        return (self._action(early, drop_early, forced), op1, dv1 & (empty | short),
                dv1 & (occ_p == 1))

