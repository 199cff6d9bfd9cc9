"""The bit-exact queue manager end to end: clock order, occupancy, limits, ECN, RED spacing, the
sampled average and its delay, configuration at a clock, counters."""
import bisect
import math
import random

from hypothesis import given, settings, strategies as st
import pytest

from fpq import (Config, Build, QueueManager, Arrival, Departure, ENQUEUE, MARK, DROP_EARLY,
                 DROP_FORCED, pack_flow)
from fpq.formats import PROB_ONE, QAVG, CLEAR_PERIOD

FLOW = pack_flow(0x0A000001, 0x0A000002, 1000, 80, 6)
ONE = 1 << QAVG.frac_bits


def instant(**kw):
    """A configuration whose average is the queue itself, sampled every 4 clocks."""
    return Config(avg_tau_s=0.0, **kw)


def filled(cfg, occupancy, at=10**5):
    """A model under ``cfg`` from clock ``at`` on, with the queue filled to ``occupancy``
    packets before (under drop-tail, so that no early decision depends on the filling)."""
    qm = QueueManager(cfg.replace(mode="droptail"))
    steady(qm, occupancy, 0)
    qm.configure(cfg, at)
    return qm


def steady(qm, occupancy, arrivals, length=100, ecn=False, t0=1000, dt=1000):
    """Hold the queue at ``occupancy`` packets: fill it, then after every accepted arrival one
    departure. Returns the verdicts of the steady part."""
    t = t0
    while qm.occ_pkts < occupancy:   # early drops may refuse some of the fill
        t += dt
        qm.arrive(Arrival(t, FLOW, length, ecn))
    assert qm.occ_pkts == occupancy
    out = []
    for _ in range(arrivals):
        t += dt
        v = qm.arrive(Arrival(t, FLOW, length, ecn))
        out.append(v)
        if v.action in (ENQUEUE, MARK):
            qm.depart(Departure(t + 1, length))
        assert qm.occ_pkts == occupancy
    return out


# ---- clock order ---------------------------------------------------------------------------
def test_events_out_of_clock_order_are_refused_and_change_nothing():
    qm = QueueManager(Config())
    qm.depart(Departure(5, 100))                  # a departure, then an arrival, one clock
    qm.arrive(Arrival(5, FLOW, 100))
    before = qm.snapshot()
    bad = [(qm.arrive, Arrival(5, FLOW, 100)),   # two arrivals in one clock
           (qm.depart, Departure(5, 100)),       # a departure after the arrival of its clock
           (qm.arrive, Arrival(4, FLOW, 100)),   # back in time
           (qm.depart, Departure(3, 100)),
           (qm.arrive, Arrival(6.0, FLOW, 100)),  # not an integer clock
           (lambda c: qm.configure(Config(), c), 5)]
    for call, arg in bad:
        with pytest.raises(ValueError, match="clock"):
            call(arg)
    assert qm.snapshot() == before
    qm.depart(Departure(6, 100))
    qm.arrive(Arrival(6, FLOW, 100))


def test_configure_and_advance_set_a_floor_for_later_events():
    qm = QueueManager(Config())
    qm.arrive(Arrival(10, FLOW, 100))
    qm.configure(Config(mode="red"), 50)
    with pytest.raises(ValueError, match=">= 50"):
        qm.depart(Departure(49, 100))
    qm.advance(70)
    with pytest.raises(ValueError, match=">= 71"):
        qm.arrive(Arrival(70, FLOW, 100))
    qm.arrive(Arrival(71, FLOW, 100))


# ---- occupancy and limits --------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(1, 1500)), max_size=300),
       limit_pkts=st.integers(1, 20), limit_bytes=st.integers(1, 20000))
def test_occupancy_and_counters_follow_the_verdicts(ops, limit_pkts, limit_bytes):
    qm = QueueManager(Config(mode="droptail", limit_pkts=limit_pkts, limit_bytes=limit_bytes))
    queue = []          # lengths of the packets the model accepted, in order
    deps = errors = 0
    t = 0
    for is_arrival, length in ops:
        t += 7
        if is_arrival:
            v = qm.arrive(Arrival(t, FLOW, length))
            fits = len(queue) + 1 <= limit_pkts and sum(queue) + length <= limit_bytes
            assert v.action == (ENQUEUE if fits else DROP_FORCED)
            if fits:
                queue.append(length)
        else:
            length = queue[0] if queue else length
            deps += 1
            errors += not queue
            qm.depart(Departure(t, length))
            if queue:
                queue.pop(0)
        assert (qm.occ_pkts, qm.occ_bytes) == (len(queue), sum(queue))
    c = qm.counters
    assert c["arrivals"] == c["enqueued"] + c["forced_drops"] + c["early_drops"]
    assert c["early_drops"] == c["marked"] == 0  # drop-tail never decides early
    assert (c["departures"], c["dep_errors"]) == (deps, errors)


