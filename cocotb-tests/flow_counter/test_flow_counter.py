"""FlowCounter alone on Verilator against ``fpq.flow_counter.FlowCounter`` (bench:
``bench_flow_counter``), over two builds (vector 256 with the smallest ``set_delay`` the block
allows; vector 8192, the default, with the top's ``set_delay``), carry and paper-literal
clear schedules, and a run of rewrites (v_max, clear period, mode, seed, wipe strobe, reset
mid-stream, the 2**48 timestamp wrap). Plus the faults this bench must catch."""

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
TMASK = (1 << 48) - 1

#: name -> (build, set_delay): the docstring's minimum set_delay (3), and the top's (the
#: arrival's index comes out of FlowHash a clock after the accept)
BUILDS = {"v256-d3": (Build(vec_bits=256, table_depth=16), 3),
          "v8192-d5": (Build(vec_bits=8192, table_depth=16), 1 + FlowHash.LATENCY)}
#: stream conditions: idle clocks before an arrival, can_accept (credit) high
STREAMS = {"full-rate": dict(gap=0.0, accept=1.0),
           "gaps+credit": dict(gap=0.2, gap_burst=3, accept=0.7, accept_burst=4)}


def regs(build, v_max, period_ticks, literal=False, seed_clear=2):
    """Raw registers of a configuration with ``v_max`` bits and a clear every
    ``period_ticks`` ticks (1 MHz ticks)."""
    c = Config(build=build, tick_hz=1e6, v_max=v_max, t_clear_s=v_max * period_ticks / 1e6,
               clear_literal=literal, seed_clear=seed_clear, n_cap=build.table_depth - 1)
    return c.registers()


class Traffic:
    """Arrivals (ts, 32-bit hash) with a running clock, so phases continue in time."""

    def __init__(self, seed, t0=1000):
        self.rnd = random.Random(seed)
        self.t = t0

    def same_index(self, n):
        """One arrival per tick (with a 1-tick clear period: a clear due on every clock):
        one flow, then two alternating, then a pool of 8 with repeats."""
        rnd = self.rnd
        a, b = rnd.getrandbits(32), rnd.getrandbits(32)
        pool = [rnd.getrandbits(32) for _ in range(8)]
        out = []
        for k in range(n):
            self.t += 1
            h = a if k < n // 3 else (a, b)[k & 1] if k < 2 * n // 3 else \
                (rnd.choice(pool) if rnd.random() < 0.5 else a)
            out.append((self.t & TMASK, h))
        return out

    def backlog(self, n, flush_after_ticks, flows=150, dts=(0, 1, 1, 1, 2, 4), flushes=4):
        """Steps of 0-4 ticks (0 to several clears owed per arrival with a 1.25-tick period),
        repeats, and about ``flushes`` gaps beyond ``flush_after`` (a wipe each: vec_bits + 2
        clocks, most of the run time with the 8192-bit vector)."""
        rnd = self.rnd
        p_flush = flushes / n
        pool = [rnd.getrandbits(32) for _ in range(flows)]
        h, out = pool[0], []
        for _ in range(n):
            if rnd.random() < p_flush:
                self.t += flush_after_ticks + rnd.randrange(1000)
            else:
                self.t += rnd.choice(dts)
            if rnd.random() >= 0.3:
                h = rnd.choice(pool)
            out.append((self.t & TMASK, h))
        return out


def flush_ticks(r):
    return -(-r["flush_after"] >> 16)


