"""``fpq_hdl.drop_probability.DropProbability`` against ``fpq.drop_probability.probability``
(imported): every mode and RED region, r(N) words over the whole RATE range; ``n_raw`` with
``n_over`` (``n_raw > n_cap``, as the flow counter forms it from its registers) in one
clock, ``avg`` ``AVG_DELAY`` clocks later; ``n = min(n_raw, n_cap)`` is expected
``N_LATENCY`` clocks after ``n_raw``, ``prob`` and ``prob_zero`` ``LATENCY`` clocks after it,
and ``prob_zero`` is ``prob == 0`` in every clock.

Script items: ``("case", Config, table, [(n_raw, avg), ...])``: reset, the configuration,
the table written into the inactive bank and made active, then one input per clock. Plan
option ``record``: keep the model's ``p`` of every input in ``rows``."""

import random

from fpq.drop_probability import probability
from fpq.formats import QAVG, RATE, FLOW_COUNT_BITS

from fpq_hdl.drop_probability import DropProbability

from ..bench import Bench
from .decision import pack_config

__all__ = ["DropProbabilityBench", "OUTPUTS", "table", "inputs"]

OUTPUTS = ("n", "prob", "prob_zero")


class DropProbabilityBench(Bench):
    INPUTS = ("n_raw", "n_over", "avg", "table_bank", "table_we", "table_addr", "table_data")
    PREFIX = "drop probability: "

    async def do_case(self, config, words, inputs):
        await self.reset()
        regs = config.registers()
        self.set("config", pack_config(config.build, config))
        self.set("table_we", 1)
        for i, w in enumerate(words):
            self.set("table_addr", i)
            self.set("table_data", w)
            await self.tick()
        self.set("table_we", 0)
        self.set("table_bank", 1)          # the writes went to the inactive bank 1
        lat, delay, n_lat = (DropProbability.LATENCY, DropProbability.AVG_DELAY,
                             DropProbability.N_LATENCY)
        for k in range(len(inputs) + lat + 1):
            if k < len(inputs):
                n_raw = inputs[k][0]
                self.set("n_raw", n_raw)
                self.set("n_over", int(n_raw > regs["n_cap"]))
                n = min(n_raw, regs["n_cap"])
                p = probability(regs["mode"], inputs[k][1], words[n], regs)
                where = f"{config.values['mode']} input {k} (n_raw {n_raw}, avg {inputs[k][1]})"
                self.expect(n_lat, where, False, n=n)
                self.expect(lat, where, prob=p, prob_zero=int(p == 0))
                self.hit(f"{config.values['mode']} " + ("p = 0" if p == 0 else "p > 0"))
                self.record(p)
            if 0 <= k - delay < len(inputs):
                self.set("avg", inputs[k - delay][1])
            # the flag beside the probability, in every clock
            self.expect(0, f"clock {self.cycle}", False,
                        prob_zero=lambda: int(self.get("prob") == 0))
            await self.tick()


# ---- stimulus --------------------------------------------------------------------------------
def table(rnd, build, head):
    """A random r(N) table over the whole RATE range, its first words ``head``."""
    words = [RATE.pack(rnd.getrandbits(RATE.mant_bits), rnd.randrange(64))
             for _ in range(build.table_depth)]
    words[:len(head)] = head
    return words


def inputs(rnd, regs, build, n, near_cap=False):
    """``n`` ``(n_raw, avg)``: counts beyond the table and within it (and, with
    ``near_cap``, around the cap, where ``n_over`` changes); averages at the RED thresholds,
    below four times the upper one, and over the whole range."""
    th = [regs["red_min_th"], regs["red_max_th"], 2 * regs["red_max_th"]]
    out = []
    for _ in range(n):
        r = rnd.random()
        if r < 0.2:
            n_raw = rnd.randrange(1 << FLOW_COUNT_BITS)
        elif near_cap and r < 0.3:
            n_raw = max(0, regs["n_cap"] + rnd.randint(-2, 2))
        else:
            n_raw = rnd.randrange(build.table_depth)
        r = rnd.random()
        if r < 0.3:
            avg = max(0, min(QAVG.max_raw, rnd.choice(th) + rnd.randint(-3, 3)))
        elif r < 0.6:
            avg = rnd.randrange(4 * regs["red_max_th"] + 1)
        else:
            avg = rnd.randrange(QAVG.max_raw + 1)
        out.append((n_raw, avg))
    return out


def cases(build, configs, n, seed):
    """The components bench's script: per configuration a table (its first words 0, the
    largest and smallest rates, 1) and ``n`` inputs."""
    rnd = random.Random(seed)
    script = []
    for config in configs:
        words = table(rnd, build, [0, RATE.pack(0xFFFF, 0), RATE.pack(0x8000, 63),
                                   RATE.pack(1, 0)])
        script.append(("case", config, words, inputs(rnd, config.registers(), build, n)))
    return script
