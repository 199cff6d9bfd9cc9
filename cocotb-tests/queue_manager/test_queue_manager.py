"""The top, ``fpq_hdl.queue_manager.QueueManager``, on Verilator against the golden model:
TCP-simulator traces (FPQ paper Fig. 9 set-up, N = 10, 75, 300, 2000, RED and FPQ) and the
adversarial set, with random valid gaps and verdict back-pressure, over several builds. Every
event is asked for at its clock; the model replays the clocks the RTL accepted them in."""

import pytest

from fpq import Arrival

from tb_lib.traffic import tcp_trace, synthetic, same_bucket_flows, end_clock
from tb_lib.stimulus import t_clear_s
from tb_lib.scripts import (BUILDS, STREAMS, cfg, phases, streams_script,
                            same_flow_script, hard_limits_script, run_plan)

# ---- TCP-driven traffic --------------------------------------------------------------------
TCP_ARRIVALS = 25_000     # per trace: 8 traces = 200k arrivals in `make test`


@pytest.mark.parametrize("flows", [10, 75, 300, 2000])
@pytest.mark.parametrize("discipline", ["fpq", "red"])
def test_tcp_trace(request, discipline, flows):
    config, events = tcp_trace(discipline, flows, TCP_ARRIVALS)
    stream = STREAMS["gaps+backpressure"] if flows in (75, 2000) else STREAMS["full-rate"]
    res = run_plan(request, config.build, [("config", config), ("events", events)],
                   seed=flows, **stream)
    assert res["arrivals"] == TCP_ARRIVALS
    c = res["counters"]
    assert c["departures"] > TCP_ARRIVALS // 3
    if flows >= 75:            # at N = 10 the queue stays short: no drop in 25k arrivals
        assert c["early_drops"] + c["forced_drops"] > 0
    if stream is STREAMS["full-rate"]:
        # the sink always ready: the port took every event in the clock the trace asks
        assert res["shifted"] == 0
    else:
        assert res["shifted"] > 1000


# ---- the stream matrix: builds x valid gaps / back-pressure, every mode ---------------------
@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("build", BUILDS)
def test_streams(request, build, stream):
    res = run_plan(request, BUILDS[build], streams_script(BUILDS[build]), seed=7,
                   **STREAMS[stream])
    assert res["arrivals"] == 7500
    for action in ("enqueue", "mark", "drop early", "drop forced"):
        assert res["coverage"][action] > 0, action
    if stream == "full-rate":
        assert res["shifted"] == 0


# ---- adversarial patterns ------------------------------------------------------------------
@pytest.mark.parametrize("build", ["default", "small"])
def test_same_flow_every_clock(request, build):
    """Back-to-back arrivals, a clear in every clock (period exactly one clock): first the
    same flow on every clock, then two flows alternating (the same bit two clocks apart),
    then a mix: the vector's forwarding decides every N, and the clear of each slot meets
    the sets around it."""
    b = BUILDS[build]
    res = run_plan(request, b, same_flow_script(b), seed=2)
    cov = res["coverage"]
    assert cov["forwarding hazard: same vector bit 1 clock(s) apart"] > 3000
    assert cov["forwarding hazard: same vector bit 2 clock(s) apart"] > 3000
    assert cov["clear in the clock of an arrival (one slot)"] > 10000
    for k in (1, 2):
        assert cov.get(f"clear of the bit set {k} clock(s) earlier", 0) > 0
        assert cov.get(f"set of the bit cleared {k} clock(s) earlier", 0) > 0
    # no stall at all: one verdict per clock, every event in its clock
    assert res["shifted"] == 0 and not cov.get("arrival refused: credit")


def test_every_flow_in_one_bucket(request):
    """300 distinct flows that all hash to one vector bit (the key is public): N stays at 0
    or 1 however many flows arrive."""
    b = BUILDS["small"]
    c = cfg(b, mode="fpq", t_clear_s=0.05, limit_pkts=200)
    flows = same_bucket_flows(c, 300)
    events = synthetic(c, 8000, seed=5, flows=flows, p_dep=0.8, t0=10)
    res = run_plan(request, b, [("config", c), ("events", events)], seed=3,
                   **STREAMS["gaps+backpressure"])
    assert set(k for k, v in res["coverage"].items() if k.startswith("N ") and v) <= {"N 0",
                                                                                   "N 1-9"}


def test_65536_distinct_flows(request):
    """2^16 arrivals, each a new flow, on the whole 8192-bit vector: N climbs to the vector
    size (bins up to >= 5000); clears are rare (t_clear 10 s: 53 in the run)."""
    b = BUILDS["default"]
    c = cfg(b, mode="fpq", v_max=8192, t_clear_s=10.0, limit_pkts=500, n_cap=8191)
    events = synthetic(c, 1 << 16, seed=6, flows=lambda r, k: r.getrandbits(104), dt=(1,),
                       p_dep=0.9, t0=10)
    assert len({e.flow for e in events if type(e) is Arrival}) == 1 << 16
    res = run_plan(request, b, [("config", c), ("events", events)], seed=4)
    assert res["coverage"]["N >=5000"] > 10000


