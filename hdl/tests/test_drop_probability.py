"""DropProbability against fpq.drop_probability.probability, every mode and region, with
random r(N) words over the whole RATE range (saturation included); ``n`` = min(N, n_cap)
``N_LATENCY`` clocks after ``n_raw`` (with ``n_over``, as the flow counter gives them), the
probability ``LATENCY`` clocks after, with the average ``AVG_DELAY`` clocks after ``n_raw``."""
import random

import pytest
from amaranth.sim import Simulator

from fpq import Build, Config
from fpq.bitfields import pack
from fpq.drop_probability import probability
from fpq.formats import QAVG, RATE, FLOW_COUNT_BITS
from fpq_hdl.drop_probability import DropProbability
from fpq_hdl.layouts import config_layout
from .hdl_harness import write_words

BUILD = Build(table_depth=64)
CASES = {
    "fpq": dict(mode="fpq", n_cap=40),
    "red": dict(mode="red", red_min_th=5, red_max_th=45, red_max_p=0.02),
    "red_gentle": dict(mode="red", red_min_th=0.5, red_max_th=3000.25, red_max_p=0.3,
                       red_gentle=True),
    "droptail": dict(mode="droptail"),
}


@pytest.mark.parametrize("optimise", ["speed", "area"])
@pytest.mark.parametrize("case", CASES)
def test_probability_matches_model(case, optimise):
    rnd = random.Random(case)
    config = Config(build=BUILD, **CASES[case])
    regs = config.registers()
    table = [RATE.pack(rnd.getrandbits(RATE.mant_bits), rnd.randrange(64))
             for _ in range(BUILD.table_depth)]
    table[:8] = [0, RATE.pack(0xFFFF, 0), RATE.pack(0x8000, 63)] + config.rate_table()[3:8]
    th = [regs["red_min_th"], regs["red_max_th"], 2 * regs["red_max_th"]]
    inputs = []
    for _ in range(1500):
        r = rnd.random()
        if r < 0.2:
            n = rnd.randrange(1 << FLOW_COUNT_BITS)
        elif r < 0.3:          # the cap's neighbourhood (n_over changes there)
            n = max(0, regs["n_cap"] + rnd.randint(-2, 2))
        else:
            n = rnd.randrange(BUILD.table_depth)
        r = rnd.random()
        if r < 0.3:
            avg = max(0, min(QAVG.max_raw, rnd.choice(th) + rnd.randint(-3, 3)))
        elif r < 0.6:
            avg = rnd.randrange(4 * regs["red_max_th"] + 1)
        else:
            avg = rnd.randrange(QAVG.max_raw + 1)
        inputs.append((n, avg))
    dut = DropProbability(BUILD, optimise=optimise)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    got_p, got_n = [], []

    async def bench(ctx):
        ctx.set(dut.config.as_value(), pack(config_layout(BUILD), regs))
        await write_words(ctx, (dut.table_we, dut.table_addr, dut.table_data), table, ctx.tick)
        ctx.set(dut.table_bank, 1)       # the writes went to the inactive bank 1
        for k in range(len(inputs) + DropProbability.LATENCY + 1):
            if k < len(inputs):
                # as the flow counter gives them: N and N > n_cap, from its registers
                ctx.set(dut.n_raw, inputs[k][0])
                ctx.set(dut.n_over, inputs[k][0] > regs["n_cap"])
            j = k - DropProbability.AVG_DELAY
            if 0 <= j < len(inputs):
                ctx.set(dut.avg, inputs[j][1])
            _, _, p, pz, n = await ctx.tick().sample(dut.prob, dut.prob_zero, dut.n)
            assert pz == (p == 0), (k, p, pz)        # the flag beside the probability
            if 0 <= k - DropProbability.N_LATENCY < len(inputs):
                got_n.append(n)
            if DropProbability.LATENCY <= k < len(inputs) + DropProbability.LATENCY:
                got_p.append(p)
    sim.add_testbench(bench)
    sim.run()
    want_n = [min(n, regs["n_cap"]) for n, _ in inputs]
    want_p = [probability(regs["mode"], avg, table[nc], regs)
              for nc, (_, avg) in zip(want_n, inputs)]
    assert got_n == want_n
    assert got_p == want_p
    if case != "droptail":
        assert len(set(want_p)) > 100 and (1 << 32) in want_p