def mode_script(build, literal, n):
    """Twice, at full rate and then with valid gaps and can_accept back-pressure: clears due
    on every clock with the same index streaming; a tiny v_max (the clear and the set often
    hit the same bit in one slot or a clock apart); backlogs and flushes."""
    tr = Traffic(seed=1 + literal)
    v = min(5000, build.vec_bits)
    r0 = regs(build, v, 1, literal)
    r1 = regs(build, 8, 1, literal)
    r2 = regs(build, build.vec_bits, 1.25, literal)
    script = [("config", r0)]
    for stream in STREAMS.values():
        script += [("stream", stream),
                   ("commit", r0), ("events", tr.same_index(n)),
                   ("commit", r1), ("events", tr.same_index(n // 2)),
                   ("commit", r2), ("events", tr.backlog(n, flush_ticks(r2)))]
    return script


def rewrite_script(build, n):
    """Commits of the clear period, of carry/literal, of the seed, of v_max (wipe); a wipe
    strobe alone; a reset with arrivals in flight; timestamps across the 2**48 wrap."""
    tr = Traffic(seed=7)
    v = min(300, build.vec_bits)
    ra = regs(build, v, 1.25)
    rb = regs(build, v, 3.5)
    rc = regs(build, v, 3.5, literal=True)
    rd = regs(build, v, 0.75 * 4, literal=True, seed_clear=99)
    re_ = regs(build, 40, 1.0, seed_clear=99)
    script = [("config", ra), ("events", tr.backlog(n, flush_ticks(ra), flows=400)),
              ("commit", rb), ("events", tr.backlog(n, flush_ticks(rb), dts=(0, 1, 2, 5, 9))),
              ("commit", rc), ("events", tr.backlog(n, flush_ticks(rc), dts=(0, 1, 2, 5, 9))),
              ("commit", rd), ("events", tr.same_index(n // 2)),
              ("wipe",), ("events", tr.same_index(n // 2)),
              ("commit", re_), ("events", tr.backlog(n, flush_ticks(re_), flows=60))]
    inflight = tr.same_index(12)
    tr.t = (1 << 48) - 400              # after the reset: timestamps wrap
    script += [("reset", ra, inflight), ("events", tr.backlog(n, flush_ticks(ra), flushes=0))]
    return script


def plan(build_name, script, seed, stream):
    build, delay = BUILDS[build_name]
    return {"build": build, "set_delay": delay, "script": script, "seed": seed,
            **STREAMS[stream]}


N = 1200         # arrivals per phase of make test's runs


def run(request, build_name, script, seed=3, stream="full-rate", component=None,
        expect_failure=False):
    build, delay = BUILDS[build_name]
    comp = component if component is not None else FlowCounter(build, delay)
    tag = f"flow-counter-{build_name}" + ("-fault" if expect_failure else "")
    return run_component(request, comp, TOP, BENCH, plan(build_name, script, seed, stream),
                         tag, expect_failure=expect_failure)


def assert_covered(res, *bins):
    cov = res["coverage"]
    missing = [b for b in bins if not cov.get("flow counter: " + b)]
    assert not missing, f"bins not hit: {missing}; coverage {cov}"


@pytest.mark.parametrize("build_name", BUILDS)
@pytest.mark.parametrize("literal", [False, True], ids=["carry", "literal"])
def test_flow_counter_modes(request, build_name, literal):
    build, _ = BUILDS[build_name]
    res = run(request, build_name, mode_script(build, literal, N))
    assert res["inputs"] == 2 * N * 5 // 2
    assert_covered(res, "one clear owed: rides along with the arrival",
                   "clear backlog > 1 (port stalls)",
                   "flush: vector wiped (backlog >= flush_after)",
                   "clear and set of the same index in one slot",
                   "v_max rewritten (wipe)", "clear period rewritten",
                   "set of the index set 1 clock(s) earlier (forwarding)",
                   "set of the index set 2 clock(s) earlier (forwarding)",
                   "clear of the index set 1 clock(s) earlier",
                   "set of the index cleared 1 clock(s) earlier",
                   "can_accept low (back-pressure) cycles", "arrival valid gap cycles")


@pytest.mark.parametrize("build_name", BUILDS)
def test_flow_counter_rewrites(request, build_name):
    build, _ = BUILDS[build_name]
    res = run(request, build_name, rewrite_script(build, N // 2), stream="gaps+credit", seed=5)
    assert res["inputs"] == N // 2 * 6
    assert_covered(res, "clear period rewritten", "clear mode rewritten (carry / literal)",
                   "clear generator reseeded", "v_max rewritten (wipe)", "wipe strobe",
                   "reset mid-stream (arrivals in flight)")


@pytest.mark.long
@pytest.mark.parametrize("build_name", BUILDS)
@pytest.mark.parametrize("literal", [False, True], ids=["carry", "literal"])
def test_flow_counter_long(request, build_name, literal):
    build, _ = BUILDS[build_name]
    run(request, build_name, mode_script(build, literal, 30000), seed=11)
    run(request, build_name, rewrite_script(build, 8000), seed=12, stream="gaps+credit")


FAULTS = ["fc-no-forwarding", "fc-same-slot-clear"]


@pytest.mark.parametrize("fault", FAULTS)
def test_fault_is_caught(request, fault):
    """The fault-injected FlowCounter must fail the very script that passes above."""
    build, delay = BUILDS["v256-d3"]
    comp = COMPONENT_FAULTS[fault][2]()(build, delay)
    with pytest.raises(BenchFailed) as exc:
        run(request, "v256-d3", mode_script(build, False, N), component=comp,
            expect_failure=True)
    assert "n_raw" in str(exc.value)
