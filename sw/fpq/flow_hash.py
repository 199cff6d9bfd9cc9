"""The flow hash: a keyed Toeplitz hash of the IPv4 5-tuple (or a NIC's RSS input, or a hash
the descriptor carries), a keyed non-linear mix, and the reduction to a vector index.

The flow key is the IPv4 5-tuple (104 bits, :func:`pack_flow`) or, in a build with
``Build.flow_key`` "ipv6", the IPv6 5-tuple (296 bits, :func:`pack_flow6`); both end in
``src_port(16) | dst_port(16) | proto(8)``, so the RSS input (:func:`rss_input`) masks the same
low bits of either.

The hash is the Microsoft RSS Toeplitz function: for every input bit ``i`` that is set
(``i = 0`` is the most significant bit of the input), XOR in the 32-bit window of the key that
starts at key bit ``i`` (key bit 0 is the MSB of key byte 0). The 104-bit input is
``src_ip(32) | dst_ip(32) | src_port(16) | dst_port(16) | proto(8)``, so it uses the first
104 + 31 = 135 key bits. The index in ``[0, v_max)`` is ``(hash * v_max) >> 32``.

Why Toeplitz: it is the function NICs already use for RSS (so users can reuse keys and test
vectors), the key is only 136 bits of registers, and in hardware every output bit is an AND-XOR
tree with no carry chain, so it pipelines to any clock rate. It is linear: an attacker who
knows the key can craft collisions, hence the key is a runtime secret (docs/RELIABILITY.md).
The IPv6 key (``src_ip(128) | dst_ip(128) | ports | proto``) uses 296 + 31 = 327 key bits:
its ``hash_key`` is 41 bytes (``HASH_KEY_BYTES``), of which the first 40 are an RSS key (the
RSS IPv6 input, 288 bits without the protocol, uses key bits 0..318).

The build chooses the hash (``fpq.Build``, ``FlowHash``): its input (``hash_input``, one of
``HASH_INPUTS``) and whether the keyed non-linear stage ``mix`` follows (``hash_mix``).
"""

from .bitfields import layout, pack, unpack
from .formats import FLOW_BITS, FLOW6_BITS, HASH_BITS

__all__ = ["pack_flow", "unpack_flow", "pack_flow6", "unpack_flow6", "FLOW_LAYOUT",
           "FLOW6_LAYOUT", "FLOW_KEYS",
           "FLOW_KEY_BITS", "HASH_KEY_BYTES", "flow_bits", "toeplitz", "ToeplitzHash",
           "reduce_index",
           "HASH_INPUTS", "RSS_PROTOCOLS", "rss_input", "MIX_KEY_BITS", "MIX_SBOX",
           "MIX_ROTATIONS", "mix", "FlowHash"]

#: Where the 32-bit hash comes from (``Build.hash_input``):
#:
#: * ``"5-tuple"``: Toeplitz of the whole 104-bit IPv4 5-tuple (protocol included);
#: * ``"rss"``: Microsoft RSS, as NICs compute it (Corundum's ``rx_hash``): Toeplitz of
#:   src | dst | sport | dport for TCP and UDP (``RSS_PROTOCOLS``), of src | dst otherwise;
#: * ``"descriptor"``: no hash here: the descriptor's ``flow`` carries a 32-bit hash made
#:   outside (a NIC's RSS hash), in its low 32 bits, the rest zero.
HASH_INPUTS = ("5-tuple", "rss", "descriptor")
#: The flow key a build hashes (``Build.flow_key``, the first by default): the IPv4 or the
#: IPv6 5-tuple.
FLOW_KEYS = ("ipv4", "ipv6")
#: Bits of each flow key (``pack_flow``, ``pack_flow6``).
FLOW_KEY_BITS = {"ipv4": FLOW_BITS, "ipv6": FLOW6_BITS}
#: Bytes of the ``hash_key`` register of each flow key: the Toeplitz hash of ``n`` input bits
#: reads ``n + 31`` key bits (135 of IPv4's 160, 327 of IPv6's 328).
HASH_KEY_BYTES = {"ipv4": 20, "ipv6": 41}
#: The protocols whose RSS input includes the ports (IPv4 TCP and UDP).
RSS_PROTOCOLS = (6, 17)
#: Key bits of the non-linear stage (``hash_mix_key``): three 32-bit round keys.
MIX_KEY_BITS = 96
#: The 4-bit S-box of the non-linear stage (PRESENT's, Bogdanov et al. 2007: no single-bit
#: input difference gives a single-bit output difference).
MIX_SBOX = (0xC, 0x5, 0x6, 0xB, 0x9, 0x0, 0xA, 0xD, 0x3, 0xE, 0xF, 0x8, 0x4, 0x7, 0x1, 0x2)
#: Rotations of the linear layer ``y ^ rotr(y, a) ^ rotr(y, b)`` (invertible: an odd number
#: of terms), chosen for the lowest collision rate of the top bits under one- and two-bit
#: input differences among the pairs tried (docs/RELIABILITY.md, "Colliding flows").
MIX_ROTATIONS = (9, 22)
_MIX_ROUNDS = 3

