"""Keyed Toeplitz hash of the IPv4 5-tuple, and its reduction to a vector index.

The hash is the Microsoft RSS Toeplitz function: for every input bit ``i`` that is set
(``i = 0`` is the most significant bit of the input), XOR in the 32-bit window of the key that
starts at key bit ``i`` (key bit 0 is the MSB of key byte 0). The 104-bit input is
``src_ip(32) | dst_ip(32) | src_port(16) | dst_port(16) | proto(8)``, so it uses the first
104 + 31 = 135 key bits. The index in ``[0, v_max)`` is ``(hash * v_max) >> 32``.

Why Toeplitz: it is the function NICs already use for RSS (so users can reuse keys and test
vectors), the key is only 136 bits of registers, and in hardware every output bit is an AND-XOR
tree with no carry chain, so it pipelines to any clock rate. It is linear: an attacker who
knows the key can craft collisions, hence the key is a runtime secret (docs/RELIABILITY.md).
IPv6 (296-bit input) fits the same structure with a 40-byte key.
"""

from .formats import FLOW_BITS, HASH_BITS

__all__ = ["pack_flow", "unpack_flow", "toeplitz", "ToeplitzHash", "reduce_index"]

_MASK32 = (1 << HASH_BITS) - 1


def pack_flow(src_ip, dst_ip, src_port, dst_port, proto):
    """The 104-bit flow key from its fields; each field is range-checked."""
    for name, value, bits in (("src_ip", src_ip, 32), ("dst_ip", dst_ip, 32),
                              ("src_port", src_port, 16), ("dst_port", dst_port, 16),
                              ("proto", proto, 8)):
        if not isinstance(value, int) or not 0 <= value < (1 << bits):
            raise ValueError(f"{name}: {value!r} is out of range [0, {(1 << bits) - 1}]")
    return (src_ip << 72) | (dst_ip << 40) | (src_port << 24) | (dst_port << 8) | proto


def unpack_flow(flow):
    return (flow >> 72, (flow >> 40) & 0xFFFFFFFF, (flow >> 24) & 0xFFFF,
            (flow >> 8) & 0xFFFF, flow & 0xFF)


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
    """Fast table-driven form of :func:`toeplitz` for 104-bit flow keys, with a per-flow cache.

    ``key`` is the 160-bit register value (int) or 20 bytes.
    """

    def __init__(self, key):
        if isinstance(key, int):
            key = key.to_bytes(20, "big")
        self.key = bytes(key)
        nbytes = FLOW_BITS // 8
        self._tables = []
        for j in range(nbytes):
            table = []
            for b in range(256):
                table.append(toeplitz(self.key, b << (8 * (nbytes - 1 - j)), FLOW_BITS)
                             if b else 0)
            self._tables.append(table)
        self._cache = {}

    def __call__(self, flow):
        h = self._cache.get(flow)
        if h is None:
            h = 0
            shift = FLOW_BITS - 8
            for table in self._tables:
                h ^= table[(flow >> shift) & 0xFF]
                shift -= 8
            if len(self._cache) > 1 << 20:
                self._cache.clear()
            self._cache[flow] = h
        return h


def reduce_index(h, v_max):
    """Map a 32-bit hash (or random number) to ``[0, v_max)`` by multiply-shift."""
    return (h * v_max) >> HASH_BITS
