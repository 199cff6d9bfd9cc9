"""Flow hash: runtime-keyed Toeplitz of the 104-bit IPv4 5-tuple or the 296-bit IPv6 one (or
of the RSS input, or a hash the descriptor carries), a keyed non-linear stage, reduced to
``[0, v_max)``."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpq.formats import HASH_BITS
from fpq.flow_hash import MIX_SBOX, MIX_ROTATIONS, RSS_PROTOCOLS, flow_bits

from .layouts import config_layout
from .multiplier import Multiplier

__all__ = ["FlowHash", "reduce_index"]

#: Input bits XORed in the first pipeline stage (13 groups of one byte for IPv4, 37 for
#: IPv6).
GROUP = 8


def xor_tree(terms):
    """The XOR of ``terms`` as a balanced tree of two-input XORs.

    Written as a running ``acc ^ t``, the XOR is a chain as deep as it is long, and Yosys's
    LUT mapping keeps that structure: 14 terms came out four LUTs and a mux deep where two LUT4
    levels suffice. The tree hands the mapper the shallow form."""
    terms = list(terms)
    while len(terms) > 1:
        terms = [terms[i] ^ terms[i + 1] if i + 1 < len(terms) else terms[i]
                 for i in range(0, len(terms), 2)]
    return terms[0]


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
    """The golden model's ``fpq.flow_hash.FlowHash`` followed by ``reduce_index``.

    Toeplitz (Microsoft RSS): for every set input bit ``i`` (``i = 0`` the MSB of the 104-bit
    flow key) XOR in the 32-bit key window starting at key bit ``i``. With a runtime key each
    output bit is an AND-XOR tree of 104 (data, key) pairs: no carry chain, so it pipelines to
    any clock rate. Clock 1 XORs the windows of each group of 8 input bits (2 LUT levels; each
    group has a registered copy of the key bits its windows span, so that no key bit fans out
    across the whole hash), clock 2 the 13 partial sums and ``k0`` (2 LUT levels).

    The keyed non-linear stage (``build.hash_mix``, ``fpq.flow_hash.mix``): clocks 3, 4 and
    the multipliers' input registers (5) are one round each, an S-box layer (``MIX_SBOX`` on
    each nibble, one LUT level) and the linear layer with the round key
    (``y ^ rotr(y, 9) ^ rotr(y, 22) ^ k``: 4 inputs per bit, one LUT level). Without it the
    Toeplitz hash passes through registers (the same latency). Clocks 6-7 are the
    multiply-shift ``(hash * v_max) >> 32`` (two DSP partial products, with the DSPs' own
    input and output registers, then one adder). No stage has more than 2 LUT levels, and
    none a carry chain but the index's adder. The non-linear stage's cost on ECP5 (about
    230 LUTs and 400 flip-flops): docs/RELIABILITY.md, "Colliding flows under secret
    keys" (records ``flow-hash``, ``flow-hash-toeplitz``).

    Inputs (``build.hash_input``): "5-tuple", the 104-bit flow; "rss", Microsoft RSS over
    the same bits, the protocol left out and the ports too unless the protocol is TCP or UDP
    (their groups are masked in clock 2 by a compare registered in clock 1), so that the
    hash equals a NIC's RSS hash with the same key; "descriptor", no Toeplitz: ``flow[0:32]``
    is a hash made outside (a NIC's ``rx_hash``), carried through clocks 1-2.

    Why Toeplitz rather than CRC or H3: it is the RSS function NICs already use (test vectors,
    existing keys), a re-key is a register write, and the key is only 135 bits. It is linear:
    with the key secret, a "same bucket?" oracle still finds collisions cheaply (one
    difference in the key's kernel collides every pair); the non-linear stage removes that
    linearity (the probes a collision set then needs: docs/RELIABILITY.md).

    IPv6 (``build.flow_key`` "ipv6"): the 296-bit 5-tuple (src 128 | dst 128 | ports 32 |
    proto 8, ``fpq.flow_hash.pack_flow6``) with the 328-bit ``hash_key`` (327 bits used): 37
    groups in clock 1, so clock 2 XORs 37 partial sums (and ``k0``), a 3-level LUT tree
    instead of 2, with the same latency (its timing is not characterised); about 2.8 times
    the Toeplitz LUTs. "rss" then masks the same port and protocol groups (the low 40 bits
    of either key), the RSS IPv6 hash.

    Latency: 7 clocks from ``flow`` to ``index`` whatever the build; throughput: one flow
    per clock, no stall.

    Parameters
    ----------
    build : fpq.Build
        ``index`` has ``log2(build.vec_bits)`` bits; ``hash_input`` and ``hash_mix`` choose
        the hash.
    style : str
        ``Multiplier`` style of the index multiply ("generic" or "ecp5": ``MULT18X18D``).

    Attributes
    ----------
    flow : In(104) or In(296)
        The flow key of ``build.flow_key``.
    config : In(config_layout(build))
        Uses ``hash_key`` (key bit 0 = MSB of key byte 0 = bit 159, or 327 for IPv6),
        ``hash_mix_key`` (with ``hash_mix``) and ``v_max``; they must not change while flows
        are in the pipeline (commits happen only when it is empty), and a flow presented in
        the clock the key changes still hashes with the old key.
    hash : Out(32)
        ``fpq.flow_hash.FlowHash``'s value, ``HASH_LATENCY`` clocks after ``flow``.
    index : Out(index_bits)
        ``(hash * v_max) >> 32``, ``LATENCY`` clocks after ``flow``.
    """

    LATENCY = 7
    HASH_LATENCY = 5

    def __init__(self, build, style="generic"):
        self.style = style
        self.hash_input = build.hash_input
        self.hash_mix = build.hash_mix
        self.index_bits = index_bits = (build.vec_bits - 1).bit_length()
        self.flow_bits = flow_bits(build)
        super().__init__({"flow": In(self.flow_bits), "config": In(config_layout(build)),
                          "hash": Out(HASH_BITS), "index": Out(index_bits)})

    def _toeplitz_partials(self, m):
        """Clock 1: the groups' partial sums (13, or 37 for IPv6), registered."""
        key = self.config.hash_key
        key_bits = len(key)
        n = self.flow_bits
        partials = []
        for g in range(0, n, GROUP):
            last = min(g + GROUP, n)
            # the key bits the group's windows span, a copy per group registered beside its
            # logic (each key bit would otherwise fan out across the whole hash). The key
            # changes only with no flow in the pipeline (a commit), so the copy a clock late
            # is the key in force.
            lo, hi = key_bits - HASH_BITS - (last - 1), key_bits - g
            key_g = Signal(hi - lo, name=f"key{g // GROUP}")
            m.d.sync += key_g.eq(key[lo:hi])
            windows = []
            for i in range(g, last):
                lsb = key_bits - HASH_BITS - i - lo
                windows.append(Mux(self.flow[n - 1 - i], key_g[lsb:lsb + HASH_BITS], 0))
            p = Signal(HASH_BITS, name=f"partial{g // GROUP}")
            m.d.sync += p.eq(xor_tree(windows))
            partials.append(p)
        return partials

    def _round(self, m, x, key, final=False):
        """One round of the non-linear stage on ``x``: the S-box layer, then the linear layer
        XORed with ``key`` (None: no key). Returns the value, registered unless ``final``."""
        sbox = Array(C(v, 4) for v in MIX_SBOX)
        y = Cat(sbox[x[i:i + 4]] for i in range(0, HASH_BITS, 4))
        a, b = MIX_ROTATIONS
        out = y ^ y.rotate_right(a) ^ y.rotate_right(b)
        if key is not None:
            out = out ^ key
        if final:
            return out
        r = Signal(HASH_BITS, name=f"mix_round{len(self._rounds) + 1}")
        m.d.sync += r.eq(out)
        self._rounds.append(r)
        return r

    def elaborate(self, platform):
        m = Module()
        k0 = k1 = k2 = None
        if self.hash_mix:
            mix_key = self.config.hash_mix_key
            k2, k1, k0 = mix_key[0:32], mix_key[32:64], mix_key[64:96]
        # ---- clock 1 ------------------------------------------------------------------------
        if self.hash_input == "descriptor":
            carried = Signal(HASH_BITS)
            m.d.sync += carried.eq(self.flow[:HASH_BITS])
            terms = [carried]
        else:
            partials = self._toeplitz_partials(m)
            # the groups of the ports (the 32 bits above the protocol's 8, the key's low
            # byte: the same in the IPv4 and the IPv6 key) and of the protocol
            proto_group = (self.flow_bits - 8) // GROUP
            port_groups = range(proto_group - 32 // GROUP, proto_group)
            terms = [partials[g] for g in range(port_groups.start)]
            if self.hash_input == "rss":
                proto = self.flow[:8]
                with_ports = Signal()
                m.d.sync += with_ports.eq(Cat(proto == p for p in RSS_PROTOCOLS).any())
                # in pairs, so that each first-level LUT of clock 2 has at most 4 inputs
                for g in range(port_groups.start, port_groups.stop, 2):
                    terms.append(Mux(with_ports, partials[g] ^ partials[g + 1], 0))
            else:
                terms += [partials[g] for g in port_groups] + [partials[proto_group]]
        # ---- clock 2: the XOR of the terms and k0 -----------------------------------------
        if k0 is not None:
            terms.append(k0)
        x = Signal(HASH_BITS, name="toeplitz_k0")
        m.d.sync += x.eq(xor_tree(terms))
        # ---- clocks 3, 4, 5 (the multipliers' input registers): the non-linear stage --------
        self._rounds = []
        if self.hash_mix:
            x = self._round(m, x, k1)
            x = self._round(m, x, k2)
            value = self._round(m, x, None, final=True)
        else:
            for i in (3, 4):
                nxt = Signal(HASH_BITS, name=f"plain{i}")
                m.d.sync += nxt.eq(x)
                x = nxt
            value = x
        m.d.sync += self.hash.eq(value)
        # the multipliers register the value themselves (their input registers)
        index = reduce_index(m, value, self.config.v_max, self.index_bits, self.style)
        m.d.comb += self.index.eq(index)
        return m
