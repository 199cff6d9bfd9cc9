"""Builds the papers' dumbbell from a validated scenario, runs it, and summarises it.

Topology (FPQ paper Fig. 8, 1997 paper Fig. 1): each sender has its own access link to router
A; A's output port to B is the bottleneck (the queue discipline lives there); receivers sit at
B. ACKs return over a B -> A link (bottleneck bandwidth unless set, same delay) and the
sender's access link, each a FIFO with serialisation and propagation delay (no losses: ACK
paths are far from full in these scenarios). Floods of spoofed tuples (``[[floods]]``,
``fpq_sim.flood``) send straight into A's output port.
"""

import math
import random
import time

import numpy as np

import fpq
from fpq.float_model import FloatQueueManager
from fpq.formats import PROB_ONE

from .codel import CoDel
from .engine import Simulator, Link
from .flood import Flood, FloodAccounting, tcp_class
from .ns2idle import Ns2IdleRule
from .pie import PIE
from .router import OutputPort
from .scenario import queue_config
from .tcp import TcpParams, Receiver, Counters
from .tcp_sack import sender_class

__all__ = ["Network", "run_scenario", "summarise"]


def _draw(rng, value):
    return rng.uniform(value[0], value[1]) if isinstance(value, list) else value


class Network:
    """A scenario, built and ready to run. ``trace=True`` records the bottleneck descriptors;
    ``qm`` overrides the queue manager (any object with ``arrive``/``depart``; then
    ``port.p_one``, the verdict probability meaning "drop all", is unknown unless ``qm`` is one
    of the two models: set it to count saturated drops)."""

    def __init__(self, sc, trace=False, qm=None, log=None):
        self.sc = sc
        run, b = sc["run"], sc["bottleneck"]
        self.rng = random.Random(run["seed"])
        self.sim = sim = Simulator()
        self.counters = Counters()
        self.config = cfg = queue_config(sc)
        p_one = None
        q = sc["queue"]
        if qm is None and q["discipline"] == "codel":
            qm = CoDel(cfg.tick_hz, q["codel_target_s"], q["codel_interval_s"], q["limit_pkts"])
        elif qm is None and q["discipline"] == "pie":
            qm = PIE(cfg.tick_hz, cfg.seed_decide, q["pie_qdelay_ref_s"], q["pie_t_update_s"],
                     q["pie_max_burst_s"], q["pie_alpha"], q["pie_beta"],
                     q["pie_derandomize"], q["limit_pkts"])
        if qm is None:
            model = sc["queue"]["model"]
            if model == "exact":
                qm, p_one = fpq.QueueManager(cfg), PROB_ONE
            elif model == "float":
                qm, p_one = FloatQueueManager(cfg), 1.0
                if q["ns2_idle"]:
                    qm = Ns2IdleRule(qm)
            else:
                try:
                    from fpq_hdl.verilated import VerilatedQueueManager
                except ImportError as exc:
                    raise ValueError(f"queue.model: 'rtl' needs the fpq_hdl.verilated package "
                                     f"(installed by make): "
                                     f"{exc}") from None
                qm, p_one = VerilatedQueueManager(cfg), PROB_ONE
                wait = sc["queue"]["verdict_wait"]
                if wait < qm.latency:
                    raise ValueError(f"queue.verdict_wait: {wait} clocks is less than the "
                                     f"RTL's latency; allowed range [{qm.latency}, "
                                     f"{1 << 20}] with queue.model = 'rtl' (and the same in "
                                     f"runs compared with it)")
        elif isinstance(qm, fpq.QueueManager):
            p_one = PROB_ONE
        elif isinstance(qm, FloatQueueManager):
            p_one = 1.0
        self.qm = qm
        self.trace = [] if trace else None
        self.port = OutputPort(sim, qm, b["bandwidth_bps"], b["delay_s"], cfg.tick_hz,
                               b["loss_rate"], random.Random(run["seed"] ^ 0x5EED), self.trace,
                               p_one, sc["queue"]["verdict_wait"])
        if isinstance(qm, Ns2IdleRule):
            qm.port_busy = lambda port=self.port: port.busy
            self.port.on_idle = qm.link_idle
        self.reverse = Link(b["reverse_bandwidth_bps"] or b["bandwidth_bps"], b["delay_s"])
        self.transfers = []          # (flow index, start, end)
        self.senders, self.receivers, self.groups = [], [], []
        total = sum(g["count"] for g in sc["flows"])
        # random streams of their own, so that adding them left every other draw unchanged:
        # the phases of the hosts' tick clocks, and the senders' overhead and telnet delays
        self.clock_rng = random.Random(run["seed"] ^ 0xB0071)
        self.send_rng = random.Random(run["seed"] ^ 0x5E4D)
        pkt_time = b["packet_bytes"] * 8.0 / b["bandwidth_bps"]
        index = 0
        for gi, g in enumerate(sc["flows"]):
            pkt = b["packet_bytes"]
            params = TcpParams(
                variant=g["tcp"], max_window=max(1, g["max_window_bytes"] // pkt),
                tick=g["tick_s"], rto_init=g["rto_init_s"], rto_min=g["rto_min_s"],
                rto_max=g["rto_max_s"], max_backoff=g["max_backoff"],
                dupack_threshold=g["dupack_threshold"], delayed_ack=g["delayed_ack"],
                delack_timeout=g["delack_timeout_s"], delack_tick=g["delack_tick"],
                ack_every=g["ack_every"],
                transfer_pkts=g["transfer_pkts"] if g["workload"] == "transfers" else None,
                think_time=g["think_s"], packet_bytes=pkt, ack_bytes=b["ack_bytes"],
                limited_transmit=g["limited_transmit"], rtt_timestamps=g["rtt_timestamps"],
                send_overhead=g["send_overhead_pkt_times"] * pkt_time)
            app = g["telnet_interval_s"] if g["workload"] == "telnet" else None
            for _ in range(g["count"]):
                bw = (g["access_bw_total_bps"] / total if g["access_bw_total_bps"]
                      else _draw(self.rng, g["access_bw_bps"]))
                delay = _draw(self.rng, g["access_delay_s"])
                boot = self.clock_rng.uniform(0.0, params.tick)
                self._add_flow(index, gi, params, bw, delay, log, boot, app)
                start = g["start_s"] + self.rng.uniform(0.0, g["start_jitter_s"])
                sim.at(start, self.senders[-1].start, None)
                index += 1
        # each flood draws from a random stream of its own (the other streams stay as they are)
        self.floods = [Flood(sim, spec, self.port.arrive,
                             random.Random(f"flood-{run['seed']}-{i}"), run["duration_s"])
                       for i, spec in enumerate(sc.get("floods", ()))]
        self.flood_accounting = FloodAccounting(self.port, self.floods) if self.floods else None
        self.warm_delivered = [0] * index
        self.warm_counters = self.counters.as_dict()
        self.warmup = run["warmup_s"]
        if self.warmup > 0:
            sim.at(self.warmup, self._end_warmup, None)
        self.wall = 0.0

    def _add_flow(self, index, group, params, bw, delay, log, boot_time=0.0, app=None):
        sim = self.sim
        fwd, back = Link(bw, delay), Link(bw, delay)
        port_arrive, reverse = self.port.arrive, self.reverse
        at = sim.at
        # 10.0.0.0/16 senders, 10.1.0.0/16 receivers, one port pair per flow
        key = fpq.pack_flow(0x0A000000 + index + 1, 0x0A010000 + index + 1,
                            1024 + index % 60000, 80, 6)

        def send_data(pkt):
            at(fwd.pass_through(sim.now, pkt.size), port_arrive, pkt)

        sender = sender_class(params.variant)(
            sim, params, index, send_data, self.counters, self._transfer_done, key, log,
            rng=self.send_rng, boot_time=boot_time, app_interval=app)

        def send_ack(pkt, on_ack=sender.on_ack):
            size = pkt.size
            at(back.pass_through(reverse.pass_through(sim.now, size), size), on_ack, pkt)

        receiver = Receiver(sim, params, index, send_ack, self.counters, log)
        sender.receiver, receiver.sender = receiver, sender
        self.senders.append(sender)
        self.receivers.append(receiver)
        self.groups.append(group)

    def _transfer_done(self, sender, start, end):
        self.transfers.append((sender.index, start, end))

    def _end_warmup(self, _):
        now = self.sim.now
        self.port.reset_stats(now)
        if self.flood_accounting is not None:
            self.flood_accounting.reset_stats()
        self.warm_delivered = [r.delivered for r in self.receivers]
        self.warm_counters = self.counters.as_dict()

    def run(self, until=None):
        until = self.sc["run"]["duration_s"] if until is None else until
        t0 = time.perf_counter()
        self.sim.run(until)
        self.wall += time.perf_counter() - t0
        return self

    # ---- accounting -------------------------------------------------------------------------
    def packets_in_flight(self):
        """(data, acks) packets scheduled to arrive somewhere, queued or on the wire (flood
        packets count as data)."""
        data = acks = 0
        for arg in self.sim.pending():
            if hasattr(arg, "is_ack"):
                if arg.is_ack:
                    acks += 1
                else:
                    data += 1
        return data + len(self.port.queue), acks

    def summary(self, transfer_times=False):
        return summarise(self, transfer_times)


def _pct(a, q):
    return float(np.percentile(a, q)) if len(a) else None


def summarise(net, transfer_times=False):
    sc, port = net.sc, net.port
    end = net.sim.now
    port.finish_stats(end)
    span = end - (net.warmup if net.warmup < end else 0.0)
    b = sc["bottleneck"]
    delivered = [r.delivered - w for r, w in zip(net.receivers, net.warm_delivered)]
    good = sum(delivered)
    lost = port.drops + port.wire_losses
    times = np.array([e - s for _, s, e in net.transfers if s >= net.warmup], dtype=float)
    cap_pps = b["bandwidth_bps"] / (8.0 * b["packet_bytes"])
    out = {
        "scenario": sc["name"],
        "discipline": sc["queue"]["discipline"],
        "model": ("float" if sc["queue"]["discipline"] in ("codel", "pie")
                  else sc["queue"]["model"]),
        "flows_total": len(net.senders),
        "duration_s": end,
        "warmup_s": net.warmup,
        "seed": sc["run"]["seed"],
        "arrivals": port.arrivals,
        "drops": port.drops,
        "early_drops": port.early_drops,
        "forced_drops": port.forced_drops,
        "saturated_drops": port.saturated_drops,
        "wire_losses": port.wire_losses,
        "loss_rate": lost / port.arrivals if port.arrivals else 0.0,
        "avg_queue_pkts": port.q_area / span if span > 0 else 0.0,
        "avg_delay_s": port.delay_sum / port.departures if port.departures else 0.0,
        "avg_flow_count": port.n_sum / port.arrivals if port.arrivals else 0.0,
        "utilisation": port.busy_time / span if span > 0 else 0.0,
        "goodput_pkts_per_s": good / span if span > 0 else 0.0,
        "goodput_fraction": good / span / cap_pps if span > 0 else 0.0,
        "transfers": {"count": int(times.size),
                      "mean": float(times.mean()) if times.size else None,
                      "p5": _pct(times, 5), "p50": _pct(times, 50), "p95": _pct(times, 95)},
        "flows": delivered,
        "tcp": {k: v - net.warm_counters[k] for k, v in net.counters.as_dict().items()},
        "queue_config": net.config.to_dict(),
        "events": net.sim.events,
        "wall_seconds": net.wall,
        "events_per_second": net.sim.events / net.wall if net.wall > 0 else None,
    }
    if net.flood_accounting is None:
        out["tcp_at_bottleneck"] = tcp_class(port)
    else:
        out["tcp_at_bottleneck"], out["floods"] = net.flood_accounting.summary()
    if transfer_times:
        out["transfer_times"] = times.tolist()
    return out


def run_scenario(sc, transfer_times=False):
    """Build, run and summarise a validated scenario (a picklable entry point for workers)."""
    net = Network(sc)
    net.run()
    return net.summary(transfer_times)
