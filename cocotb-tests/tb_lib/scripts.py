"""Stimulus scripts shared by the queue manager's benches and the fault-injection tests (a
fault is "caught" when one of these very scripts fails on the faulty RTL)."""

import random

from fpq import Config, Build

from fpq_hdl.queue_manager import MIN_AVG_LAG

from .traffic import synthetic

__all__ = ["BUILDS", "STREAMS", "cfg", "streams_script", "same_flow_script",
           "hard_limits_script", "build_tag"]

#: Builds: the synthesised default, a small one (vector 256, table 256, the pipeline's minimum
#: avg_lag), and a long lag line with a tiny table (n_cap 15, so the cap is hit).
BUILDS = {
    "default": Build(),
    "small": Build(vec_bits=256, table_depth=256, avg_lag=MIN_AVG_LAG),
    "lag64": Build(vec_bits=1024, table_depth=16, avg_lag=64),
}
#: Stream conditions: probability of an idle clock before a step (and burst length), and
#: probability that the verdict sink is ready (and burst length).
STREAMS = {
    "full-rate": dict(gap=0.0, ready=1.0),
    "gaps+backpressure": dict(gap=0.3, gap_burst=3, ready=0.6, ready_burst=4),
    "heavy-backpressure": dict(gap=0.05, ready=0.15, ready_burst=20),
}


def build_tag(b):
    return f"v{b.vec_bits}-t{b.table_depth}-l{b.avg_lag}"


def cfg(build, **kw):
    base = dict(tick_hz=1e6, t_clear_s=0.1, idle_pkt_time_s=1e-4, wq_shift=5,
                n_cap=build.table_depth - 1, limit_pkts=120, ecn=True)
    base.update(kw)
    base.setdefault("v_max", min(5000, build.vec_bits))
    return Config(build=build, **base)


def streams_script(b, n=2500):
    """FPQ, then RED (gentle), then drop-tail, committed one after the other, 30 flows, ECN
    on for half the packets: every action, mid-stream mode changes."""
    script = []
    for i, mode in enumerate(("fpq", "red", "droptail")):
        c = cfg(b, mode=mode, red_min_th=3, red_max_th=20, red_max_p=0.2, red_gentle=i == 1,
                lc_correction=True, seed_decide=10 + i, limit_pkts=40 + 20 * i)
        script += [("commit" if i else "config", c),
                   ("events", synthetic(c, n, seed=100 + i, p_dep=0.7,
                                        flows=[random.Random(i).getrandbits(104)
                                               for _ in range(30)]))]
    return script


def same_flow_script(b, n=12000):
    """Back-to-back arrivals, one clear due on every clock (period exactly one tick): the same
    flow on every clock, then two flows alternating (the same bit two clocks apart), then a
    mix."""
    c = cfg(b, mode="fpq", t_clear_s=min(5000, b.vec_bits) / 1e6, wq_shift=3, limit_pkts=100)
    assert c.clear_period_raw() == 1 << 16
    rnd = random.Random(3)
    a_, b_ = rnd.getrandbits(104), rnd.getrandbits(104)
    pool = [rnd.getrandbits(104) for _ in range(8)]
    third = n // 3

    def flow(r, k):
        if k < third:
            return a_
        if k < 2 * third:
            return (a_, b_)[k & 1]
        return r.choice(pool) if r.random() < 0.5 else a_

    return [("config", c), ("events", synthetic(c, n, seed=4, flows=flow, dt=(1,), p_dep=0.9,
                                                bogus=0))]


def hard_limits_script(b, mode, n=3000):
    """Hard limits at their edges: one packet; a byte limit below one big packet; the largest
    limits with a queue that only grows (RED: p saturates at 1); departures from an empty
    queue and of more bytes than queued."""
    script = []
    limits = [dict(limit_pkts=1), dict(limit_pkts=50, limit_bytes=3000),
              dict(limit_pkts=(1 << 20) - 1, limit_bytes=(1 << 32) - 1)]
    for i, lim in enumerate(limits):
        c = cfg(b, mode=mode, red_min_th=2, red_max_th=10, red_max_p=0.5, red_gentle=i == 2,
                wq_shift=2, **lim)
        ev = synthetic(c, n, seed=20 + i, p_dep=0.1 if i == 2 else 0.6, bogus=0.02,
                       lengths=(1, 64, 1500, 65535))
        script += [("commit" if i else "config", c), ("events", ev)]
    return script


def shrink_plan(plan, failure):
    """The plan cut ``64`` arrivals after the first mismatching verdict named in ``failure``
    (for a short waveform), or None if the failure names no verdict."""
    import re
    from fpq import Arrival
    m = re.search(r"verdict (\d+):", failure)
    if not m:
        return None
    keep = int(m.group(1)) + 64
    script, k = [], 0
    for item in plan["script"]:
        if item[0] == "events":
            events = []
            for ev in item[1]:
                if type(ev) is Arrival:
                    if k == keep:
                        break
                    k += 1
                events.append(ev)
            script.append(("events", events))
            if k == keep:
                break
        else:
            script.append(item)
    return dict(plan, script=script)


def run_plan(request, build, script, tag=None, component=None, seed=1, expect_failure=False,
             **stream):
    """Generate the queue manager's Verilog (``component`` replaces ``QueueManager(build)``,
    e.g. a fault-injected one), Verilate it (cached), run ``script`` through the cocotb bench
    and record its coverage; returns the bench's result. A failing bench raises
    ``runner.BenchFailed``."""
    from fpq_hdl.queue_manager import QueueManager
    from .verilog import generate, BUILD_ROOT
    from . import runner
    from .coverage_report import record
    comp = component if component is not None else QueueManager(build)
    folder, verilog = generate(comp, TOP, tag or f"qm-{build_tag(build)}")
    plan = {"build": build, "script": script, "seed": seed, **stream}
    name = request.node.name.replace("/", "_").replace("[", "-").replace("]", "")
    result = runner.run(folder, verilog, TOP, BENCH, plan, BUILD_ROOT / "runs" / name,
                        shrink=None if expect_failure else shrink_plan)
    record(result)
    return result


TOP = "fpq_queue_manager"
BENCH = "queue_manager.bench_queue_manager"
