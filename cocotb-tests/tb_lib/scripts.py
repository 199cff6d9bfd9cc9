"""Stimulus scripts shared by the queue manager's benches and the fault-injection tests (a
fault is "caught" when one of these very scripts fails on the faulty RTL)."""

import random

from fpq import Config, Build
from fpq.register_specs import key_registers

from fpq_hdl.queue_manager import MIN_AVG_DELAY, LATENCY

from .stimulus import t_clear_s
from .traffic import synthetic, end_clock

__all__ = ["BUILDS", "STREAMS", "cfg", "room", "phases", "streams_script", "same_flow_script",
           "hard_limits_script", "clear_fraction_script", "weight_commits_script",
           "build_tag", "run_plan", "shrink_plan"]

#: Builds: the synthesised default, a small one (vector 256, table 256, the pipeline's
#: minimum avg_delay), and a long average delay with a tiny table (n_cap 15, so the cap is
#: hit).
BUILDS = {
    "default": Build(),
    "small": Build(vec_bits=256, table_depth=256, avg_delay=MIN_AVG_DELAY),
    "delay64": Build(vec_bits=1024, table_depth=16, avg_delay=64),
}
#: Stream conditions: probability of an idle clock before a step (and burst length), and
#: probability that the verdict sink is ready (and burst length).
STREAMS = {
    "full-rate": dict(gap=0.0, ready=1.0),
    "gaps+backpressure": dict(gap=0.3, gap_burst=3, ready=0.6, ready_burst=4),
    "heavy-backpressure": dict(gap=0.05, ready=0.15, ready_burst=20),
}


def build_tag(b):
    return f"v{b.vec_bits}-t{b.table_depth}-d{b.avg_delay}"


def cfg(build, wq_shift=3, avg_sample_period=7, **kw):
    """A bench configuration: 1 MHz clock, a clear every 100 clocks at v_max 1000 (t_clear
    0.1 s), a sample of the queue every ``avg_sample_period`` clocks weighted
    ``2**-wq_shift`` (raw registers)."""
    base = dict(tick_hz=1e6, t_clear_s=0.1, n_cap=build.table_depth - 1, limit_pkts=120,
                ecn=True)
    base.update(kw)
    base.setdefault("v_max", min(5000, build.vec_bits))
    return Config(build=build, **base).override(wq_shift=wq_shift,
                                                 avg_sample_period=avg_sample_period)


def room(old, new):
    """Clocks a script leaves after its last event before the next events, for a commit of
    ``new`` over ``old`` to apply without holding them back: the pipeline's drain, a table
    write into the inactive bank, a vector wipe."""
    r0, r1 = old.registers(), new.registers()
    clocks = 2 * LATENCY + 16
    if old.rate_table() != new.rate_table():
        clocks += old.build.table_depth
    if r0["v_max"] != r1["v_max"] or any(r0[k] != r1[k] for k in key_registers(old.build)):
        clocks += old.build.vec_bits + 4
    return clocks


def phases(configs, make, gap=0):
    """``("config" | "commit", c), ("events", make(c, t0, i))`` per configuration, the next
    phase's events ``room`` (plus ``gap``) clocks after the last one."""
    script, t0, prev, events = [], 0, None, None
    for i, c in enumerate(configs):
        if prev is not None:
            t0 = end_clock(events) + room(prev, c) + gap
        events = make(c, t0, i)
        script += [("commit" if prev is not None else "config", c), ("events", events)]
        prev = c
    return script


def streams_script(b, n=2500):
    """FPQ, then RED (gentle), then drop-tail, committed one after the other, 30 flows, ECN
    on for half the packets: every action, mid-stream mode changes."""
    configs = [cfg(b, mode=mode, red_min_th=3, red_max_th=20, red_max_p=0.2,
                   red_gentle=i == 1, lc_correction=True, seed_decide=10 + i,
                   limit_pkts=40 + 20 * i) for i, mode in enumerate(("fpq", "red", "droptail"))]
    return phases(configs, lambda c, t0, i: synthetic(
        c, n, seed=100 + i, t0=t0, p_dep=0.7,
        flows=[random.Random(i).getrandbits(104) for _ in range(30)]))


def same_flow_script(b, n=12000):
    """Back-to-back arrivals, a clear in every clock (period exactly one clock): the same
    flow on every clock, then two flows alternating (the same bit two clocks apart), then a
    mix."""
    v_max = min(5000, b.vec_bits)
    c = cfg(b, mode="fpq", t_clear_s=t_clear_s(1, v_max), wq_shift=3, avg_sample_period=4,
            limit_pkts=100)
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
                                                bogus=0, t0=50))]


def hard_limits_script(b, mode, n=3000):
    """Hard limits at their edges: one packet; a byte limit below one big packet; the largest
    limits with a queue that only grows (RED: p saturates at 1); departures from an empty
    queue and of more bytes than queued."""
    limits = [dict(limit_pkts=1), dict(limit_pkts=50, limit_bytes=3000),
              dict(limit_pkts=(1 << 20) - 1, limit_bytes=(1 << 32) - 1)]
    configs = [cfg(b, mode=mode, red_min_th=2, red_max_th=10, red_max_p=0.5,
                   red_gentle=i == 2, wq_shift=2, avg_sample_period=5, **lim)
               for i, lim in enumerate(limits)]
    # (limit_pkts = 1: departures in clocks of their own, see decision/test_decision.py's
    # test_packet_limit_of_one_after_a_departure_from_an_empty_queue)
    return phases(configs, lambda c, t0, i: synthetic(
        c, n, seed=20 + i, t0=t0, p_dep=0.1 if i == 2 else 0.6, bogus=0.02,
        lengths=(1, 64, 1500, 65535), lone_deps=i == 0))


def clear_fraction_script(b, n=3000):
    """A clear every 1.37 clocks (v_max 200): the clear timer's fractional part decides the
    clock of every clear; arrivals every clock or two from 150 flows, so N moves with each."""
    v_max = min(200, b.vec_bits)
    c = cfg(b, mode="fpq", v_max=v_max, t_clear_s=t_clear_s(1.37, v_max), limit_pkts=100)
    rnd = random.Random(12)
    flows = [rnd.getrandbits(104) for _ in range(150)]
    return [("config", c), ("events", synthetic(c, n, seed=13, flows=flows, dt=(1, 1, 2),
                                                t0=20))]


def weight_commits_script(b, n=600):
    """Commits of the average's weight and sample period while the queue is long: a sample
    every 5 clocks, so samples are in flight at every commit (each keeps the weight of its
    own clock), arrivals right up to the commit's hold."""
    shifts = [(0, 5), (3, 5), (1, 6), (6, 5), (2, 4), (0, 9)]
    configs = [cfg(b, mode="red", red_min_th=2, red_max_th=60, red_max_p=0.3,
                   limit_pkts=150, wq_shift=k, avg_sample_period=per) for k, per in shifts]
    return phases(configs, lambda c, t0, i: synthetic(c, n, seed=40 + i, t0=t0, p_dep=0.5,
                                                      dt=(1, 1, 2)))


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
    if not expect_failure:
        record(result)
    return result


TOP = "fpq_queue_manager"
BENCH = "queue_manager.bench_queue_manager"
