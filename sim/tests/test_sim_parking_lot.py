"""The parking-lot topology (fpq_sim.parkinglot): validation, routing, packet conservation,
per-flow accounting."""

import os

import pytest

from fpq_sim.parkinglot import (load_parking_lot, validate_parking_lot, ParkingLot,
                                class_stats)
from fpq_sim.scenario import ScenarioError
from conservation import run_checking_conservation

SCEN = os.path.join(os.path.dirname(__file__), "..", "scenarios", "parking-lot.toml")


def _doc(hops=3, route_long="long", disc="fpq"):
    q = {"discipline": disc, "model": "float"}
    if disc == "fpq":
        q["p_pkts"] = 21.7
    if disc == "red":
        q.update(red_min_th=5.0, red_max_th=45.0, red_max_p=0.02)
    # starts spread over 5 s: with all flows in slow start at once, RED's average can stay
    # above max_th after the burst (the queue managers stop the idle decay at an arrival they
    # drop), and a router then refuses every packet
    g = {"count": 4, "tcp": "tahoe", "access_bw_bps": 1e7, "access_delay_s": [0.0, 0.01],
         "workload": "bulk", "start_jitter_s": 5.0, "delayed_ack": True}
    return {"name": "pl", "topology": {"hops": hops},
            "run": {"duration_s": 30.0, "warmup_s": 5.0, "seed": 2},
            "bottleneck": {"bandwidth_bps": 1e6, "delay_s": 0.015},
            "queue": q,
            "flows": [dict(g, route=route_long), dict(g, route="cross")]}


def test_validation_names_the_key():
    with pytest.raises(ScenarioError, match="topology.hops"):
        validate_parking_lot(_doc(hops=1))
    with pytest.raises(ScenarioError, match=r"flows\[0\].route"):
        validate_parking_lot(_doc(route_long="diagonal"))
    d = _doc()
    del d["topology"]
    with pytest.raises(ScenarioError, match="topology"):
        validate_parking_lot(d)
    d = _doc()
    d["flows"][1]["count"] = 0
    with pytest.raises(ScenarioError, match=r"flows\[1\].count"):
        validate_parking_lot(d)


def test_shipped_parking_lot_scenario_validates():
    sc = load_parking_lot(SCEN, ["topology.hops=4"])
    assert sc["topology"]["hops"] == 4
    assert [g["route"] for g in sc["flows"]] == ["long", "cross"]
    # the parking lot's own checks, naming the file: hops out of range, an unknown route
    with pytest.raises(ScenarioError, match=r"parking-lot.toml: topology.hops: 17 must be"):
        load_parking_lot(SCEN, ["topology.hops=17"])
    with pytest.raises(ScenarioError, match=r"parking-lot.toml: flows\[1\].route: 'ring'"):
        load_parking_lot(SCEN, ["flows.1.route=ring"])


def test_routes_long_flows_cross_every_router_cross_flows_one():
    net = ParkingLot(validate_parking_lot(_doc(hops=3)))
    # 4 long flows, then 4 cross flows at each of the 3 hops
    assert net.routes == ["long"] * 4 + ["cross0"] * 4 + ["cross1"] * 4 + ["cross2"] * 4
    assert net.last_hop == [2] * 4 + [0] * 4 + [1] * 4 + [2] * 4
    net.run()
    s = net.summary()
    a = [r["arrivals"] for r in s["routers"]]
    # each router carries the long flows and its own cross flows; the long flows' packets
    # that R0 and R1 dropped never reach the later routers
    assert all(x > 500 for x in a)
    # every packet of a long flow leaves a queue at each of the 3 routers (less the few
    # dropped on the way); a cross flow's at one
    for i, route in enumerate(net.routes):
        visits = net.qdelay_n[i] / s["flows"][i]["sent"]
        if route == "long":
            assert 2.8 < visits < 3.1        # packets queued before the warm-up: a bit over
        else:
            assert 0.9 < visits < 1.1
    cl = class_stats(s)
    assert set(cl) == {"long", "cross0", "cross1", "cross2"}
    assert cl["long"]["e2e_queueing_delay_s"] == pytest.approx(
        3 * cl["long"]["avg_queueing_delay_s"])


@pytest.mark.parametrize("disc", ["fpq", "red", "codel"])
def test_packet_conservation_in_the_parking_lot(disc):
    net = ParkingLot(validate_parking_lot(_doc(disc=disc)))
    run_checking_conservation(net, (2.7, 9.1, 17.4, 28.8))
    assert net.lost_total() > 0
    s = net.summary()
    # per-flow drops add up to the routers' drops after the warm-up
    assert sum(f["dropped"] for f in s["flows"]) == sum(r["drops"] for r in s["routers"])
    assert all(0.5 < r["utilisation"] <= 1.0 + 1e-9 for r in s["routers"])


def test_ns2_idle_rule_keeps_red_from_locking_up():
    # All 8 flows of each router start within 1 s: the slow-start burst takes RED's average
    # over max_th; with seed 2 the last router then refuses every packet when an arrival it
    # drops stops the idle decay (the float model's own rule). ns-2's rule (an arrival
    # dropped at an empty queue leaves it idle) keeps the router working.
    def run(ns2_idle):
        d = _doc(disc="red")
        d["run"]["seed"] = 2
        d["queue"]["ns2_idle"] = ns2_idle
        for g in d["flows"]:
            g["start_jitter_s"] = 1.0
        net = ParkingLot(validate_parking_lot(d))
        net.run()
        return [r["utilisation"] for r in net.summary()["routers"]]
    assert min(run(False)) < 0.05
    assert min(run(True)) > 0.9


def test_ns2_idle_rule_on_the_float_model():
    from fpq.config import Config
    from fpq.float_model import FloatQueueManager
    from fpq.queue_manager import Arrival, DROP_EARLY
    from fpq_sim.ns2idle import Ns2IdleRule
    cfg = Config(mode="red", red_min_th=5.0, red_max_th=45.0, red_max_p=0.02)
    for wrap in (False, True):
        qm = FloatQueueManager(cfg)
        q = Ns2IdleRule(qm, port_busy=lambda: False) if wrap else qm
        qm.avg, qm.idle = 100.0, False        # far above max_th, queue empty, not idle
        ts = int(2.0 * cfg.tick_hz)
        v = q.arrive(Arrival(ts, 1, 576))
        assert v.action == DROP_EARLY and qm.occ_pkts == 0
        # the model's rule: still not idle; ns-2's: idle from the arrival on
        assert qm.idle is wrap
        if wrap:
            assert qm.idle_since == ts / cfg.tick_hz and q.idle_restarts == 1
