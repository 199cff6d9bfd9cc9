"""The RTL in the TCP loop: the TCP simulator (``fpq_sim``) with the Verilated queue manager
(``fpq_hdl.verilated``, lean harness) deciding every packet at the bottleneck, against the same
run with the bit-exact golden model: same seed and the same accept clocks (the router waits
``queue.verdict_wait`` >= the RTL's latency after each arrival in both runs), so every
verdict, every drop, every TCP reaction and every transfer time must be identical. The queue
manager's clock is 100 kHz (``queue.tick_hz``): the RTL clocks through every one of them.

Also the lean harness itself: its batch path against the model on long TCP-driven traces
(``make test-long``: >= 5M arrivals), its ``configure`` (commits at a clock), its telemetry at
a clock, its errors, and the ``replay`` report."""

import time

import pytest

from fpq import QueueManager as Model, Arrival, Departure
from fpq.formats import PROB_ONE

from fpq_hdl.queue_manager import LATENCY
from fpq_hdl.verilated import VerilatedQueueManager, replay

from tb_lib.coverage_report import record
from tb_lib.traffic import scenario, tcp_trace, synthetic
from tb_lib.scripts import cfg, BUILDS

#: the closed loops' queue-manager clock: few clocks per simulated second for the RTL
LOOP_TICK_HZ = 1e5


class Recording:
    """Wraps a queue manager and keeps every verdict it gives (for the comparison)."""

    def __init__(self, qm):
        self.qm = qm
        self.verdicts = []

    def arrive(self, desc):
        v = self.qm.arrive(desc)
        self.verdicts.append(tuple(v))
        return v

    def depart(self, desc):
        self.qm.depart(desc)


def closed_loop(discipline, flows, duration_s, seed=1):
    from fpq_sim.network import Network
    from fpq_sim.scenario import queue_config
    from fpq_hdl.queue_manager import LATENCY
    sc = scenario(discipline, flows, seed, [f"run.duration_s={duration_s}", "run.warmup_s=5.0",
                                            f"queue.tick_hz={LOOP_TICK_HZ}",
                                            f"queue.verdict_wait={LATENCY}"])
    cfg_ = queue_config(sc)
    runs = {}
    for name, qm in (("model", Model(cfg_)), ("rtl", VerilatedQueueManager(cfg_))):
        rec = Recording(qm)
        net = Network(sc, qm=rec)
        net.port.p_one = PROB_ONE          # count saturated drops for both (raw PROB verdicts)
        c0 = getattr(qm, "cycles", 0)
        t0 = time.perf_counter()
        net.run()
        s = net.summary(transfer_times=True)
        s["wall"] = time.perf_counter() - t0
        s["clocks"] = getattr(qm, "cycles", 0) - c0
        runs[name] = (s, rec, qm)
    return runs


def compare_runs(runs):
    (sm, rm, qm_m), (sr, rr, qm_r) = runs["model"], runs["rtl"]
    assert len(rr.verdicts) == len(rm.verdicts)
    for i, (a, b) in enumerate(zip(rr.verdicts, rm.verdicts)):
        assert a == b, f"verdict {i}: RTL {a} != model {b}"
    skip = {"wall_seconds", "events_per_second", "wall", "clocks"}
    for k in sm:
        if k not in skip:
            assert sr[k] == sm[k], f"summary {k}: RTL {sr[k]!r} != model {sm[k]!r}"
    assert qm_r.counters == qm_m.counters
    assert qm_r.snapshot() == qm_m.snapshot()
    return sm, sr


def _record(runs):
    sm, sr = runs["model"][0], runs["rtl"][0]
    n = len(runs["rtl"][1].verdicts)
    record({"arrivals": n, "cycles": sr["clocks"],
            "coverage": {"closed-loop arrivals": n,
                         "closed-loop transfers": sm["transfers"]["count"]}})


def test_closed_loop_fpq_n75_60s():
    """Fig. 9 set-up, FPQ, N = 75, 60 s simulated (6M clocks of the RTL; `make test`)."""
    runs = closed_loop("fpq", 75, 60.0)
    sm, sr = compare_runs(runs)
    assert sm["transfers"]["count"] > 100 and sm["drops"] > 10
    assert sr["clocks"] > 0.99 * 60 * LOOP_TICK_HZ       # the RTL clocked through them all
    _record(runs)


@pytest.mark.long
@pytest.mark.parametrize("discipline", ["fpq", "red"])
def test_closed_loop_n75_300s(discipline):
    """Fig. 9 set-up, N = 75, 300 s simulated, FPQ and RED (`make test-long`)."""
    runs = closed_loop(discipline, 75, 300.0)
    sm, _ = compare_runs(runs)
    assert sm["transfers"]["count"] > 1000
    _record(runs)


def test_replay_report():
    config, events = tcp_trace("red", 300, 25_000)
    expected = Model(config).run(events)
    text = replay(config, events, expected)
    assert "every field of every verdict" in text and "25000 verdicts" in text
    bad = list(expected)
    bad[100] = bad[100]._replace(prob=bad[100].prob ^ 1)
    text = replay(config, events, bad)
    assert "MISMATCH at verdict 100" in text


