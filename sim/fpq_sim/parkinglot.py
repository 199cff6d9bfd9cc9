"""A parking-lot network: routers R0 -> R1 -> ... -> Rh in a chain, ``hops`` links with the
same queue discipline, long flows that cross every link and cross flows that cross one.

The FPQ paper's Fig. 6 argues that FPQ's choice of target queue works when a flow crosses
several FPQ routers: each router applying its target loss rate l_t would make a long flow see
about ``hops`` times it, so its window would shrink into timeouts; instead each router scales
its rate by ``q_a / q_t`` (its measured queue against its target), and a router whose queue
stays short because the flows' windows are split over several queues drops less. This module
builds the topology to measure that claim.

Scenario files (``sim/scenarios/parking-lot.toml``) are dumbbell scenarios
(``fpq_sim.scenario``) with two additions: ``[topology] hops = H`` (2..16), and a ``route`` key
in every ``[[flows]]`` group: ``"long"`` (R0 -> RH) or ``"cross"`` (one group of this many
flows at each hop i, entering at Ri and leaving at Ri+1). ``[bottleneck]`` describes every
link of the chain (bandwidth, propagation delay); ``[queue]`` every router's output queue
(each router gets its own random seeds). ACKs return over uncongested reverse links with each
hop's propagation delay and no serialisation (40-byte ACKs at 1 Mbit/s take 0.3 ms a hop, far
below the queueing delays studied), then over the sender's access link.

Statistics, per flow after the warm-up: packets delivered in order (throughput), packets
sent, packets dropped at any router, queueing delay summed over the routers crossed (mean per
packet that left a queue), retransmission timeouts. Per router: the port's statistics as in
the dumbbell, and FPQ's target queue q_t for its measured flow count.
"""

import copy
import random

import numpy as np

from fpq.drop_probability import lt_qt_float

from .network import TcpHosts, attach_queue_manager, queue_manager, tcp_params
from .router import OutputPort
from .scenario import ScenarioError, load, validate, queue_config
from .tcp import Counters

__all__ = ["ParkingLot", "validate_parking_lot", "load_parking_lot", "run_parking_lot"]

ROUTES = ("long", "cross")


def validate_parking_lot(doc):
    """Check a parking-lot scenario (see the module); returns the validated dict with
    ``topology.hops`` and each group's ``route``."""
    if not isinstance(doc, dict):
        raise ScenarioError("scenario: must be a table")
    doc = copy.deepcopy(doc)
    topo = doc.pop("topology", None)
    if not isinstance(topo, dict) or set(topo) != {"hops"}:
        raise ScenarioError("topology: a [topology] table with exactly the key hops is "
                            "required")
    hops = topo["hops"]
    if isinstance(hops, bool) or not isinstance(hops, int) or not 2 <= hops <= 16:
        raise ScenarioError(f"topology.hops: {hops!r} must be an integer in [2, 16]")
    routes = []
    for i, g in enumerate(doc.get("flows") or []):
        if not isinstance(g, dict):
            continue
        r = g.pop("route", None)
        if r not in ROUTES:
            raise ScenarioError(f"flows[{i}].route: {r!r} must be one of {', '.join(ROUTES)}")
        routes.append(r)
    sc = validate(doc)
    if sc["floods"]:
        raise ScenarioError("floods: a parking lot has no flood sources (fpq_sim.flood feeds "
                            "the dumbbell's bottleneck)")
    sc["topology"] = {"hops": hops}
    for g, r in zip(sc["flows"], routes):
        g["route"] = r
    return sc


def load_parking_lot(path, sets=()):
    """Read, override (``--set`` strings) and validate a parking-lot scenario file."""
    return load(path, sets, validate_parking_lot)


class ChainPort(OutputPort):
    """A router output port in the chain: a packet that has finished its last hop goes to its
    receiver, any other to the next router (``last_hop[flow index]``: a flow's last port)."""
    __slots__ = ("index", "next_port", "last_hop")

    def _next_hop(self, pkt):
        if self.last_hop[pkt.conn.index] == self.index:
            return pkt.conn.receiver.on_data
        return self.next_port.arrive


