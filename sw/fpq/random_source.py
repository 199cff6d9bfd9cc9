"""The random source shared bit for bit by the RTL and the golden model: xorshift128.

Marsaglia's xorshift128 (2003), 128 bits of state ``(x, y, z, w)``, one 32-bit output per step::

    t = x ^ (x << 11);  x, y, z = y, z, w;  w = w ^ (w >> 19) ^ t ^ (t >> 8);  return w

Period 2**128 - 1. In hardware it is four 32-bit registers and a few XORs: one number per clock
at any clock rate, no carry chain. It is not cryptographic and need not be: an attacker who
cannot see the verdicts' internals gains nothing from predicting it that the hash key does not
already protect. Seeds are expanded to the state by ``fpq.config.expand_seed`` (splitmix64);
an all-zero state (the generator's fixed point) is replaced by ``w = 1``, in hardware too.
"""

__all__ = ["XorShift128"]

_M = 0xFFFFFFFF


class XorShift128:
    __slots__ = ("x", "y", "z", "w")

    def __init__(self, state):
        """``state``: the 128-bit register value, ``x`` in bits 31..0, ``w`` in bits 127..96."""
        self.load(state)

    def load(self, state):
        self.x = state & _M
        self.y = (state >> 32) & _M
        self.z = (state >> 64) & _M
        self.w = (state >> 96) & _M
        if not (self.x | self.y | self.z | self.w):
            self.w = 1

    @property
    def state(self):
        return self.x | (self.y << 32) | (self.z << 64) | (self.w << 96)

    def next(self):
        x = self.x
        t = (x ^ (x << 11)) & _M
        self.x = self.y
        self.y = self.z
        self.z = w = self.w
        w = w ^ (w >> 19) ^ t ^ (t >> 8)
        self.w = w
        return w
