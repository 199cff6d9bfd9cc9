"""Decision against the golden model's own ``arrive()`` / ``depart()`` (steps 4-5 of the
contract and every departure): the early decision (FPQ compare, RED's uniform spacing), ECN,
the hard limits on the exact occupancy, the occupancy and its maximum.

Each slot is one clock of the model (``ts`` = the slot's number): its departure first, then
its arrival. RED and drop-tail: the model runs with its probability
(``fpq.queue_manager.probability``) and its random numbers replaced by the test's sequences.
FPQ (whose probability the model computes inline): the model runs unchanged except for its
random numbers, and Decision gets the ``p`` each verdict reports. Decision takes the slot's
descriptor fields ``FIELDS_AHEAD`` clocks before ``p`` and ``u`` (which come at cycle 0);
in clocks without an arrival or a departure the fields, ``p`` and ``u`` carry random values
(a RAM delay line's stale words), which must not count.

Compared per slot, at cycle ``LATENCY``: ``out_valid`` and the action of its arrival,
``out_dep_valid`` and whether its departure was an error (``dep_errors`` counted by the
model), and ``occ_pkts`` / ``occ_bytes`` after the slot; ``max_queue`` a clock later. Both
``optimise`` forms, so each equals the model and hence the other.
"""
import random

import pytest
from amaranth.sim import Simulator

import fpq.queue_manager as qm
from fpq import Build, Config
from fpq.formats import PROB_ONE, LENGTH_BITS
from fpq.queue_manager import Arrival, Departure
from fpq_hdl.decision import Decision
from fpq_hdl.layouts import config_layout
from fpq.bitfields import pack

BUILD = Build(table_depth=16)
AHEAD, LAT = Decision.FIELDS_AHEAD, Decision.LATENCY
OPTIMISE = pytest.mark.parametrize("optimise", ["speed", "area"])


def model_outputs(model, slots, commits=None, cmq=(), rand=None):
    """Per slot of ``slots`` ``(arrival, departure, p, u)``: the model's ``(action or None,
    dep_error or None, occ_pkts, occ_bytes, max_queue)`` after it. ``commits``: slot ->
    configuration applied at that slot's clock; ``cmq``: slots before which ``max_queue`` is
    cleared (``clear_max_queue`` after the slot before); ``rand``: the random-number hook
    to put back after a commit (``configure`` rebinds the generator)."""
    out = []
    cmq = set(cmq)
    for t, (arr, dep, _, _) in enumerate(slots):
        if commits and t in commits:
            model.configure(commits[t], t)
            if rand is not None:
                model._rand = rand
        err = action = None
        if dep:
            before = model._dep_errors
            model.depart(dep)
            err = model._dep_errors - before
        if arr:
            action = model.arrive(arr).action
        if t + 1 in cmq:
            model.clear_max_queue()
        out.append((action, err, model.occ_pkts, model.occ_bytes, model.max_queue))
    return out


