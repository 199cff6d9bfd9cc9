"""DropProbability against fpq.drop_probability.probability, every mode and region, with
random r(N) words over the whole RATE range (saturation included); ``n`` = min(N, n_cap)
``N_LATENCY`` clocks after ``n_raw`` (with ``n_over``, as the flow counter gives them), the
probability ``LATENCY`` clocks after, with the average ``AVG_DELAY`` clocks after ``n_raw``.
The bench is ``tb_lib.blocks.drop_probability`` (cocotb-tests/components/ runs it on
Verilator)."""
import random

import pytest

from fpq import Build, Config
from fpq.formats import RATE
from fpq_hdl.drop_probability import DropProbability

from tb_lib.blocks.drop_probability import DropProbabilityBench, OUTPUTS, table, inputs
from tb_lib.sim_amaranth import run_bench

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
    words = table(rnd, BUILD, [0, RATE.pack(0xFFFF, 0), RATE.pack(0x8000, 63)]
                  + config.rate_table()[3:8])
    # n_raw near the cap too: n_over changes there
    plan = {"script": [("case", config, words, inputs(rnd, regs, BUILD, 1500, near_cap=True))],
            "record": True}
    bench, _ = run_bench(DropProbability(BUILD, optimise=optimise),
                         lambda sim: DropProbabilityBench(sim, plan), OUTPUTS)
    want_p = bench.rows
    if case != "droptail":
        assert len(set(want_p)) > 100 and (1 << 32) in want_p