def test_departure_of_more_bytes_than_queued_saturates_and_counts():
    qm = QueueManager(Config(mode="droptail"))
    qm.arrive(Arrival(10, FLOW, 100))
    qm.depart(Departure(20, 500))
    assert (qm.occ_pkts, qm.occ_bytes, qm.counters["dep_errors"]) == (0, 0, 1)


# ---- the average: sampled on the clock, published avg_delay later ---------------------------
@pytest.mark.parametrize("delay", [1, 5, 12, 40])
@pytest.mark.parametrize("period", [4, 7, 64])
def test_average_is_the_queue_at_the_last_sample_published_avg_delay_earlier(delay, period):
    # weight 1: each sample replaces the average, so the average an arrival at clock c
    # reports is the queue after every event of clocks <= s, for the last sample clock
    # s = k * period with s + delay <= c (0 before the first)
    cfg = Config(build=Build(avg_delay=delay), mode="droptail", limit_pkts=50) \
        .override(wq_shift=0, avg_sample_period=period)
    qm = QueueManager(cfg)
    rnd = random.Random(delay * 100 + period)
    clocks, queues = [], []    # event clocks, and the queue after every event of each
    q, t = 0, 0
    for _ in range(3000):
        t += rnd.choice((1, 1, 2, 3, 9))
        if q and rnd.random() < 0.5:
            qm.depart(Departure(t, 100))
            q -= 1
        if rnd.random() < 0.7:
            v = qm.arrive(Arrival(t, FLOW, 100))
            last = (t - delay) // period * period      # the last sample published by t
            want = 0
            if last >= period:
                i = bisect.bisect_right(clocks, last)
                want = queues[i - 1] if i else 0
            assert v.avg == want * ONE, (t, last)
            q += v.action == ENQUEUE
        clocks.append(t)
        queues.append(q)


@settings(max_examples=30, deadline=None)
@given(a=st.integers(0, (1 << 36) - 1), q=st.integers(0, (1 << 20) - 1),
       shift=st.integers(0, 16), n=st.integers(0, 5000))
def test_ewma_repeat_is_n_single_steps(a, q, shift, n):
    from fpq.queue_averager import ewma_step, ewma_repeat
    x = a
    for _ in range(n):
        x = ewma_step(x, q, shift)
    assert ewma_repeat(a, q, shift, n) == x


@pytest.mark.parametrize("tau_s", [1e-3, 0.05, 2.36])
def test_average_has_the_time_constant_asked_for(tau_s):
    # a step of the queue from 0 to Q held for tau: the average reaches Q (1 - 1/e) (within
    # the rounding of the period to whole clocks and of the weight's fixed point)
    tick = 1e8                  # the 200-clock step is short against every tau here
    cfg = Config(mode="droptail", tick_hz=tick, avg_tau_s=tau_s, limit_pkts=1000)
    k, period = cfg.avg_parameters()
    assert cfg.avg_tau_actual_s() == pytest.approx(tau_s, rel=1 / (2 * period) + 1e-9)
    qm = QueueManager(cfg)
    for i in range(200):
        qm.arrive(Arrival(i, FLOW, 100))
    t = int(tau_s * tick) + 100
    qm.advance(t + cfg.build.avg_delay)
    got = qm.snapshot()["avg"] / ONE
    assert got == pytest.approx(200 * (1 - math.exp(-1)), rel=0.02)


