"""FlowCounter alone on Verilator against ``fpq.flow_counter.FlowCounter`` (bench:
``bench_flow_counter``), over two builds (vector 256 with the smallest ``set_delay`` the block
allows; vector 8192, the default, with the top's ``set_delay``, 1 + ``FlowHash.LATENCY``):
clears in every clock with one index streaming, two alternating, a tiny v_max (a clear and a
set of one bit in one slot), random patterns of clears and arrivals, and a run of rewrites
(v_max with its wipe, the clear seed with a clear in the reload's clock, wipe strobes alone
with clears during the wipe, reset with slots in flight). Plus the faults this bench must
catch."""

import random

import pytest

from fpq import Build, Config

from fpq_hdl.flow_counter import FlowCounter
from fpq_hdl.flow_hash import FlowHash

from tb_lib.component_bench import run_component
from tb_lib.faults import COMPONENT_FAULTS
from tb_lib.runner import BenchFailed

TOP = "fpq_flow_counter"
BENCH = "flow_counter.bench_flow_counter"

#: name -> (build, set_delay): the smallest set_delay the block allows (4), and the top's
#: (the arrival's index comes out of FlowHash a clock after the accept)
BUILDS = {"v256-d4": (Build(vec_bits=256, table_depth=16), 4),
          "v8192-d6": (Build(vec_bits=8192, table_depth=16), 1 + FlowHash.LATENCY)}


def regs(build, v_max, seed_clear=2):
    """Raw registers with ``v_max`` bits (the block uses ``v_max`` and the clear seed)."""
    c = Config(build=build, tick_hz=1e6, v_max=v_max, t_clear_s=v_max * 2 / 1e6,
               seed_clear=seed_clear, n_cap=build.table_depth - 1)
    return c.registers()


class Slots:
    """Slot patterns: ``(clear, hash or None)`` per clock."""

    def __init__(self, seed):
        self.rnd = random.Random(seed)

    def same_index(self, n):
        """A clear in every clock and an arrival in every clock: one flow, then two
        alternating, then a pool of 8 with repeats."""
        rnd = self.rnd
        a, b = rnd.getrandbits(32), rnd.getrandbits(32)
        pool = [rnd.getrandbits(32) for _ in range(8)]
        return [(True, a if k < n // 3 else (a, b)[k & 1] if k < 2 * n // 3 else
                 (rnd.choice(pool) if rnd.random() < 0.5 else a)) for k in range(n)]

    def random(self, n, p_clear=0.6, p_arr=0.7, flows=150, burst=0.02):
        """Random clears and arrivals from ``flows`` flows (repeats), with bursts of empty
        slots."""
        rnd = self.rnd
        pool = [rnd.getrandbits(32) for _ in range(flows)]
        out, h = [], pool[0]
        k = 0
        while k < n:
            if rnd.random() < burst:
                quiet = rnd.randint(3, 40)
                out += [(rnd.random() < p_clear, None)] * quiet
                k += quiet
                continue
            if rnd.random() >= 0.3:
                h = rnd.choice(pool)
            out.append((rnd.random() < p_clear, h if rnd.random() < p_arr else None))
            k += 1
        return out

    def quiet(self, n):
        """No clear and no arrival: before a v_max commit, so that no slot is in flight
        across it (the top commits with no arrival in the pipeline)."""
        return [(False, None)] * n


def mode_script(build, delay, n, seed=1):
    sl = Slots(seed)
    v = min(5000, build.vec_bits)
    r0, r1, r2 = regs(build, v), regs(build, 8), regs(build, build.vec_bits)
    wipe_wait = [(True, None)] * (build.vec_bits + 2)            # clears during the wipe
    return [("config", r0), ("slots", sl.same_index(n)),
            ("slots", sl.quiet(delay)), ("commit", r1, True), ("slots", wipe_wait),
            ("slots", sl.same_index(n // 2)),
            ("slots", sl.quiet(delay)), ("commit", r2), ("slots", wipe_wait),
            ("slots", sl.random(n)), ("slots", sl.random(n, p_clear=0.95, flows=20)),
            ("slots", sl.random(n, p_clear=0.1, p_arr=0.95, flows=3000))]


def rewrite_script(build, delay, n, seed=7):
    """Commits of the clear seed (a clear in the reload's clock draws the new seed's first
    number), of v_max (wipe); wipe strobes alone (with and without a clear in their slot,
    clears during the wipe); a reset with slots in flight."""
    sl = Slots(seed)
    v = min(300, build.vec_bits)
    ra, rb, rc = regs(build, v), regs(build, v, seed_clear=99), regs(build, 40, seed_clear=99)
    wipe_wait = [(True, None)] * (build.vec_bits + 2)
    return [("config", ra), ("slots", sl.random(n, flows=400)),
            ("commit", rb, True), ("slots", sl.random(n)),
            ("commit", ra, False), ("slots", sl.same_index(n // 2)),
            ("wipe", True), ("slots", wipe_wait), ("slots", sl.random(n)),
            ("wipe", False), ("slots", [(False, None)] * (build.vec_bits + 2)),
            ("slots", sl.random(n // 2)),
            ("slots", sl.quiet(delay)), ("commit", rc, True), ("slots", wipe_wait),
            ("slots", sl.random(n, flows=60)),
            ("reset", ra, sl.same_index(12)), ("slots", sl.random(n))]


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
