"""Per-component benches on Verilator (one build for the three blocks, see
``components_top``), parametrised over two builds: random flows and the all-zero and all-one
flows under the RSS key, the all-zero and the all-one key, v_max 1 / max / max - 1 / 5000;
seed loads with and without a step, all-zero seeds; every RED region, random RATE words incl.
the extremes, n above n_cap."""

import pytest

from fpq import Build, Config
from fpq.fields import RSS_KEY

from tb_lib import runner
from tb_lib.blocks import drop_probability, flow_hash, random_source
from tb_lib.verilog import generate, BUILD_ROOT

from components.components_top import Components

BUILDS = {"v256-t64": Build(vec_bits=256, table_depth=64),
          "v65536-t16": Build(vec_bits=65536, table_depth=16)}
PROB_CASES = [dict(mode="fpq", n_cap=40), dict(mode="fpq", n_cap=1),
              dict(mode="red", red_min_th=5, red_max_th=45, red_max_p=0.02),
              dict(mode="red", red_min_th=0.5, red_max_th=3000.25, red_max_p=0.3,
                   red_gentle=True),
              dict(mode="droptail")]
SEED, N = 5, 1500


@pytest.fixture(scope="module", params=BUILDS)
def components(request):
    build = BUILDS[request.param]
    folder, verilog = generate(Components(build), "fpq_components",
                               f"components-{request.param}")
    return request.param, build, folder, verilog


def script(bench, build):
    if bench == "flow_hash":
        v_maxes = [1, build.vec_bits, max(1, build.vec_bits - 1), min(5000, build.vec_bits)]
        keys = [RSS_KEY, bytes(20), bytes([0xFF] * 20)]
        return flow_hash.cases(build, [(k, v) for k in keys for v in v_maxes][:8], N, SEED)
    if bench == "random_source":
        return [("clocks", random_source.random_clocks(N, SEED + 1))]
    configs = [Config(build=build, **c) for c in PROB_CASES
               if c.get("n_cap", 0) < build.table_depth]
    return drop_probability.cases(build, configs, N, SEED + 2)


@pytest.mark.parametrize("bench", ["flow_hash", "random_source", "drop_probability"])
def test_component(components, bench):
    name, build, folder, verilog = components
    ports = {"flow_hash": "hash__", "random_source": "rng__", "drop_probability": "prob__"}
    plan = {"build": build, "ports": ports[bench], "script": script(bench, build)}
    res = runner.run(folder, verilog, "fpq_components", "components.bench_components", plan,
                     BUILD_ROOT / "runs" / f"components-{name}-{bench}", testcase=bench)
    assert res["inputs"] > 1000
    if bench == "random_source":
        loads = sum(n for b, n in res["coverage"].items() if b.startswith("random source: load"))
        assert loads > 10
