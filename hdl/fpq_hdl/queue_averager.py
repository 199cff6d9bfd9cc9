"""Queue averager: RED's EWMA with ``w_q = 2**-wq_shift`` and idle-time decay."""

from amaranth import *
from amaranth.lib import wiring, memory
from amaranth.lib.wiring import In, Out

from fpq.formats import QAVG, QPKTS_BITS, TIME_BITS, DECAY_SHIFT_BITS
from fpq.config import DECAY_TABLE_DEPTH

from .layouts import config_layout, check_optimise, fixed_registers

__all__ = ["QueueAverager", "ewma_step", "DECAY_PARTS"]

_FX = QAVG.frac_bits
#: With ``optimise="speed"`` the idle-decay table is read as this many LUT-RAM memories in
#: parallel (cycle 1), and one of them is selected a clock later (cycle 2).
DECAY_PARTS = 4


def _select(a, one_hot):
    """``a >> k`` for the set bit ``k`` of ``one_hot`` (0 if none): an AND-OR per bit."""
    out = 0
    for k in range(len(one_hot)):
        out = out | Mux(one_hot[k], a >> k, 0)
    return out


def ewma_step(m, a, shifted, qs, *, low=None, c=None):
    """``A - ceil(A / 2**s) + qs`` (QAVG, modulo its width) from ``shifted`` = ``A >> s``.

    One carry-save step and one adder: ``A + ~(A >> s) + qs + (1 - c)``, ``c = (A mod 2**s !=
    0)``, the rounding of ``ceil``, given in one of two forms:

    * ``low`` = ``~(A mod 2**s)`` over the bits that may round (``s`` of them, or 16 masked):
      ``1 - c`` is then the carry out of ``low + 1`` (all ones, so carrying, exactly when ``A
      mod 2**s`` is 0), bits under the sum's own in the same carry chain (a bit of ``1 + 1``
      below them supplies the ``+ 1``). The rounding costs chain bits and no LUT levels: with
      a build-time ``w_q`` this takes the recurrence with the idle decay from 141.7-144.7 to
      155-159 MHz alone (docs/BENCHMARKS.md).
    * ``c`` itself (an OR tree over the masked low bits), into the adder's free carry-in
      position. With a runtime ``w_q`` it is as fast (the shift's AND-OR is the longer of the
      two paths in front of the chain), and the top routed 3-4 % faster with it at two seeds
      (docs/BENCHMARKS.md), so the runtime build keeps it.
    """
    if (low is None) == (c is None):
        raise TypeError("ewma_step: give the rounding as exactly one of low= and c=")
    w = QAVG.width + 1
    x, y, z = a, Signal(w, name="y"), qs
    m.d.comb += y.eq(~shifted)
    sum_ = x ^ y ^ z
    maj = (x & y) | (x & z) | (y & z)
    if c is not None:
        return (sum_ + Cat(~c, maj[:w - 1]))[:QAVG.width]
    n = len(low)
    wide = Cat(Const(1, 1), low, sum_) + Cat(Const(1, 1), Const(0, n + 1), maj[:w - 1])
    return wide[n + 1:n + 1 + QAVG.width]


