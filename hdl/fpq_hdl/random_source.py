"""Random source: xorshift128, the same sequence as ``fpq.random_source.XorShift128``."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpq.formats import RAND_BITS

__all__ = ["RandomSource"]


def _xorshift_out(x, w):
    """The number one step of the recurrence returns, from the state words ``x`` and ``w``."""
    t = (x ^ (x << 11))[:32]
    return w ^ (w >> 19) ^ t ^ (t >> 8)


class RandomSource(wiring.Component):
    """Marsaglia's xorshift128: 128 bits of state, one 32-bit number per clock.

    ``value`` is combinational: it is the number the golden model's ``next()`` returns now.
    Asserting ``step`` consumes it (the state advances at the clock edge). ``load`` makes
    ``seed`` (x in bits 31..0, w in bits 127..96) the state from this clock on: ``value`` in
    that clock is already the seed's first number, and a ``step`` in the same clock consumes
    it. So a configuration that changes the seed in clock L governs every number drawn from L
    on, whatever the drawing path's timing (the golden model's ``configure(config, ts=L)``).
    An all-zero seed loads ``w = 1``, as the model does; but a number drawn in the very
    clock of loading an all-zero seed is 0 (the model's is that of ``w = 1``): the register
    map refuses an all-zero state, so only a raw port can present one. Reset state: x = y =
    z = 0, w = 1.

    Latency: 0 (``value`` is combinational); throughput: one number per clock. The logic is
    a few levels of XOR and a select, no carry chain, so it runs at any clock rate.

    Attributes
    ----------
    step : In(1)
    load : In(1)
    seed : In(128)
    value : Out(32)
    """

    def __init__(self):
        super().__init__({"step": In(1), "load": In(1), "seed": In(4 * RAND_BITS),
                          "value": Out(RAND_BITS)})

    def elaborate(self, platform):
        m = Module()
        x, y, z = (Signal(32, name=n) for n in "xyz")
        w = Signal(32, init=1)
        sx, sy, sz, sw = (self.seed[32 * i:32 * i + 32] for i in range(4))
        # the state this clock draws from: the registers, or the seed being loaded
        cx, cy, cz, cw = (Signal(32, name=f"cur_{n}") for n in "xyzw")
        m.d.comb += [cx.eq(Mux(self.load, sx, x)), cy.eq(Mux(self.load, sy, y)),
                     cz.eq(Mux(self.load, sz, z)), cw.eq(Mux(self.load, sw, w))]
        w_next = _xorshift_out(cx, cw)
        m.d.comb += self.value.eq(w_next)
        with m.If(self.step):
            m.d.sync += [x.eq(cy), y.eq(cz), z.eq(cw), w.eq(w_next)]
        with m.Elif(self.load):
            # an all-zero seed (the generator's fixed point) loads w = 1, as the model does;
            # the check stays off the drawing path (see the class docstring)
            m.d.sync += [x.eq(sx), y.eq(sy), z.eq(sz),
                         w.eq(Mux(self.seed == 0, 1, sw))]
        return m
