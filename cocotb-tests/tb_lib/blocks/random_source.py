"""``fpq_hdl.random_source.RandomSource`` against ``fpq.random_source.XorShift128``
(imported): per clock a seed, ``load`` and ``step``; the number the block offers in every
clock is the model's next number: ``next()`` when it steps, a copy's when it does not (a
load makes its clock's number the seed's first one, and a step in that clock consumes it).
An all-zero seed (which the register map refuses) loads ``w = 1`` as the model's, with the
documented exception of the number in its own clock, which is 0.

Script items: ``("clocks", [(seed, load, step), ...])``, from the reset state (x = y = z = 0,
w = 1). Plan option ``record``: keep the model's number of every clock in ``rows``."""

import copy
import random

from fpq.random_source import XorShift128

from ..bench import Bench

__all__ = ["RandomSourceBench", "OUTPUTS", "random_clocks"]

OUTPUTS = ("value",)


class RandomSourceBench(Bench):
    INPUTS = ("seed", "load", "step")
    PREFIX = "random source: "

    async def do_clocks(self, clocks):
        model = XorShift128(1 << 96)             # reset state: x = y = z = 0, w = 1
        for k, (seed, load, step) in enumerate(clocks):
            self.set("seed", seed)
            self.set("load", int(load))
            self.set("step", int(step))
            if load:
                model.load(seed)
                self.hit("load with a step" if step else "load without a step")
            want = model.next() if step else copy.deepcopy(model).next()
            want = 0 if load and seed == 0 else want
            self.expect(0, f"clock {k} (step {step}, load {load})", value=want)
            self.record(want)
            await self.tick()


def random_clocks(n, seed):
    """The components bench's clocks: steps in 60 % of them, loads in 2 % (an all-zero seed
    in a fifth of those), with and without a step."""
    rnd = random.Random(seed)
    out, now = [], 0
    for _ in range(n):
        load = rnd.random() < 0.02
        step = rnd.random() < 0.6
        if load:
            now = 0 if rnd.random() < 0.2 else rnd.getrandbits(128)
        out.append((now, load, step))
    return out
