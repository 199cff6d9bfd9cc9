"""Drop/mark probability: FPQ's ``r(N) * q_a``, RED and gentle RED, in PROB fixed point."""

from amaranth import *
from amaranth.lib import wiring, memory
from amaranth.lib.wiring import In, Out

from fpq.formats import QAVG, PROB, PROB_ONE, RATE
from fpq.drop_probability import MODE_FPQ, MODE_RED

from .layouts import config_layout, check_optimise
from .block_ram import BlockRAM
from .multiplier import Multiplier

__all__ = ["DropProbability"]

_HALF = 18  # the average is multiplied in two halves, one 18 x 18 DSP each


class DropProbability(wiring.Component):
    """Bit-exact ``fpq.drop_probability.probability``: ``p = offset + rate * (A - base)``.

    The product is ``((mant * D) << 1) >> shift`` with ``(mant, shift)`` a ``RATE`` word
    (``fpq.formats.RATE``) and ``D`` a ``QAVG`` difference; the sum saturates at
    ``PROB_ONE`` (p = 1). FPQ takes the rate from the host-filled table ``r(n) = l_t/q_t``
    (linear-counting correction and ``N < 1 -> 1`` are folded into it by the host), so the
    whole of FPQ's Figs. 5-6 costs one table read and one multiply per packet.

    Pipeline (one arrival per clock, never stalls):

    * cycle 0: ``n = min(n_raw, n_cap)``, table read address (``BlockRAM``, latency 2);
    * cycle 2: ``avg`` arrives; ``A - min_th``, ``A - max_th``, ``A - 2 max_th`` in parallel
      (their signs are RED's region compares);
    * cycle 3: select rate word, difference and offset by mode and region;
    * cycle 4: two 16 x 18 partial products (DSPs; their input registers hold the cycle-3
      selection, their output registers the products);
    * cycle 5: their sum (52 bits), ``<< 1`` and ``>> (shift & ~7)``;
    * cycle 6: ``>> (shift & 7)``, overflow flag;
    * cycle 7: ``+ offset``, saturation; ``prob`` is valid at cycle 8.

    Latency: 8 clocks from ``n_raw`` (``AVG_DELAY`` = 2 clocks later comes ``avg``). ``n``
    is valid at cycle 1.

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
    n_raw : In(17)
    avg : In(QAVG.width)
        The lagged average, ``AVG_DELAY`` clocks after ``n_raw``.
    config : In(config_layout(build))
        Uses ``mode``, ``n_cap`` and the ``red_*`` registers.
    table_bank : In(1)
        The active bank: the pipeline reads it, host writes go to the other one (so a commit
        swaps tables atomically).
    table_we, table_addr, table_data : In
        Host write port of the r(N) table (``RATE`` words), into the inactive bank.
    n : Out(16)
    prob : Out(PROB.width)
    """

    LATENCY = 8
    AVG_DELAY = 2

    def __init__(self, build, ram_style="generic", optimise="speed"):
        self.ram_style = ram_style
        self.optimise = check_optimise(optimise)
        self.table_depth = table_depth = build.table_depth
        abits = (table_depth - 1).bit_length()
        super().__init__({
            "n_raw": In(17), "avg": In(QAVG.width), "config": In(config_layout(build)),
            "table_bank": In(1), "table_we": In(1), "table_addr": In(abits),
            "table_data": In(RATE.width),
            "n": Out(16), "prob": Out(PROB.width),
        })

    def elaborate(self, platform):
        m = Module()
        self.mode, self.n_cap = self.config.mode, self.config.n_cap
        for name in ("min_th", "max_th", "max_p", "slope1", "slope2", "gentle"):
            setattr(self, "red_" + name, self.config["red_" + name])
        m.submodules.table = table = BlockRAM(RATE.width, 2 * self.table_depth, self.ram_style)
        m.d.comb += [table.w_en.eq(self.table_we),
                     table.w_addr.eq(Cat(self.table_addr, ~self.table_bank)),
                     table.w_data.eq(self.table_data)]
        # cycle 0
        nc = Mux(self.n_raw > self.n_cap, self.n_cap, self.n_raw)
        m.d.comb += table.r_addr.eq(Cat(nc[:len(self.table_addr)], self.table_bank))
        m.d.sync += self.n.eq(nc)
        # cycle 2 (cycle 1: the RAM's output register)
        w = QAVG.width + 2
        avg1 = Signal(QAVG.width)
        d1, d2 = Signal(signed(w)), Signal(signed(w))
        neg3 = Signal()
        m.d.sync += [avg1.eq(self.avg), d1.eq(self.avg - self.red_min_th),
                     d2.eq(self.avg - self.red_max_th),
                     neg3.eq((self.avg - (self.red_max_th << 1)).as_signed() < 0)]
        word1 = Signal(RATE.width)
        m.d.sync += word1.eq(table.r_data)
        # cycle 3: select by mode and region; the rate mantissa and the difference go
        # straight into the DSPs' input registers (``Multiplier``), the rest into registers
        shift = Signal(RATE.shift_bits)
        d, off = Signal(QAVG.width), Signal(PROB.width)
        force0, force1 = Signal(), Signal()
        sel_word = Signal(RATE.width)
        with m.If(self.mode == MODE_FPQ):
            m.d.comb += [sel_word.eq(word1), d.eq(avg1)]
            m.d.sync += [off.eq(0), force0.eq(0), force1.eq(0)]
        with m.Elif(self.mode == MODE_RED):
            with m.If(d1 < 0):
                m.d.sync += [force0.eq(1), force1.eq(0), off.eq(0)]
            with m.Elif(d2 < 0):
                m.d.comb += [sel_word.eq(self.red_slope1), d.eq(d1)]
                m.d.sync += [force0.eq(0), force1.eq(0), off.eq(0)]
            with m.Elif(self.red_gentle & neg3):
                m.d.comb += [sel_word.eq(self.red_slope2), d.eq(d2)]
                m.d.sync += [force0.eq(0), force1.eq(0), off.eq(self.red_max_p)]
            with m.Else():
                m.d.sync += [force0.eq(0), force1.eq(1), off.eq(0)]
        with m.Else():
            m.d.sync += [force0.eq(1), force1.eq(0), off.eq(0)]
        m.d.sync += shift.eq(sel_word[RATE.mant_bits:])
        # cycle 4: partial products (two DSPs: input registers at cycle 3, product at 4)
        m.submodules.mul_lo = mul_lo = Multiplier(RATE.mant_bits, _HALF, self.ram_style)
        m.submodules.mul_hi = mul_hi = Multiplier(RATE.mant_bits, QAVG.width - _HALF,
                                                  self.ram_style)
        m.d.comb += [mul_lo.a.eq(sel_word[:RATE.mant_bits]), mul_lo.b.eq(d[:_HALF]),
                     mul_hi.a.eq(sel_word[:RATE.mant_bits]), mul_hi.b.eq(d[_HALF:])]
        pl, ph = mul_lo.p, mul_hi.p
        shift3, off3, f03, f13 = Signal.like(shift), Signal.like(off), Signal(), Signal()
        m.d.sync += [shift3.eq(shift), off3.eq(off), f03.eq(force0), f13.eq(force1)]
        # cycle 5: sum
        # the sum, then ``<< 1`` and the coarse part of ``>> shift`` (multiples of 8)
        prod = Signal(RATE.mant_bits + QAVG.width + 1)
        total4 = Cat(Const(0, 1), pl + (ph << _HALF))
        if self.optimise == "speed":
            m.d.sync += prod.eq(Array([total4 >> (8 * k) for k in range(8)])[shift3[3:]])
        else:
            m.d.sync += prod.eq(total4 >> Cat(Const(0, 3), shift3[3:]))
        shift4, off4, f04, f14 = Signal.like(shift), Signal.like(off), Signal(), Signal()
        m.d.sync += [shift4.eq(shift3), off4.eq(off3), f04.eq(f03), f14.eq(f13)]
        # cycle 6: << 1 >> shift; anything at or above 2**33 saturates whatever the offset
        scaled = Signal(PROB.width + 1)
        big = Signal()
        if self.optimise == "speed":
            shifted = Array([prod >> k for k in range(8)])[shift4[:3]]
        else:
            shifted = prod >> shift4[:3]
        m.d.sync += [scaled.eq(shifted[:PROB.width + 1]),
                     big.eq(shifted[PROB.width + 1:] != 0)]
        off5, f05, f15 = Signal.like(off), Signal(), Signal()
        # the saturation bound for ``scaled`` (``off + scaled > PROB_ONE`` is ``scaled >
        # PROB_ONE - off``), formed here so that cycle 7 has the add and this compare side
        # by side instead of an add then a compare
        room5 = Signal(signed(PROB.width + 2))
        m.d.sync += [off5.eq(off4), f05.eq(f04), f15.eq(f14), room5.eq(PROB_ONE - off4)]
        # cycle 7: offset and saturation
        total = off5 + scaled
        with m.If(f05):
            m.d.sync += self.prob.eq(0)
        with m.Elif(f15 | big | (scaled > room5)):
            m.d.sync += self.prob.eq(PROB_ONE)
        with m.Else():
            m.d.sync += self.prob.eq(total)
        return m
