"""Traffic for the benches: traces from the TCP simulator, and adversarial patterns.

``tcp_trace(discipline, flows, arrivals)``: the FPQ paper's Figs. 8-9 set-up
(``sim/scenarios/fpq-fpq.toml`` / ``fpq-traditional.toml``) with N flows, simulated until the
bottleneck has seen ``arrivals`` arrivals; the descriptors are cached as an ``fpq.trace`` file
under ``build/cocotb/traces/`` (the key includes a hash of the simulator's sources).

``synthetic(config, n, seed, ...)``: arrivals with a model-in-the-loop departure process
(departures carry the real head-of-line length, so queues build, drain and go idle), shaped
by the adversarial knobs: flow choice, time steps, idle gaps, bogus departures."""

import hashlib
from collections import deque
from pathlib import Path
import random

from fpq import QueueManager as Model, Arrival, Departure, ENQUEUE, MARK
from fpq.flow_hash import ToeplitzHash, reduce_index
from fpq.trace import read_trace, write_trace

from .verilog import ROOT, BUILD_ROOT

__all__ = ["tcp_trace", "synthetic", "same_bucket_flows", "SCENARIOS"]

SCENARIOS = {"fpq": ROOT / "sim" / "scenarios" / "fpq-fpq.toml",
             "red": ROOT / "sim" / "scenarios" / "fpq-traditional.toml"}


def _sim_digest():
    h = hashlib.sha256()
    for p in sorted((ROOT / "sim" / "fpq_sim").glob("*.py")) + sorted(SCENARIOS.values()):
        h.update(p.read_bytes())
    return h.hexdigest()[:10]


def scenario(discipline, flows, seed=1, sets=()):
    from fpq_sim.scenario import load
    return load(SCENARIOS[discipline], [f"flows.0.count={flows}", f"run.seed={seed}", *sets])


def tcp_trace(discipline, flows, arrivals, seed=1):
    """``(config, events)``: the first ``arrivals`` arrivals (and the departures among them)
    at the bottleneck of the Fig. 9 set-up with ``flows`` flows (the run is as long as it
    takes; the scenario's 500 s are extended if needed)."""
    from fpq_sim.scenario import queue_config
    from fpq_sim.network import Network
    sc = scenario(discipline, flows, seed, ["run.duration_s=1000000.0"])
    config = queue_config(sc)
    path = BUILD_ROOT / "traces" / f"{discipline}-n{flows}-s{seed}-a{arrivals}-{_sim_digest()}.fpqtrace"
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
    write_trace(path, events, config.tick_hz, {"source": "fpq_sim", "discipline": discipline,
                                                "flows": flows, "seed": seed})
    return config, events


def same_bucket_flows(config, count, seed=1):
    """``count`` distinct flows whose vector index ``(hash * v_max) >> 32`` is the same (the
    hash key is public: an attacker can do this)."""
    h = ToeplitzHash(config.registers()["hash_key"])
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


def synthetic(config, n, seed, flows=None, t0=0, dt=(0, 1, 1, 2, 3), p_dep=0.75,
              gap_every=0, gap=(0, 0), lengths=(40, 576, 1500), ecn=0.5, bogus=0.002,
              drain_on_gap=True):
    """``n`` arrivals (and departures) as a list of events.

    ``flows`` is a list of flow keys to draw from, or a callable ``(rnd, k) -> flow``;
    ``dt`` the choice of tick steps between events; every ``gap_every`` arrivals the queue
    drains and the clock jumps by ``randint(*gap)`` ticks."""
    rnd = random.Random(seed)
    model = Model(config)
    if flows is None:
        pool = [rnd.getrandbits(104) for _ in range(64)]
        flows = pool
    pick = flows if callable(flows) else (lambda r, k, f=flows: f[r.randrange(len(f))])
    queue = deque()
    events = []
    t = t0
    for k in range(n):
        t += rnd.choice(dt)
        if gap_every and k and k % gap_every == 0:
            if drain_on_gap:
                while queue:
                    d = Departure(t, queue.popleft())
                    model.depart(d)
                    events.append(d)
            t += rnd.randint(*gap)
        if queue and rnd.random() < p_dep:
            d = Departure(t, queue.popleft())
            model.depart(d)
            events.append(d)
        elif rnd.random() < bogus:
            d = Departure(t, rnd.randint(1, 3000))
            model.depart(d)
            events.append(d)
        length = rnd.choice(lengths) if rnd.random() < 0.95 else rnd.randint(1, 65535)
        a = Arrival(t, pick(rnd, k), length, rnd.random() < ecn)
        v = model.arrive(a)
        if v.action in (ENQUEUE, MARK):
            queue.append(length)
        events.append(a)
    return events
