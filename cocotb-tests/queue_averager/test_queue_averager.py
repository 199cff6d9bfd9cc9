"""QueueAverager alone on Verilator against ``fpq.queue_averager.QueueAverager`` (bench:
``bench_queue_averager``): every w_q shift (0..16) rewritten mid-stream, idle decay through
random and real decay tables with idle times across the 255-cell clamp, negative and up to
2**47 ticks, cell sizes 2**0 .. 2**47, table writes into the inactive bank while arrivals
stream and bank swaps; full rate and with valid gaps; two builds. Plus the faults this bench
must catch."""

import random

import pytest

from fpq import Build, Config
from fpq.formats import QPKTS_BITS

from fpq_hdl.queue_averager import QueueAverager

from tb_lib.component_bench import run_component
from tb_lib.faults import COMPONENT_FAULTS
from tb_lib.runner import BenchFailed

TOP = "fpq_queue_averager"
BENCH = "queue_averager.bench_queue_averager"
Q_MAX = (1 << QPKTS_BITS) - 1
D_MIN, D_MAX = -(1 << 47), (1 << 47) - 1     # idle_diff is a signed 48-bit number

BUILDS = {"v256-t16": Build(vec_bits=256, table_depth=16), "default": Build()}
STREAMS = {"full-rate": dict(gap=0.0), "gaps": dict(gap=0.3, gap_burst=3)}


def arrivals(rnd, n, p_idle, cell_log):
    """(q, idle, idle_diff, t0): a queue that walks, jumps and sits at its maximum; idle
    arrivals with idle times around the cell and clamp boundaries, negative, and huge."""
    out, q = [], 0
    cell, top = 1 << cell_log, 256 << cell_log
    for _ in range(n):
        r = rnd.random()
        q = Q_MAX if r < 0.01 else rnd.randrange(Q_MAX + 1) if r < 0.03 else \
            max(0, min(Q_MAX, q + rnd.randint(-3, 5)))
        idle = rnd.random() < p_idle
        diff = rnd.choice((rnd.randint(-50, 3000), top - 1 - rnd.randrange(3), top + rnd.randrange(3),
                           (255 * cell) + rnd.randint(-2, 2), rnd.randrange(cell * 8 + 1),
                           rnd.randrange(D_MAX + 1), rnd.randint(D_MIN, -1)))
        out.append((q, idle, max(D_MIN, min(D_MAX, diff)), rnd.getrandbits(48)))
    return out


def random_table(rnd):
    """Decay shifts 0..63; a third of them >= 36 (the average goes to 0)."""
    return [rnd.randrange(36, 64) if rnd.random() < 0.3 else rnd.randrange(36)
            for _ in range(256)]


def ewma_script(build, n):
    """Every w_q shift 0..16, committed one after the other, half of them at full rate and
    half with valid gaps; a few idle arrivals through the real decay table."""
    rnd = random.Random(1)
    real = Config(build=build, tick_hz=1e6, idle_pkt_time_s=1e-4)
    cl = real.registers()["idle_cell_log"]
    script = [("config", 0, cl, real.decay_table(), random_table(rnd))]
    for s in range(17):
        if s in (0, 9):
            script.append(("stream", STREAMS["full-rate" if s == 0 else "gaps"]))
        script += [("commit", s, cl, None, False), ("events", arrivals(rnd, n, 0.03, cl), 0)]
    return script


def idle_script(build, n):
    """Idle decay: random tables, cell sizes 2**0 .. 2**47, 30 % idle arrivals; table writes
    into the inactive bank while arrivals stream, and swaps to that bank (the model gets what
    was written); full table rewrites; valid gaps half of the time; two resets mid-stream."""
    rnd = random.Random(2)
    script = [("config", 4, 0, random_table(rnd), random_table(rnd))]
    for k, (wq, cl) in enumerate(((4, 0), (9, 3), (2, 12), (16, 30), (0, 47), (7, 20))):
        script.append(("stream", STREAMS["gaps" if k & 1 else "full-rate"]))
        script += [("commit", wq, cl, random_table(rnd) if k % 3 == 2 else None, k > 0)]
        if k in RESET_PHASES:
            # reset with arrivals in flight and an average built up; then the phase again
            script += [("events", arrivals(rnd, n, 0.3, cl), 0.05, False), ("reset",)]
        script += [("events", arrivals(rnd, n, 0.3, cl), 0.05)]
    return script


#: phases of idle_script reset mid-stream (one at full rate, one with valid gaps)
RESET_PHASES = (2, 5)


SCRIPTS = {"ewma": (ewma_script, 120), "idle-decay": (idle_script, 400)}


def run(request, build_name, script, seed=3, component=None, expect_failure=False):
    build = BUILDS[build_name]
    comp = component if component is not None else QueueAverager(build)
    plan = {"build": build, "script": script, "seed": seed, **STREAMS["full-rate"]}
    tag = f"queue-averager-{build_name}" + ("-fault" if expect_failure else "")
    return run_component(request, comp, TOP, BENCH, plan, tag, expect_failure=expect_failure)


@pytest.mark.parametrize("build_name", BUILDS)
@pytest.mark.parametrize("case", SCRIPTS)
def test_queue_averager(request, build_name, case):
    make, n = SCRIPTS[case]
    res = run(request, build_name, make(BUILDS[build_name], n))
    cov = {k[len("queue averager: "):]: v for k, v in res["coverage"].items()}
    want = (["EWMA with A mod 2^s != 0 (rounding term)", "q at its maximum",
             "valid gap cycles", "idle decay, cells < 255", "w_q / cell size rewritten"] +
            [f"w_q = 2^-{s}" for s in range(17)] if case == "ewma" else
            ["idle decay, cells < 255", "idle decay, cells clamped at 255",
             "idle time negative (cells 0)", "decay shift >= 36 (average to 0)",
             "table writes while streaming", "bank swap", "valid gap cycles",
             "w_q / cell size rewritten", "reset mid-stream (arrivals in flight)"])
    missing = [b for b in want if not cov.get(b)]
    assert not missing, f"bins not hit: {missing}; coverage {cov}"
    if case == "ewma":
        assert res["inputs"] == 17 * n
    else:
        assert res["inputs"] + res["lost_to_reset"] == (6 + len(RESET_PHASES)) * n
        assert 0 < res["lost_to_reset"] <= len(RESET_PHASES) * QueueAverager.LATENCY


@pytest.mark.long
@pytest.mark.parametrize("case", SCRIPTS)
def test_queue_averager_long(request, case):
    make, n = SCRIPTS[case]
    run(request, "default", make(BUILDS["default"], 25 * n), seed=17)


#: fault -> the script that must catch it
FAULTS = {"qa-ewma-floor": "ewma", "qa-decay-clamp": "idle-decay"}


@pytest.mark.parametrize("fault", FAULTS)
def test_fault_is_caught(request, fault):
    build = BUILDS["v256-t16"]
    make, n = SCRIPTS[FAULTS[fault]]
    comp = COMPONENT_FAULTS[fault][2]()(build)
    with pytest.raises(BenchFailed) as exc:
        run(request, "v256-t16", make(build, n), component=comp, expect_failure=True)
    assert "RTL avg" in str(exc.value)
