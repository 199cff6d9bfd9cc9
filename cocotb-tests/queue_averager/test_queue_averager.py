"""QueueAverager alone on Verilator against ``fpq.queue_averager.QueueAverager`` (bench:
``tb_lib.blocks.queue_averager``): samples at the minimum distance and far apart, every w_q
shift 0..16 (and 20, 31: the shift is exact to 31), changed between samples, a queue that walks,
jumps, sits at its maximum and empties, ``avg`` checked on every clock; resets with samples
in flight; the default build and one that fixes ``wq_shift`` (the port is then ignored).
Plus the faults this bench must catch."""

import pytest

from fpq import Build

from fpq_hdl.queue_averager import QueueAverager
from fpq_hdl.layouts import fixed_registers

from tb_lib.blocks.queue_averager import SHIFTS, script
from tb_lib.component_bench import component_runner
from tb_lib.faults import COMPONENT_FAULTS
from tb_lib.runner import BenchFailed

TOP = "fpq_queue_averager"
BENCH = "queue_averager.bench_queue_averager"

#: the default build, and one that fixes the average's registers (wq_shift 4 at this tau)
BUILDS = {"default": Build(),
          "fixed-wq": Build(fixed={"tick_hz": 1e6, "avg_tau_s": 1e-4})}
run = component_runner("queue-averager", QueueAverager, TOP, BENCH, BUILDS)


N = 1500


@pytest.mark.parametrize("build_name", BUILDS)
def test_queue_averager(request, build_name):
    res = run(request, build_name, script(N))
    cov = {k[len("queue averager: "):]: v for k, v in res["coverage"].items()}
    fixed = fixed_registers(BUILDS[build_name]).get("wq_shift")
    want = ["average rises", "average falls", "step rounds to 0 (the fixed point)",
            "q at its maximum", "samples MIN_SAMPLE_PERIOD clocks apart", "samples far apart",
            "reset mid-stream (samples in flight)"]
    if fixed is None:
        want += [f"w_q = 2^-{s}" for s in SHIFTS] + ["w_q rewritten between samples"]
    else:
        assert set(k for k in cov if k.startswith("w_q = ")) == {f"w_q = 2^-{fixed.value}"}
    missing = [b for b in want if not cov.get(b)]
    assert not missing, f"bins not hit: {missing}"
    assert res["resets"] == 2 and res["inputs"] > 2.5 * N * 4


@pytest.mark.long
@pytest.mark.parametrize("build_name", BUILDS)
def test_queue_averager_long(request, build_name):
    run(request, build_name, script(40 * N, seed=9), seed=9)


#: the faults this bench must catch
FAULTS = ["qa-never-falls", "qa-weight-early"]


@pytest.mark.parametrize("fault", FAULTS)
def test_fault_is_caught(request, fault):
    build = BUILDS["default"]
    comp = COMPONENT_FAULTS[fault][2](build)
    with pytest.raises(BenchFailed) as exc:
        run(request, "default", script(N), component=comp, expect_failure=True)
    assert "RTL avg" in str(exc.value)
