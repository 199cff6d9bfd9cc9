"""Traffic for the benches: traces from the TCP simulator, and adversarial patterns.

Every event carries the clock it is to be accepted in (``ts``, counted from the queue
manager's clock 0): at most one arrival and one departure per clock, the departure first, as
``fpq.QueueManager`` requires. A bench presents each event in its clock (later if the port or
its own stream conditions hold it back, and then the golden model replays the clocks the port
really took).

``tcp_trace(discipline, flows, arrivals)``: the FPQ paper's Figs. 8-9 set-up
(``sim/scenarios/fpq-fpq.toml`` / ``fpq-traditional.toml``) with N flows, simulated until the
bottleneck has seen ``arrivals`` arrivals, stamped by the simulator with accept clocks at
``TCP_TICK_HZ``; the descriptors are cached as an ``fpq.trace`` file under
``build/cocotb/traces/`` (the key includes a hash of the simulator's sources).

``synthetic(config, n, seed, ...)``: arrivals with a model-in-the-loop departure process
(departures carry the real head-of-line length, so queues build, drain and go idle), shaped
by the adversarial knobs: flow choice, clock steps, idle gaps, bogus departures."""

import hashlib
from collections import deque
import random

from fpq import QueueManager as Model, Arrival, Departure, ENQUEUE, MARK
from fpq.flow_hash import FlowHash, reduce_index
from fpq.trace import read_trace, write_trace

from .verilog import ROOT, BUILD_ROOT

__all__ = ["tcp_trace", "synthetic", "same_bucket_flows", "SCENARIOS", "TCP_TICK_HZ",
           "scenario", "end_clock"]

SCENARIOS = {"fpq": ROOT / "sim" / "scenarios" / "fpq-fpq.toml",
             "red": ROOT / "sim" / "scenarios" / "fpq-traditional.toml"}
#: The queue manager's clock rate in the benches' TCP traces. Low, so that the traces' clocks
#: stay few (a cocotb bench clocks the RTL through every one): at 1 Mbit/s and 576-byte
#: packets that is about ten clocks per packet, with the FPQ set-up's clear period
#: (t_clear 4 s, v_max 5000) 1.6 clocks: a clear in most clocks, the fractional period kept.
TCP_TICK_HZ = 2000.0


def _sim_digest():
    h = hashlib.sha256()
    for p in sorted((ROOT / "sim" / "fpq_sim").glob("*.py")) + sorted(SCENARIOS.values()):
        h.update(p.read_bytes())
    for p in ("accept_clock.py", "config.py", "queue_manager.py", "trace.py"):
        h.update((ROOT / "sw" / "fpq" / p).read_bytes())
    return h.hexdigest()[:10]


def scenario(discipline, flows, seed=1, sets=()):
    from fpq_sim.scenario import load
    return load(SCENARIOS[discipline], [f"flows.0.count={flows}", f"run.seed={seed}", *sets])


def tcp_trace(discipline, flows, arrivals, seed=1, tick_hz=TCP_TICK_HZ, verdict_wait=0):
    """``(config, events)``: the first ``arrivals`` arrivals (and the departures among them)
    at the bottleneck of the Fig. 9 set-up with ``flows`` flows (the run is as long as it
    takes; the scenario's 500 s are extended if needed), stamped with accept clocks at
    ``tick_hz`` (``verdict_wait``: clocks the router waits after each arrival)."""
    from fpq_sim.scenario import queue_config
    from fpq_sim.network import Network
    sc = scenario(discipline, flows, seed, ["run.duration_s=1000000.0",
                                            f"queue.tick_hz={tick_hz}",
                                            f"queue.verdict_wait={verdict_wait}"])
    config = queue_config(sc)
    path = BUILD_ROOT / "traces" / (f"{discipline}-n{flows}-s{seed}-a{arrivals}-"
                                    f"t{tick_hz:g}-w{verdict_wait}-{_sim_digest()}.fpqtrace")
    if path.exists():
        _, events = read_trace(path)
        return config, events
    net = Network(sc, trace=True)
    t, count = 0.0, 0
    while count < arrivals:
        t += 20.0
        if t > sc["run"]["duration_s"]:
            raise ValueError(f"{discipline} N={flows}: only {count} arrivals in "
                             f"{sc['run']['duration_s']} s")
        net.run(t)
        count = sum(1 for e in net.trace if type(e) is Arrival)
    events, k = [], 0
    for e in net.trace:
        if type(e) is Arrival:
            if k == arrivals:
                break
            k += 1
        events.append(e)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_trace(path, events, config.tick_hz, {"source": "fpq_sim", "discipline": discipline,
                                                "flows": flows, "seed": seed,
                                                "verdict_wait": verdict_wait})
    return config, events


def same_bucket_flows(config, count, seed=1):
    """``count`` distinct flows whose vector index ``(hash * v_max) >> 32`` is the same (the
    hash keys are public: an attacker can do this)."""
    h = FlowHash.of(config)
    rnd = random.Random(seed)
    v_max = config.v_max
    first = rnd.getrandbits(104)
    target = reduce_index(h(first), v_max)
    out = [first]
    while len(out) < count:
        f = rnd.getrandbits(104)
        if reduce_index(h(f), v_max) == target:
            out.append(f)
    return out


def end_clock(events):
    """The clock of the last event (-1 for none)."""
    return events[-1].ts if events else -1


def synthetic(config, n, seed, flows=None, t0=0, dt=(1, 1, 2, 3), p_dep=0.75,
              gap_every=0, gap=(0, 0), lengths=(40, 576, 1500), ecn=0.5, bogus=0.002,
              drain_on_gap=True, model=None, lone_deps=False):
    """``n`` arrivals (and departures) as a list of events, the first at clock ``t0`` or
    later.

    ``flows`` is a list of flow keys to draw from, or a callable ``(rnd, k) -> flow``;
    ``dt`` the choice of clock steps between arrivals (>= 1: one arrival per clock at most);
    a departure shares its arrival's clock (it goes first). Every ``gap_every`` arrivals the
    queue drains (one departure per clock) and the clock jumps by ``randint(*gap)``. ``model``:
    a golden model to continue from (its departures use its queue), default a fresh one;
    ``lone_deps``: a departure takes a clock of its own, before its arrival's."""
    if min(dt) < 1:
        raise ValueError(f"dt: {dt}: at most one arrival per clock (steps >= 1)")
    rnd = random.Random(seed)
    model = model if model is not None else Model(config)
    if flows is None:
        flows = [rnd.getrandbits(104) for _ in range(64)]
    pick = flows if callable(flows) else (lambda r, k, f=flows: f[r.randrange(len(f))])
    queue = deque()
    events = []
    t = t0 - 1
    for k in range(n):
        t += rnd.choice(dt)
        if gap_every and k and k % gap_every == 0:
            if drain_on_gap:
                while queue:
                    d = Departure(t, queue.popleft())
                    model.depart(d)
                    events.append(d)
                    t += 1
            t += rnd.randint(*gap)
        d = None
        if queue and rnd.random() < p_dep:
            d = Departure(t, queue.popleft())
        elif rnd.random() < bogus:
            d = Departure(t, rnd.randint(1, 3000))
        if d is not None:
            model.depart(d)
            events.append(d)
            t += lone_deps
        length = rnd.choice(lengths) if rnd.random() < 0.95 else rnd.randint(1, 65535)
        a = Arrival(t, pick(rnd, k), length, rnd.random() < ecn)
        v = model.arrive(a)
        if v.action in (ENQUEUE, MARK):
            queue.append(length)
        events.append(a)
    return events
