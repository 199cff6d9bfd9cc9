"""Decision against the golden model's own ``arrive()`` / ``depart()`` (steps 4-5 of the
contract and every departure): the early decision (FPQ compare, RED's uniform spacing), ECN,
the hard limits on the exact occupancy, the occupancy and its maximum.

The bench is the Verilator bench's (``tb_lib.blocks.decision``, cocotb-tests/decision/), here
in Amaranth's simulator: the model decides with the ``p`` and ``u`` each slot gives the RTL,
and every output is compared at the block's ``LATENCY``; ports of clocks without an arrival
or a departure carry random values (a RAM delay line's stale words), which must not count.
FPQ traffic is decided by an unmodified model first (only its random numbers from the
test), and the bench's model, given the ``p`` each verdict reported, must agree with it.

Compared per slot, at cycle ``LATENCY``: ``out_valid`` and the action of its arrival,
``out_dep_valid`` and whether its departure was an error (``dep_errors`` counted by the
model), and ``occ_pkts`` / ``occ_bytes`` after the slot; ``max_queue`` a clock later. Both
``optimise`` forms, so each equals the model and hence the other.
"""
import random

import pytest

import fpq.queue_manager as qm
from fpq import Build, Config
from fpq.formats import PROB_ONE
from fpq.queue_manager import Arrival, Departure
from fpq_hdl.decision import Decision

from tb_lib.blocks.decision import DecisionBench, OUTPUTS, random_slots, fpq_traffic
from tb_lib.sim_amaranth import run_bench

BUILD = Build(table_depth=16)
OPTIMISE = pytest.mark.parametrize("optimise", ["speed", "area"])


def run_injected(config, slots, optimise, commits=None, cmq=(), preset=None):
    """Decision of form ``optimise`` fed ``slots`` ``(arrival, departure, p, u)``, the model
    deciding with the same ``p`` and ``u``, compared. ``commits``: slot -> configuration from
    that slot on (no arrival in the 3 slots before: a commit waits for an empty pipeline);
    ``cmq``: slots whose cycle 0 is the clock of a ``clear_max_queue``; ``preset``:
    ``(occ_pkts, occ_bytes)`` in the registers (and the model) before the first slot.
    Returns the model's ``(action or None, dep_error or None, occ_pkts, occ_bytes,
    max_queue)`` after each slot, and the model."""
    script = [("config", config), *([("preset", *preset)] if preset else []),
              ("slots", slots, cmq, True, commits)]
    plan = {"build": config.build, "script": script, "noise": 0, "record": True}
    bench, _ = run_bench(Decision(config.build, optimise), lambda sim: DecisionBench(sim, plan),
                         OUTPUTS)
    return bench.rows, bench.model.qm


# limit_pkts 2: the queue sits at its packet limit often, with and without a departure in
# the slot (``>=`` against ``>``), which 25 packets with this traffic never reach
@OPTIMISE
@pytest.mark.parametrize("limit_pkts", [25, 2])
@pytest.mark.parametrize("mode,ecn", [("red", True), ("red", False), ("droptail", True),
                                      ("droptail", False)])
def test_decision_matches_model(mode, ecn, limit_pkts, optimise):
    """RED (Floyd's spacing with ``p`` 0, small, any and 1) and drop-tail, ECN on and off,
    3000 slots in phases of few and many departures (one in every slot in some)."""
    rnd = random.Random(mode + str(ecn) + str(limit_pkts))
    config = Config(build=BUILD, mode=mode, ecn=ecn, limit_pkts=limit_pkts,
                    limit_bytes=20_000, n_cap=min(15, limit_pkts))
    slots = random_slots(rnd, 3000, phases=[(0.7, 0.5), (0.9, 1.0), (0.5, 0.2)])
    want, model = run_injected(config, slots, optimise)
    actions = {w[0] for w in want} - {None}
    assert len(actions) >= (2 if mode == "droptail" else 3)
    c = model.counters
    assert c["dep_errors"] > 50 and c["forced_drops"] > 50


@OPTIMISE
@pytest.mark.parametrize("mode", ["red", "droptail"])
def test_limits_hit_on_every_clock(mode, optimise):
    """An arrival and a departure in every slot, the queue held at its limits: 3 packets and
    3000 bytes, lengths 1499-1501 and departures of 1500 or more (short ones too), so the
    byte limit, the packet limit and both together force drops slot after slot, next to
    admissions of exactly the limit."""
    rnd = random.Random(mode)
    config = Config(build=BUILD, mode=mode, ecn=True, limit_pkts=3, limit_bytes=3000,
                    red_min_th=0.5, red_max_th=2)
    slots = random_slots(rnd, 3000, p_arr=1.0, p_dep=0.45,
                               lengths=(1, 1499, 1500, 1500, 1501, 3000, 3001),
                               dep_lengths=(1500, 1500, 1499, 1501, 4500))
    # the p of drop-tail is 0: its limits alone decide
    if mode == "droptail":
        slots = [(a, d, 0, u) for a, d, _, u in slots]
    want, model = run_injected(config, slots, optimise)
    forced = [t for t, w in enumerate(want) if w[0] == qm.DROP_FORCED]
    assert len(forced) > 600
    # runs of forced drops in consecutive slots, and admissions right after them
    assert sum(1 for t in forced if t + 1 in set(forced)) > 200
    assert model.counters["enqueued"] > 500 and model.counters["dep_errors"] > 20
    full_b = sum(1 for w in want if w[3] == 3000)
    full_p = sum(1 for w in want if w[2] == 3)
    assert full_b > 100 and full_p > 100


