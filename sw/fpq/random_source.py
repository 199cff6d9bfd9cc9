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

#: Numbers generated ahead per refill of the model's buffer (a speed measure only: the sequence
#: is the same as one ``step`` at a time).
BLOCK = 1024

_M = 0xFFFFFFFF


class XorShift128:
    """``next()`` returns the next output. Outputs are generated ``BLOCK`` at a time into a
    buffer (Python is faster in a tight loop); ``step()`` is the one-at-a-time reference."""
    __slots__ = ("x", "y", "z", "w", "_buf", "_pos")

    def __init__(self, state):
        """``state``: the 128-bit register value, ``x`` in bits 31..0, ``w`` in bits 127..96."""
        self.load(state)

    def load(self, state):
        self._buf = []
        self._pos = 0
        self.x = state & _M
        self.y = (state >> 32) & _M
        self.z = (state >> 64) & _M
        self.w = (state >> 96) & _M
        if not (self.x | self.y | self.z | self.w):
            self.w = 1

    def step(self):
        """One step of the recurrence; the reference form of what ``next`` returns."""
        x = self.x
        t = (x ^ (x << 11)) & _M
        self.x = self.y
        self.y = self.z
        self.z = w = self.w
        w = w ^ (w >> 19) ^ t ^ (t >> 8)
        self.w = w
        return w

    def _refill(self):
        x, y, z, w = self.x, self.y, self.z, self.w
        out = []
        append = out.append
        for _ in range(BLOCK):
            t = (x ^ (x << 11)) & _M
            x, y, z = y, z, w
            w = w ^ (w >> 19) ^ t ^ (t >> 8)
            append(w)
        self.x, self.y, self.z, self.w = x, y, z, w
        self._buf = out
        self._pos = 0

    def next(self):
        pos = self._pos
        if pos == len(self._buf):
            self._refill()
            pos = 0
        self._pos = pos + 1
        return self._buf[pos]
