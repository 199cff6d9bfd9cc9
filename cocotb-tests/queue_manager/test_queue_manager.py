"""The top, ``fpq_hdl.queue_manager.QueueManager``, on Verilator against the golden model:
TCP-simulator traces (FPQ paper Fig. 9 set-up, N = 10, 75, 300, 2000, RED and FPQ) and the
adversarial set, with random valid gaps and verdict back-pressure, over several builds."""

import random

import pytest

from fpq import Arrival
from fpq.formats import TIME_BITS

from tb_lib.traffic import tcp_trace, synthetic, same_bucket_flows
from tb_lib.scripts import (BUILDS, STREAMS, cfg, streams_script, same_flow_script,
                            hard_limits_script, run_plan)

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
    assert c["departures"] > TCP_ARRIVALS // 2
    if flows >= 75:            # at N = 10 the queue stays short: no drop in 25k arrivals
        assert c["early_drops"] + c["forced_drops"] > 0


# ---- the stream matrix: builds x valid gaps / back-pressure, every mode ---------------------
@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("build", BUILDS)
def test_streams(request, build, stream):
    res = run_plan(request, BUILDS[build], streams_script(BUILDS[build]), seed=7,
                   **STREAMS[stream])
    assert res["arrivals"] == 7500
    for action in ("enqueue", "mark", "drop early", "drop forced"):
        assert res["coverage"][action] > 0, action


# ---- adversarial patterns ------------------------------------------------------------------
@pytest.mark.parametrize("build", ["default", "small"])
def test_same_flow_every_clock(request, build):
    """Back-to-back arrivals, one clear due on every clock (period exactly one tick): first
    the same flow on every clock, then two flows alternating (the same bit two clocks apart),
    then a mix: the vector's forwarding decides every N."""
    b = BUILDS[build]
    res = run_plan(request, b, same_flow_script(b), seed=2)
    assert res["coverage"]["forwarding hazard: same vector bit on consecutive clocks"] > 3000
    assert res["coverage"]["forwarding hazard: same vector bit two clocks apart"] > 3000
    assert res["coverage"]["clear due while arrivals stream (rides along)"] > 10000
    # no stall at all: one verdict per clock
    assert res["coverage"].get("arrival port stall cycles", 0) == 0


def test_every_flow_in_one_bucket(request):
    """300 distinct flows that all hash to one vector bit (the key is public): N stays at 0
    or 1 however many flows arrive."""
    b = BUILDS["small"]
    c = cfg(b, mode="fpq", t_clear_s=0.05, limit_pkts=200)
    flows = same_bucket_flows(c, 300)
    events = synthetic(c, 8000, seed=5, flows=flows, p_dep=0.8)
    res = run_plan(request, b, [("config", c), ("events", events)], seed=3,
                   **STREAMS["gaps+backpressure"])
    assert set(k for k, v in res["coverage"].items() if k.startswith("N ") and v) <= {"N 0",
                                                                                   "N 1-9"}


def test_65536_distinct_flows(request):
    """2^16 arrivals, each a new flow, on the whole 8192-bit vector: N climbs to the vector
    size (bins up to >= 5000, n_cap reached); clears are rare (t_clear 10 s)."""
    b = BUILDS["default"]
    c = cfg(b, mode="fpq", v_max=8192, t_clear_s=10.0, limit_pkts=500, n_cap=8191)
    events = synthetic(c, 1 << 16, seed=6, flows=lambda r, k: r.getrandbits(104), dt=(1,),
                       p_dep=0.9)
    assert len({e.flow for e in events if type(e) is Arrival}) == 1 << 16
    res = run_plan(request, b, [("config", c), ("events", events)], seed=4)
    assert res["coverage"]["N >=5000"] > 10000


