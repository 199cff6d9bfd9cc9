"""Random source: xorshift128, the same sequence as ``fpq.random_source.XorShift128``."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpq.formats import RAND_BITS

__all__ = ["RandomSource"]


class RandomSource(wiring.Component):
    """Marsaglia's xorshift128: 128 bits of state, one 32-bit number per clock.

    ``value`` is combinational from the state: it is the number the golden model's ``next()``
    returns now. Asserting ``step`` consumes it (the state advances at the clock edge).
    ``load`` replaces the state by ``seed`` (x in bits 31..0, w in bits 127..96); an all-zero
    seed loads ``w = 1``, as the model does. Reset state: x = y = z = 0, w = 1.

    Latency: 0 (``value`` is combinational); throughput: one number per clock. The logic is
    three levels of XOR, no carry chain, so it runs at any clock rate.

    Attributes
    ----------
    step : In(1)
    load : In(1)
        Has priority over ``step``.
    seed : In(128)
    value : Out(32)
    value_next : Out(32)
        The number after ``value`` (what ``value`` will be after one ``step``): lets a user
        step the generator a clock late, from a registered strobe, and still use the right
        number in the clock in between.
    """

    def __init__(self):
        super().__init__({"step": In(1), "load": In(1), "seed": In(4 * RAND_BITS),
                          "value": Out(RAND_BITS), "value_next": Out(RAND_BITS)})

    def elaborate(self, platform):
        m = Module()
        x, y, z = (Signal(32, name=n) for n in "xyz")
        w = Signal(32, init=1)
        t = (x ^ (x << 11))[:32]
        w_next = w ^ (w >> 19) ^ t ^ (t >> 8)
        m.d.comb += self.value.eq(w_next)
        # the number after this one (the value once ``step`` has been asserted for a clock)
        t1 = (y ^ (y << 11))[:32]
        m.d.comb += self.value_next.eq(w_next ^ (w_next >> 19) ^ t1 ^ (t1 >> 8))
        with m.If(self.load):
            m.d.sync += [x.eq(self.seed[0:32]), y.eq(self.seed[32:64]),
                         z.eq(self.seed[64:96]),
                         w.eq(Mux(self.seed == 0, 1, self.seed[96:128]))]
        with m.Elif(self.step):
            m.d.sync += [x.eq(y), y.eq(z), z.eq(w), w.eq(w_next)]
        return m
