"""QueueAverager alone on Verilator against ``fpq.queue_averager.QueueAverager`` (bench:
``bench_queue_averager``): samples at the minimum distance and far apart, every w_q shift
0..16 (and 20, 31: the shift is exact to 31), changed between samples, a queue that walks,
jumps, sits at its maximum and empties, ``avg`` checked on every clock; resets with samples
in flight; the default build and one that fixes ``wq_shift`` (the port is then ignored).
Plus the faults this bench must catch."""

import random

import pytest

from fpq import Build
from fpq.formats import QPKTS_BITS, MIN_SAMPLE_PERIOD

from fpq_hdl.queue_averager import QueueAverager
from fpq_hdl.layouts import fixed_registers

from tb_lib.component_bench import component_runner
from tb_lib.faults import COMPONENT_FAULTS
from tb_lib.runner import BenchFailed

TOP = "fpq_queue_averager"
BENCH = "queue_averager.bench_queue_averager"
Q_MAX = (1 << QPKTS_BITS) - 1

#: the default build, and one that fixes the average's registers (wq_shift 4 at this tau)
BUILDS = {"default": Build(),
          "fixed-wq": Build(fixed={"tick_hz": 1e6, "avg_tau_s": 1e-4})}
SHIFTS = list(range(17)) + [20, 31]


def samples(rnd, n, shifts=SHIFTS, gaps=(MIN_SAMPLE_PERIOD, MIN_SAMPLE_PERIOD, 5, 7, 13, 200)):
    """(gap, q, wq_shift): a queue that walks, jumps, sits at its maximum and empties, and
    stays put for a while (the average reaches its fixed point); the shift changes every
    few samples."""
    out, q, shift, still = [], 0, rnd.choice(shifts), 0
    for k in range(n):
        r = rnd.random()
        if k == n // 3:
            still = n // 4
        if still:
            still -= 1
        else:
            q = Q_MAX if r < 0.02 else 0 if r < 0.05 else rnd.randrange(Q_MAX + 1) \
                if r < 0.08 else max(0, min(Q_MAX, q + rnd.randint(-30, 40)))
        if rnd.random() < 0.1:
            shift = rnd.choice(shifts)
        out.append((rnd.choice(gaps), q, shift))
    return out


def script(n, seed=1):
    """Three runs from reset; the first two end with samples in flight (a reset 1-3 clocks
    after their last sample)."""
    rnd = random.Random(seed)
    return [("run", samples(rnd, n)), ("reset", 1), ("run", samples(rnd, n // 2)),
            ("reset", 3), ("run", samples(rnd, n, shifts=(0, 1, 2, 16)))]


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