@pytest.mark.parametrize("literal", [False, True])
def test_idle_gaps_and_timestamp_wrap(request, literal):
    """Timestamps start 0.2 s before 2^48 ticks and wrap; idle gaps of 0.1-5 s (queue drained:
    idle decay; gaps beyond 8 t_clear wipe the vector; shorter ones owe clear backlogs that
    stall the port)."""
    b = BUILDS["small"]
    c = cfg(b, mode="fpq", t_clear_s=0.1, clear_literal=literal, limit_pkts=100)
    events = synthetic(c, 6000, seed=7 + literal, t0=(1 << TIME_BITS) - 200_000,
                       gap_every=300, gap=(100_000, 2_000_000), dt=(0, 1, 5, 40), p_dep=0.7)
    assert events[0].ts < (1 << TIME_BITS) < events[-1].ts
    res = run_plan(request, b, [("config", c), ("events", events)], seed=5,
                   **STREAMS["gaps+backpressure"])
    # 19 gaps: those above 8 t_clear = 0.8 s wipe, shorter ones owe hundreds of clears
    assert res["coverage"]["vector wipe (backlog >= flush_after)"] >= 2
    assert res["coverage"]["clear backlog > 1 (arrival port stalls)"] >= 2


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
    wq_shift, n_cap, P (r(N) table), idle time (decay table), seeds (generator reloads),
    v_max (vector wipe) and the hash key twice (live re-key: wipe and held count; a hold of
    about 1,000 ticks that ends mid-phase, then one that lasts to the end). The clear period
    stays (see test_clear_period_rewritten)."""
    b = BUILDS["small"]
    base = cfg(b, mode="fpq", t_clear_s=0.05)
    changes = [dict(mode="red", red_max_p=0.3, red_min_th=2, red_max_th=12),
               dict(ecn=False, limit_pkts=30), dict(wq_shift=1, n_cap=20),
               dict(mode="fpq", p_pkts=5.0, lc_correction=True),
               dict(idle_pkt_time_s=1e-3), dict(seed_decide=99, seed_clear=77),
               dict(v_max=100, t_clear_s=0.05 * 100 / 256), dict(mode="droptail"),
               dict(mode="fpq", ecn=True),
               dict(hash_key=bytes(range(9, 29)), rekey_hold_t_clear=0.05),
               dict(hash_key=bytes(range(33, 53)), rekey_hold_t_clear=2.0)]
    script = [("config", base)]
    c = base
    for i, ch in enumerate(changes):
        script.append(("events", synthetic(c, 1500, seed=30 + i, p_dep=0.75)))
        c = c.replace(**ch)
        script.append(("commit", c))
    script.append(("events", synthetic(c, 1500, seed=50, p_dep=0.75)))
    run_plan(request, b, script, seed=8, **STREAMS["gaps+backpressure"])


# Found by these benches and fixed in the RTL (2a7a716): a commit that changed clear_period
# kept next_due_p = next_due + old period (and next_due_f with the old flush_after).
def test_clear_period_rewritten(request):
    """Commits that change t_clear_s (the clear period) mid-stream, both ways, with time steps
    that owe 0, 1 or several clears: clears after a commit follow the new period from the
    current next_due, as the model's configure() keeps next_due."""
    b = BUILDS["small"]
    c1 = cfg(b, mode="fpq", t_clear_s=0.05)
    c2 = c1.replace(t_clear_s=0.2)
    c3 = c1.replace(t_clear_s=0.01)
    dt = (1, 20, 60, 300, 1500)
    script = [("config", c1), ("events", synthetic(c1, 2000, seed=60, dt=dt))]
    for i, c in enumerate((c2, c3, c1)):
        script += [("commit", c), ("events", synthetic(c, 2000, seed=61 + i, dt=dt))]
    res = run_plan(request, b, script, seed=9)
    assert res["coverage"]["clear backlog > 1 (arrival port stalls)"] > 500


# Found by these benches and fixed in the RTL (2a7a716): reset cleared neither the flow
# vector nor the lag line (both memories); the documented reset state has both zero.
def test_reset_mid_stream(request):
    """Reset asserted while arrivals are in the pipeline and verdicts wait in the FIFO; after
    it the configuration is loaded again (no wipe strobe): the state must be the documented
    reset state (sw/README.md: vector clear, N = 0, next_due = clear_period, A = 0, lag line
    0, queue empty, counters 0, generators from their seeds), i.e. a fresh model."""
    b = BUILDS["small"]
    c = cfg(b, mode="fpq", t_clear_s=1.0, limit_pkts=60)
    script = [("config", c), ("events", synthetic(c, 3000, seed=70, p_dep=0.6)),
              ("reset", c), ("events", synthetic(c, 3000, seed=71, p_dep=0.6))]
    res = run_plan(request, b, script, seed=10, **STREAMS["heavy-backpressure"])
    assert res["lost_to_reset"] > 0


# ---- minimal reproductions of the two RTL bugs (lean harness, fast), now regression tests ---
def _after_reset():
    from fpq_verilator import VerilatedQueueManager
    from fpq import QueueManager as Model
    c = cfg(BUILDS["default"], mode="fpq", t_clear_s=10.0, wq_shift=1)
    flows = [0x0A000001_0A010001_0400_0050_06 + (i << 56) for i in range(20)]
    events = [Arrival(10 + i, flows[i % 20], 576, False) for i in range(40)]
    rtl = VerilatedQueueManager(c)
    rtl.run(events)                 # 20 bits set, average > 0
    rtl.reset(c)
    return rtl.run(events[:3]), Model(c).run(events[:3])


def test_reset_clears_the_vector():
    got, want = _after_reset()
    assert [v.n for v in got] == [v.n for v in want] == [1, 2, 3]


def test_reset_clears_the_lag_line():
    got, want = _after_reset()
    assert [v.avg for v in got] == [v.avg for v in want] == [0, 0, 0]


def test_clear_period_commit_minimal():
    """Period 100 ticks, then 1000 ticks (v_max 40, t_clear 4 ms -> 40 ms at 1 MHz): one
    arrival every 150 ticks around the commit; 30 flows keep most of the 40 bits set, so an
    extra or missing clear shows in N."""
    from fpq_verilator import VerilatedQueueManager
    from fpq import QueueManager as Model
    c1 = cfg(BUILDS["default"], mode="fpq", v_max=40, t_clear_s=0.004)
    c2 = c1.replace(t_clear_s=0.04)
    assert (c1.clear_period_raw(), c2.clear_period_raw()) == (100 << 16, 1000 << 16)
    flows = [0x0A000001_0A010001_0400_0050_06 + (i << 56) for i in range(30)]
    first = [Arrival(150 * (i + 1), flows[i], 576, False) for i in range(20)]
    second = [Arrival(3000 + 150 * (i + 1), flows[(i + 7) % 30], 576, False) for i in range(20)]
    rtl, model = VerilatedQueueManager(c1), Model(c1)
    assert rtl.run(first) == model.run(first)
    rtl.configure(c2)
    model.configure(c2)
    assert [v.n for v in rtl.run(second)] == [v.n for v in model.run(second)]
