"""Per-component benches on Verilator (one build for the three blocks, see
``components_top``), parametrised over two builds."""

import pytest

from fpq import Build
from fpq.fields import RSS_KEY

from tb_lib import runner
from tb_lib.verilog import generate, BUILD_ROOT

from components.components_top import Components

BUILDS = {"v256-t64": Build(vec_bits=256, table_depth=64),
          "v65536-t16": Build(vec_bits=65536, table_depth=16)}
PROB_CASES = [dict(mode="fpq", n_cap=40), dict(mode="fpq", n_cap=1),
              dict(mode="red", red_min_th=5, red_max_th=45, red_max_p=0.02),
              dict(mode="red", red_min_th=0.5, red_max_th=3000.25, red_max_p=0.3,
                   red_gentle=True),
              dict(mode="droptail")]


@pytest.fixture(scope="module", params=BUILDS)
def components(request):
    build = BUILDS[request.param]
    folder, verilog = generate(Components(build), "fpq_components",
                               f"components-{request.param}")
    return request.param, build, folder, verilog


@pytest.mark.parametrize("bench", ["flow_hash", "random_source", "drop_probability"])
def test_component(components, bench):
    name, build, folder, verilog = components
    v_maxes = [1, build.vec_bits, max(1, build.vec_bits - 1), min(5000, build.vec_bits)]
    keys = [RSS_KEY, bytes(20), bytes([0xFF] * 20)]
    plan = {"build": build, "seed": 5, "n": 1500,
            "hash_cases": [(k, v) for k in keys for v in v_maxes][:8],
            "prob_cases": [c for c in PROB_CASES
                           if c.get("n_cap", 0) < build.table_depth]}
    res = runner.run(folder, verilog, "fpq_components", "components.bench_components", plan,
                     BUILD_ROOT / "runs" / f"components-{name}-{bench}", testcase=bench)
    assert res["checked"][bench] > 1000