def simulate(config, slots, optimise, commits=None, cmq=(), preset=None, noise=0):
    """Decision fed ``slots``; returns per slot ``(action or None, dep_error or None,
    occ_pkts, occ_bytes, max_queue)`` as the model's (``max_queue`` one clock after the
    others), with ``max_queue`` 0 expected the clock after a clear. Slot t's fields are on
    the ports in clock t, its ``p`` in clock t + FIELDS_AHEAD, its ``u`` a clock
    before. ``commits``: slot
    -> configuration on the port from that slot's clock (the slots of the 3 clocks before
    must carry no arrival: a commit waits for an empty pipeline). ``cmq``: slots whose
    cycle 0 is the clock of a ``clear_max_queue``. ``preset``: ``(occ_pkts, occ_bytes)``
    in the registers before the first clock."""
    dut = Decision(config.build, optimise)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    rnd = random.Random(noise)
    n = len(slots)
    got = [[None, None, None, None, None] for _ in range(n)]
    cmq = set(cmq)

    async def bench(ctx):
        ctx.set(dut.config.as_value(), pack(config_layout(config.build), config.registers()))
        if preset is not None:
            ctx.set(dut.occ_pkts, preset[0])
            ctx.set(dut.occ_bytes, preset[1])
        for k in range(n + AHEAD + LAT + 2):
            if commits and k in commits:
                ctx.set(dut.config.as_value(),
                        pack(config_layout(config.build), commits[k].registers()))
            arr, dep = slots[k][:2] if k < n else (None, None)
            ctx.set(dut.valid_ahead, arr is not None)
            ctx.set(dut.dep_valid_ahead, dep is not None)
            ctx.set(dut.length_ahead, arr.length if arr else rnd.getrandbits(LENGTH_BITS))
            ctx.set(dut.ecn_ahead, arr.ecn if arr else rnd.getrandbits(1))
            ctx.set(dut.dep_length_ahead, dep.length if dep else rnd.getrandbits(LENGTH_BITS))
            j = k - AHEAD                           # the slot at cycle 0
            if 0 <= j < n and slots[j][0] is not None:
                p = slots[j][2]
            else:
                p = rnd.choice((0, rnd.randrange(PROB_ONE + 1)))
            # ``u`` a clock ahead of its slot's cycle 0
            if 0 <= j + 1 < n and slots[j + 1][0] is not None:
                u = slots[j + 1][3]
            else:
                u = rnd.getrandbits(32)
            # ``p_zero``: whether p is 0 (the probability's own flag, a register beside it)
            ctx.set(dut.p, p)
            ctx.set(dut.p_zero, p == 0)
            ctx.set(dut.u_ahead, u)
            ctx.set(dut.clear_max_queue, j in cmq)
            _, _, v, action, dv, derr, op, ob, mq = await ctx.tick().sample(
                dut.out_valid, dut.action, dut.out_dep_valid, dut.dep_error, dut.occ_pkts,
                dut.occ_bytes, dut.max_queue)
            s = k - AHEAD - LAT                     # the slot at cycle LATENCY
            if 0 <= s < n:
                assert v == (slots[s][0] is not None), f"slot {s}: out_valid {v}"
                assert dv == (slots[s][1] is not None), f"slot {s}: out_dep_valid {dv}"
                got[s][:4] = [action if v else None, derr if dv else None, op, ob]
            if 0 <= s - 1 < n:
                got[s - 1][4] = mq
    sim.add_testbench(bench)
    sim.run()
    return [tuple(g) for g in got]


def check(config, slots, optimise, want, cmq=(), **kw):
    got = simulate(config, slots, optimise, cmq=cmq, **kw)
    # the clock after a clear reads 0 (the slot two before the clear's cycle-0 slot)
    want = [w[:4] + (0,) if t + 2 in set(cmq) else w for t, w in enumerate(want)]
    for t, (g, w) in enumerate(zip(got, want)):
        if g != w:
            names = ("action", "dep_error", "occ_pkts", "occ_bytes", "max_queue")
            diff = {n: (a, b) for n, a, b in zip(names, g, w) if a != b}
            raise AssertionError(f"slot {t} {slots[t][:2]}: RTL != model {diff}")
    assert len(got) == len(want)