@pytest.mark.parametrize("period", [1.37, 61.9], ids=["clear-every-1.37", "clear-every-61.9"])
def test_long_idle_gaps(request, period):
    """Idle gaps of 5,000 to 150,000 clocks (queue drained first): the clears run on through
    them (the fractional period kept: a clear every 1.37 or 61.9 clocks) and empty the
    vector, the samples settle the average; the arrivals after a gap read both. The gaps
    are skipped with a timer, the RTL clocks through them on its own."""
    b = BUILDS["small"]
    v_max = 200
    c = cfg(b, mode="fpq", v_max=v_max, t_clear_s=t_clear_s(period, v_max), limit_pkts=100,
            wq_shift=4, avg_sample_period=9)
    events = synthetic(c, 6000, seed=7 + int(period), gap_every=500,
                       gap=(5_000, 150_000), dt=(1, 2, 5, 40), p_dep=0.7, t0=10)
    res = run_plan(request, b, [("config", c), ("events", events)], seed=5,
                   **STREAMS["gaps+backpressure"])
    assert res["skipped"] > 500_000
    assert res["coverage"]["N 1-9"] >= 11           # the first arrivals after each gap


@pytest.mark.parametrize("mode", ["fpq", "red", "droptail"])
def test_queue_at_hard_limits(request, mode):
    """``hard_limits_script``: one packet, a byte limit below a big packet, the largest limits
    with a growing queue (RED: p saturates); departures that count dep_errors."""
    b = BUILDS["small"]
    script = hard_limits_script(b, mode)
    res = run_plan(request, b, script, seed=6, **STREAMS["heavy-backpressure"])
    cov = res["coverage"]
    assert cov["drop forced"] > 100 and res["counters"]["dep_errors"] > 10
    if mode == "red":
        assert cov["probability saturated (p = 1)"] > 100


def test_registers_rewritten_mid_stream(request):
    """Commits between events while verdicts wait under back-pressure: mode, ECN, limits,
    the average's weight and sample period, n_cap, P (r(N) table: a bank swap), seeds
    (generator reloads), v_max (vector wipe: the port refuses arrivals meanwhile) and the
    hash key twice (live re-key: wipe and held count; a hold of about 1,000 clocks that ends
    mid-phase, then one that lasts to the end). The clear period stays (see
    test_clear_period_rewritten)."""
    b = BUILDS["small"]
    base = cfg(b, mode="fpq", t_clear_s=0.05)
    changes = [dict(mode="red", red_max_p=0.3, red_min_th=2, red_max_th=12),
               dict(ecn=False, limit_pkts=30), dict(n_cap=20),
               dict(mode="fpq", p_pkts=5.0, lc_correction=True),
               dict(seed_decide=99, seed_clear=77),
               dict(v_max=100, t_clear_s=0.05 * 100 / 256), dict(mode="droptail"),
               dict(mode="fpq", ecn=True),
               dict(hash_key=bytes(range(9, 29)), rekey_hold_t_clear=0.05),
               dict(hash_key=bytes(range(33, 53)), rekey_hold_t_clear=2.0)]
    script = [("config", base)]
    c, t = base, 10
    for i, ch in enumerate(changes + [None]):
        ev = synthetic(c, 1500, seed=30 + i, p_dep=0.75, t0=t)
        script.append(("events", ev))
        if ch is None:
            break
        new = c.replace(**ch)
        if i == 2:
            new = new.override(wq_shift=1, avg_sample_period=13)
        # the next events come right after the commit can apply, a wipe still under way
        t = end_clock(ev) + 2 * 24 + 16
        script.append(("commit", new))
        c = new
    res = run_plan(request, b, script, seed=8, **STREAMS["gaps+backpressure"])
    cov = res["coverage"]
    assert cov["arrival refused: busy"] > 0 and cov["arrival during a re-key hold"] > 1000
    assert cov["commit with rekey"] == 2 and cov["table bank swap at a commit"] >= 2


def test_clear_period_rewritten(request):
    """Commits that change t_clear_s (the clear period) mid-stream, both ways, at asked
    clocks: the clear already scheduled keeps its clock, the ones after it follow the new
    period (with its fraction), as the model's configure() keeps next_due."""
    b = BUILDS["small"]
    c1 = cfg(b, mode="fpq", t_clear_s=0.05 * 1.3)
    c2 = c1.replace(t_clear_s=0.2 * 1.3)
    c3 = c1.replace(t_clear_s=0.01 * 1.3)
    dt = (1, 20, 60, 300)
    ev = synthetic(c1, 2000, seed=60, dt=dt, t0=10)
    script = [("config", c1), ("events", ev)]
    for i, c in enumerate((c2, c3, c1)):
        at = end_clock(ev) + 60 + 37 * i
        ev = synthetic(c, 2000, seed=61 + i, dt=dt, t0=at + 5)
        script += [("commit", c, at), ("events", ev)]
    res = run_plan(request, b, script, seed=9)
    assert res["shifted"] == 0