def test_long_idle_gaps_of_any_length():
    # no signed-difference wrap: a gap of 2**70 clocks empties the vector (every bit cleared
    # many times over) and settles the average on the queue, as a gap of 10**7 clocks with
    # each clear and sample taken one by one does
    cfg = Config(build=Build(vec_bits=1024, table_depth=256), v_max=1000, n_cap=255,
                 tick_hz=1e6, t_clear_s=0.01, avg_tau_s=0.2, mode="droptail")
    flows = [pack_flow(i, 2, 3, 4, 6) for i in range(300)]
    for gap in (10**7, 2**70):
        qm = QueueManager(cfg)
        for i, f in enumerate(flows):
            qm.arrive(Arrival(i, f, 100))
        for i in range(280):
            qm.depart(Departure(400 + i, 100))
        assert qm.n_raw > 200 and qm.occ_pkts == 20
        v = qm.arrive(Arrival(1000 + gap, flows[0], 100))
        # from below, the average stops where a step rounds to 0: 2**wq_shift - 1 under it
        assert v.avg == 20 * ONE - ((1 << cfg.registers()["wq_shift"]) - 1)
        assert qm.n_raw == qm.fc.popcount() == 1
        if gap == 10**7:
            ref = QueueManager(cfg)           # the same, one clear and sample at a time
            for i, f in enumerate(flows):
                ref.arrive(Arrival(i, f, 100))
            for i in range(280):
                ref.depart(Departure(400 + i, 100))
            for c in range(1000, 1000 + gap, 2000):
                ref.advance(c)
            assert tuple(ref.arrive(Arrival(1000 + gap, flows[0], 100))) == tuple(v)
            assert ref.fc.rng.next() == qm.fc.rng.next()
    assert qm.fc.clears == ((1000 + 2**70) << CLEAR_PERIOD.frac_bits) // qm.fc.period


def test_fpq_drop_rate_matches_probability():
    # queue held at 60 packets with one flow: p = l_t(1) * 60 / q_t(1), drops are Bernoulli(p)
    qm = QueueManager(instant(limit_pkts=1000))
    out = steady(qm, 60, 20000)
    p = out[-1].prob / PROB_ONE
    assert all(v.prob == out[-1].prob for v in out[1000:])
    rate = sum(v.action == DROP_EARLY for v in out[1000:]) / len(out[1000:])
    sigma = (p * (1 - p) / len(out[1000:])) ** 0.5
    assert abs(rate - p) < 5 * sigma


@pytest.mark.parametrize("max_p", [0.02, 0.1, 0.5])
def test_red_spaces_drops_uniformly(max_p):
    # Floyd's RED: with constant p_b the gap between early drops is uniform on 1 .. 1/p_b,
    # so the drop rate is 2 p_b / (1 + p_b) and no gap exceeds ceil(1 / p_b)
    qm = QueueManager(instant(mode="red", red_min_th=0, red_max_th=100, red_max_p=max_p))
    out = steady(qm, 50, 30000)[100:]
    p_b = out[-1].prob / PROB_ONE
    assert p_b == pytest.approx(max_p / 2, rel=1e-3)
    drops = [i for i, v in enumerate(out) if v.action == DROP_EARLY]
    gaps = [b - a for a, b in zip(drops, drops[1:])]
    assert max(gaps) <= int(1 / p_b) + 1
    rate = len(drops) / len(out)
    assert rate == pytest.approx(2 * p_b / (1 + p_b), rel=0.08)
    # uniform, not geometric: gaps below a quarter of the maximum are about a quarter of all
    short = sum(g <= 0.25 / p_b for g in gaps) / len(gaps)
    assert 0.18 < short < 0.32


def test_red_above_max_th_drops_everything_gentle_does_not():
    for gentle, expect_all in ((False, True), (True, False)):
        qm = filled(instant(mode="red", red_min_th=2, red_max_th=10, red_gentle=gentle), 12)
        out = steady(qm, 12, 400, t0=10**5)[20:]
        dropped = sum(v.action == DROP_EARLY for v in out)
        assert (dropped == len(out)) == expect_all
        assert dropped > 0


def test_ecn_marks_instead_of_early_drops_but_forced_drops_stay():
    cfg = instant(mode="red", red_min_th=0, red_max_th=10, red_max_p=0.5, ecn=True,
                  limit_pkts=8)
    out = steady(filled(cfg, 7), 7, 2000, ecn=True, t0=10**5)
    actions = {v.action for v in out}
    assert MARK in actions and DROP_EARLY not in actions
    # not ECN-capable: the same decisions are drops
    out2 = steady(filled(cfg, 7), 7, 2000, ecn=False, t0=10**5)
    assert [v.action == MARK for v in out] == [v.action == DROP_EARLY for v in out2]
    # a full queue drops even ECN-capable packets
    qm = QueueManager(cfg)
    acts = [qm.arrive(Arrival(10 * i, FLOW, 100, True)).action for i in range(20)]
    assert acts[8:] == [DROP_FORCED] * 12


