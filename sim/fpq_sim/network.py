"""Builds the papers' dumbbell from a validated scenario, runs it, and summarises it.

Topology (FPQ paper Fig. 8, 1997 paper Fig. 1): each sender has its own access link to router
A; A's output port to B is the bottleneck (the queue discipline lives there); receivers sit at
B. ACKs return over a B -> A link (bottleneck bandwidth unless set, same delay) and the
sender's access link, each a FIFO with serialisation and propagation delay (no losses: ACK
paths are far from full in these scenarios). Floods of spoofed tuples (``[[floods]]``,
``fpq_sim.flood``) send straight into A's output port.
"""

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
from .stats import km_median, mean_lower_bound
from .tcp import TcpParams, Receiver, Counters
from .tcp_sack import sender_class

__all__ = ["Network", "TcpHosts", "run_scenario", "summarise", "tcp_params", "queue_manager",
           "attach_queue_manager", "unfinished_transfers"]


def _draw(rng, value):
    return rng.uniform(value[0], value[1]) if isinstance(value, list) else value


def tcp_params(group, bottleneck):
    """The TCP parameters of the hosts of a flow group.

    Parameters
    ----------
    group : dict
        One validated ``[[flows]]`` entry.
    bottleneck : dict
        The validated ``[bottleneck]`` table: its packet size turns the group's byte counts
        into packets, and its packet time scales ``send_overhead_pkt_times``.
    """
    g, b = group, bottleneck
    pkt = b["packet_bytes"]
    pkt_time = pkt * 8.0 / b["bandwidth_bps"]
    return TcpParams(
        variant=g["tcp"], max_window=max(1, g["max_window_bytes"] // pkt),
        tick=g["tick_s"], rto_init=g["rto_init_s"], rto_min=g["rto_min_s"],
        rto_max=g["rto_max_s"], max_backoff=g["max_backoff"],
        dupack_threshold=g["dupack_threshold"], delayed_ack=g["delayed_ack"],
        delack_timeout=g["delack_timeout_s"], delack_tick=g["delack_tick"],
        ack_every=g["ack_every"],
        transfer_pkts=g["transfer_pkts"] if g["workload"] == "transfers" else None,
        think_time=g["think_s"], packet_bytes=pkt, ack_bytes=b["ack_bytes"],
        limited_transmit=g["limited_transmit"], rtt_timestamps=g["rtt_timestamps"],
        send_overhead=g["send_overhead_pkt_times"] * pkt_time, ecn=g["ecn"],
        initial_window=g["initial_window_pkts"])


def queue_manager(sc, cfg):
    """The queue manager that a validated scenario's ``[queue]`` asks for, and ``p_one``.

    Parameters
    ----------
    sc : dict
        A validated scenario: ``queue.discipline`` and ``queue.model`` choose the manager.
    cfg : fpq.Config
        Its configuration (``fpq_sim.scenario.queue_config``): clock rate and seeds.

    Returns ``(qm, p_one)``: ``p_one`` is the verdict probability that means "drop all" (None
    for CoDel and PIE, which give no probability). The float model comes wrapped in
    ``Ns2IdleRule`` when ``queue.ns2_idle`` asks for it (``attach_queue_manager`` wires it to
    its port).
    """
    q = sc["queue"]
    if q["discipline"] == "codel":
        return CoDel(cfg.tick_hz, q["codel_target_s"], q["codel_interval_s"],
                     q["limit_pkts"], cfg.ecn), None
    if q["discipline"] == "pie":
        return PIE(cfg.tick_hz, cfg.seed_decide, q["pie_qdelay_ref_s"], q["pie_t_update_s"],
                   q["pie_max_burst_s"], q["pie_alpha"], q["pie_beta"], q["pie_derandomize"],
                   q["limit_pkts"], cfg.ecn), None
    model = q["model"]
    if model == "exact":
        return fpq.QueueManager(cfg), PROB_ONE
    if model == "float":
        qm = FloatQueueManager(cfg, hard_drop=q["red_hard_drop"])
        return (Ns2IdleRule(qm) if q["ns2_idle"] else qm), 1.0
    try:
        from fpq_hdl.verilated import VerilatedQueueManager
    except ImportError as exc:
        raise ValueError(f"queue.model: 'rtl' needs the fpq_hdl.verilated package "
                         f"(installed by make): "
                         f"{exc}") from None
    qm = VerilatedQueueManager(cfg)
    wait = q["verdict_wait"]
    if wait < qm.latency:
        raise ValueError(f"queue.verdict_wait: {wait} clocks is less than the "
                         f"RTL's latency; allowed range [{qm.latency}, "
                         f"{1 << 20}] with queue.model = 'rtl' (and the same in "
                         f"runs compared with it)")
    return qm, PROB_ONE


def attach_queue_manager(port, qm):
    """Let ``qm`` see ``port``'s link go idle when it follows ns-2's idle rule."""
    if isinstance(qm, Ns2IdleRule):
        qm.port_busy = lambda: port.busy
        port.on_idle = qm.link_idle


class TcpHosts:
    """What the dumbbell and the parking lot share: the random streams of a scenario's hosts,
    the hosts themselves (a TCP sender and receiver per flow, each behind an access link of
    its own), running, and packet accounting over the router ports in ``self.ports``.

    Four random streams, so that the draws of one never shift those of another: ``rng`` the
    access links and start times, ``clock_rng`` the phases of the hosts' tick clocks,
    ``send_rng`` the senders' overhead and telnet delays, ``address_rng`` the flows'
    5-tuples (:meth:`_flow_key`).
    """

    def __init__(self, sc):
        self.sc = sc
        seed = sc["run"]["seed"]
        self.rng = random.Random(seed)
        self.clock_rng = random.Random(seed ^ 0xB0071)
        self.send_rng = random.Random(seed ^ 0x5E4D)
        self.address_rng = random.Random(f"addresses-{seed}")
        self._senders_used = set()
        self.sim = Simulator()
        self.senders, self.receivers = [], []
        self.ports = []
        self.wall = 0.0

    def _add_host(self, group, params, total, port, ack_path, counters, on_transfer=None,
                  log=None):
        """Add one host of ``group``: draw its access link (bandwidth: the group's share of
        ``access_bw_total_bps`` among ``total`` hosts, or a draw) and clock phase, connect its
        sender through the access link to ``port`` and its receiver's ACKs back over
        ``ack_path(t, size)`` (the time an ACK handed over at ``t`` reaches the access link)
        and the access link, and schedule its start. Returns the sender."""
        sim, rng = self.sim, self.rng
        at = sim.at
        index = len(self.senders)
        bw = (group["access_bw_total_bps"] / total if group["access_bw_total_bps"]
              else _draw(rng, group["access_bw_bps"]))
        delay = _draw(rng, group["access_delay_s"])
        boot = self.clock_rng.uniform(0.0, params.tick)
        app = group["telnet_interval_s"] if group["workload"] == "telnet" else None
        fwd, back = Link(bw, delay), Link(bw, delay)
        port_arrive = port.arrive
        key = self._flow_key()

        def send_data(pkt):
            at(fwd.pass_through(sim.now, pkt.size), port_arrive, pkt)

        sender = sender_class(params.variant)(
            sim, params, index, send_data, counters, on_transfer, key, log,
            rng=self.send_rng, boot_time=boot, app_interval=app)

        def send_ack(pkt, on_ack=sender.on_ack):
            size = pkt.size
            at(back.pass_through(ack_path(sim.now, size), size), on_ack, pkt)

        receiver = Receiver(sim, params, index, send_ack, counters, log)
        sender.receiver, receiver.sender = receiver, sender
        self.senders.append(sender)
        self.receivers.append(receiver)
        start = group["start_s"] + rng.uniform(0.0, group["start_jitter_s"])
        at(start, sender.start, None)
        return sender

    def _flow_key(self):
        """The 5-tuple of a new flow, drawn from the seed's ``address_rng``: a sender address
        in 10.0.0.0/9 that no other flow of the run has, a receiver in 10.128.0.0/9, an
        ephemeral source port, TCP to port 80. Each seed's flows hash to other buckets, as
        real flows do, so that one set of collisions does not repeat in every run."""
        draw = self.address_rng.randrange
        src = 0x0A000000 | draw(1, 1 << 23)
        while src in self._senders_used:
            src = 0x0A000000 | draw(1, 1 << 23)
        self._senders_used.add(src)
        return fpq.pack_flow(src, 0x0A800000 | draw(1, 1 << 23), draw(1024, 65536), 80, 6)

    def run(self, until=None):
        """Run to ``until`` seconds (default: the scenario's ``run.duration_s``)."""
        until = self.sc["run"]["duration_s"] if until is None else until
        t0 = time.perf_counter()
        self.sim.run(until)
        self.wall += time.perf_counter() - t0
        return self

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
        return data + sum(len(p.queue) for p in self.ports), acks

    def lost_total(self):
        """Packets lost at the ports: dropped by a queue or lost on a wire."""
        return sum(p.lost_total for p in self.ports)


class Network(TcpHosts):
    """A scenario, built and ready to run. ``trace=True`` records the bottleneck descriptors;
    ``qm`` overrides the queue manager (any object with ``arrive``/``depart``; then
    ``port.p_one``, the verdict probability meaning "drop all", is unknown unless ``qm`` is one
    of the two models: set it to count saturated drops)."""

    def __init__(self, sc, trace=False, qm=None, log=None):
        super().__init__(sc)
        run, b = sc["run"], sc["bottleneck"]
        sim = self.sim
        self.counters = Counters()
        self.config = cfg = queue_config(sc)
        p_one = None
        if qm is None:
            qm, p_one = queue_manager(sc, cfg)
        elif isinstance(qm, fpq.QueueManager):
            p_one = PROB_ONE
        elif isinstance(qm, FloatQueueManager):
            p_one = 1.0
        self.qm = qm
        self.trace = [] if trace else None
        self.port = OutputPort(sim, qm, b["bandwidth_bps"], b["delay_s"], cfg.tick_hz,
                               b["loss_rate"], random.Random(run["seed"] ^ 0x5EED), self.trace,
                               p_one, sc["queue"]["verdict_wait"])
        self.ports = [self.port]
        attach_queue_manager(self.port, qm)
        self.reverse = Link(b["reverse_bandwidth_bps"] or b["bandwidth_bps"], b["delay_s"])
        self.transfers = []          # (flow index, start, end)
        self.groups = []
        total = sum(g["count"] for g in sc["flows"])
        for gi, g in enumerate(sc["flows"]):
            params = tcp_params(g, b)
            for _ in range(g["count"]):
                self._add_host(g, params, total, self.port, self.reverse.pass_through,
                               self.counters, self._transfer_done, log)
                self.groups.append(gi)
        # each flood draws from a random stream of its own (the other streams stay as they are)
        self.floods = [Flood(sim, spec, self.port.arrive,
                             random.Random(f"flood-{run['seed']}-{i}"), run["duration_s"])
                       for i, spec in enumerate(sc.get("floods", ()))]
        self.flood_accounting = FloodAccounting(self.port, self.floods) if self.floods else None
        self.warm_delivered = [0] * len(self.senders)
        self.warm_counters = self.counters.as_dict()
        self.warmup = run["warmup_s"]
        if self.warmup > 0:
            sim.at(self.warmup, self._end_warmup, None)

    def _transfer_done(self, sender, start, end):
        self.transfers.append((sender.index, start, end))

    def _end_warmup(self, _):
        now = self.sim.now
        self.port.reset_stats(now)
        if self.flood_accounting is not None:
            self.flood_accounting.reset_stats()
        self.warm_delivered = [r.delivered for r in self.receivers]
        self.warm_counters = self.counters.as_dict()

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
    running = unfinished_transfers(net)
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
        "marks": port.marks,
        "wire_losses": port.wire_losses,
        "loss_rate": lost / port.arrivals if port.arrivals else 0.0,
        "avg_queue_pkts": port.q_area / span if span > 0 else 0.0,
        "avg_delay_s": port.delay_sum / port.departures if port.departures else 0.0,
        "delay_p50_s": port.delay_quantile(0.5),
        "delay_p99_s": port.delay_quantile(0.99),
        "avg_flow_count": port.n_sum / port.arrivals if port.arrivals else 0.0,
        "utilisation": port.busy_time / span if span > 0 else 0.0,
        "goodput_pkts_per_s": good / span if span > 0 else 0.0,
        "goodput_fraction": good / span / cap_pps if span > 0 else 0.0,
        "transfers": _transfers(times, running),
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
        out["unfinished_times"] = running
    return out


def unfinished_transfers(net):
    """The elapsed times, at the end of the run, of the transfers still running then that
    began after the warm-up (as the finished ones counted): censored transfer times."""
    now, warmup = net.sim.now, net.warmup
    return [now - s.transfer_start for s in net.senders
            if s.active and s.p.transfer_pkts is not None and s.app_interval is None
            and s.transfer_start >= warmup]


def _transfers(times, running):
    """The summary of the finished transfers' ``times`` (count, mean, p5, p50, p95) and of
    the ``running`` ones (``unfinished``: their count; ``mean_lower_bound``: the mean with
    them counted at their elapsed time; ``km_median``: the Kaplan-Meier median,
    ``fpq_sim.stats``)."""
    both = list(times) + list(running)
    return {"count": int(times.size), "mean": float(times.mean()) if times.size else None,
            "p5": _pct(times, 5), "p50": _pct(times, 50), "p95": _pct(times, 95),
            "unfinished": len(running), "mean_lower_bound": mean_lower_bound(times, running),
            "km_median": km_median(both, [True] * times.size + [False] * len(running))}


def run_scenario(sc, transfer_times=False):
    """Build, run and summarise a validated scenario (a picklable entry point for workers)."""
    net = Network(sc)
    net.run()
    return net.summary(transfer_times)
