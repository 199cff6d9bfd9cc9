"""The random source shared bit for bit by the RTL and the golden model: xorshift128.

Marsaglia's xorshift128 (2003), 128 bits of state ``(x, y, z, w)``, one 32-bit output per step::

    t = x ^ (x << 11);  x, y, z = y, z, w;  w = w ^ (w >> 19) ^ t ^ (t >> 8);  return w

Period 2**128 - 1. In hardware it is four 32-bit registers and a few XORs: one number per clock
at any clock rate, no carry chain. It is not cryptographic and need not be: an attacker who
cannot see the verdicts' internals gains nothing from predicting it that the hash key does not
already protect. Seeds are expanded to the state by :func:`expand_seed` (splitmix64);
an all-zero state (the generator's fixed point) is replaced by ``w = 1``, in hardware too.
"""

__all__ = ["XorShift128", "advance_state", "expand_seed"]

#: Numbers generated ahead per refill of the model's buffer (a speed measure only: the sequence
#: is the same as one ``step`` at a time). A multiple of 4 (the refill loop is unrolled by 4).
BLOCK = 1024

_M = 0xFFFFFFFF
#: Columns of the state transition T^(2^i) as 128-bit integers (state = x | y << 32 |
#: z << 64 | w << 96): the generator is linear over GF(2), so a jump of k steps is the product
#: of the powers for the bits of k. Filled on first use.
_POWERS = []


def _step_state(s):
    x, y, z, w = s & _M, (s >> 32) & _M, (s >> 64) & _M, s >> 96
    t = (x ^ (x << 11)) & _M
    w2 = w ^ (w >> 19) ^ t ^ (t >> 8)
    return y | z << 32 | w << 64 | w2 << 96


def _apply(columns, s):
    out = 0
    i = 0
    while s:
        if s & 1:
            out ^= columns[i]
        s >>= 1
        i += 1
    return out


def advance_state(state, k):
    """The 128-bit state after ``k`` steps from ``state`` (jump-ahead, ``O(log k)`` matrix
    products): what ``k`` calls of ``step`` leave."""
    if not _POWERS:
        _POWERS.append([_step_state(1 << i) for i in range(128)])
    i = 0
    while k:
        while i >= len(_POWERS):
            last = _POWERS[-1]
            _POWERS.append([_apply(last, c) for c in last])
        if k & 1:
            state = _apply(_POWERS[i], state)
        k >>= 1
        i += 1
    return state


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

    def skip(self, k):
        """Skip ``k`` outputs (the same state as ``k`` calls of ``next``), in ``O(log k)``
        time for large ``k``: a long idle period's clears of an empty vector cost nothing."""
        left = len(self._buf) - self._pos
        if k <= left:
            self._pos += k
            return
        k -= left
        if k <= BLOCK:
            self._pos = len(self._buf)
            self.take(k)
            return
        state = advance_state(self.x | self.y << 32 | self.z << 64 | self.w << 96, k)
        self._buf = []
        self._pos = 0
        self.x, self.y, self.z, self.w = (state & _M, (state >> 32) & _M, (state >> 64) & _M,
                                          state >> 96)

    def next(self):
        pos = self._pos
        if pos == len(self._buf):
            self._refill()
            pos = 0
        self._pos = pos + 1
        return self._buf[pos]


def expand_seed(seed):
    """128-bit xorshift128 state (four 32-bit words) from a 64-bit seed, with splitmix64."""
    words = []
    x = seed & 0xFFFFFFFFFFFFFFFF
    for _ in range(2):
        x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        z ^= z >> 31
        words += [z & 0xFFFFFFFF, z >> 32]
    if not any(words):
        words[3] = 1
    return tuple(words)