_MASK32 = (1 << HASH_BITS) - 1


def _flow_layout(ip_bits):
    """The fields of a flow key with ``ip_bits``-bit addresses, from the most significant."""
    return tuple(reversed(layout(("proto", 8), ("dst_port", 16), ("src_port", 16),
                                 ("dst_ip", ip_bits), ("src_ip", ip_bits))))


#: The layouts of the IPv4 and the IPv6 flow key (``fpq.bitfields``).
FLOW_LAYOUT, FLOW6_LAYOUT = _flow_layout(32), _flow_layout(128)


def pack_flow(src_ip, dst_ip, src_port, dst_port, proto):
    """The 104-bit IPv4 flow key from its fields; each field is range-checked."""
    return pack(FLOW_LAYOUT, dict(src_ip=src_ip, dst_ip=dst_ip, src_port=src_port,
                                  dst_port=dst_port, proto=proto))


def unpack_flow(flow):
    """The fields of a 104-bit IPv4 flow key, as :func:`pack_flow` takes them."""
    return tuple(unpack(FLOW_LAYOUT, flow).values())


def pack_flow6(src_ip, dst_ip, src_port, dst_port, proto):
    """The 296-bit IPv6 flow key (``Build.flow_key`` "ipv6") from its fields, addresses as
    128-bit integers (``int(ipaddress.IPv6Address(...))``); each field is range-checked."""
    return pack(FLOW6_LAYOUT, dict(src_ip=src_ip, dst_ip=dst_ip, src_port=src_port,
                                   dst_port=dst_port, proto=proto))


def unpack_flow6(flow):
    """The fields of a 296-bit IPv6 flow key, as :func:`pack_flow6` takes them."""
    return tuple(unpack(FLOW6_LAYOUT, flow).values())


def flow_bits(build):
    """The bits of ``build``'s flow key (``Build.flow_key``)."""
    return FLOW_KEY_BITS[build.flow_key]


def toeplitz(key: bytes, data: int, nbits: int) -> int:
    """Reference bit-serial Toeplitz hash of the ``nbits``-bit integer ``data`` (slow, clear)."""
    keyint = int.from_bytes(key, "big")
    keybits = len(key) * 8
    if keybits < nbits + HASH_BITS - 1:
        raise ValueError(f"hash_key: {keybits} bits is too short for {nbits} input bits")
    result = 0
    for i in range(nbits):
        if (data >> (nbits - 1 - i)) & 1:
            result ^= (keyint >> (keybits - HASH_BITS - i)) & _MASK32
    return result


class ToeplitzHash:
    """Fast table-driven form of :func:`toeplitz` for the flow keys, with a per-flow cache.

    Parameters
    ----------
    key : int or bytes
        The ``hash_key`` register's value, or its ``HASH_KEY_BYTES[flow_key]`` bytes.
    flow_key : str
        One of ``FLOW_KEYS``: the input is ``FLOW_KEY_BITS[flow_key]`` bits."""

    def __init__(self, key, flow_key="ipv4"):
        self.nbits = nbits = FLOW_KEY_BITS[flow_key]
        if isinstance(key, int):
            key = key.to_bytes(HASH_KEY_BYTES[flow_key], "big")
        self.key = bytes(key)
        toeplitz(self.key, 0, nbits)                     # checks the key's length
        keyint, top = int.from_bytes(self.key, "big"), 8 * len(self.key) - HASH_BITS
        nbytes = nbits // 8
        self._tables = []
        for j in range(nbytes):
            # entry b: the XOR of the windows of b's set bits (linear), one bit at a time
            windows = [(keyint >> (top - (8 * j + 7 - k))) & _MASK32 for k in range(8)]
            table = [0] * 256
            for b in range(1, 256):
                low = (b & -b).bit_length() - 1
                table[b] = table[b & (b - 1)] ^ windows[low]
            self._tables.append(table)
        self._cache = {}

    def __call__(self, flow):
        h = self._cache.get(flow)
        if h is None:
            h = self.compute(flow)
            if len(self._cache) > 1 << 20:
                self._cache.clear()
            self._cache[flow] = h
        return h

    def compute(self, flow):
        """The hash without the cache (for flows seen once)."""
        h = 0
        shift = self.nbits - 8
        for table in self._tables:
            h ^= table[(flow >> shift) & 0xFF]
            shift -= 8
        return h


