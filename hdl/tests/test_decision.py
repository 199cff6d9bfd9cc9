"""Decision against the golden model's own arrive()/depart(). RED and drop-tail: the model
runs with its probability (``fpq.queue_manager.probability``) and random numbers replaced by
the test's sequences. FPQ (whose probability the model computes inline): the model runs
unchanged except for its random numbers, and Decision gets the ``p`` each verdict reports.
The code under comparison (early decision, RED spacing, ECN, limits, occupancy, idle
tracking) is the model's."""
import copy
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


# FPQ mode: test_decision_fpq_matches_model below (the model computes FPQ's probability
# inline, so there is no hook to replace it).
# limit_pkts 2: the queue sits at its packet limit often, with and without a departure in
# the slot (``>=`` against ``>``), which 25 packets with this traffic never reach
OPTIMISE = pytest.mark.parametrize("optimise", ["speed", "area"])


@OPTIMISE
@pytest.mark.parametrize("limit_pkts", [25, 2])
@pytest.mark.parametrize("mode,ecn", [("red", True), ("red", False), ("droptail", True),
                                      ("droptail", False)])
def test_decision_matches_model(mode, ecn, limit_pkts, optimise, monkeypatch):
    rnd = random.Random(mode + str(ecn))
    config = Config(build=BUILD, mode=mode, ecn=ecn, limit_pkts=limit_pkts,
                    limit_bytes=20_000, n_cap=min(15, limit_pkts))
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
    want = model_outputs(model, slots)
    got = simulate(config, slots, model, optimise)
    assert got == want
    actions = {w[0] for w in want}
    assert len(actions) >= (2 if mode == "droptail" else 3)


def model_outputs(model, slots, commits=None):
    """The model's (action, queue found, idle, idle time) per arrival of ``slots``, the
    departures applied first; ``commits`` maps a slot index to the configuration applied
    before that slot."""
    want = []
    for k, (arr, dep, _, _) in enumerate(slots):
        if commits and k in commits:
            model.configure(commits[k])
        if dep:
            model.depart(dep)
        if arr:
            idle = model.avg.idle
            diff = wrap_signed(arr.ts - model.avg.idle_since, TIME_BITS)
            q = model.occ_pkts
            v = model.arrive(arr)
            want.append((v.action, q, idle, diff if idle else None))
    return want


def simulate(config, slots, model, optimise="speed", commits=None):
    """Decision fed ``slots`` (arrival, departure, p, u); returns per arrival (action, q,
    idle, idle_diff if idle) and checks the occupancy registers against ``model``.
    ``commits`` maps a slot index to a configuration written before that slot, as the queue
    manager's commit does: with the pipeline drained (three clocks without a slot), then a
    clock before the slot."""
    dut = Decision(config.build, optimise)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    got = []
    # clock by clock: the slot entering (or None) and the configuration written (or None)
    clocks = [(None, config)]
    for k, slot in enumerate(slots):
        if commits and k in commits:
            clocks += [(None, None)] * 3 + [(None, commits[k])]
        clocks.append((slot, None))
    clocks += [(None, None)] * 3

    async def bench(ctx):
        for c, (slot, new_config) in enumerate(clocks):
            if new_config is not None:
                ctx.set(dut.config.as_value(),
                        pack(config_layout(config.build), new_config.registers()))
            arr, dep, p, u = slot if slot else (None, None, 0, 0)
            ctx.set(dut.valid, arr is not None)
            if arr:
                ctx.set(dut.p, p)
                ctx.set(dut.u, u)
            ctx.set(dut.dep_valid, dep is not None)
            # the fields at cycle ``fields_at`` (1 with optimise="area"); between slots they
            # keep the last slot's values, as a RAM delay line's output would
            j = c - dut.fields_at
            arr, dep = clocks[j][0][:2] if j >= 0 and clocks[j][0] else (None, None)
            if arr:
                ctx.set(dut.ecn, arr.ecn)
                ctx.set(dut.length, arr.length)
                ctx.set(dut.ts, arr.ts)
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
    return got


@OPTIMISE
def test_decision_limits_lowered_below_the_queue(optimise, monkeypatch):
    """Drop-tail limits rewritten while packets are queued, to below the queue (the
    occupancy then sits above the limit until departures bring it down), and back up; with
    byte limits of one packet, short departures (more bytes than queued) are followed in
    the same slot by arrivals of exactly the limit and one byte more."""
    rnd = random.Random(11)
    build = BUILD
    high = Config(build=build, mode="droptail", limit_pkts=40, limit_bytes=100_000)
    phases = [high, Config(build=build, mode="droptail", limit_pkts=3, limit_bytes=1500)]
    slots, commits, t = [], {}, 0
    for k in range(8):
        if k:
            commits[len(slots)] = phases[k % 2]
        for _ in range(300):
            t += rnd.randint(0, 2)
            p_arr, p_dep = (0.9, 0.3) if k % 2 == 0 else (0.5, 0.6)
            arr = Arrival(t, 0, rnd.choice((40, 1500, 1501)), False) \
                if rnd.random() < p_arr else None
            dep = Departure(t, rnd.choice((40, 1500, 3000))) if rnd.random() < p_dep else None
            slots.append((arr, dep, 0, 0))
    model = qm.QueueManager(high)
    monkeypatch.setattr(qm, "probability", lambda *args: 0)
    model._rand = lambda: 0
    # the situations this test is for, counted on the model as it runs
    seen = {"above limit, departure alone": 0, "short, arrival of exactly the limit": 0}
    want = []
    probe = copy.deepcopy(model)
    for k, (arr, dep, _, _) in enumerate(slots):
        if k in commits:
            probe.configure(commits[k])
        lim_p, lim_b = probe._limit_pkts, probe._limit_bytes
        if dep and not arr and probe.occ_pkts > lim_p:
            seen["above limit, departure alone"] += 1
        if dep and arr and probe.occ_pkts and dep.length > probe.occ_bytes \
                and arr.length == lim_b:
            seen["short, arrival of exactly the limit"] += 1
        want += model_outputs(probe, [slots[k]])
    assert min(seen.values()) >= 5, seen
    assert want == model_outputs(model, slots, commits)
    got = simulate(high, slots, model, optimise, commits)
    assert got == want