def _router_qm(sc, i):
    """Router i's queue manager: the scenario's discipline with seeds of its own."""
    if sc["queue"]["model"] == "rtl":
        raise ScenarioError("queue.model: the parking lot runs the exact or the float model")
    sc_i = copy.deepcopy(sc)
    params = sc_i["queue"]["params"]
    base = sc["run"]["seed"] * 64 + i
    params.setdefault("seed_decide", (base * 2 + 1) % 2**64)
    params.setdefault("seed_clear", (base * 2 + 2) % 2**64)
    cfg = queue_config(sc_i)
    qm, p_one = queue_manager(sc_i, cfg)
    return qm, cfg, p_one


class ParkingLot(TcpHosts):
    """A parking-lot scenario, built and ready to run (``run``, ``summary``)."""

    def __init__(self, sc):
        super().__init__(sc)
        run, b = sc["run"], sc["bottleneck"]
        hops = sc["topology"]["hops"]
        sim = self.sim
        self.qms, self.configs = [], []
        self.last_hop = []        # per flow: the index of its last router
        self.flow_counters = []   # per flow: its sender's and receiver's Counters
        for i in range(hops):
            qm, cfg, p_one = _router_qm(sc, i)
            port = ChainPort(sim, qm, b["bandwidth_bps"], b["delay_s"], cfg.tick_hz, 0.0,
                             random.Random(run["seed"] ^ (0x5EED + i)), None, p_one)
            port.index = i
            port.last_hop = self.last_hop
            attach_queue_manager(port, qm)
            port.on_drop = self._on_drop
            port.on_depart = self._on_depart
            self.ports.append(port)
            self.qms.append(qm)
            self.configs.append(cfg)
        for a, c in zip(self.ports, self.ports[1:]):
            a.next_port = c
        self.ports[-1].next_port = None
        self.routes = []
        total = 0
        for g in sc["flows"]:
            total += g["count"] * (hops if g["route"] == "cross" else 1)
        for g in sc["flows"]:
            params = tcp_params(g, b)
            spans = [(0, hops - 1)] if g["route"] == "long" else [(i, i) for i in range(hops)]
            for first, last in spans:
                # the ACK path: the hops crossed, propagation only
                ret = sum(p.delay for p in self.ports[first:last + 1])
                for _ in range(g["count"]):
                    counters = Counters()
                    self.flow_counters.append(counters)
                    self.last_hop.append(last)
                    self._add_host(g, params, total, self.ports[first],
                                   lambda t, _size, ret=ret: t + ret, counters)
                    self.routes.append("long" if g["route"] == "long" else f"cross{first}")
        n = len(self.senders)
        self.dropped = [0] * n
        self.qdelay = [0.0] * n
        self.qdelay_n = [0] * n
        self.warm_delivered = [0] * n
        self.warmup = run["warmup_s"]
        if self.warmup > 0:
            sim.at(self.warmup, self._end_warmup, None)

    def _on_drop(self, pkt):
        self.dropped[pkt.conn.index] += 1

    def _on_depart(self, pkt, d):
        i = pkt.conn.index
        self.qdelay[i] += d
        self.qdelay_n[i] += 1

    def _end_warmup(self, _):
        now = self.sim.now
        for p in self.ports:
            p.reset_stats(now)
        n = len(self.senders)
        self.warm_delivered = [r.delivered for r in self.receivers]
        self.dropped = [0] * n
        self.qdelay, self.qdelay_n = [0.0] * n, [0] * n
        self.warm_counters = [c.as_dict() for c in self.flow_counters]

    @property
    def counters(self):
        """All flows' counters added up."""
        total = Counters()
        for c in self.flow_counters:
            for k in Counters.__slots__:
                setattr(total, k, getattr(total, k) + getattr(c, k))
        return total

    def summary(self):
        sc, hops = self.sc, self.sc["topology"]["hops"]
        end = self.sim.now
        span = end - (self.warmup if self.warmup < end else 0.0)
        b = sc["bottleneck"]
        cap = b["bandwidth_bps"] / (8.0 * b["packet_bytes"])
        routers = []
        for i, (port, cfg) in enumerate(zip(self.ports, self.configs)):
            port.finish_stats(end)
            n_avg = port.n_sum / port.arrivals if port.arrivals else 0.0
            r = {"hop": i, "arrivals": port.arrivals, "drops": port.drops,
                 "loss_rate": port.drops / port.arrivals if port.arrivals else 0.0,
                 "avg_queue_pkts": port.q_area / span if span > 0 else 0.0,
                 "avg_delay_s": port.delay_sum / port.departures if port.departures else 0.0,
                 "utilisation": port.busy_time / span if span > 0 else 0.0,
                 "avg_flow_count": n_avg}
            if sc["queue"]["discipline"] == "fpq":
                r["fpq_target_q_t"], r["fpq_target_l_t"] = lt_qt_float(
                    n_avg, cfg.p_pkts, cfg.lt_plus_one)
            routers.append(r)
        flows = []
        warm = getattr(self, "warm_counters", None)
        for i, (s, rc) in enumerate(zip(self.senders, self.receivers)):
            delivered = rc.delivered - self.warm_delivered[i]
            c = self.flow_counters[i].as_dict()
            if warm:
                c = {k: v - warm[i][k] for k, v in c.items()}
            flows.append({"route": self.routes[i], "timeouts": c["timeouts"],
                          "fast_retx": c["fast_retx"],
                          "throughput_pkts_per_s": delivered / span if span > 0 else 0.0,
                          "sent": c["data_sent"], "dropped": self.dropped[i],
                          "loss_rate": (self.dropped[i] / c["data_sent"] if c["data_sent"]
                                        else 0.0),
                          "avg_queueing_delay_s": (self.qdelay[i] / self.qdelay_n[i]
                                                   if self.qdelay_n[i] else 0.0)})
        return {"scenario": sc["name"], "discipline": sc["queue"]["discipline"],
                "model": sc["queue"]["model"], "hops": hops, "seed": sc["run"]["seed"],
                "duration_s": end, "warmup_s": self.warmup, "link_pkts_per_s": cap,
                "routers": routers, "flows": flows,
                "tcp": {k: sum(f[k] for f in flows) for k in ("timeouts", "fast_retx")},
                "events": self.sim.events, "wall_seconds": self.wall}