def test_commits_in_the_clock_of_a_clear_and_a_sample(request):
    """A clear in every clock (period 1.0) and a sample every 4 or 5 clocks, so the commit's
    own clock matters: commits of the clear seed (the clear of the commit's clock already
    draws the new seed's first number), of the clear period (1.0 -> 1.5 -> 1.0: the clear
    scheduled keeps its clock, the next follows the new period), of the average's weight and
    sample period (the sample of the commit's clock takes the new weight), of the decision
    seed; arrivals right up to each commit's hold and right after it."""
    b = BUILDS["small"]
    v = min(5000, b.vec_bits)
    c0 = cfg(b, mode="fpq", t_clear_s=t_clear_s(1, v), wq_shift=2, avg_sample_period=4,
             limit_pkts=100)
    configs = [c0, c0.replace(seed_clear=31),
               c0.replace(seed_clear=31, t_clear_s=t_clear_s(1.5, v)),
               c0.replace(seed_clear=32).override(wq_shift=0, avg_sample_period=5),
               c0.replace(seed_clear=33, seed_decide=34).override(wq_shift=3,
                                                                  avg_sample_period=4)]
    script = phases(configs, lambda c, t0, i: synthetic(c, 1200, seed=110 + i, t0=t0,
                                                        dt=(1, 1, 2), p_dep=0.6))
    res = run_plan(request, b, script, seed=12)
    assert res["shifted"] == 0 and res["coverage"]["commit with load_rng_clear"] == 3


# Found by the earlier contract's benches and kept: reset must clear the vector and the
# average (memories and registers), whatever was in them.
def test_reset_mid_stream(request):
    """Reset asserted while arrivals are in the pipeline and verdicts wait in the FIFO; after
    it (and the reset's vector wipe) the configuration is loaded again and the time base
    restarted: the state must be the documented reset state (sw/README.md: vector clear,
    N = 0, the first clear and sample one period after clock 0, A = 0, queue empty, counters
    0, generators from their seeds), i.e. a fresh model."""
    b = BUILDS["small"]
    c = cfg(b, mode="fpq", t_clear_s=1.0, limit_pkts=60)
    script = [("config", c), ("events", synthetic(c, 3000, seed=70, p_dep=0.6, t0=10)),
              ("reset", c), ("events", synthetic(c, 3000, seed=71, p_dep=0.6, t0=10))]
    res = run_plan(request, b, script, seed=10, **STREAMS["heavy-backpressure"])
    assert res["lost_to_reset"] > 0


# ---- the same through the lean harness (fast): resets and commits at a clock ---------------
def test_reset_clears_the_vector_and_the_average():
    """40 arrivals set 20 bits and build an average; after a reset three arrivals in clocks
    10-12 (before any sample of a non-empty queue is published) count 1, 2, 3 flows and read
    an average of 0, as a fresh model's."""
    from fpq_hdl.verilated import VerilatedQueueManager
    from fpq import QueueManager as Model
    c = cfg(BUILDS["default"], mode="fpq", t_clear_s=10.0, wq_shift=1, avg_sample_period=4)
    flows = [0x0A000001_0A010001_0400_0050_06 + (i << 56) for i in range(20)]
    events = [Arrival(10 + 30 * i, flows[i % 20], 576, False) for i in range(40)]
    probe = [Arrival(10 + i, flows[i], 576, False) for i in range(3)]
    rtl = VerilatedQueueManager(c)
    rtl.run(events)
    before = rtl.snapshot()
    rtl.reset(c)
    got, want = rtl.run(probe), Model(c).run(probe)
    assert before["n_raw"] == 20 and before["avg"] > 0
    assert [v.n for v in got] == [v.n for v in want] == [1, 2, 3]
    assert [v.avg for v in got] == [v.avg for v in want] == [0, 0, 0]
    assert got == want


def test_clear_period_commit_minimal():
    """Period 100 clocks, then 1000 (v_max 40, t_clear 4 ms -> 40 ms at 1 MHz), committed at
    clock 3005, between two clears: the clear due at 3100 keeps its clock, the next comes
    at 4100. One arrival every 150 clocks around the commit; 30 flows keep most of the 40
    bits set, so an extra or missing clear shows in N."""
    from fpq_hdl.verilated import VerilatedQueueManager
    from fpq import QueueManager as Model
    c1 = cfg(BUILDS["default"], mode="fpq", v_max=40, t_clear_s=0.004)
    c2 = c1.replace(t_clear_s=0.04)
    assert (c1.clear_period_raw(), c2.clear_period_raw()) == (100 << 16, 1000 << 16)
    flows = [0x0A000001_0A010001_0400_0050_06 + (i << 56) for i in range(30)]
    first = [Arrival(150 * (i + 1) - 130, flows[i], 576, False) for i in range(20)]
    second = [Arrival(3006 + 150 * i, flows[(i + 7) % 30], 576, False) for i in range(20)]
    rtl, model = VerilatedQueueManager(c1), Model(c1)
    assert rtl.run(first) == model.run(first)
    rtl.configure(c2, 3005)
    model.configure(c2, 3005)
    got, want = rtl.run(second), model.run(second)
    assert [v.n for v in got] == [v.n for v in want] and got == want
    assert rtl.snapshot() == model.snapshot()