class QueueAverager(wiring.Component):
    """Bit-exact ``fpq.queue_averager.QueueAverager``.

    The model's ``A += ((q << 16) - A) >> s`` (arithmetic shift) equals, for ``s <= 16``,
    ``A - ceil(A / 2**s) + (q << (16 - s))`` because ``q << 16`` is a multiple of ``2**s``.
    The last term does not depend on ``A`` and is formed a clock earlier, so the one-clock
    recurrence is a shift of ``A`` by a register value and a three-input add. When the build
    fixes ``wq_shift`` (``Build.fixed``) the shift is wiring, and the rounding term of
    ``ceil`` (``A mod 2**s != 0``) is the carry out of ``s`` extra bits at the bottom of the
    adder's carry chain instead of an OR tree in front of it (``ewma_step``). After an idle
    period the update is ``A >> decay[cells]`` instead, with ``cells`` and the decay-table read
    (a power-of-two decay, as Linux RED's ``Stab``) also a clock earlier.

    The decision does not wait for this average: it uses the one ``avg_lag`` arrivals old
    (``Build.avg_lag``), so the averager is off the decision path.

    Pipeline: cycle 0 idle cells (barrel shift, clamp); cycle 1 decay-table read (LUT RAM);
    cycle 2 the decay shift decoded to one-hot (registered as it is with ``optimise="area"``);
    cycle 3 the update. With "speed" the clamp's compare and the shift are registered apart
    at cycle 0, the table is read at cycle 1 as ``DECAY_PARTS`` memories side by side, with
    entries 0 and 255 (where a clamped count goes) also kept in registers, and the word is
    selected at cycle 2 (``_read_split``). ``avg_next`` is combinational at cycle 3
    (``NEXT_LATENCY``), ``avg`` registered at cycle 4 (``LATENCY``).
    Throughput: one arrival per clock.

    Parameters
    ----------
    build : fpq.Build
    optimise : str
        How the idle decay's shift of the average, inside the one-clock recurrence, is built:
        "speed" (default), an AND-OR of a one-hot register (2 LUT levels); "area", a binary
        shifter, a stage per bit of the amount (fewer LUTs, more levels: on the iCEBreaker
        design 337 logic cells fewer, 2026-11-24). The EWMA's shift by ``wq_shift`` stays
        one-hot: with ``wq_shift`` fixed at build time it is wiring either way. "speed" also
        reads the decay table in parts (above: 55 flip-flops and 30 LUTs more on the ECP5,
        2026-11-25); "area" reads it as one memory behind the registered clamp.

    Attributes
    ----------
    valid, q, idle, idle_diff : In
        Arrival (cycle 0): the queue it found, whether the queue was idle and for how long.
    config : In(config_layout(build))
        Uses ``wq_shift`` and ``idle_cell_log``.
    table_bank : In(1)
        Active bank; host writes go to the other one.
    table_we, table_addr, table_data : In
        Host write port of the idle-decay table (inactive bank).
    avg_next : Out(QAVG.width)
        The updated average (cycle 3, combinational; equals ``avg`` when no arrival).
    avg : Out(QAVG.width)
    """

    LATENCY = 4
    NEXT_LATENCY = 3

    def __init__(self, build, optimise="speed"):
        self.optimise = check_optimise(optimise)
        self._build = build
        super().__init__({
            "valid": In(1), "q": In(QPKTS_BITS), "idle": In(1), "idle_diff": In(signed(TIME_BITS)),
            "config": In(config_layout(build)),
            "table_bank": In(1), "table_we": In(1), "table_addr": In(8), "table_data": In(DECAY_SHIFT_BITS),
            "avg_next": Out(QAVG.width), "avg": Out(QAVG.width),
        })

    def _read_split(self, m, parts, low_bits, neg, over, in_cells):
        """The table read of "speed": cycles 0-2, the entry as a combinational value at
        cycle 2.

        Cycle 0 registers the sign, the clamp's compare and the shift apart (the clamp's
        select behind the compare's carry chain was the averager's critical path, 7.7 ns).
        Cycle 1 reads every part at the cell count's low bits, with no logic in front of the
        address; a clamped count (negative, or 255 cells and more) takes entry 0 or 255 from
        copies of those two entries kept in registers, written with the table. Cycle 2
        selects one of the ``len(parts) + 1`` words with a one-hot register (an AND-OR).
        """
        neg_r, over_r, cells_r = Signal(), Signal(), Signal(8)
        m.d.sync += [neg_r.eq(neg), over_r.eq(over), cells_r.eq(in_cells)]
        # entries 0 and 255 of each bank: reset_less, as the table keeps its contents across
        # a reset (both start as zeros at configuration)
        ends_at = (0, DECAY_TABLE_DEPTH - 1)
        ends = [[Signal(DECAY_SHIFT_BITS, reset_less=True, name=f"decay_{e}_bank{b}")
                 for b in range(2)] for e in ends_at]
        for copies, entry in zip(ends, ends_at):
            for b, copy in enumerate(copies):
                with m.If(self.table_we & (self.table_addr == entry) & (self.table_bank != b)):
                    m.d.sync += copy.eq(self.table_data)
        words = []
        for j, rp in enumerate(parts):
            m.d.comb += rp.addr.eq(Cat(cells_r[:low_bits], self.table_bank))
            word = Signal(DECAY_SHIFT_BITS, name=f"decay_word{j}")
            m.d.sync += word.eq(rp.data)
            words.append(word)
        clamp_word = Signal(DECAY_SHIFT_BITS)
        m.d.sync += clamp_word.eq(Mux(neg_r, Array(ends[0])[self.table_bank],
                                      Array(ends[1])[self.table_bank]))
        words.append(clamp_word)
        clamped = neg_r | over_r
        sel = Signal(len(words))
        m.d.sync += sel.eq(Cat(*(~clamped & (cells_r[low_bits:] == j)
                                 for j in range(len(parts))), clamped))
        decay_s = 0
        for j, word in enumerate(words):
            decay_s = decay_s | Mux(sel[j], word, 0)
        return decay_s

    def elaborate(self, platform):
        m = Module()
        self.wq_shift, self.idle_cell_log = self.config.wq_shift, self.config.idle_cell_log
        # a w_q the build fixes (Build.fixed) is a Python int here, whatever the port carries
        fixed_wq = fixed_registers(self._build).get("wq_shift")
        if fixed_wq is not None:
            self.wq_shift = fixed_wq.value
        # The table (two banks of DECAY_TABLE_DEPTH shifts) is small: LUT RAM with an
        # asynchronous read (a block RAM's clock-to-out would cost a clock). With "speed" it
        # is ``DECAY_PARTS`` memories, one per range of the cell count's top bits, all read
        # at cycle 1 and registered; the part is selected at cycle 2, in front of the
        # one-hot decode. Read as one memory, with the clamp's select in front of its
        # address, cycle 1 took 8.2 ns on the ECP5 (docs/BENCHMARKS.md, 2026-11-25)
        n_parts = DECAY_PARTS if self.optimise == "speed" else 1
        part_bits = (n_parts - 1).bit_length()
        low_bits = (DECAY_TABLE_DEPTH - 1).bit_length() - part_bits
        parts = []
        for j in range(n_parts):
            mem = m.submodules[f"decay{j}" if n_parts > 1 else "decay"] = memory.Memory(
                shape=DECAY_SHIFT_BITS, depth=2 << low_bits, init=[],
                attrs={"ram_style": "distributed"})
            wp, rp = mem.write_port(), mem.read_port(domain="comb")
            en = self.table_we & (self.table_addr[low_bits:] == j) if n_parts > 1 else \
                self.table_we
            m.d.comb += [wp.en.eq(en),
                         wp.addr.eq(Cat(self.table_addr[:low_bits], ~self.table_bank)),
                         wp.data.eq(self.table_data)]
            parts.append(rp)
        # cycle 0: idle cells = min(idle time >> idle_cell_log, 255) (0 if negative)
        # the clamp compares the time itself with 255.x cells, 256 << idle_cell_log (a
        # register: configuration only), in parallel with the 8 bits of the shift
        full = Signal(TIME_BITS + 9)
        m.d.sync += full.eq(Const(DECAY_TABLE_DEPTH, 9) << self.idle_cell_log)
        neg = self.idle_diff < 0
        over = self.idle_diff.as_unsigned() >= full
        in_cells = (self.idle_diff.as_unsigned() >> self.idle_cell_log)[:8]
        speed = self.optimise == "speed"
        # "area" keeps its statements in this order, interleaved with the pipeline's: the
        # iCEBreaker's nearly full UP5K maps the same netlist written in another order to
        # 5279 logic cells and 17.30 MHz instead of 5270 and 18.61 (2026-11-25)
        if speed:
            # cycles 0-2, the entry at cycle 2
            decay_s = self._read_split(m, parts, low_bits, neg, over, in_cells)
        else:
            cells = Signal(8)
            m.d.sync += cells.eq(Mux(neg, 0, Mux(over, DECAY_TABLE_DEPTH - 1, in_cells)))
        v1, idle1 = Signal(), Signal()
        qs1 = Signal(QAVG.width)
        m.d.sync += [v1.eq(self.valid), idle1.eq(self.idle),
                     qs1.eq((self.q << _FX) >> self.wq_shift)]
        # cycle 1: (area) the decay-table read (LUT RAM, asynchronous, registered here)
        if not speed:
            (rp,) = parts
            m.d.comb += rp.addr.eq(Cat(cells, self.table_bank))
        v2, idle2 = Signal(), Signal()
        qs2 = Signal(QAVG.width)
        if not speed:
            decay_s = Signal(DECAY_SHIFT_BITS)
        m.d.sync += [v2.eq(v1), idle2.eq(idle1), qs2.eq(qs1)]
        if not speed:
            m.d.sync += decay_s.eq(rp.data)
        # cycle 2: the decay shift as a one-hot register (shifts of 36 and more give zero: no
        # bit set), or (area) registered as it is
        v3, idle3 = Signal(), Signal()
        qs = Signal(QAVG.width)
        m.d.sync += [v3.eq(v2), idle3.eq(idle2), qs.eq(qs2)]
        if speed:
            decay_sel = Signal(QAVG.width)
            m.d.sync += decay_sel.eq(Cat(decay_s == k for k in range(QAVG.width)))
        else:
            decay_s3 = Signal(DECAY_SHIFT_BITS)
            m.d.sync += decay_s3.eq(decay_s)
        a = self.avg
        s = self.wq_shift
        if fixed_wq is not None:
            # fixed at build time: the shift is wiring, and only the s bits below it round
            shifted = a >> s
            rounding = {"low": ~a[:s]}
        else:
            # the mask 2**s - 1 is a function of the configuration only: registered
            mask = Signal(QAVG.width)
            m.d.sync += mask.eq((Const(1, QAVG.width + 1) << s) - 1)
            # and s as a one-hot register: the shift below is an AND-OR of 17 terms per bit,
            # and no configuration bit fans out to all of them
            wq_sel = Signal(17)
            m.d.sync += wq_sel.eq(Cat(s == k for k in range(17)))
            shifted = _select(a, wq_sel)
            rounding = {"c": (a & mask) != 0}
        # cycle 3: the one-clock recurrence
        ewma = ewma_step(m, a, shifted, qs, **rounding)
        if speed:
            decayed = _select(a, decay_sel)
        else:
            decayed = a >> decay_s3                   # 0 for shifts of the width and more
        m.d.comb += self.avg_next.eq(Mux(v3, Mux(idle3, decayed, ewma), a))
        m.d.sync += a.eq(self.avg_next)
        return m