def reduce_index(h, v_max):
    """Map a 32-bit hash (or random number) to ``[0, v_max)`` by multiply-shift."""
    return (h * v_max) >> HASH_BITS


def rss_input(flow):
    """The flow key (IPv4 or IPv6: the ports and the protocol are the same low 40 bits of
    either) with the bits Microsoft RSS leaves out zeroed: the protocol always, the ports
    unless the protocol is TCP or UDP (``RSS_PROTOCOLS``). Its Toeplitz hash is the RSS hash:
    bits that are zero add nothing, and the bits kept are the first 96 (4-tuple) or 64
    (2-tuple) bits of the IPv4 key, 288 or 256 of the IPv6 key, in RSS order."""
    if flow & 0xFF in RSS_PROTOCOLS:
        return flow & ~0xFF
    return flow & ~((1 << 40) - 1)


# S-box of a byte (two nibbles), for the model's speed
_SBOX8 = tuple(MIX_SBOX[b & 15] | (MIX_SBOX[b >> 4] << 4) for b in range(256))


def _rotr(x, r):
    return ((x >> r) | (x << (HASH_BITS - r))) & _MASK32


def mix(h, key):
    """The keyed non-linear stage: a 32-bit bijection of the hash ``h`` under the 96-bit
    ``key`` (``k0 = key[95:64]``, ``k1 = key[63:32]``, ``k2 = key[31:0]``).

    ``x = h ^ k0``, then three rounds of an S-box layer (``MIX_SBOX`` on each nibble) and a
    linear layer ``L(y) = y ^ rotr(y, 9) ^ rotr(y, 22)``, with ``k1`` and ``k2`` XORed in after
    the first two rounds. In hardware each round is two LUT levels (the S-box, then the
    linear layer and key: 4 inputs per bit) with no carry chain."""
    a, b = MIX_ROTATIONS
    x = h ^ (key >> 64) & _MASK32
    round_keys = ((key >> 32) & _MASK32, key & _MASK32, 0)
    for k in round_keys[:_MIX_ROUNDS]:
        x = (_SBOX8[x & 255] | _SBOX8[(x >> 8) & 255] << 8 | _SBOX8[(x >> 16) & 255] << 16
             | _SBOX8[x >> 24] << 24)
        x = x ^ _rotr(x, a) ^ _rotr(x, b) ^ k
    return x


class FlowHash:
    """The hash a build computes for a flow (``Build.hash_input``, ``Build.hash_mix``): the
    model of ``fpq_hdl.flow_hash.FlowHash``'s ``hash`` output, cached per flow.

    Parameters
    ----------
    build : fpq.Build
    hash_key : int or bytes
        The ``hash_key`` register (Toeplitz key of ``Build.flow_key``'s ``HASH_KEY_BYTES``;
        unused for ``"descriptor"``).
    mix_key : int or bytes
        The 96-bit ``hash_mix_key`` register (used when ``build.hash_mix``)."""

    def __init__(self, build, hash_key, mix_key=None):
        self.hash_input = build.hash_input
        self.mixed = build.hash_mix
        if isinstance(mix_key, (bytes, bytearray)):
            mix_key = int.from_bytes(mix_key, "big")
        if self.mixed and not (isinstance(mix_key, int) and 0 <= mix_key < 1 << MIX_KEY_BITS):
            raise ValueError(f"hash_mix_key: {mix_key!r} must be a {MIX_KEY_BITS}-bit key "
                             f"(this build mixes the hash, Build.hash_mix)")
        self.mix_key = mix_key
        self.toeplitz = ToeplitzHash(hash_key, build.flow_key)
        self._cache = {}

    def __call__(self, flow):
        h = self._cache.get(flow)
        if h is None:
            if self.hash_input == "descriptor":
                if not 0 <= flow <= _MASK32:
                    raise ValueError(f"flow: {flow:#x} is out of range [0, {_MASK32:#x}]: with "
                                     f"Build.hash_input 'descriptor' the descriptor carries a "
                                     f"32-bit hash in its low bits, the rest zero")
                h = flow
            elif self.hash_input == "rss":
                h = self.toeplitz(rss_input(flow))
            else:
                h = self.toeplitz(flow)
            if self.mixed:
                h = mix(h, self.mix_key)
            if len(self._cache) > 1 << 20:
                self._cache.clear()
            self._cache[flow] = h
        return h

    @classmethod
    def of(cls, config):
        """The hash of ``config`` (an ``fpq.Config``): its build and key registers."""
        regs = config.registers()
        return cls(config.build, regs["hash_key"], regs.get("hash_mix_key"))
