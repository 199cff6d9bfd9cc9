"""FlowCounter alone on Verilator against ``fpq.flow_counter.FlowCounter`` (bench:
``tb_lib.blocks.flow_counter``), over two builds (vector 256 with the smallest ``set_delay``
the block allows; vector 8192, the default, with the top's ``set_delay``, 1 +
``FlowHash.LATENCY``):
clears in every clock with one index streaming, two alternating, a tiny v_max (a clear and a
set of one bit in one slot), random patterns of clears and arrivals, and a run of rewrites
(v_max with its wipe, the clear seed with a clear in the reload's clock, wipe strobes alone
with clears during the wipe, reset with slots in flight). Plus the faults this bench must
catch."""

import pytest

from fpq import Build

from fpq_hdl.flow_counter import FlowCounter
from fpq_hdl.flow_hash import FlowHash

from tb_lib.blocks.flow_counter import mode_script, rewrite_script
from tb_lib.component_bench import run_component
from tb_lib.faults import COMPONENT_FAULTS
from tb_lib.runner import BenchFailed

TOP = "fpq_flow_counter"
BENCH = "flow_counter.bench_flow_counter"

#: name -> (build, set_delay): the smallest set_delay the block allows (4), and the top's
#: (the arrival's index comes out of FlowHash a clock after the accept)
BUILDS = {"v256-d4": (Build(vec_bits=256, table_depth=16), 4),
          "v8192-d6": (Build(vec_bits=8192, table_depth=16), 1 + FlowHash.LATENCY)}


N = 1500         # slots per phase of make test's runs


def run(request, build_name, script, seed=3, component=None, expect_failure=False):
    build, delay = BUILDS[build_name]
    plan = {"build": build, "set_delay": delay, "script": script, "seed": seed}
    comp = component if component is not None else FlowCounter(build, delay)
    return run_component(request, comp, TOP, BENCH, plan, f"flow-counter-{build_name}",
                         expect_failure=expect_failure)


def assert_covered(res, *bins):
    cov = res["coverage"]
    missing = [b for b in bins if not cov.get("flow counter: " + b)]
    assert not missing, f"bins not hit: {missing}; coverage {cov}"


HAZARDS = ["clear and set of the same index in one slot",
           *(f"{a} of the index {b} {d} clock(s) earlier{' (forwarding)' * (a + b == 'setset')}"
             for a in ("set", "clear") for b in ("set", "cleared") for d in (1, 2))]


@pytest.mark.parametrize("build_name", BUILDS)
def test_flow_counter_modes(request, build_name):
    build, delay = BUILDS[build_name]
    res = run(request, build_name, mode_script(build, delay, N))
    assert res["inputs"] > 4.5 * N
    assert_covered(res, *HAZARDS, "clear during a wipe (draws, clears nothing)",
                   "v_max rewritten (wipe)", "slots without an arrival")


@pytest.mark.parametrize("build_name", BUILDS)
def test_flow_counter_rewrites(request, build_name):
    build, delay = BUILDS[build_name]
    res = run(request, build_name, rewrite_script(build, delay, N // 2), seed=5)
    assert res["lost_to_reset"] > 0
    assert_covered(res, "clear generator reseeded",
                   "clear in the clock of a reseed (the new seed's first number)",
                   "v_max rewritten (wipe)", "wipe strobe",
                   "clear during a wipe (draws, clears nothing)",
                   "reset mid-stream (slots in flight)")


@pytest.mark.long
@pytest.mark.parametrize("build_name", BUILDS)
def test_flow_counter_long(request, build_name):
    build, delay = BUILDS[build_name]
    run(request, build_name, mode_script(build, delay, 40000, seed=11), seed=11)
    run(request, build_name, rewrite_script(build, delay, 10000, seed=12), seed=12)


FAULTS = ["fc-ram-write-late", "fc-same-slot-clear"]


@pytest.mark.parametrize("fault", FAULTS)
def test_fault_is_caught(request, fault):
    """The fault-injected FlowCounter must fail the very script that passes above."""
    build, delay = BUILDS["v256-d4"]
    comp = COMPONENT_FAULTS[fault][2](build, delay)
    with pytest.raises(BenchFailed) as exc:
        run(request, "v256-d4", mode_script(build, delay, N), component=comp,
            expect_failure=True)
    assert "n_raw" in str(exc.value)