def test_counters_match_verdicts():
    qm = QueueManager(Config(mode="red", red_min_th=0, red_max_th=10, red_max_p=0.3, ecn=True,
                             limit_pkts=9, avg_tau_s=1e-4))
    rnd = random.Random(5)
    acts = []
    for i in range(3000):
        acts.append(qm.arrive(Arrival(i * 10, FLOW, 64, rnd.random() < 0.5)).action)
        if rnd.random() < 0.6:
            qm.depart(Departure(i * 10 + 5, 64))
    c = qm.counters
    assert c["arrivals"] == 3000
    assert c["marked"] == acts.count(MARK) > 0
    assert c["early_drops"] == acts.count(DROP_EARLY) > 0
    assert c["forced_drops"] == acts.count(DROP_FORCED) > 0
    assert c["enqueued"] == acts.count(ENQUEUE) + acts.count(MARK)
    assert qm.snapshot()["max_queue"] == 9


def test_clear_max_queue_restarts_from_the_queue_as_it_is():
    qm = QueueManager(Config(mode="droptail", limit_pkts=100))
    for i in range(7):
        qm.arrive(Arrival(i * 10, FLOW, 64, False))
    for i in range(4):
        qm.depart(Departure(100 + i, 64))
    assert qm.snapshot()["max_queue"] == 7
    qm.clear_max_queue()
    assert qm.snapshot()["max_queue"] == qm.occ_pkts == 3
    qm.arrive(Arrival(200, FLOW, 64, False))
    assert qm.snapshot()["max_queue"] == 4
    for i in range(4):
        qm.depart(Departure(300 + i, 64))
    qm.clear_max_queue()
    assert qm.snapshot()["max_queue"] == 0


def test_same_seed_same_verdicts_other_seed_differs():
    def run(seed):
        qm = QueueManager(instant(seed_decide=seed, limit_pkts=1000))
        return [v.action for v in steady(qm, 80, 3000)]
    assert run(1) == run(1)
    assert run(1) != run(2)


# ---- configuration at a clock ---------------------------------------------------------------
def test_configure_keeps_state_and_changes_behaviour():
    qm = QueueManager(instant(mode="droptail"))
    steady(qm, 30, 100)
    n, occ = qm.n_raw, qm.occ_pkts
    qm.configure(qm.config.replace(mode="red", red_min_th=0, red_max_th=20,
                                     red_max_p=0.5), 10**6)
    assert (qm.n_raw, qm.occ_pkts) == (n, occ)
    out = steady(qm, 30, 50, t0=10**6)
    assert any(v.action == DROP_EARLY for v in out)
    with pytest.raises(ValueError, match="build"):
        qm.configure(Config(build=Build(vec_bits=16384)), 10**7)


@pytest.mark.parametrize("at", [100, 101, 102, 103, 5000])
def test_clears_before_the_commit_clock_follow_the_old_period_after_it_the_new(at):
    # periods 3 and 2 clocks: clears due at 3, 6, 9, ...; the one scheduled when the commit
    # comes keeps its clock, each later one follows 2 clocks after the one before, except
    # after a clear in the commit's clock itself: the timer reads the period a clock before
    # a clear, so that one steps with the old period
    fast, slow = (Config(build=Build(vec_bits=64, table_depth=16), v_max=64, n_cap=15,
                         tick_hz=1e6, t_clear_s=p * 64 / 1e6) for p in (2, 3))
    qm = QueueManager(slow)
    qm.configure(fast, at)
    qm.advance(20_000)
    old = (at - 1) // 3                      # clears at 3, 6, ... <= at - 1
    pending = 3 * (old + 1)                  # the one scheduled then
    step = 3 if pending == at else 2
    assert qm.fc.clears == old + 1 + (20_000 - pending - step) // 2 + 1


@pytest.mark.parametrize("at, sampled", [(10, 0), (11, 11), (20, 11), (21, 21)])
def test_samples_before_the_commit_clock_use_the_old_weight(at, sampled):
    # weight 1 before the commit, 2**-16 after: the average stays within a packet of the
    # queue the last sample before the commit found (samples every 10 clocks; the queue
    # grows by one packet per clock to 30)
    cfg = Config(mode="droptail", limit_pkts=100).override(wq_shift=0, avg_sample_period=10)
    qm = QueueManager(cfg)
    for i in range(at):
        qm.arrive(Arrival(i, FLOW, 100))
    qm.configure(cfg.override(wq_shift=16), at)
    for i in range(at, 30):
        qm.arrive(Arrival(i, FLOW, 100))
    qm.advance(300)
    assert qm.snapshot()["avg"] >> 16 == sampled


