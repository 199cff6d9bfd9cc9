"""Flow hash: runtime-keyed Toeplitz of the 104-bit IPv4 5-tuple, reduced to ``[0, v_max)``."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpq.formats import FLOW_BITS, HASH_BITS

from .layouts import config_layout
from .multiplier import Multiplier

__all__ = ["FlowHash", "reduce_index"]

#: Input bits XORed in the first pipeline stage (13 groups of one byte for IPv4).
GROUP = 8


def reduce_index(m, value, v_max, index_bits, style="generic", name="index"):
    """``(value * v_max) >> 32`` (``fpq.flow_hash.reduce_index``), three clocks after
    ``value``.

    ``value`` is taken combinationally into the input registers of two multipliers
    (``Multiplier``, one DSP each: a register that would otherwise hold ``value`` costs no
    clock), which form the two 16 x 17-bit partial products (clock 2); clock 3 adds them.
    Returns the index signal, valid three clocks after ``value``."""
    lo = m.submodules[f"{name}_mul_lo"] = Multiplier(16, len(v_max), style)
    hi = m.submodules[f"{name}_mul_hi"] = Multiplier(16, len(v_max), style)
    m.d.comb += [lo.a.eq(value[0:16]), hi.a.eq(value[16:32]), lo.b.eq(v_max),
                 hi.b.eq(v_max)]
    index = Signal(index_bits, name=name)
    m.d.sync += index.eq((lo.p + (hi.p << 16)) >> 32)
    return index


class FlowHash(wiring.Component):
    """The golden model's ``ToeplitzHash`` followed by ``reduce_index``.

    Toeplitz (Microsoft RSS): for every set input bit ``i`` (``i = 0`` the MSB of the 104-bit
    flow key) XOR in the 32-bit key window starting at key bit ``i``. With a runtime key each
    output bit is an AND-XOR tree of 104 (data, key) pairs: no carry chain, so it pipelines to
    any clock rate. Stage 1 registers each group of 8 input bits beside a copy of the key bits
    its windows span, stage 2 XORs the 13 groups, stage 3 the 13 partial sums in 4 groups,
    stage 4 the 4 (into the multipliers' input registers), stages 5-6 the multiply-shift
    ``(hash * v_max) >> 32`` (two DSP partial products, with the DSPs' own input and output
    registers, then one adder). No stage has more than 2 LUT levels, and no net fans out
    across the whole block. Cost on ECP5: see docs/BENCHMARKS.md ("RTL (hdl/)").

    Why Toeplitz rather than CRC or H3: it is the RSS function NICs already use (test vectors,
    existing keys), a re-key is a register write, and the key is only 135 bits. It is linear, so
    the key must stay secret (an attacker who knows it can make flows collide).

    IPv6: the 296-bit 5-tuple (src 128 | dst 128 | ports 32 | proto 8) fits the same structure
    with a 327-bit (40-byte RSS) key: 37 groups in stage 1, a 3-level XOR tree in stage 2
    (one more stage at this clock rate), about 2.8 times the LUTs.

    Latency: 6 clocks from ``flow`` to ``index``; throughput: one flow per clock, no stall.

    Parameters
    ----------
    build : fpq.Build
        ``index`` has ``log2(build.vec_bits)`` bits.
    style : str
        ``Multiplier`` style of the index multiply ("generic" or "ecp5": ``MULT18X18D``).

    Attributes
    ----------
    flow : In(104)
    config : In(config_layout(build))
        Uses ``hash_key`` (key bit 0 = MSB of key byte 0 = bit 159) and ``v_max``; they must not
        change while flows are in the pipeline (commits happen only when it is empty), and a
        flow presented in the clock the key changes still hashes with the old key.
    hash : Out(32)
        The Toeplitz hash, 4 clocks after ``flow``.
    index : Out(index_bits)
        ``(hash * v_max) >> 32``, 6 clocks after ``flow``.
    """

    LATENCY = 6
    HASH_LATENCY = 4

    def __init__(self, build, style="generic"):
        self.style = style
        self.index_bits = index_bits = (build.vec_bits - 1).bit_length()
        super().__init__({"flow": In(FLOW_BITS), "config": In(config_layout(build)),
                          "hash": Out(HASH_BITS), "index": Out(index_bits)})

    def elaborate(self, platform):
        m = Module()
        key = self.config.hash_key
        key_bits = len(key)
        partials = []
        for g in range(0, FLOW_BITS, GROUP):
            last = min(g + GROUP, FLOW_BITS)
            # stage 1: the group's input bits and the key bits its windows span, registered
            # beside the group's logic (a copy of the key per group: each key bit would
            # otherwise fan out across the whole hash). The key changes only with no flow in
            # the pipeline (a commit), so the copy a clock late is the key in force.
            lo, hi = key_bits - HASH_BITS - (last - 1), key_bits - g
            key_g = Signal(hi - lo, name=f"key{g // GROUP}")
            flow_g = Signal(last - g, name=f"flow{g // GROUP}")
            m.d.sync += [key_g.eq(key[lo:hi]),
                         flow_g.eq(Cat(self.flow[FLOW_BITS - 1 - i] for i in range(g, last)))]
            acc = 0
            for i in range(g, last):
                lsb = key_bits - HASH_BITS - i - lo
                acc = acc ^ Mux(flow_g[i - g], key_g[lsb:lsb + HASH_BITS], 0)
            p = Signal(HASH_BITS, name=f"partial{g // GROUP}")
            m.d.sync += p.eq(acc)
            partials.append(p)
        groups = []
        for g in range(0, len(partials), 4):
            acc = 0
            for p in partials[g:g + 4]:
                acc = acc ^ p
            q = Signal(HASH_BITS, name=f"group{g // 4}")
            m.d.sync += q.eq(acc)
            groups.append(q)
        acc = 0
        for q in groups:
            acc = acc ^ q
        m.d.sync += self.hash.eq(acc)
        # the multipliers register the hash themselves (their input registers)
        index = reduce_index(m, acc, self.config.v_max, self.index_bits, self.style)
        m.d.comb += self.index.eq(index)
        return m