def run_parking_lot(sc):
    """Build, run and summarise a validated parking-lot scenario (picklable entry point)."""
    net = ParkingLot(sc)
    net.run()
    return net.summary()


def class_stats(summary):
    """Per flow class (``long``, ``cross0``, ...): mean throughput per flow, loss rate of the
    class's packets, queueing delay per router crossed and end to end (per hop x hops
    crossed), timeouts per flow."""
    out = {}
    for f in summary["flows"]:
        out.setdefault(f["route"], []).append(f)
    res = {}
    for cls, fs in out.items():
        sent = sum(f["sent"] for f in fs)
        res[cls] = {"flows": len(fs),
                    "throughput_pkts_per_s": float(np.mean([f["throughput_pkts_per_s"]
                                                            for f in fs])),
                    "loss_rate": sum(f["dropped"] for f in fs) / sent if sent else 0.0,
                    "avg_queueing_delay_s": float(np.mean([f["avg_queueing_delay_s"]
                                                           for f in fs])),
                    "e2e_queueing_delay_s": float(np.mean([f["avg_queueing_delay_s"]
                                                           for f in fs]))
                    * (summary["hops"] if cls == "long" else 1),
                    "timeouts_per_flow": float(np.mean([f["timeouts"] for f in fs]))}
    return res