@OPTIMISE
@pytest.mark.parametrize("ecn", [True, False])
def test_decision_fpq_matches_model(ecn, optimise):
    """FPQ mode: an unmodified model (FPQ probability from n, the r(N) table and the lagged
    average) decides real traffic; only its random numbers come from the test, chosen right
    at its probability (u = p - 1, p, p + 1) for a third of the arrivals, which the model
    reveals when a copy of it decides the same arrival first. Decision, given the p each
    verdict reports and the same u, must give the same actions and occupancy."""
    rnd = random.Random(f"fpq{ecn}")
    build = Build(vec_bits=256, table_depth=64)
    # p_pkts 0 and one or two flows: r(n) is large enough that the queue's build-ups take p
    # well above 1/4; phases of slow and fast departures build the queue up and drain it
    config = Config(build=build, mode="fpq", ecn=ecn, v_max=200, n_cap=63, wq_shift=2,
                    p_pkts=0.0, limit_pkts=300, limit_bytes=200_000, tick_hz=1e6,
                    t_clear_s=0.02, idle_pkt_time_s=1e-4)
    model = qm.QueueManager(config)
    flows = [rnd.getrandbits(104) for _ in range(2)]
    slots, want, ps = [], [], []
    t = 0
    for k in range(3000):
        t += rnd.randint(0, 3)
        arr = Arrival(t, rnd.choice(flows), rnd.choice((40, 576, 1500)), rnd.random() < 0.5) \
            if rnd.random() < 0.7 else None
        p_dep = 0.2 if (k // 600) % 2 == 0 else 0.97
        dep = Departure(t, rnd.choice((40, 576))) if rnd.random() < p_dep else None
        if dep:
            model.depart(dep)
        u, p = 0, 0
        if arr:
            probe = copy.deepcopy(model)
            p = probe.arrive(arr).prob
            if rnd.random() < 1 / 3:
                u = min(max(p + rnd.choice((-1, 0, 1)), 0), (1 << 32) - 1)
            else:
                u = rnd.getrandbits(32)
            idle = model.avg.idle
            diff = wrap_signed(arr.ts - model.avg.idle_since, TIME_BITS)
            q = model.occ_pkts
            model._rand = lambda: u
            v = model.arrive(arr)
            assert v.prob == p
            ps.append(p)
            want.append((v.action, q, idle, diff if idle else None))
        slots.append((arr, dep, v.prob if arr else 0, u))
    got = simulate(config, slots, model, optimise)
    assert got == want
    # the traffic reached every case of the compare and of the action
    assert 0 in ps and sum(0 < p < PROB_ONE for p in ps) > 1000
    assert sum(p > PROB_ONE // 4 for p in ps) > 200
    actions = {w[0] for w in want}
    assert actions == ({qm.ENQUEUE, qm.MARK, qm.DROP_EARLY, qm.DROP_FORCED} if ecn else
                       {qm.ENQUEUE, qm.DROP_EARLY, qm.DROP_FORCED})


@OPTIMISE
@pytest.mark.parametrize("limit_bytes", [3 << 30, (1 << 32) - 1])
def test_decision_byte_limit_above_2_31(optimise, limit_bytes, monkeypatch):
    """Occupancy above 2**31 bytes with a byte limit of 3 GiB (drop-tail): the byte compare
    must treat the occupancy as unsigned (an earlier version compared it as a signed 32-bit
    number, which turned every arrival above 2 GiB queued into an enqueue). With the largest
    limit, occupancy + length passes 2**32: the compare must see the carry."""
    config = Config(build=BUILD, mode="droptail", limit_pkts=(1 << 20) - 1,
                    limit_bytes=limit_bytes)
    slots = []
    for k in range(68_000):
        arr = Arrival(k, 0, 65535, False)
        dep = Departure(k, 65535) if k % 64 == 63 else None
        slots.append((arr, dep, 0, 0))
    model = qm.QueueManager(config)
    monkeypatch.setattr(qm, "probability", lambda *args: 0)
    model._rand = lambda: 0
    want = model_outputs(model, slots)
    got = simulate(config, slots, model, optimise)
    assert got == want
    assert model.occ_bytes > 1 << 31 and model.occ_bytes + 65535 > limit_bytes
    assert {w[0] for w in want} == {qm.ENQUEUE, qm.DROP_FORCED}