def test_fixed_and_float_models_agree_statistically():
    from fpq_sim.demo import run, summary
    cfg, out, t_half, flows = run(200, 20000, seed=4)
    rows = summary(cfg, out, t_half, flows)
    a, b = rows["bit-exact"], rows["float"]
    assert abs(a["drop_rate"] - b["drop_rate"]) < 0.01
    assert a["n_phase1"] == pytest.approx(b["n_phase1"], rel=0.03)
    assert a["n_phase2"] == pytest.approx(b["n_phase2"], rel=0.1)
    assert a["avg_queue"] == pytest.approx(b["avg_queue"], rel=0.05)


# ---- the inlined hot path ------------------------------------------------------------------
class ComponentReference(QueueManager):
    """``arrive`` spelled out with the component methods that ``QueueManager.arrive`` inlines
    for speed (FlowCounter.advance/set, QueueAverager.sample_until/read,
    drop_probability.probability)."""

    def arrive(self, desc):
        from fpq.drop_probability import Mode, probability
        ts, flow, length, ecn = desc
        self._last_arr = ts
        self._clock = max(self._clock, ts)
        self.fc.advance(ts)
        self.fc.set(self.hash(flow))
        n = self.fc.n_raw
        if self._hold:
            n = self._held_count(ts, n)
        n = min(n, self.regs["n_cap"])
        self.avg.sample_until(ts, self.occ_pkts)
        avg_used = self.avg.read(ts)
        p = probability(self.mode, avg_used, self.rate_table[n], self.regs)
        u = self.rng.next()
        early = False
        if self.mode == Mode.fpq:
            early = u < p
        elif self.mode == Mode.red:
            if p == 0:
                self.red_acc, self.red_thresh = 0, u
            elif self.red_acc + p >= self.red_thresh:
                early, self.red_acc, self.red_thresh = True, 0, u
            else:
                self.red_acc += p
        q = self.occ_pkts
        if early and not (self.regs["ecn"] and ecn):
            action = DROP_EARLY
        elif q + 1 > self.regs["limit_pkts"] or self.occ_bytes + length > self.regs["limit_bytes"]:
            action = DROP_FORCED
        else:
            action = MARK if early else ENQUEUE
            self.occ_pkts, self.occ_bytes = q + 1, self.occ_bytes + length
            self.max_queue = max(self.max_queue, q + 1)
        self._count[action] += 1
        seq = self.seq
        self.seq = seq + 1
        return (seq, action, n, avg_used, p)


@settings(max_examples=25, deadline=None)
@given(mode=st.sampled_from(["fpq", "red", "droptail"]), ecn=st.booleans(),
       wq=st.integers(0, 12), period=st.integers(4, 300), seed=st.integers(0, 1000),
       v_max=st.integers(1, 1024), clear=st.floats(1.0, 40.0))
def test_inlined_hot_path_equals_the_components(mode, ecn, wq, period, seed, v_max, clear):
    build = Build(vec_bits=1024, table_depth=256)
    cfg = Config(build=build, mode=mode, ecn=ecn, v_max=v_max, n_cap=255, limit_pkts=40,
                 red_min_th=2, red_max_th=20, red_max_p=0.3, tick_hz=1e6,
                 t_clear_s=clear * v_max / 1e6, p_pkts=5.0, seed_decide=seed) \
        .override(wq_shift=wq, avg_sample_period=period)
    fast, ref = QueueManager(cfg), ComponentReference(cfg)
    rnd = random.Random(seed)
    flows = [pack_flow(rnd.getrandbits(32), 1, 2, 3, 6) for _ in range(60)]
    t = 0
    for _ in range(1500):
        t += rnd.choice((1, 1, 2, 30, 200, 5000))
        if rnd.random() < 0.45:
            d = Departure(t, 100)
            fast.depart(d)
            ref.depart(d)
        if rnd.random() < 0.6:
            a = Arrival(t, rnd.choice(flows), 100, rnd.random() < 0.5)
            assert tuple(fast.arrive(a)) == ref.arrive(a)
    assert fast.snapshot() == ref.snapshot()
