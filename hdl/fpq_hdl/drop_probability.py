"""Drop/mark probability: FPQ's ``r(N) * q_a``, RED and gentle RED, in PROB fixed point."""

import operator
from functools import reduce
from types import SimpleNamespace

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpq.config import Config
from fpq.formats import QAVG, PROB, PROB_ONE, RATE, FLOW_COUNT_BITS
from fpq.drop_probability import Mode

from .layouts import config_layout, check_optimise
from .block_ram import BlockRAM
from .multiplier import Multiplier

__all__ = ["DropProbability"]

_HALF = 18  # the average is multiplied in two halves, one 18 x 18 DSP each
#: the bits of the shifted product from which up the sum saturates, whatever the offset
_SATURATED_BITS = PROB.width + 8


class DropProbability(wiring.Component):
    """Bit-exact ``fpq.drop_probability.probability``: ``p = offset + rate * (A - base)``.

    The product is ``((mant * D) << 1) >> shift`` with ``(mant, shift)`` a ``RATE`` word
    (``fpq.formats.RATE``) and ``D`` a ``QAVG`` difference; the sum saturates at
    ``PROB_ONE`` (p = 1). FPQ takes the rate from the host-filled table ``r(n) = l_t/q_t``
    (linear-counting correction and ``N < 1 -> 1`` are folded into it by the host), so the
    whole of FPQ's Figs. 5-6 costs one table read and one multiply per packet.

    Pipeline (one arrival per clock, never stalls):

    * cycle 0: ``n_raw`` and ``n_over`` (``n_raw > n_cap``), registered (the queue manager
      feeds the flow counter's registers ``n_raw`` and ``over``);
    * cycle 1: ``n = min(n_raw, n_cap)`` into the table's address register, so the address
      leaves a flip-flop: a 65536-entry table is 176 DP16KD spread over the ECP5-85F;
    * cycle 2: table read (``BlockRAM``, latency 2); ``n`` is valid at cycle 3;
    * cycle 4: ``avg`` arrives; ``A - min_th``, ``A - max_th``, ``A - 2 max_th`` in parallel,
      their signs RED's region (a flag per case, registered);
    * cycle 5: select rate word, difference and offset by mode and region;
    * cycle 6: two 16 x 18 partial products (DSPs; their input registers hold the cycle-5
      selection, their output registers the products);
    * cycle 7: their sum (52 bits);
    * cycle 8: ``<< 1`` and ``>> (shift & ~7)``;
    * cycle 9: ``>> (shift & 7)``;
    * cycle 10: ``+ offset``, beside it the saturation and ``p == 0`` as flags;
    * cycle 11: the flags combined and the select; ``prob`` is valid at cycle 12.

    Every stage is at most one carry chain or two LUT levels.
    Latency: 12 clocks from ``n_raw`` (``AVG_DELAY`` = 4 clocks later comes ``avg``); ``n``
    ``N_LATENCY`` = 3 clocks after ``n_raw``.

    Parameters
    ----------
    build : fpq.Build
        ``build.table_depth`` entries in the r(N) table.
    ram_style : str
        ``BlockRAM`` style of the table and ``Multiplier`` style of the two partial products
        ("generic" or "ecp5": DP16KD and MULT18X18D primitives with their registers).
    optimise : str
        "speed" (default): the two shifts by the rate's exponent (multiples of 8, then 0-7)
        as 8-way selects, one LUT level on the ECP5. "area": as binary shifters, 3 stages
        of 2-way selects, which take fewer iCE40 LUTs than an 8-way select.

    Attributes
    ----------
    n_raw : In(FLOW_COUNT_BITS)
    n_over : In(1)
        ``n_raw > n_cap`` (formed by the caller beside ``n_raw``).
    avg : In(QAVG.width)
        The average queue, ``AVG_DELAY`` clocks after ``n_raw``.
    config : In(config_layout(build))
        Uses ``mode``, ``n_cap`` and the ``red_*`` registers.
    table_bank : In(1)
        The active bank: the pipeline reads it, host writes go to the other one (so a commit
        swaps tables atomically).
    table_we, table_addr, table_data : In
        Host write port of the r(N) table (``RATE`` words), into the inactive bank. Both
        banks hold ``Config(build=build).rate_table()`` at power-on (not after a reset: a
        RAM keeps its contents).
    n : Out(log2(table_depth) bits)
        ``min(n_raw, n_cap)``. It is below ``table_depth`` because ``n_cap`` is (the register
        file rejects a commit of a larger ``n_cap``); a larger ``n_cap`` written to the port
        directly would read the table and report ``n`` modulo ``table_depth``.
    prob : Out(PROB.width)
    prob_zero : Out(1)
        ``prob == 0``, in the same clock.
    """

    LATENCY = 12
    AVG_DELAY = 4
    N_LATENCY = 3     # clocks from n_raw to n

    def __init__(self, build, ram_style="generic", optimise="speed"):
        self.ram_style = ram_style
        self.optimise = check_optimise(optimise)
        self.build = build
        self.table_depth = table_depth = build.table_depth
        abits = (table_depth - 1).bit_length()
        super().__init__({
            "n_raw": In(FLOW_COUNT_BITS), "n_over": In(1), "avg": In(QAVG.width),
            "config": In(config_layout(build)),
            "table_bank": In(1), "table_we": In(1), "table_addr": In(abits),
            "table_data": In(RATE.width),
            # the table's address bits: 8 flip-flops fewer per stage on the iCEBreaker
            "n": Out(abits), "prob": Out(PROB.width), "prob_zero": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        self.mode, self.n_cap = self.config.mode, self.config.n_cap
        for name in ("min_th", "max_th", "max_p", "slope1", "slope2", "gentle"):
            setattr(self, "red_" + name, self.config["red_" + name])
        table = self._rate_table(m)
        sel_word, d, shift, off, force0, force1 = self._operands(m, table)
        self._product(m, sel_word, d, shift, off, force0, force1)
        return m

    def _rate_table(self, m):
        """Cycles 0-3: the capped count into the r(N) table's read address; the table."""
        # both banks hold the defaults at power-on: out of reset FPQ runs with the paper's
        # values without a host write, and a host that rewrites part of a bank before its
        # first commit patches the defaults, not zeros
        default = Config(build=self.build).rate_table()
        m.submodules.table = table = BlockRAM(RATE.width, 2 * self.table_depth, self.ram_style,
                                              init=default + default)
        m.d.comb += [table.w_en.eq(self.table_we),
                     table.w_addr.eq(Cat(self.table_addr, ~self.table_bank)),
                     table.w_data.eq(self.table_data)]
        # cycle 0: the count and whether it is over the cap, registered
        n0, over0 = Signal(FLOW_COUNT_BITS), Signal()
        m.d.sync += [n0.eq(self.n_raw), over0.eq(self.n_over)]
        # cycle 1: the capped count and the bank into the address register
        nc = Mux(over0, self.n_cap, n0)
        n1 = Signal.like(self.n)
        addr1 = Signal.like(table.r_addr)
        m.d.sync += [n1.eq(nc), addr1.eq(Cat(nc[:len(self.table_addr)], self.table_bank)),
                     self.n.eq(n1)]
        # cycle 2: the read
        m.d.comb += table.r_addr.eq(addr1)
        return table

    def _operands(self, m, table):
        """Cycles 4-5: RED's region, and the multiplier's operands selected by mode (the
        rate word and the difference), the shift, the offset, and the forced results."""
        # cycle 4 (cycle 3: the RAM's output register)
        w = QAVG.width + 2
        avg1 = Signal(QAVG.width)
        d1c, d2c, d3c = (Signal(signed(w), name=n) for n in ("d1_next", "d2_next", "d3_next"))
        m.d.comb += [d1c.eq(self.avg - self.red_min_th), d2c.eq(self.avg - self.red_max_th),
                     d3c.eq(self.avg - (self.red_max_th << 1))]
        # RED's region from the differences' signs, registered here as one flag per case:
        # cycle 5 then feeds the DSPs through selects by registers (mode, region), not
        # through the mode and region decode (config to DSP input)
        below_min, below_max = d1c < 0, d2c < 0
        gentle_region = ~below_min & ~below_max & self.red_gentle & (d3c < 0)
        r_force0, r_force1, r_gentle = Signal(), Signal(), Signal()
        d1, d2 = Signal.like(d1c), Signal.like(d2c)
        m.d.sync += [avg1.eq(self.avg), d1.eq(d1c), d2.eq(d2c), r_force0.eq(below_min),
                     r_force1.eq(~below_min & ~below_max & ~gentle_region),
                     r_gentle.eq(gentle_region)]
        is_fpq, is_red = Signal(), Signal()
        m.d.sync += [is_fpq.eq(self.mode == Mode.fpq), is_red.eq(self.mode == Mode.red)]
        word1 = Signal(RATE.width)
        m.d.sync += word1.eq(table.r_data)
        # cycle 5: select by mode; the rate mantissa and the difference go straight into the
        # DSPs' input registers (``Multiplier``), the rest into registers. Where the result
        # is forced (0 or 1) the product is not used.
        shift = Signal(RATE.shift_bits)
        d, off = Signal(QAVG.width), Signal(PROB.width)
        force0, force1 = Signal(), Signal()
        sel_word = Signal(RATE.width)
        m.d.comb += [sel_word.eq(Mux(is_fpq, word1,
                                     Mux(r_gentle, self.red_slope2, self.red_slope1))),
                     d.eq(Mux(is_fpq, avg1, Mux(r_gentle, d2, d1)))]
        m.d.sync += [force0.eq(~is_fpq & (~is_red | r_force0)), force1.eq(is_red & r_force1),
                     off.eq(Mux(is_red & r_gentle, self.red_max_p, 0))]
        m.d.sync += shift.eq(sel_word[RATE.mant_bits:])
        return sel_word, d, shift, off, force0, force1

    def _product(self, m, sel_word, d, shift, off, force0, force1):
        """Cycles 6-11: the product, scaled by the shift, the offset added, saturated at 1;
        ``prob`` and ``prob_zero``."""
        # the signals one stage hands to the next, by name
        s = SimpleNamespace(sel_word=sel_word, d=d, shift=shift, off=off, force0=force0,
                            force1=force1)
        self._partial_products(m, s)
        self._shift(m, s)
        self._saturation_bounds(m, s)
        self._sum_and_select(m, s)

    def _partial_products(self, m, s):
        """Cycles 6-7: the two partial products and their sum, ``<< 1`` (``s.total``); the
        shift, offset and forced results registered along (``s.shift3b`` ...)."""
        # cycle 6: partial products (two DSPs: input registers at cycle 5, product at 6)
        m.submodules.mul_lo = mul_lo = Multiplier(RATE.mant_bits, _HALF, self.ram_style)
        m.submodules.mul_hi = mul_hi = Multiplier(RATE.mant_bits, QAVG.width - _HALF,
                                                  self.ram_style)
        m.d.comb += [mul_lo.a.eq(s.sel_word[:RATE.mant_bits]), mul_lo.b.eq(s.d[:_HALF]),
                     mul_hi.a.eq(s.sel_word[:RATE.mant_bits]), mul_hi.b.eq(s.d[_HALF:])]
        pl, ph = mul_lo.p, mul_hi.p
        shift3, off3, f03, f13 = Signal.like(s.shift), Signal.like(s.off), Signal(), Signal()
        m.d.sync += [shift3.eq(s.shift), off3.eq(s.off), f03.eq(s.force0), f13.eq(s.force1)]
        # cycle 7: the sum
        total = Signal(RATE.mant_bits + QAVG.width + 1)
        m.d.sync += total.eq(Cat(Const(0, 1), pl + (ph << _HALF)))
        shift3b, off3b, f03b, f13b = Signal.like(s.shift), Signal.like(s.off), Signal(), Signal()
        m.d.sync += [shift3b.eq(shift3), off3b.eq(off3), f03b.eq(f03), f13b.eq(f13)]
        s.total, s.shift3b, s.off3b, s.f03b, s.f13b = total, shift3b, off3b, f03b, f13b

    def _shift(self, m, s):
        """Cycles 8-9: ``s.total >> shift``, the multiples of 8 (``s.prod``) then the rest
        (``s.shifted``); the offset and forced results registered along (``s.off4`` ...)."""
        # cycle 8: ``<< 1`` (in ``total``) and the coarse part of ``>> shift`` (multiples of 8)
        prod = Signal(RATE.mant_bits + QAVG.width + 1)
        if self.optimise == "speed":
            m.d.sync += prod.eq(Array([s.total >> (8 * k) for k in range(8)])[s.shift3b[3:]])
        else:
            m.d.sync += prod.eq(s.total >> Cat(Const(0, 3), s.shift3b[3:]))
        shift4, off4, f04, f14 = Signal.like(s.shift), Signal.like(s.off), Signal(), Signal()
        m.d.sync += [shift4.eq(s.shift3b), off4.eq(s.off3b), f04.eq(s.f03b), f14.eq(s.f13b)]
        # cycle 9: the fine part of ``>> shift``
        shifted = Signal(len(prod))
        if self.optimise == "speed":
            # from one-hot lines decoded a clock ahead: each bit an OR of eight ANDs (two
            # LUT levels) rather than an 8:1 select whose three select lines, decoded in
            # front of it, fan out to every bit
            fine = Signal(8, name="fine_shift")
            m.d.sync += fine.eq(Const(1, 8) << s.shift3b[:3])
            m.d.sync += shifted.eq(reduce(operator.or_,
                                          (Mux(fine[k], prod >> k, 0) for k in range(8))))
        else:
            m.d.sync += shifted.eq(prod >> shift4[:3])
        s.prod, s.shifted, s.off4, s.f04, s.f14 = prod, shifted, off4, f04, f14

    def _saturation_bounds(self, m, s):
        """Cycle 9, beside the fine shift: what cycle 10 needs to saturate and to test for
        0 in one step each (``s.f15``, ``s.room5``, ``s.off_zero5``); the offset and the
        forced 0 registered along (``s.off5``, ``s.f05``)."""
        # the high bits of ``prod`` that every shift by 0-7 leaves at or above bit 34 (a sum
        # that saturates whatever the offset), ORed here so that cycle 10 ORs only the seven
        # bits the shift decides
        off5, f05, f15 = Signal.like(s.off), Signal(), Signal()
        m.d.sync += f15.eq(s.f14 | (s.prod[_SATURATED_BITS:] != 0))
        # the saturation bound for ``scaled`` (``off + scaled > PROB_ONE`` is ``scaled >
        # PROB_ONE - off``), formed here so that cycle 10 has the add and this compare side
        # by side instead of an add then a compare; and whether the offset is 0, for ``p ==
        # 0`` (a 33-input AND that cycle 10 then need not have)
        room5 = Signal(signed(PROB.width + 2))
        off_zero5 = Signal()
        m.d.sync += [off5.eq(s.off4), f05.eq(s.f04), room5.eq(PROB_ONE - s.off4),
                     off_zero5.eq(s.off4 == 0)]
        s.off5, s.f05, s.f15, s.room5, s.off_zero5 = off5, f05, f15, room5, off_zero5

    def _sum_and_select(self, m, s):
        """Cycles 10-11: the offset added to the scaled product, and ``prob`` selected from
        0, the sum and 1 (saturated), with ``prob_zero``."""
        # cycle 10: the offset added, and beside it the saturation and the zero test as flags
        # of at most two LUT levels or one carry chain each; cycle 11 combines the flags
        shifted = s.shifted
        scaled = shifted[:PROB.width + 1]
        summed = Signal(PROB.width + 2)
        zero, sat_high, sat_room = Signal(), Signal(), Signal()
        nil = [Signal(name=f"nil{i}") for i in range(3)]
        m.d.sync += [summed.eq(s.off5 + scaled), zero.eq(s.f05),
                     sat_high.eq(s.f15 | (shifted[PROB.width + 1:_SATURATED_BITS] != 0)),
                     # ``<`` with the bound on the left: the chain's borrow alone (``>``
                     # would put an equality tree after the chain)
                     sat_room.eq(s.room5 < scaled),
                     nil[0].eq(s.off_zero5 & (scaled[:15] == 0)),
                     nil[1].eq(scaled[15:31] == 0), nil[2].eq(scaled[31:] == 0)]
        # cycle 11: the select, and ``prob == 0`` as its own flag (RED's spacing register
        # takes it in its one-clock loop, where a 33-bit compare would cost two LUT levels)
        one = sat_high | sat_room
        with m.If(zero):
            m.d.sync += [self.prob.eq(0), self.prob_zero.eq(1)]
        with m.Elif(one):
            m.d.sync += [self.prob.eq(PROB_ONE), self.prob_zero.eq(0)]
        with m.Else():
            m.d.sync += [self.prob.eq(summed), self.prob_zero.eq(nil[0] & nil[1] & nil[2])]