def test_lean_harness_commits_match_the_model():
    """Commits at chosen clocks between events (mode, P: the table written into the inactive
    bank in the clocks before, seeds, v_max: a wipe, the average's registers, drop-tail), in
    ``run`` as ``("configure", config, ts)`` items and through ``configure``."""
    b = BUILDS["small"]
    base = cfg(b, mode="fpq", t_clear_s=0.01, limit_pkts=150)
    changes = [dict(mode="red", red_min_th=3, red_max_th=20, red_max_p=0.2),
               dict(p_pkts=5.0, mode="fpq"), dict(seed_decide=5, seed_clear=6),
               dict(v_max=200, t_clear_s=0.006), dict(mode="droptail", limit_pkts=20)]
    rtl, model = VerilatedQueueManager(base), Model(base)
    c, t, batch = base, 10, []
    for i, ch in enumerate(changes + [{}]):
        ev = synthetic(c, 3000, seed=80 + i, t0=t, model=None)
        batch += ev
        if ch:
            new = c.replace(**ch)
            if i == 4:
                new = new.override(wq_shift=1, avg_sample_period=11)
            # after the last arrival's verdict and the table's writes into the other bank
            ts = ev[-1].ts + LATENCY + b.table_depth + 3 * i
            batch.append(("configure", new, ts))
            t = ts + b.vec_bits + 4
            c = new
    want = []
    for ev in batch:
        if type(ev) is tuple:
            model.configure(ev[1], ev[2])
        elif type(ev) is Departure:
            model.depart(ev)
        else:
            want.append(model.arrive(ev))
    assert rtl.run(batch) == want
    assert rtl.counters == model.counters
    assert rtl.snapshot() == model.snapshot()


def test_lean_harness_telemetry_at_a_clock():
    """``snapshot()`` after ``advance(ts)`` is the model's at ``ts``: through an idle stretch
    the clears empty the vector and the samples bring the average down, clock by clock, and
    each field is read from the port at the clock that holds it (N_RAW_DELAY,
    AVG_TELEMETRY_DELAY, COUNTER_DELAY)."""
    b = BUILDS["small"]
    c = cfg(b, mode="fpq", v_max=200, t_clear_s=200 * 15.5e-6, wq_shift=4,
            avg_sample_period=5, limit_pkts=100)
    ev = synthetic(c, 2000, seed=90, t0=10, p_dep=0.3, dt=(1,))
    seen = set()
    for step in (1, 2, 3, 7, 11, 13):
        rtl, model = VerilatedQueueManager(c), Model(c)
        assert rtl.run(ev) == model.run(ev)
        # the queue drains in the clocks after the last event
        q = model.snapshot()["occ_pkts"]
        drain = [Departure(rtl.now + i, 64) for i in range(q)]
        for d in drain:
            rtl.depart(d)
            model.depart(d)
        at = (drain[-1].ts if drain else rtl.now) + step
        for k in range(40):
            rtl.advance(at)
            model.advance(at)
            got, want = rtl.snapshot(), model.snapshot()
            assert got == want, f"clock {at}"
            seen.add((got["n_raw"], got["avg"]))
            at += 30 + step
    # N and the average moved between the snapshots
    assert len({n for n, _ in seen}) > 20 and len({a for _, a in seen}) > 20


def test_lean_harness_refuses_events_it_cannot_present_in_their_clock():
    """An event whose clock the RTL has passed (an arrival's verdict takes LATENCY clocks),
    and an arrival during a vector wipe: RuntimeError naming the event and the clocks."""
    from fpq_hdl.queue_manager import LATENCY
    b = BUILDS["small"]
    c = cfg(b, mode="fpq")
    rtl = VerilatedQueueManager(c)
    assert rtl.latency == LATENCY
    rtl.arrive(Arrival(100, 1, 64, False))
    assert rtl.now == 100 + LATENCY
    with pytest.raises(RuntimeError, match=rf"Arrival\(ts=101.*the RTL is at clock "
                                           rf"{100 + LATENCY}, past the event's clock 101"):
        rtl.arrive(Arrival(101, 2, 64, False))
    rtl = VerilatedQueueManager(c)
    rtl.arrive(Arrival(100, 1, 64, False))
    rtl.configure(c.replace(v_max=100, t_clear_s=0.05), 200)
    with pytest.raises(RuntimeError, match=r"Arrival\(ts=210.*not ready in the event's clock "
                                           r"210 \(a vector wipe is under way"):
        rtl.arrive(Arrival(210, 2, 64, False))
    rtl = VerilatedQueueManager(c)
    rtl.arrive(Arrival(100, 1, 64, False))
    with pytest.raises(RuntimeError, match=r"configure at clock 110: .*past"):
        rtl.configure(c.replace(mode="red"), 110)


LONG_TRACES = [("fpq", 75), ("fpq", 2000), ("red", 300), ("red", 2000)]


@pytest.mark.long
@pytest.mark.parametrize("discipline,flows", LONG_TRACES)
def test_long_tcp_trace_bit_exact(discipline, flows):
    """1.25M TCP-driven arrivals per trace, 4 traces: 5M arrivals, every verdict field,
    counters and telemetry compared (`make test-long`)."""
    config, events = tcp_trace(discipline, flows, 1_250_000)
    model = Model(config)
    expected = model.run(events)
    rtl = VerilatedQueueManager(config)
    c0 = rtl.cycles
    got = rtl.run(events)
    assert len(got) == len(expected) == 1_250_000
    for i, (g, e) in enumerate(zip(got, expected)):
        if g != e:
            raise AssertionError(f"verdict {i}: RTL {g} != model {e}")
    assert rtl.counters == model.counters
    assert rtl.snapshot() == model.snapshot()
    record({"arrivals": len(got), "cycles": rtl.cycles - c0, "coverage": {}})
