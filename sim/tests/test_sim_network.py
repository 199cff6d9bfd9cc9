"""The dumbbell network: packet conservation, statistics, queue disciplines, determinism."""

import glob
import os

import pytest

from fpq_sim.network import Network
from fpq_sim.scenario import load, validate
from conservation import run_checking_conservation

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SCEN = os.path.join(ROOT, "sim", "scenarios")


def small(discipline="red", count=20, tcp="tahoe", workload="transfers", loss=0.0,
          duration=40.0, warmup=5.0, seed=3, limit=0, model="exact", delayed_ack=True, **queue):
    q = {"discipline": discipline, "model": model, "limit_pkts": limit}
    if discipline == "red":
        q.update(red_min_th=5.0, red_max_th=45.0, red_max_p=0.02)
    if discipline == "fpq":
        q.update(p_pkts=21.7)
    q.update(queue)
    return validate({
        "name": "small",
        "run": {"duration_s": duration, "warmup_s": warmup, "seed": seed},
        "bottleneck": {"bandwidth_bps": 1e6, "delay_s": 0.045, "loss_rate": loss},
        "queue": q,
        "flows": [{"count": count, "tcp": tcp, "access_bw_total_bps": 1e8,
                   "access_delay_s": [0.0, 0.01], "workload": workload, "transfer_pkts": 10,
                   "start_jitter_s": 1.0, "delayed_ack": delayed_ack}],
    })


@pytest.mark.parametrize("tcp", ["tahoe", "reno", "newreno"])
@pytest.mark.parametrize("discipline,loss,limit", [("red", 0.0, 0), ("droptail", 0.02, 12),
                                                   ("fpq", 0.01, 0)])
def test_packet_conservation(tcp, discipline, loss, limit):
    """Every data packet sent is delivered, dropped (queue or wire) or still in flight; every
    ACK sent is delivered or in flight. Checked at several cut times mid-run."""
    net = Network(small(discipline, count=60, tcp=tcp, loss=loss, limit=limit,
                        workload="bulk" if tcp == "reno" else "transfers"))
    seen_inflight = sum(run_checking_conservation(net, (3.3, 11.7, 25.0, 31.9)))
    assert net.port.lost_total > 0              # the check is not vacuous: losses happened
    assert net.counters.data_retx > 0 and seen_inflight > 0


def test_summary_statistics_are_consistent():
    net = Network(small("red", count=40)).run()
    s = net.summary()
    assert 0 < s["loss_rate"] < 1
    assert s["drops"] == s["early_drops"] + s["forced_drops"]
    assert 0.5 < s["utilisation"] <= 1.0 + 1e-9
    cap = 1e6 / (8 * 576)
    # goodput never exceeds the link (give or take the packets on the wire or held out of
    # order at the receivers when the measurement started), and most of the busy time is
    # new data
    assert 0.8 * cap * s["utilisation"] < s["goodput_pkts_per_s"] <= cap * 1.01
    assert sum(s["flows"]) == pytest.approx(s["goodput_pkts_per_s"] * 35.0, rel=1e-9)
    t = s["transfers"]
    assert t["count"] > 100 and t["p5"] <= t["p50"] <= t["p95"]
    # a 10-packet transfer needs at least 4 round trips of >= 90 ms plus its own serialisation
    assert t["p5"] > 4 * 0.09
    assert s["events"] > 0 and s["wall_seconds"] > 0


def test_delay_percentiles_are_those_of_the_packets_after_the_warm_up():
    import numpy as np
    from fpq_sim.router import DELAY_BIN_S
    net = Network(small("red", count=40))
    delays = []
    net.port.on_depart = lambda pkt, d: delays.append(d) if net.sim.now >= 5.0 else None
    s = net.run().summary()
    assert len(delays) == net.port.departures > 1000
    for q, key in ((50, "delay_p50_s"), (99, "delay_p99_s")):
        exact = float(np.percentile(delays, q, method="inverted_cdf"))
        assert s[key] == pytest.approx(np.floor(exact / DELAY_BIN_S) * DELAY_BIN_S)
    assert 0 < s["delay_p50_s"] < s["delay_p99_s"]


def test_queue_manager_sees_every_arrival_and_departure():
    net = Network(small("fpq", count=30)).run()
    cnt = net.qm.counters
    assert cnt["arrivals"] > 1000
    assert cnt["early_drops"] + cnt["forced_drops"] == net.port.lost_total   # no wire loss here
    assert cnt["dep_errors"] == 0
    # the manager's occupancy equals the packets waiting in the port's FIFO
    assert net.qm.occ_pkts == len(net.port.queue)
    assert cnt["enqueued"] == cnt["departures"] + len(net.port.queue)


def test_hard_limit_bounds_the_queue():
    net = Network(small("droptail", count=60, limit=8)).run()
    assert net.qm.max_queue <= 8
    s = net.summary()
    assert s["forced_drops"] > 0 and s["early_drops"] == 0


def test_float_and_exact_models_both_run():
    a = Network(small("fpq", count=30, model="exact")).run().summary()
    b = Network(small("fpq", count=30, model="float")).run().summary()
    for s in (a, b):
        assert s["transfers"]["count"] > 0 and s["utilisation"] > 0.9


def test_same_seed_same_run_other_seed_other_run():
    a = Network(small("red", count=25, seed=7)).run().summary()
    b = Network(small("red", count=25, seed=7)).run().summary()
    c = Network(small("red", count=25, seed=8)).run().summary()
    strip = lambda s: {k: v for k, v in s.items() if k not in ("wall_seconds",
                                                                "events_per_second")}
    assert strip(a) == strip(b)
    assert strip(a) != strip(c)


def test_uniform_wire_loss_rate():
    # a single bulk flow with a large bottleneck queue: every loss is a wire loss
    s = Network(small("droptail", count=3, workload="bulk", loss=0.1, duration=120.0)).run() \
        .summary()
    assert s["drops"] == 0
    assert s["loss_rate"] == pytest.approx(0.1, abs=0.015)


def test_fpq_keeps_loss_low_where_red_loses_more():
    """The paper's qualitative claim at N = 75 (short runs): FPQ's loss rate is lower and its
    queue longer than the traditional RED router's."""
    red = Network(small("red", count=75, duration=60.0)).run().summary()
    fq = Network(small("fpq", count=75, duration=60.0)).run().summary()
    assert fq["loss_rate"] < red["loss_rate"] / 2
    assert fq["avg_queue_pkts"] > 2 * red["avg_queue_pkts"]


def test_all_shipped_scenarios_validate():
    from fpq_sim.parkinglot import load_parking_lot
    files = sorted(glob.glob(os.path.join(SCEN, "*.toml")))
    assert len(files) >= 4
    for f in files:
        with open(f) as fh:
            multi_hop = "[topology]" in fh.read()
        sc = load_parking_lot(f) if multi_hop else load(f)
        assert sc["name"]


@pytest.mark.parametrize("p", [0.005, 0.02])
def test_bulk_newreno_throughput_follows_the_mathis_formula(p):
    """One bulk NewReno flow, RTT 0.1 s, uniform loss p, no queueing: throughput close to
    sqrt(3/2) / (RTT sqrt(p)) packets/s, and not above it by more than noise."""
    sc = load(os.path.join(SCEN, "validation-mathis.toml"), [f"bottleneck.loss_rate={p}"])
    s = Network(sc).run().summary()
    formula = (1.5 / p) ** 0.5 / 0.1
    assert 0.75 * formula < s["goodput_pkts_per_s"] < 1.05 * formula
    assert s["loss_rate"] == pytest.approx(p, rel=0.25)
