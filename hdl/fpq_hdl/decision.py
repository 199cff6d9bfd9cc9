"""Decision: early drop (FPQ compare, RED spacing), ECN mark, hard limits, queue occupancy."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpq.formats import PROB, RAND_BITS, LENGTH_BITS, QPKTS_BITS, QBYTES_BITS
from fpq.drop_probability import Mode
from fpq.queue_manager import ENQUEUE, MARK, DROP_EARLY, DROP_FORCED

from .layouts import config_layout, check_optimise

__all__ = ["Decision", "red_spacing", "admission",
           "track_max"]

#: Width of the signed byte sums of the "speed" form's thresholds.
_SUM_BITS = QBYTES_BITS + 4


def split_less(m, a, b, name, split=QBYTES_BITS // 2):
    """``a < b`` for unsigned ``a``, ``b`` of one width, as three carry chains of half the
    width side by side (low halves ``<``, high halves ``<`` and ``>``) and one LUT: a
    32-bit compare in one carry chain is twice as long and crosses a column of the
    fabric. The high halves' ``>`` carries a constant low bit (``2b + 1 < 2a + 1``): as
    ``b < a`` Yosys shares one subtraction for both compares and forms ``>`` from ``<``
    and an equality tree of its XORs, three LUT levels after the registers."""
    lo, hi_lt, hi_gt = (Signal(name=f"{name}_{k}") for k in ("lo", "hi_lt", "hi_gt"))
    m.d.comb += [lo.eq(a[:split] < b[:split]), hi_lt.eq(a[split:] < b[split:]),
                 hi_gt.eq(Cat(C(1, 1), b[split:]) < Cat(C(1, 1), a[split:]))]
    return hi_lt | (~hi_gt & lo)


def nonzero(m, v, name):
    """``v != 0`` as the carry out of ``v`` plus all ones: one carry chain. (Written as a
    compare or an OR, Yosys makes it a tree of LUTs, three levels for 20 bits.)"""
    flag = Signal(name=name)
    m.d.comb += flag.eq((v + C((1 << len(v)) - 1, len(v)))[len(v)])
    return flag


def _occupancy_below(m, y, t, name):
    """``y < t`` for the unsigned byte occupancy ``y`` and a signed threshold ``t`` narrower
    than it, when ``t >= 0`` (the caller ANDs that in): the low bits compared in one short
    carry chain, beside a chain that tells whether the occupancy's high bits are nonzero.
    (As a compare of the full width, with ``t`` zero-extended, Yosys folds the constant bits
    into LUT levels after the chain.)"""
    n = len(t) - 1
    lo = Signal(name=f"{name}_lo")
    m.d.comb += lo.eq(y[:n] < t[:n])
    return ~nonzero(m, y[n:], f"{name}_hi_nonzero") & lo


def _signed_below(m, a, b, name):
    """``a < b`` for signed ``a``, ``b`` of one width, as a compare in offset binary (the sign
    bits inverted, which the carry chain's own LUTs absorb): the flag is the chain's carry
    out."""
    flag = Signal(name=name)
    m.d.comb += flag.eq(Cat(a[:-1], ~a[-1]) < Cat(b[:-1], ~b[-1]))
    return flag


def red_spacing(m, p, p_zero, u_load, step, separate_hit):
    """RED's uniform spacing as one register, ``E = max(thresh - acc - 1, 0)``, and its hit
    ``p > E`` (``acc + p >= thresh``; ``p == 0`` is never a hit). In a clock with ``step``
    (an arrival RED decides), E takes ``E - p`` (no drop), or ``u_load`` (``max(u - 1, 0)``)
    on a drop or ``p == 0``: a one-clock loop of one carry chain and one select.

    ``separate_hit``: the hit from a carry chain of its own beside E's (``E - p``, whose sign
    selects E's 32 next bits), so that a LUT after the hit follows the carry out directly,
    not a sign that fans out across E. (The constant low bit keeps Yosys from sharing one
    chain for both: ``2E + 1 < 2p + 1`` is ``E < p``.) Else the hit is that sign."""
    e_reg = Signal(RAND_BITS, init=(1 << 32) - 2)
    diff = Signal(signed(PROB.width + 2))
    m.d.comb += diff.eq(e_reg - p)
    over = diff < 0                               # RED's hit: p > E
    with m.If(step):
        m.d.sync += e_reg.eq(Mux(p_zero | over, u_load, diff[:RAND_BITS]))
    if not separate_hit:
        return over
    red_hit = Signal(name="red_hit")
    m.d.comb += red_hit.eq(Cat(C(1, 1), e_reg) < Cat(C(1, 1), p))
    return red_hit


def admission(m, cand, forced_if, short_bytes_if, short_pkts, dv, length, dep, grow,
              occ_p, occ_b, cand_packets=None):
    """Cycle 1 of ``Decision(optimise="speed")``: slot t's admission and the occupancy, from
    flags formed before for each outcome of slot t - 1.

    ``forced_if``, ``short_bytes_if``: (slot t - 1 not admitted, admitted) pairs of the
    forced flag and of "the departure takes more bytes than queued"; ``short_pkts``: the
    departure finds no packet (when slot t - 1 was not admitted). ``cand``: admitted unless
    forced. The admission ``a(t) = cand & ~forced`` is a one-bit loop through one LUT
    (``a(t - 1)`` selects the flags; ``cand`` is a register); each occupancy
    register takes ``O - d`` or ``O - d + length`` (two carry chains side by side) under the
    selected flags: one carry chain and one LUT, then one LUT of ``cand``. ``cand_packets``:
    the same candidate from a register of its own, for the packet count and ``a`` (None:
    ``cand``). Returns the forced flag and whether the departure was short (an error)."""
    (f0, f1), (sb0, sb1), sp0, dv1, len1, dep1 = forced_if, short_bytes_if, short_pkts, \
        dv, length, dep
    cand_p = cand if cand_packets is None else cand_packets
    a_prev = Signal()
    forced = Mux(a_prev, f1, f0)
    a = cand_p & ~forced
    m.d.sync += a_prev.eq(a)
    s_b = Mux(a_prev, sb1, sb0)
    s_p = ~a_prev & sp0
    # each register takes ``Mux(a, admitted, refused)``, written as ``Mux(cand, kept,
    # refused)`` with ``kept = Mux(forced, refused, admitted)``: the same value, but ``cand``
    # (a register the early decision's chains feed) is then one LUT from each register, not
    # two
    ob_sub, ob_add = Signal(QBYTES_BITS), Signal(QBYTES_BITS)
    m.d.comb += [ob_sub.eq(occ_b - dep1), ob_add.eq(occ_b + grow)]
    _admit(m, occ_b, cand, forced, Mux(s_b, len1, ob_add), Mux(s_b, 0, ob_sub))
    op_sub, op_add = Signal(QPKTS_BITS), Signal(QPKTS_BITS)
    m.d.comb += [op_sub.eq(occ_p - dv1), op_add.eq(occ_p + ~dv1)]
    _admit(m, occ_p, cand_p, forced, Mux(s_p, 1, op_add), Mux(s_p, 0, op_sub))
    return forced, s_b | s_p


def _admit(m, register, cand, forced, admitted, refused):
    """``register`` takes ``admitted`` if ``cand & ~forced``, else ``refused``."""
    kept = Signal.like(register, name=f"{register.name}_kept")
    m.d.comb += kept.eq(Mux(forced, refused, admitted))
    m.d.sync += register.eq(Mux(cand, kept, refused))


def track_max(m, value, clear, largest):
    """``largest`` follows the largest ``value`` since ``clear``, a clock behind it: a
    one-clock loop of one compare and one select."""
    with m.If(clear):
        m.d.sync += largest.eq(0)
    with m.Elif(largest < value):
        m.d.sync += largest.eq(value)


class Decision(wiring.Component):
    """The arrival's steps 4-5 of the bit-exact contract and every departure: the early
    decision, ECN, the hard limits on the exact occupancy, the occupancy.

    **Cycle 0, early decision.** FPQ: ``u < p``. RED: Floyd's uniform spacing, accumulate
    ``p`` since the last early drop and drop when the sum reaches a random threshold. The
    model's ``acc``/``thresh`` pair is kept as the single register ``E = max(thresh - acc - 1,
    0)``: ``acc + p >= thresh`` with ``p > 0`` is ``p > E``, the borrow of ``E - p``, whose
    difference is also the next ``E`` when there is no drop; a drop or ``p == 0`` loads
    ``max(u - 1, 0)`` (formed a clock earlier). So the one-clock loop is one carry chain and
    one select. The two compares (FPQ's ``u < p``, RED's ``E - p``, carry chains side by
    side, of registers) end in registers, and cycle 1 forms the slot's early outputs from
    them, one LUT each; the admission candidate is one LUT after the chains (bit-exact: the
    same integers).

    **Cycle 1, occupancy.** A departure in the slot applies first (saturating at zero, errors
    counted), then the arrival: early and not (ECN enabled and ECN-capable) is an early drop;
    else over ``limit_pkts`` or ``limit_bytes`` a forced drop; else enqueue (or mark). Exact,
    as the model: arrival t's limits use the occupancy after slot t - 1, including slot
    t - 1's own admission. With ``optimise="speed"`` nothing wide is decided in that loop: at
    cycle 0 the occupancy two slots back (``O(t-2)``, the register then) is compared with
    thresholds formed before from the descriptor fields of slots t and t - 1, once for each
    outcome of slot t - 1 (admitted or not), into flags (forced, departure short); at cycle 1
    the admission of slot t - 1 selects them (``a(t) = cand(t) & ~forced``: a one-bit loop
    through one LUT), and the occupancy takes ``O - d`` or ``O - d + length`` (two carry
    chains side by side) under the selected flags (one LUT). Every one-clock loop is one
    carry chain and one LUT. The fields come two clocks before the decision for that
    (``FIELDS_AHEAD``).

    Latency: 2 clocks (outputs registered); throughput one arrival and one departure per clock.

    Parameters
    ----------
    build : fpq.Build
    optimise : str
        "speed" (default): the occupancy as above. "area": the occupancy after the departure,
        plus the length, compared with the limit in the loop (two adders and a compare in
        series, and none of the thresholds and flags): fewer LUTs for a slow clock (the
        iCE40). The same outputs clock for clock.
    admission : function or None
        The speed form's cycle 1, called as :func:`admission` (None, the default: that
        function): a seam for tests, which pass the real one faulty flags.

    Attributes
    ----------
    valid_ahead, dep_valid_ahead, length_ahead, dep_length_ahead, ecn_ahead : In
        The slot's arrival and departure, ``FIELDS_AHEAD`` clocks before cycle 0.
    p, p_zero : In
        The arrival's probability and whether it is 0 (cycle 0).
    u_ahead : In
        The arrival's random number, a clock before cycle 0.
    config : In(config_layout(build))
        Uses ``mode``, ``ecn``, ``limit_pkts``, ``limit_bytes``; stable while slots pass
        (commits apply with the pipeline empty of arrivals).
    clear_max_queue : In(1)
    out_valid, action : Out
        The arrival's action (cycle 2).
    out_dep_valid, dep_error : Out
        The slot's departure and whether it was an error (cycle 2).
    occ_pkts, occ_bytes : Out
        The occupancy after the slot at cycle 2 (registers).
    max_queue : Out
        The largest ``occ_pkts`` (a clock behind it).
    """

    LATENCY = 2
    FIELDS_AHEAD = 2

    def __init__(self, build, optimise="speed", admission=None):
        self.optimise = check_optimise(optimise)
        self._admission = admission
        super().__init__({
            "valid_ahead": In(1), "dep_valid_ahead": In(1), "length_ahead": In(LENGTH_BITS),
            "dep_length_ahead": In(LENGTH_BITS), "ecn_ahead": In(1),
            "p": In(PROB.width), "p_zero": In(1), "u_ahead": In(RAND_BITS),
            "config": In(config_layout(build)), "clear_max_queue": In(1),
            "out_valid": Out(1), "action": Out(2),
            "out_dep_valid": Out(1), "dep_error": Out(1),
            "occ_pkts": Out(QPKTS_BITS), "occ_bytes": Out(QBYTES_BITS),
            "max_queue": Out(QPKTS_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        # the signals one stage hands to the next, by name
        s = SimpleNamespace()
        self._fields(m, s)
        self._early_gates(m, s)
        self._early(m, s)
        if self.optimise == "speed":
            forced, dep_error = self._occupancy_speed(m, s)
        else:
            forced, dep_error = self._occupancy_area(m, s.av1, s.dv1, s.len1, s.dep1,
                                                     s.drop_early)
        self._outputs(m, s, forced, dep_error)
        return m

    def _fields(self, m, s):
        """Cycles -2 .. 1: the slot's fields (arrival, departure, ECN, length, the departing
        bytes or 0) from the ports (cycle -2), registered along; ``s.slots`` holds them at
        cycles -1, 0 and 1."""
        dep_ahead = Mux(self.dep_valid_ahead, self.dep_length_ahead, 0)
        fields = Cat(self.valid_ahead, self.dep_valid_ahead, self.ecn_ahead,
                     self.length_ahead, dep_ahead)
        slots = []
        for cycle in (-1, 0, 1):
            av, dv, ecn = (Signal(name=f"{n}{cycle}".replace("-", "m")) for n in
                           ("av", "dv", "ecn"))
            ln, dep = (Signal(LENGTH_BITS, name=f"{n}{cycle}".replace("-", "m"))
                       for n in ("len", "dep"))
            m.d.sync += Cat(av, dv, ecn, ln, dep).eq(fields)
            fields = Cat(av, dv, ecn, ln, dep)
            slots.append((av, dv, ecn, ln, dep))
        s.slots = slots
        s.av1, s.dv1, _, s.len1, s.dep1 = slots[2]

    def _early_gates(self, m, s):
        """Cycle -1: the slot's gates of the early decision per mode, the admission
        candidate's code, the random number and what RED's register loads from it, all
        registered for cycle 0."""
        cfg = self.config
        mode = cfg.mode
        # the slot's gates, a clock ahead (mode and ECN are stable while slots pass): an
        # arrival that an early hit concerns (``early_any``: dropped or marked) and RED's own
        # (its spacing register steps on each arrival RED decides); and the admission
        # candidate's code: which hit decides it, if any (``cand_code`` below; its high bit
        # is the arrival an early hit drops: not ECN-capable, or ECN off)
        av_m1, ecn_m1 = s.slots[0][0], s.slots[0][2]
        no_ecn = ~(cfg.ecn & ecn_m1)
        is_fpq, is_red = mode == Mode.fpq, mode == Mode.red
        early_any, early_red = Signal(name="early_any"), Signal(name="early_red")
        m.d.sync += [early_any.eq(av_m1 & (is_fpq | is_red)), early_red.eq(av_m1 & is_red)]
        # the random number, and what RED's register loads from it (``max(u - 1, 0)``), a
        # clock ahead
        u, u_load = Signal(RAND_BITS, name="u"), Signal(RAND_BITS, name="u_load")
        u_dec = Signal(RAND_BITS + 1)                 # bit 32: the borrow, u == 0
        m.d.comb += u_dec.eq(self.u_ahead - 1)
        m.d.sync += [u.eq(self.u_ahead),
                     u_load.eq(Mux(u_dec[-1], 0, u_dec[:RAND_BITS]))]
        # the admission candidate, ``keep | (drop_fpq & ~below) | (drop_red & ~red_hit)``
        # (``keep``: an arrival that no early hit drops; ``drop_fpq``, ``drop_red``: one that
        # FPQ's or RED's hit drops), as one LUT4 after the two chains: the three exclude each
        # other, so they are a 2-bit code (00 no arrival, 01 keep, 10 FPQ decides, 11 RED
        # decides) registered a clock ahead
        cand_code = Signal(2, name="cand_code")
        m.d.sync += cand_code.eq(Cat(av_m1 & ~(is_fpq & no_ecn),
                                     av_m1 & (is_fpq | is_red) & no_ecn))
        # which hit the slot's early outputs take (a drop-tail slot has neither gate)
        red_selected = Signal(name="red_selected")
        m.d.sync += red_selected.eq(is_red)
        s.early_any, s.early_red, s.red_selected = early_any, early_red, red_selected
        s.u, s.u_load, s.cand_code = u, u_load, cand_code

    def _early(self, m, s):
        """Cycle 0: the early decision's two compares (FPQ's ``u < p``, RED's spacing) and
        the admission candidate ``cand`` and the mode's hit (one LUT each after them),
        registered; cycle 1: from the hit's register ``early`` (dropped or marked) and
        ``drop_early``, one LUT each.

        ``p`` comes from the drop-probability block across the die: a compare's carry chain
        with more than one LUT and their routing after it was the core's longest path, and
        ``cand``, which the occupancy's forty registers read, is the one output that cannot
        wait a clock."""
        # RED: E = max(thresh - acc - 1, 0). ``acc + p >= thresh`` is ``p > thresh - acc - 1``,
        # and, as p == 0 is never a hit, ``p > E``: the borrow of ``E - p``, whose
        # difference is also the next E when there is no drop; a drop or ``p == 0`` loads
        # ``max(u - 1, 0)``. (Without the max, E would be -1 after a threshold of 0 and the
        # hit would need ``p > 0`` beside the compare.)
        red_hit = red_spacing(m, self.p, self.p_zero, s.u_load, s.early_red,
                              separate_hit=self.optimise == "speed")
        below = Signal(name="fpq_hit")
        m.d.comb += below.eq(s.u < self.p)
        # the admission candidate, ``keep | (drop_fpq & ~below) | (drop_red & ~red_hit)``
        cand_code, cand = s.cand_code, Signal(name="cand")
        next_cand = Mux(cand_code[1], Mux(cand_code[0], ~red_hit, ~below), cand_code[0])
        # and its complement in a register of its own for the packet count's registers: the
        # two halve the forty loads (Yosys merges equal flip-flops, not complementary ones),
        # so each register can sit by its LUT
        cand_n = Signal(name="cand_n", init=1)
        m.d.sync += [cand.eq(next_cand), cand_n.eq(~next_cand)]
        # the hit of the slot's mode (FPQ's compare or RED's), registered for cycle 1 beside
        # the slot's gates. Its own LUT from the chains, selected by a register of its own
        # (the mode is stable while slots pass), so that it shares no node with ``cand``'s
        # LUT: a shared node put a second LUT and its route on ``cand``'s path
        hit = Signal(name="early_hit")
        m.d.sync += hit.eq(Mux(s.red_selected, red_hit, below))
        gates = Cat(s.early_any, s.cand_code[1])
        gates_1 = Signal.like(gates, name="early_gates_1")
        m.d.sync += gates_1.eq(gates)
        early, drop_early = Signal(name="early"), Signal(name="drop_early")
        m.d.comb += [early.eq(gates_1[0] & hit), drop_early.eq(gates_1[1] & hit)]
        s.early, s.drop_early, s.cand, s.cand_packets = early, drop_early, cand, ~cand_n

    def _outputs(self, m, s, forced, dep_error):
        """Cycle 2: the action and the departure's error (registers), and the largest
        occupancy a clock behind."""
        action = Mux(s.drop_early, DROP_EARLY, Mux(forced, DROP_FORCED,
                                                   Mux(s.early, MARK, ENQUEUE)))
        m.d.sync += [self.out_valid.eq(s.av1), self.action.eq(action),
                     self.out_dep_valid.eq(s.dv1), self.dep_error.eq(dep_error)]
        # the largest occupancy, a clock behind (only enqueues raise the occupancy)
        track_max(m, self.occ_pkts, self.clear_max_queue, self.max_queue)

    def _occupancy_speed(self, m, s):
        """Cycles -2 .. 1 of "speed": thresholds, flags, the admission and the occupancy.

        With ``y``, ``x`` = bytes, packets after slot t - 2, ``d``, ``l`` the departing bytes
        and the length (0 without), ``K = limit_bytes - l(t) + d(t)``, and ``a`` slot t - 1
        admitted, slot t is forced (bytes) if ``l(t) > limit_bytes`` or ``y > K + d(t-1)``
        (``a = 0``), ``K - l(t-1) < 0`` or ``y > K + d(t-1) - l(t-1)`` (``a = 1``); forced
        (packets) if ``x >= limit_pkts + dv(t) + dv(t-1) - a`` or (``a = 1``) ``1 - dv(t) >=
        limit_pkts`` (slot t - 1's departure from an empty queue); its departure is short
        (bytes) if ``d(t) > 0`` and ``y < d(t) + d(t-1)`` (``a = 0``), ``l(t-1) < d(t)``
        and ``y < d(t) + d(t-1) - l(t-1)`` (``a = 1``), and from an empty queue if ``x <=
        dv(t-1)`` and ``a = 0`` (the saturation of each departure worked through the
        max). Returns the forced flag and the departure's error, for cycle 2."""
        self._limit_sums(m, s)
        self._byte_thresholds(m, s)
        self._packet_thresholds(m, s)
        self._flag_terms(m, s)
        self._limit_flags(m, s)
        # ---- cycle 1: the admission (one bit through one LUT) and the occupancy
        cycle_1 = self._admission or admission
        return cycle_1(m, s.cand, (s.f0, s.f1), (s.sb0, s.sb1), s.sp0, s.dv1, s.len1, s.dep1,
                       s.grow, self.occ_pkts, self.occ_bytes, cand_packets=s.cand_packets)

    def _limit_sums(self, m, s):
        """Cycle -2 (the fields at the port): slot t's own terms (``d - l``, ``l - d``,
        ``l > limit_bytes``), and slot t - 1's (at its cycle -1, in registers) summed with
        the byte limit: ``limit + d(t-1)``, ``limit + d(t-1) - l(t-1)``, ``limit - l(t-1)``.
        Each threshold of cycle -1 is then a sum of two operands (one carry chain, no
        carry-save level before it)."""
        lim_b = self.config.limit_bytes
        (_, _, _, len_b, dep_b), _, _ = s.slots
        wb = _SUM_BITS
        dl, ld = Signal(signed(LENGTH_BITS + 2)), Signal(signed(LENGTH_BITS + 2), name="ld")
        big = Signal()
        dep_ahead = Mux(self.dep_valid_ahead, self.dep_length_ahead, 0)
        # ``l > limit_bytes`` as a strict ``<`` of the length's width (the borrow alone) beside
        # a chain for "the limit's high bits are nonzero", one LUT after both: a compare of
        # the limit's width, with the length zero-extended, takes three LUT levels after it
        lim_b_long = nonzero(m, lim_b[LENGTH_BITS:], "limit_bytes_long")
        m.d.sync += [dl.eq(dep_ahead - self.length_ahead), ld.eq(self.length_ahead - dep_ahead),
                     big.eq(~lim_b_long & (lim_b[:LENGTH_BITS] < self.length_ahead))]
        dl0 = Signal.like(dl)                         # slot t - 1's, at slot t's cycle -1
        m.d.sync += dl0.eq(dl)
        lb = Cat(lim_b, C(0, wb - len(lim_b)))
        s0, s1, sk = (Signal(signed(wb), name=n) for n in ("lim_d1", "lim_dl1", "lim_l1"))
        m.d.sync += [s0.eq(lim_b + dep_b),                           # limit + d(t-1)
                     s1.eq(lim_b + dl),                              # limit + d(t-1) - l(t-1)
                     # limit - l(t-1): the one's complement and a carry in, as a low bit of
                     # both operands (one chain)
                     sk.eq((Cat(C(1, 1), lb) +
                            Cat(C(1, 1), ~Cat(len_b, C(0, wb - LENGTH_BITS))))[1:])]
        s.dl, s.ld, s.big, s.dl0, s.s0, s.s1, s.sk = dl, ld, big, dl0, s0, s1, sk

    def _byte_thresholds(self, m, s):
        """Cycle -1: slot t's byte thresholds ``K + d(t-1)`` and ``K + d(t-1) - l(t-1)``
        (``K = limit - l(t) + d(t) = limit + dl(t)``), registered clamped into the
        occupancy's range, and their flags beside them: each below 0, and ``K - l(t-1) <
        0``."""
        s0, s1, sk = s.s0, s.s1, s.sk
        wb = _SUM_BITS
        dlx = Signal(signed(wb))
        m.d.comb += dlx.eq(s.dl)
        # Each threshold is registered clamped into the occupancy's range: one above it
        # (never below the occupancy) becomes the range's top, and one below 0 (always
        # below) sets the flag whatever the compare; so the compare at cycle 0 needs no
        # range flag beside it.
        width = len(self.occ_bytes)
        # Whether a threshold ``a + dl`` is below 0 or above the range, as ``a < ld`` and
        # ``a >= ld + 2**width`` (``ld = -dl``, registered beside it): compares of registers
        # in offset binary (the sign bits inverted, which the chain's own LUTs absorb), so
        # each flag is a chain's carry out, beside the sum's chain, and the clamp is one LUT
        # after them. ``ld + 2**width`` is wiring: ``|ld| < 2**width``, so its low bits are
        # ld's and bit ``width`` is ld's sign inverted.
        assert LENGTH_BITS + 2 <= width < wb - 1
        ldx, ld_top = Signal(signed(wb)), Signal(signed(wb))
        m.d.comb += [ldx.eq(s.ld), ld_top.eq(Cat(ldx[:width], ~ldx[-1]))]
        tb0_neg, tb1_neg = _signed_below(m, s0, ldx, "tb0_neg"), _signed_below(m, s1, ldx,
                                                                               "tb1_neg")
        tb0_in, tb1_in = (_signed_below(m, s0, ld_top, "tb0_in_range"),
                          _signed_below(m, s1, ld_top, "tb1_in_range"))
        tb0, tb1 = Signal(width, name="tb0"), Signal(width, name="tb1")
        tb0_sum, tb1_sum = Signal(signed(wb), name="tb0_sum"), Signal(signed(wb), name="tb1_sum")
        m.d.comb += [tb0_sum.eq(s0 + dlx),                            # K + d(t-1)
                     tb1_sum.eq(s1 + dlx)]                            # K + d(t-1) - l(t-1)
        top = (1 << width) - 1
        m.d.sync += [tb0.eq(Mux(~tb0_neg & tb0_in, tb0_sum[:width], top)),
                     tb1.eq(Mux(~tb1_neg & tb1_in, tb1_sum[:width], top))]
        k1_neg = _signed_below(m, sk, ldx, "k1_neg")                   # K - l(t-1) < 0
        s.tb0, s.tb1, s.tb0_neg, s.tb1_neg, s.k1_neg = tb0, tb1, tb0_neg, tb1_neg, k1_neg

    def _packet_thresholds(self, m, s):
        """Cycle -1: slot t's packet thresholds ``limit_pkts + dv(t) + dv(t-1)`` (slot t - 1
        not admitted) and ``limit_pkts - 1 + dv(t) + dv(t-1)`` (admitted), registered, and
        ``lone1``: slot t forced because slot t - 1's packet is alone in the queue."""
        lim_p = self.config.limit_pkts
        (_, dv_b, _, _, _), (_, dv0, _, _, _), _ = s.slots
        # limit_pkts >= 1, so both thresholds are >= 0: unsigned, one bit over the limit's.
        # Each is one carry chain: the two departures as one 2-bit addend, and limit_pkts - 1
        # from a register (the configuration is steady a clock before any arrival: a commit
        # waits for an empty pipeline and holds the port in its own clock).
        tp0, tp1 = Signal(QPKTS_BITS + 2, name="tp0"), Signal(QPKTS_BITS + 2, name="tp1")
        lim_pm1 = Signal.like(lim_p, name="limit_pkts_m1")
        dvs = Cat(dv_b ^ dv0, dv_b & dv0)                            # dv(t) + dv(t-1)
        m.d.sync += [lim_pm1.eq(lim_p - 1), tp0.eq(lim_p + dvs), tp1.eq(lim_pm1 + dvs)]
        # a = 1 and slot t - 1's departure from an empty queue: the queue holds slot t - 1's
        # packet alone, so slot t is forced if 1 - dv(t) >= limit_pkts (tp1 assumes the
        # departure took a packet)
        lim_one = Signal(name="limit_pkts_one")      # a register: no compare in the flag's path
        m.d.sync += lim_one.eq(lim_p == 1)
        s.tp0, s.tp1, s.lone1 = tp0, tp1, lim_one & ~dv_b

    def _flag_terms(self, m, s):
        """Cycle -1: the departures' byte sums ``d(t) + d(t-1)`` and ``d(t) + d(t-1) -
        l(t-1)``, and what each flag of cycle 0 needs besides its compares with the
        occupancy, registered: forced whatever the occupancy (``pre0``, ``pre1``), a short
        departure possible (``arm0``, ``arm1``)."""
        (_, dv_b, _, _, dep_b), (_, dv0, _, len0, dep0), _ = s.slots
        sd0, sd1 = Signal(signed(LENGTH_BITS + 2)), Signal(signed(LENGTH_BITS + 3))
        sd0_sum, sd1_sum = Signal.like(sd0), Signal.like(sd1)
        m.d.comb += [sd0_sum.eq(dep_b + dep0), sd1_sum.eq(dep_b + s.dl0)]
        dvt, dv1p = Signal(name="dvt"), Signal(name="dv1p")
        m.d.sync += [sd0.eq(sd0_sum), sd1.eq(sd1_sum), dvt.eq(dv_b), dv1p.eq(dv0)]
        # What each flag needs besides the compares with the occupancy, ORed or ANDed into
        # one register here (after the sums' carry chains), so that at cycle 0 each flag is
        # its compares and one LUT: forced whatever the occupancy (``pre``), a short departure
        # possible (``arm``).
        pre0, pre1, arm0, arm1 = (Signal(name=n) for n in ("pre0", "pre1", "arm0", "arm1"))
        m.d.sync += [
            pre0.eq(s.big | s.tb0_neg),
            pre1.eq(s.big | s.lone1 | s.k1_neg | s.tb1_neg),
            arm0.eq(dv_b & (dep_b != 0) & ~sd0_sum[-1]),
            arm1.eq(dv_b & (len0 < dep_b) & ~sd1_sum[-1]),
        ]
        s.sd0, s.sd1, s.dvt, s.dv1p = sd0, sd1, dvt, dv1p
        s.pre0, s.pre1, s.arm0, s.arm1 = pre0, pre1, arm0, arm1

    def _limit_flags(self, m, s):
        """Cycle 0: slot t's flags for each outcome of slot t - 1 (``f0``/``f1`` forced,
        ``sb0``/``sb1`` its departure takes more bytes than queued, ``sp0`` its departure
        finds no packet), from the occupancy after slot t - 2, registered; and ``grow`` =
        ``l(t) - d(t)``, for cycle 1."""
        tb0, tb1, tp0, tp1, pre0, pre1 = s.tb0, s.tb1, s.tp0, s.tp1, s.pre0, s.pre1
        y, x = self.occ_bytes, self.occ_pkts
        # Every compare is a strict ``<``: Yosys takes ``<`` from the carry chain's borrow
        # alone, while ``>``, ``<=`` and ``>=`` put an equality tree (several LUT levels)
        # behind the chain.
        # ``pre | ~(x < tp)`` written as the packets' compare alone, with ``pre`` as a top bit
        # of the occupancy's side (``pre`` = 1 makes it not less); Yosys may fold that bit
        # back into a LUT after the chain (the ULX3S's paths show it does).
        def packets_or_pre(tp, pre):
            return ~(Cat(x, C(0, len(tp) - len(x)), pre) < Cat(tp, C(0, 1)))
        # ``x <= dv(t-1)`` (the departure finds no packet) is ``x < 2`` and ``x[0] <=
        # dv(t-1)``: a chain and one LUT
        x_above_1 = nonzero(m, x[1:], "occ_pkts_above_1")
        f0, f1, sb0, sb1, sp0 = (Signal(name=n) for n in ("f0", "f1", "sb0", "sb1", "sp0"))
        m.d.sync += [
            f0.eq(split_less(m, tb0, y, "f0b") | packets_or_pre(tp0, pre0)),
            f1.eq(split_less(m, tb1, y, "f1b") | packets_or_pre(tp1, pre1)),
            sb0.eq(s.arm0 & _occupancy_below(m, y, s.sd0, "sb0b")),
            sb1.eq(s.arm1 & _occupancy_below(m, y, s.sd1, "sb1b")),
            sp0.eq(s.dvt & ~x_above_1 & (~x[0] | s.dv1p)),
        ]
        (_, _, _, len0, dep0) = s.slots[1]
        grow = Signal(signed(LENGTH_BITS + 2))        # l(t) - d(t), for cycle 1
        m.d.sync += grow.eq(len0 - dep0)
        s.f0, s.f1, s.sb0, s.sb1, s.sp0, s.grow = f0, f1, sb0, sb1, sp0, grow

    def _occupancy_area(self, m, av1, dv1, len1, dep1, drop_early):
        """Cycle 1 as the model writes it: the departure, then the arrival's sum compared."""
        occ_p, occ_b = self.occ_pkts, self.occ_bytes
        cfg = self.config
        empty = occ_p == 0
        short = dep1 > occ_b                       # departing more bytes than queued
        dep_p = dv1 & ~empty
        op1 = Mux(dep_p, occ_p - 1, occ_p)
        over_p = Mux(dep_p, occ_p > cfg.limit_pkts, occ_p >= cfg.limit_pkts)
        # the bytes after the departure, and after the arrival too (one bit wider: the
        # compare sees the carry)
        ob1 = Mux(dv1, Mux(short, 0, occ_b - dep1), occ_b)
        ob2 = Signal(QBYTES_BITS + 1)
        m.d.comb += ob2.eq(ob1 + len1)
        over_b = ob2 > cfg.limit_bytes
        forced = over_p | over_b
        enq = av1 & ~drop_early & ~forced
        m.d.sync += [occ_p.eq(Mux(enq, Mux(dep_p, occ_p, occ_p + 1), op1)),
                     occ_b.eq(Mux(enq, ob2, ob1))]
        return forced, dv1 & (empty | short)