@OPTIMISE
def test_decision_limits_lowered_below_the_queue(optimise):
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
    run_injected(high, slots, optimise, commits=commits)


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
    slots, want = fpq_traffic(rnd, config, 4000)
    got, _ = run_injected(config, slots, optimise)
    assert got == want
    ps = [p for a, _, p, _ in slots if a]
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
def test_decision_byte_limit_above_2_31(optimise, limit_bytes):
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
        want, model = run_injected(config, slots, optimise,
                                   preset=(start // 65535, start))
        assert max(w[3] for w in want) > 1 << 31
        actions |= {w[0] for w in want}
    # the second run reached the limit: occupancy + length past it, forced drops
    assert max(w[3] for w in want) + 65535 > limit_bytes
    assert actions == {qm.ENQUEUE, qm.DROP_FORCED}


@OPTIMISE
def test_clear_max_queue_reads_0_then_the_model_s(optimise):
    """``clear_max_queue`` at random slots (back to back too), the queue growing and
    draining: the clock after a clear ``max_queue`` reads 0, then the model's
    ``clear_max_queue`` called before the slot at cycle 0 in the clock of the clear."""
    rnd = random.Random(21)
    config = Config(build=BUILD, mode="droptail", limit_pkts=40, limit_bytes=60_000)
    slots = random_slots(rnd, 3000, phases=[(0.8, 0.3), (0.4, 0.9)],
                               lengths=(40, 576, 1500))
    slots = [(a, d, 0, u) for a, d, _, u in slots]
    cmq = set(rnd.sample(range(10, 2990), 60))
    cmq |= {t + 1 for t in list(cmq)[:10]}
    want, _ = run_injected(config, slots, optimise, cmq=cmq)
    assert len({w[4] for w in want}) > 20


@OPTIMISE
def test_admission_after_a_short_departure_then_a_byte_overflow(optimise):
    """The smallest case of the speed form's ``K - l(t-1) < 0`` term: slot 1 departs more
    bytes than are queued (an error: the queue empties) and admits an arrival of exactly the
    byte limit; slot 2's arrival of one byte would exceed it and must be a forced drop. (Its
    other term, ``y > K + d(t-1) - l(t-1)``, does not see it: the departure was short.)"""
    config = Config(build=BUILD, mode="droptail", limit_pkts=100, limit_bytes=3000)
    slots = [(Arrival(0, 0, 1500, False), None, 0, 0),
             (Arrival(1, 0, 3000, False), Departure(1, 4500), 0, 0),
             (Arrival(2, 0, 1, False), None, 0, 0),
             (None, None, 0, 0)]
    want, _ = run_injected(config, slots, optimise)
    assert [w[:2] for w in want[:3]] == [(qm.ENQUEUE, None), (qm.ENQUEUE, 1),
                                         (qm.DROP_FORCED, None)]


@pytest.mark.parametrize("optimise", ["area", "speed"])
def test_packet_limit_1_after_a_departure_from_an_empty_queue(optimise):
    """``limit_pkts`` 1 (the register map's smallest): slot 0 departs from the empty queue
    (an error) and admits an arrival; slot 1's arrival finds the queue full and must be a
    forced drop. (``DecisionLimitHarness`` finds this in 6 clocks from reset.)"""
    config = Config(build=BUILD, mode="droptail", limit_pkts=1, limit_bytes=100_000)
    slots = [(Arrival(0, 0, 100, False), Departure(0, 100), 0, 0),
             (Arrival(1, 0, 100, False), None, 0, 0),
             (None, None, 0, 0)]
    want, _ = run_injected(config, slots, optimise)
    assert [w[:2] for w in want[:2]] == [(qm.ENQUEUE, 1), (qm.DROP_FORCED, None)]


@pytest.mark.parametrize("optimise", ["area", "speed"])
def test_zero_byte_departure_after_a_short_one(optimise):
    """A departure of 0 bytes (outside the traces' lengths, possible on the port): 2 packets of 100 bytes, a departure of 250 bytes
    (short: an error, the bytes go to 0, one packet left), then one of 0 bytes: the model
    counts no error for it (one packet is queued, 0 bytes are not more than 0)."""
    config = Config(build=BUILD, mode="droptail", limit_pkts=10, limit_bytes=100_000)
    slots = [(Arrival(0, 0, 100, False), None, 0, 0), (Arrival(1, 0, 100, False), None, 0, 0),
             (None, Departure(2, 250), 0, 0), (None, Departure(3, 0), 0, 0),
             (None, None, 0, 0)]
    want, _ = run_injected(config, slots, optimise)
    assert [w[1] for w in want[2:4]] == [1, 0]
