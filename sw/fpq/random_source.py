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
#: is the same as one ``step`` at a time). A multiple of 4 (the refill loop is unrolled by 4).
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
        # four steps per turn with the roles of the variables rotating (the oldest word is
        # overwritten by the newest), so no tuple shuffles; after four steps x, y, z, w are
        # oldest to newest again
        x, y, z, w = self.x, self.y, self.z, self.w
        out = []
        append = out.append
        for _ in range(BLOCK // 4):
            t = (x ^ (x << 11)) & _M
            x = w ^ (w >> 19) ^ t ^ (t >> 8)
            append(x)
            t = (y ^ (y << 11)) & _M
            y = x ^ (x >> 19) ^ t ^ (t >> 8)
            append(y)
            t = (z ^ (z << 11)) & _M
            z = y ^ (y >> 19) ^ t ^ (t >> 8)
            append(z)
            t = (w ^ (w << 11)) & _M
            w = z ^ (z >> 19) ^ t ^ (t >> 8)
            append(w)
        self.x, self.y, self.z, self.w = x, y, z, w
        self._buf = out
        self._pos = 0

    def take(self, k):
        """The next ``k`` outputs as a list (the same numbers as ``k`` calls of ``next``)."""
        pos = self._pos
        end = pos + k
        buf = self._buf
        if end <= len(buf):
            self._pos = end
            return buf[pos:end]
        out = buf[pos:]
        while len(out) < k:
            self._refill()
            need = k - len(out)
            out += self._buf[:need]
            self._pos = min(need, BLOCK)
        return out

    def next(self):
        pos = self._pos
        if pos == len(self._buf):
            self._refill()
            pos = 0
        self._pos = pos + 1
        return self._buf[pos]