def red_droptail_slots(rnd, n, p_arr=0.7, p_dep=0.5, lengths=None, dep_lengths=None,
                       phases=None):
    """Random slots with injected ``p`` (0, small, any, 1) and ``u``; ``phases``: a list of
    ``(p_arr, p_dep)`` cycled every 500 slots."""
    slots = []
    for t in range(n):
        if phases:
            p_arr, p_dep = phases[(t // 500) % len(phases)]
        p = rnd.choice((0, 0, rnd.randrange(1 << 28), rnd.randrange(PROB_ONE + 1), PROB_ONE))
        length = rnd.choice(lengths or (40, 1500, rnd.randint(1, 65535)))
        arr = Arrival(t, 0, length, rnd.random() < 0.5) if rnd.random() < p_arr else None
        dep = Departure(t, rnd.choice(dep_lengths or (40, 576, 1500, rnd.randint(1, 3000)))) \
            if rnd.random() < p_dep else None
        slots.append((arr, dep, p, rnd.getrandbits(32)))
    return slots


def run_injected(config, slots, optimise, monkeypatch, commits=None, cmq=(), preset=None):
    """The model with the slots' ``p`` and ``u``; Decision fed the same; compared."""
    model = qm.QueueManager(config)
    if preset is not None:
        model.occ_pkts, model.occ_bytes = preset
        model.max_queue = preset[0]
    ps = iter([p for arr, _, p, _ in slots if arr])
    monkeypatch.setattr(qm, "probability", lambda *args: next(ps))
    us = iter([u for arr, _, _, u in slots if arr])
    rand = lambda: next(us)                          # noqa: E731
    model._rand = rand
    want = model_outputs(model, slots, commits, cmq, rand)
    check(config, slots, optimise, want, cmq=cmq, commits=commits, preset=preset)
    return want, model


# limit_pkts 2: the queue sits at its packet limit often, with and without a departure in
# the slot (``>=`` against ``>``), which 25 packets with this traffic never reach
@OPTIMISE
@pytest.mark.parametrize("limit_pkts", [25, 2])
@pytest.mark.parametrize("mode,ecn", [("red", True), ("red", False), ("droptail", True),
                                      ("droptail", False)])
def test_decision_matches_model(mode, ecn, limit_pkts, optimise, monkeypatch):
    """RED (Floyd's spacing with ``p`` 0, small, any and 1) and drop-tail, ECN on and off,
    3000 slots in phases of few and many departures (one in every slot in some)."""
    rnd = random.Random(mode + str(ecn) + str(limit_pkts))
    config = Config(build=BUILD, mode=mode, ecn=ecn, limit_pkts=limit_pkts,
                    limit_bytes=20_000, n_cap=min(15, limit_pkts))
    slots = red_droptail_slots(rnd, 3000, phases=[(0.7, 0.5), (0.9, 1.0), (0.5, 0.2)])
    want, model = run_injected(config, slots, optimise, monkeypatch)
    actions = {w[0] for w in want} - {None}
    assert len(actions) >= (2 if mode == "droptail" else 3)
    c = model.counters
    assert c["dep_errors"] > 50 and c["forced_drops"] > 50


@OPTIMISE
@pytest.mark.parametrize("mode", ["red", "droptail"])
def test_limits_hit_on_every_clock(mode, optimise, monkeypatch):
    """An arrival and a departure in every slot, the queue held at its limits: 3 packets and
    3000 bytes, lengths 1499-1501 and departures of 1500 or more (short ones too), so the
    byte limit, the packet limit and both together force drops slot after slot, next to
    admissions of exactly the limit."""
    rnd = random.Random(mode)
    config = Config(build=BUILD, mode=mode, ecn=True, limit_pkts=3, limit_bytes=3000,
                    red_min_th=0.5, red_max_th=2)
    slots = red_droptail_slots(rnd, 3000, p_arr=1.0, p_dep=0.45,
                               lengths=(1, 1499, 1500, 1500, 1501, 3000, 3001),
                               dep_lengths=(1500, 1500, 1499, 1501, 4500))
    # the p of drop-tail is 0: its limits alone decide
    if mode == "droptail":
        slots = [(a, d, 0, u) for a, d, _, u in slots]
    want, model = run_injected(config, slots, optimise, monkeypatch)
    forced = [t for t, w in enumerate(want) if w[0] == qm.DROP_FORCED]
    assert len(forced) > 600
    # runs of forced drops in consecutive slots, and admissions right after them
    assert sum(1 for t in forced if t + 1 in set(forced)) > 200
    assert model.counters["enqueued"] > 500 and model.counters["dep_errors"] > 20
    full_b = sum(1 for w in want if w[3] == 3000)
    full_p = sum(1 for w in want if w[2] == 3)
    assert full_b > 100 and full_p > 100


@OPTIMISE
def test_decision_limits_lowered_below_the_queue(optimise, monkeypatch):
    """Drop-tail limits rewritten while packets are queued, to below the queue (the
    occupancy then sits above the limit until departures bring it down), and back up; with
    byte limits of one packet, short departures (more bytes than queued) are followed in
    the same slot by arrivals of exactly the limit and one byte more. Each commit at a slot
    with no arrival in the 3 slots before (the queue manager commits with the pipeline
    empty of arrivals; departures go on)."""
    rnd = random.Random(11)
    high = Config(build=BUILD, mode="droptail", limit_pkts=40, limit_bytes=100_000)
    low = Config(build=BUILD, mode="droptail", limit_pkts=3, limit_bytes=1500)
    slots, commits = [], {}
    for k in range(8):
        if k:
            commits[len(slots)] = high if k % 2 == 0 else low
        for i in range(300):
            t = len(slots)
            p_arr, p_dep = (0.9, 0.3) if k % 2 == 0 else (0.5, 0.6)
            arr = Arrival(t, 0, rnd.choice((40, 1500, 1501)), False) \
                if rnd.random() < p_arr and i < 297 else None
            dep = Departure(t, rnd.choice((40, 1500, 3000))) if rnd.random() < p_dep else None
            slots.append((arr, dep, 0, 0))
    # the situations this test is for, counted on a copy of the model as it runs
    probe = qm.QueueManager(high)
    seen = {"above limit, departure alone": 0, "short, arrival of exactly the limit": 0}
    for t, (arr, dep, _, _) in enumerate(slots):
        if t in commits:
            probe.configure(commits[t], t)
        if dep and not arr and probe.occ_pkts > probe._limit_pkts:
            seen["above limit, departure alone"] += 1
        if dep and arr and probe.occ_pkts and dep.length > probe.occ_bytes \
                and arr.length == probe._limit_bytes:
            seen["short, arrival of exactly the limit"] += 1
        if dep:
            probe.depart(dep)
        if arr:
            probe.arrive(arr)
    assert min(seen.values()) >= 5, seen
    run_injected(high, slots, optimise, monkeypatch, commits=commits)


class _PickedU:
    """The random number of one FPQ arrival, picked by the test once the model has its
    probability: the model's FPQ decision is ``u < p``, so the compare hands ``p`` over."""

    def __init__(self, pick):
        self.pick, self.value = pick, None

    def __lt__(self, p):
        self.value = self.pick(p)
        return self.value < p


@OPTIMISE
@pytest.mark.parametrize("ecn", [True, False])
def test_decision_fpq_matches_model(ecn, optimise):
    """FPQ mode: an unmodified model (FPQ probability from n, the r(N) table and the sampled
    average) decides real traffic; only its random numbers come from the test, chosen right
    at its probability (u = p - 1, p, p + 1) for a third of the arrivals. Decision, given the
    p each verdict reports and the same u, must give the same actions and occupancy."""
    rnd = random.Random(f"fpq{ecn}")
    build = Build(vec_bits=256, table_depth=64)
    # p_pkts 0 and one or two flows: r(n) is large enough that the queue's build-ups take p
    # well above 1/4; phases of slow and fast departures build the queue up and drain it
    config = Config(build=build, mode="fpq", ecn=ecn, v_max=200, n_cap=63, p_pkts=0.0,
                    limit_pkts=300, limit_bytes=200_000, tick_hz=1e6, t_clear_s=0.02) \
        .override(wq_shift=2, avg_sample_period=4)
    model = qm.QueueManager(config)
    flows = [rnd.getrandbits(104) for _ in range(2)]

    def pick(p):
        if rnd.random() < 1 / 3:
            return min(max(p + rnd.choice((-1, 0, 1)), 0), (1 << 32) - 1)
        return rnd.getrandbits(32)
    slots, want, ps = [], [], []
    for t in range(4000):
        arr = Arrival(t, rnd.choice(flows), rnd.choice((40, 576, 1500)), rnd.random() < 0.5) \
            if rnd.random() < 0.6 else None
        p_dep = 0.2 if (t // 800) % 2 == 0 else 0.97
        dep = Departure(t, rnd.choice((40, 576))) if rnd.random() < p_dep else None
        err = None
        if dep:
            before = model._dep_errors
            model.depart(dep)
            err = model._dep_errors - before
        u, p, action = rnd.getrandbits(32), rnd.randrange(PROB_ONE + 1), None
        if arr:
            picked = _PickedU(pick)
            model._rand = lambda: picked
            v = model.arrive(arr)
            assert picked.value is not None            # the model compared u with p
            u, p, action = picked.value, v.prob, v.action
            ps.append(p)
        want.append((action, err, model.occ_pkts, model.occ_bytes, model.max_queue))
        slots.append((arr, dep, p, u))
    check(config, slots, optimise, want)
    # the traffic reached every case of the compare and of the action
    assert 0 in ps and sum(0 < p < PROB_ONE for p in ps) > 1000
    assert sum(p > PROB_ONE // 4 for p in ps) > 100
    near = sum(1 for a, _, p, u in slots if a and abs(u - p) <= 1 and 0 < p < PROB_ONE)
    assert near > 300
    actions = {w[0] for w in want} - {None}
    assert actions == ({qm.ENQUEUE, qm.MARK, qm.DROP_EARLY, qm.DROP_FORCED} if ecn else
                       {qm.ENQUEUE, qm.DROP_EARLY, qm.DROP_FORCED})


@OPTIMISE
@pytest.mark.parametrize("limit_bytes", [3 << 30, (1 << 32) - 1])
def test_decision_byte_limit_above_2_31(optimise, limit_bytes, monkeypatch):
    """Occupancy above 2**31 bytes with a byte limit of 3 GiB (drop-tail): the byte compares
    must treat the occupancy as unsigned; with the largest limit, occupancy + length passes
    2**32, so the compares must see the carry. The occupancy registers start just below
    (``2**31 - 2**20`` and ``limit - 2**22`` bytes; the model's too) and 65535-byte packets
    arrive in every slot, with a departure in one of 64 and short ones now and then."""
    config = Config(build=BUILD, mode="droptail", limit_pkts=(1 << 20) - 1,
                    limit_bytes=limit_bytes)
    rnd = random.Random(limit_bytes)
    actions = set()
    for start in ((1 << 31) - (1 << 20), limit_bytes - (1 << 22)):
        slots = []
        for t in range(2500):
            arr = Arrival(t, 0, rnd.choice((65535, 65535, 65535, 1)), False)
            dep = Departure(t, rnd.choice((65535, 65535, 1 << 15))) if t % 64 == 63 else None
            slots.append((arr, dep, 0, 0))
        want, model = run_injected(config, slots, optimise, monkeypatch,
                                   preset=(start // 65535, start))
        assert max(w[3] for w in want) > 1 << 31
        actions |= {w[0] for w in want}
    # the second run reached the limit: occupancy + length past it, forced drops
    assert max(w[3] for w in want) + 65535 > limit_bytes
    assert actions == {qm.ENQUEUE, qm.DROP_FORCED}


@OPTIMISE
def test_clear_max_queue_reads_0_then_the_model_s(optimise, monkeypatch):
    """``clear_max_queue`` at random slots (back to back too), the queue growing and
    draining: the clock after a clear ``max_queue`` reads 0, then the model's
    ``clear_max_queue`` called before the slot at cycle 0 in the clock of the clear."""
    rnd = random.Random(21)
    config = Config(build=BUILD, mode="droptail", limit_pkts=40, limit_bytes=60_000)
    slots = red_droptail_slots(rnd, 3000, phases=[(0.8, 0.3), (0.4, 0.9)],
                               lengths=(40, 576, 1500))
    slots = [(a, d, 0, u) for a, d, _, u in slots]
    cmq = set(rnd.sample(range(10, 2990), 60))
    cmq |= {t + 1 for t in list(cmq)[:10]}
    want, _ = run_injected(config, slots, optimise, monkeypatch, cmq=cmq)
    assert len({w[4] for w in want}) > 20


@OPTIMISE
def test_admission_after_a_short_departure_then_a_byte_overflow(optimise, monkeypatch):
    """The smallest case of the speed form's ``K - l(t-1) < 0`` term: slot 1 departs more
    bytes than are queued (an error: the queue empties) and admits an arrival of exactly the
    byte limit; slot 2's arrival of one byte would exceed it and must be a forced drop. (Its
    other term, ``y > K + d(t-1) - l(t-1)``, does not see it: the departure was short.)"""
    config = Config(build=BUILD, mode="droptail", limit_pkts=100, limit_bytes=3000)
    slots = [(Arrival(0, 0, 1500, False), None, 0, 0),
             (Arrival(1, 0, 3000, False), Departure(1, 4500), 0, 0),
             (Arrival(2, 0, 1, False), None, 0, 0),
             (None, None, 0, 0)]
    want, _ = run_injected(config, slots, optimise, monkeypatch)
    assert [w[:2] for w in want[:3]] == [(qm.ENQUEUE, None), (qm.ENQUEUE, 1),
                                         (qm.DROP_FORCED, None)]


@pytest.mark.parametrize("optimise", ["area", "speed"])
def test_packet_limit_1_after_a_departure_from_an_empty_queue(optimise, monkeypatch):
    """``limit_pkts`` 1 (the register map's smallest): slot 0 departs from the empty queue
    (an error) and admits an arrival; slot 1's arrival finds the queue full and must be a
    forced drop. (``DecisionLimitHarness`` finds this in 6 clocks from reset.)"""
    config = Config(build=BUILD, mode="droptail", limit_pkts=1, limit_bytes=100_000)
    slots = [(Arrival(0, 0, 100, False), Departure(0, 100), 0, 0),
             (Arrival(1, 0, 100, False), None, 0, 0),
             (None, None, 0, 0)]
    want, _ = run_injected(config, slots, optimise, monkeypatch)
    assert [w[:2] for w in want[:2]] == [(qm.ENQUEUE, 1), (qm.DROP_FORCED, None)]


@pytest.mark.parametrize("optimise", ["area", "speed"])
def test_zero_byte_departure_after_a_short_one(optimise, monkeypatch):
    """A departure of 0 bytes (outside the traces' lengths, possible on the port): 2 packets of 100 bytes, a departure of 250 bytes
    (short: an error, the bytes go to 0, one packet left), then one of 0 bytes: the model
    counts no error for it (one packet is queued, 0 bytes are not more than 0)."""
    config = Config(build=BUILD, mode="droptail", limit_pkts=10, limit_bytes=100_000)
    slots = [(Arrival(0, 0, 100, False), None, 0, 0), (Arrival(1, 0, 100, False), None, 0, 0),
             (None, Departure(2, 250), 0, 0), (None, Departure(3, 0), 0, 0),
             (None, None, 0, 0)]
    want, _ = run_injected(config, slots, optimise, monkeypatch)
    assert [w[1] for w in want[2:4]] == [1, 0]
