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
    An all-zero seed (the generator's fixed point; the register map refuses it, so only a
    raw port can present one) becomes ``w = 1``, as in the model, from the clock after its
    load on: the number drawn in the load clock itself is 0 (the model's is that of ``w =
    1``), and the state after a step in that clock is the model's. The zero test of the
    128 seed bits is registered, so it is not in front of the state registers. Reset state:
    x = y = z = 0, w = 1.

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
        # An all-zero seed loaded in the last clock: the model's state then has w = 1, and
        # after a step in the load clock z = 1 too. The state registers took the seed as it
        # was; these bits are ORed in from this clock on (and kept by the registers).
        zero_w, zero_z = Signal(), Signal()
        seed_zero = self.seed == 0
        m.d.sync += [zero_w.eq(self.load & seed_zero),
                     zero_z.eq(self.load & self.step & seed_zero)]
        # the state this clock draws from: the registers, or the seed being loaded
        cx, cy, cz, cw = (Signal(32, name=f"cur_{n}") for n in "xyzw")
        m.d.comb += [cx.eq(Mux(self.load, sx, x)), cy.eq(Mux(self.load, sy, y)),
                     cz.eq(Mux(self.load, sz, z | zero_z)), cw.eq(Mux(self.load, sw, w | zero_w))]
        w_next = _xorshift_out(cx, cw)
        m.d.comb += self.value.eq(w_next)
        with m.If(self.step):
            m.d.sync += [x.eq(cy), y.eq(cz), z.eq(cw), w.eq(w_next)]
        with m.Else():
            m.d.sync += [x.eq(cx), y.eq(cy), z.eq(cz), w.eq(cw)]
        return m
