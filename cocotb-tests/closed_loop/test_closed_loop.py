"""The RTL in the TCP loop: the TCP simulator (``fpq_sim``) with the Verilated queue manager
(``fpq_verilator``, lean harness) deciding every packet at the bottleneck, against the same
run with the bit-exact golden model: same seed, so every verdict, every drop, every TCP
reaction and every transfer time must be identical.

Also the lean harness itself: its batch path against the model on long TCP-driven traces
(``make test-long``: >= 5M arrivals), its ``configure`` (commits) and ``replay`` report."""

import time

import pytest

from fpq import QueueManager as Model, Arrival
from fpq.formats import PROB_ONE

from fpq_verilator import VerilatedQueueManager, replay

from tb_lib.coverage_report import record
from tb_lib.traffic import scenario, tcp_trace, synthetic


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
    sc = scenario(discipline, flows, seed, [f"run.duration_s={duration_s}", "run.warmup_s=5.0"])
    cfg = queue_config(sc)
    runs = {}
    for name, qm in (("model", Model(cfg)), ("rtl", VerilatedQueueManager(cfg))):
        rec = Recording(qm)
        net = Network(sc, qm=rec)
        net.port.p_one = PROB_ONE          # count saturated drops for both (raw PROB verdicts)
        t0 = time.perf_counter()
        net.run()
        s = net.summary(transfer_times=True)
        s["wall"] = time.perf_counter() - t0
        runs[name] = (s, rec, qm)
    return runs


def compare_runs(runs):
    (sm, rm, qm_m), (sr, rr, qm_r) = runs["model"], runs["rtl"]
    assert len(rr.verdicts) == len(rm.verdicts)
    for i, (a, b) in enumerate(zip(rr.verdicts, rm.verdicts)):
        assert a == b, f"verdict {i}: RTL {a} != model {b}"
    skip = {"wall_seconds", "events_per_second", "wall"}
    for k in sm:
        if k not in skip:
            assert sr[k] == sm[k], f"summary {k}: RTL {sr[k]!r} != model {sm[k]!r}"
    assert qm_r.counters == qm_m.counters
    snap_r, snap_m = qm_r.snapshot(), qm_m.snapshot()
    assert snap_r == snap_m
    return sm, sr


def test_closed_loop_fpq_n75_60s():
    """Fig. 9 set-up, FPQ, N = 75, 60 s simulated (`make test`)."""
    runs = closed_loop("fpq", 75, 60.0)
    sm, sr = compare_runs(runs)
    assert sm["transfers"]["count"] > 100 and sm["drops"] > 10
    n = len(runs["rtl"][1].verdicts)
    record({"arrivals": n, "cycles": runs["rtl"][2].cycles,
            "coverage": {"closed-loop arrivals": n,
                         "closed-loop transfers": sm["transfers"]["count"]}})


@pytest.mark.long
@pytest.mark.parametrize("discipline", ["fpq", "red"])
def test_closed_loop_n75_300s(discipline):
    """Fig. 9 set-up, N = 75, 300 s simulated, FPQ and RED (`make test-long`)."""
    runs = closed_loop(discipline, 75, 300.0)
    sm, _ = compare_runs(runs)
    assert sm["transfers"]["count"] > 1000
    n = len(runs["rtl"][1].verdicts)
    record({"arrivals": n, "cycles": runs["rtl"][2].cycles,
            "coverage": {"closed-loop arrivals": n,
                         "closed-loop transfers": sm["transfers"]["count"]}})


def test_replay_report():
    cfg, events = tcp_trace("red", 300, 25_000)
    expected = Model(cfg).run(events)
    text = replay(cfg, events, expected)
    assert "every field of every verdict" in text and "25000 verdicts" in text
    bad = list(expected)
    bad[100] = bad[100]._replace(prob=bad[100].prob ^ 1)
    text = replay(cfg, events, bad)
    assert "MISMATCH at verdict 100" in text


def test_lean_harness_commits_match_the_model():
    """configure() between events (mode, tables, seeds, v_max wipe) on the lean harness."""
    from fpq import Config
    cfg = Config(mode="fpq", tick_hz=1e6, t_clear_s=0.1, wq_shift=4, limit_pkts=150,
                 ecn=True)
    changes = [dict(mode="red", red_min_th=3, red_max_th=20, red_max_p=0.2),
               dict(p_pkts=5.0, mode="fpq"), dict(seed_decide=5, seed_clear=6),
               dict(v_max=3000, t_clear_s=0.06), dict(mode="droptail", limit_pkts=20)]
    rtl, model = VerilatedQueueManager(cfg), Model(cfg)
    c = cfg
    for i, ch in enumerate(changes + [{}]):
        ev = synthetic(c, 4000, seed=80 + i)
        assert rtl.run(ev) == model.run(ev)
        if ch:
            c = c.replace(**ch)
            rtl.configure(c)
            model.configure(c)
    assert rtl.counters == model.counters
    assert rtl.snapshot() == model.snapshot()


LONG_TRACES = [("fpq", 75), ("fpq", 2000), ("red", 300), ("red", 2000)]


@pytest.mark.long
@pytest.mark.parametrize("discipline,flows", LONG_TRACES)
def test_long_tcp_trace_bit_exact(discipline, flows):
    """1.25M TCP-driven arrivals per trace, 4 traces: 5M arrivals, every verdict field,
    counters and telemetry compared (`make test-long`)."""
    cfg, events = tcp_trace(discipline, flows, 1_250_000)
    model = Model(cfg)
    expected = model.run(events)
    rtl = VerilatedQueueManager(cfg)
    got = rtl.run(events)
    assert len(got) == len(expected) == 1_250_000
    for i, (g, e) in enumerate(zip(got, expected)):
        if g != e:
            raise AssertionError(f"verdict {i}: RTL {g} != model {e}")
    assert rtl.counters == model.counters
    assert rtl.snapshot() == model.snapshot()
    record({"arrivals": len(got), "cycles": rtl.cycles, "coverage": {}})
