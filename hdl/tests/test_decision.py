"""Decision against the golden model's own arrive()/depart(): the model runs with its
probability (``fpq.queue_manager.probability``, used in RED and drop-tail modes) and random
numbers replaced by the test's sequences (the code under comparison,
early decision, RED spacing, ECN, limits, occupancy, idle tracking, is the model's)."""
import random

import pytest
from amaranth.sim import Simulator

import fpq.queue_manager as qm
from fpq import Build, Config
from fpq.formats import wrap_signed, TIME_BITS, PROB_ONE
from fpq.queue_manager import Arrival, Departure
from fpq_hdl.decision import Decision
from fpq_hdl.layouts import config_layout
from .hdl_harness import pack

BUILD = Build(table_depth=16)


# FPQ mode is not here: the model computes FPQ's probability inline (no hook to replace it);
# its compare ``u < p`` is checked bit-exactly through the top in test_queue_manager.py.
@pytest.mark.parametrize("mode,ecn", [("red", True), ("red", False), ("droptail", True),
                                      ("droptail", False)])
def test_decision_matches_model(mode, ecn, monkeypatch):
    rnd = random.Random(mode + str(ecn))
    config = Config(build=BUILD, mode=mode, ecn=ecn, limit_pkts=25, limit_bytes=20_000,
                    n_cap=15)
    slots = []
    t = 0
    for _ in range(4000):
        t += rnd.randint(0, 3)
        p = rnd.choice((0, 0, rnd.randrange(1 << 28), rnd.randrange(PROB_ONE + 1), PROB_ONE))
        arr = Arrival(t, 0, rnd.choice((40, 1500, rnd.randint(1, 65535))), rnd.random() < 0.5) \
            if rnd.random() < 0.7 else None
        dep = Departure(t, rnd.choice((40, 576, 1500))) if rnd.random() < 0.5 else None
        slots.append((arr, dep, p, rnd.getrandbits(32)))
    model = qm.QueueManager(config)
    ps = iter([p for arr, _, p, _ in slots if arr])
    monkeypatch.setattr(qm, "probability", lambda *args: next(ps))
    us = iter([u for arr, _, _, u in slots if arr])
    model._rand = lambda: next(us)
    want = []
    for arr, dep, _, _ in slots:
        if dep:
            model.depart(dep)
        if arr:
            idle = model.avg.idle
            diff = wrap_signed(arr.ts - model.avg.idle_since, TIME_BITS)
            q = model.occ_pkts
            v = model.arrive(arr)
            want.append((v.action, q, idle, diff if idle else None))
    regs = config.registers()
    dut = Decision(BUILD)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    got = []

    async def bench(ctx):
        ctx.set(dut.config.as_value(), pack(config_layout(BUILD), regs))
        for k in range(len(slots) + 2):
            arr, dep, p, u = slots[k] if k < len(slots) else (None, None, 0, 0)
            ctx.set(dut.valid, arr is not None)
            if arr:
                ctx.set(dut.p, p)
                ctx.set(dut.u, u)
                ctx.set(dut.ecn, arr.ecn)
                ctx.set(dut.length, arr.length)
                ctx.set(dut.ts, arr.ts)
            ctx.set(dut.dep_valid, dep is not None)
            if dep:
                ctx.set(dut.dep_length, dep.length)
                ctx.set(dut.dep_ts, dep.ts)
            _, _, v, action, q, idle, diff = await ctx.tick().sample(
                dut.out_valid, dut.action, dut.q, dut.idle, dut.idle_diff)
            if v:
                got.append((action, q, idle, diff if idle else None))
        for name in ("occ_pkts", "occ_bytes", "max_queue"):
            assert ctx.get(getattr(dut, name)) == model.snapshot()[name], name
    sim.add_testbench(bench)
    sim.run()
    assert got == want
    actions = {w[0] for w in want}
    assert len(actions) >= (2 if mode == "droptail" else 3)
