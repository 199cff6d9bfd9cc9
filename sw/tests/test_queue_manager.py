"""The bit-exact queue manager end to end: occupancy, limits, ECN, RED spacing, lag, counters."""
import random

from hypothesis import given, settings, strategies as st
import pytest

from fpq import (Config, Build, QueueManager, Arrival, Departure, ENQUEUE, MARK, DROP_EARLY,
                 DROP_FORCED, pack_flow)
from fpq.formats import PROB_ONE, QAVG, TIME_BITS

FLOW = pack_flow(0x0A000001, 0x0A000002, 1000, 80, 6)


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
            qm.depart(Departure(t, length))
        assert qm.occ_pkts == occupancy
    return out


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


def test_average_used_is_avg_lag_arrivals_old():
    # w_q = 1 (shift 0): the average is exactly the queue each arrival found, so the average a
    # verdict reports must be the queue found avg_lag arrivals earlier (0 before that)
    build = Build(avg_lag=5)
    qm = QueueManager(Config(build=build, mode="droptail", wq_shift=0))
    found = []
    rnd = random.Random(3)
    t = 0
    for k in range(200):
        t += 10
        if qm.occ_pkts and rnd.random() < 0.45:
            qm.depart(Departure(t, 100))
        found.append(qm.occ_pkts)
        v = qm.arrive(Arrival(t, FLOW, 100))
        # an empty queue left by a departure decays instead (tested elsewhere): skip those
        expected = found[k - 5] << QAVG.frac_bits if k >= 5 else 0
        if k >= 5 and found[k - 5] == 0:
            continue
        assert v.avg == expected, k


def test_fpq_drop_rate_matches_probability():
    # queue held at 60 packets with one flow: p = l_t(1) * 60 / q_t(1), drops are Bernoulli(p)
    qm = QueueManager(Config(wq_shift=2, limit_pkts=1000))
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
    cfg = Config(mode="red", red_min_th=0, red_max_th=100, red_max_p=max_p, wq_shift=0)
    qm = QueueManager(cfg)
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
        qm = QueueManager(Config(mode="red", red_min_th=2, red_max_th=10, red_gentle=gentle,
                                 wq_shift=0))
        out = steady(qm, 12, 400)[20:]
        dropped = sum(v.action == DROP_EARLY for v in out)
        assert (dropped == len(out)) == expect_all
        assert dropped > 0


def test_ecn_marks_instead_of_early_drops_but_forced_drops_stay():
    cfg = Config(mode="red", red_min_th=0, red_max_th=10, red_max_p=0.5, wq_shift=0, ecn=True,
                 limit_pkts=8)
    out = steady(QueueManager(cfg), 7, 2000, ecn=True)
    actions = {v.action for v in out}
    assert MARK in actions and DROP_EARLY not in actions
    # not ECN-capable: the same decisions are drops
    out2 = steady(QueueManager(cfg), 7, 2000, ecn=False)
    assert [v.action == MARK for v in out] == [v.action == DROP_EARLY for v in out2]
    # a full queue drops even ECN-capable packets
    qm = QueueManager(cfg)
    acts = [qm.arrive(Arrival(10 * i, FLOW, 100, True)).action for i in range(20)]
    assert acts[8:] == [DROP_FORCED] * 12


def test_counters_match_verdicts():
    qm = QueueManager(Config(mode="red", red_min_th=0, red_max_th=10, red_max_p=0.3, ecn=True,
                             limit_pkts=9, wq_shift=1))
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


def test_timestamp_wrap_keeps_the_flow_count():
    # 2**48 ticks is 21.7 days at 150 MHz; across the wrap the vector must not be wiped
    qm = QueueManager(Config(v_max=1024, build=Build(vec_bits=1024, table_depth=256)))
    start = (1 << TIME_BITS) - 50_000
    qm.fc.next_due = (start << 16) & ((1 << 64) - 1)
    flows = [pack_flow(i, 1, 2, 3, 6) for i in range(100)]
    for i, f in enumerate(flows):
        qm.arrive(Arrival(start + 1000 * i, f, 100))
    n_before = qm.n_raw
    assert qm.fc.wipes == 0 and n_before > 90
    assert (start + 1000 * 99) >= (1 << TIME_BITS)  # the run crossed the wrap
    assert qm.n_raw == qm.fc.popcount()


def test_same_seed_same_verdicts_other_seed_differs():
    def run(seed):
        qm = QueueManager(Config(seed_decide=seed, limit_pkts=1000, wq_shift=2))
        return [v.action for v in steady(qm, 80, 3000)]
    assert run(1) == run(1)
    assert run(1) != run(2)


def test_configure_keeps_state_and_changes_behaviour():
    qm = QueueManager(Config(mode="droptail", wq_shift=0))
    steady(qm, 30, 100)
    n, occ = qm.n_raw, qm.occ_pkts
    qm.configure(qm.config.replace(mode="red", red_min_th=0, red_max_th=20,
                                     red_max_p=0.5))
    assert (qm.n_raw, qm.occ_pkts) == (n, occ)
    out = steady(qm, 30, 50, t0=10**6)
    assert any(v.action == DROP_EARLY for v in out)
    with pytest.raises(ValueError, match="build"):
        qm.configure(Config(build=Build(vec_bits=16384)))


def test_fixed_and_float_models_agree_statistically():
    from fpq.demo import run, summary
    cfg, out, t_half, flows = run(200, 20000, seed=4)
    rows = summary(cfg, out, t_half, flows)
    a, b = rows["bit-exact"], rows["float"]
    assert abs(a["drop_rate"] - b["drop_rate"]) < 0.01
    assert a["n_phase1"] == pytest.approx(b["n_phase1"], rel=0.03)
    assert a["n_phase2"] == pytest.approx(b["n_phase2"], rel=0.1)
    assert a["avg_queue"] == pytest.approx(b["avg_queue"], rel=0.05)


class ComponentReference(QueueManager):
    """``arrive`` spelled out with the component methods that ``QueueManager.arrive`` inlines
    for speed (FlowCounter.advance/set, drop_probability.probability, QueueAverager.update)."""

    def arrive(self, desc):
        from fpq.drop_probability import probability, MODE_FPQ, MODE_RED
        ts, flow, length, ecn = desc
        ts &= (1 << TIME_BITS) - 1
        self.fc.advance(ts)
        self.fc.set(self.hash(flow))
        n = min(self.fc.n_raw, self.regs["n_cap"])
        seq = self.seq
        slot = seq % self.build.avg_lag
        avg_used = self.history[slot]
        p = probability(self.mode, avg_used, self.rate_table[n], self.regs)
        u = self.rng.next()
        early = False
        if self.mode == MODE_FPQ:
            early = u < p
        elif self.mode == MODE_RED:
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
        self.history[slot] = self.avg.update(q, ts)
        self.seq = seq + 1
        return (seq, action, n, avg_used, p)


@settings(max_examples=25, deadline=None)
@given(mode=st.sampled_from(["fpq", "red", "droptail"]), literal=st.booleans(),
       ecn=st.booleans(), wq=st.integers(0, 12), seed=st.integers(0, 1000),
       v_max=st.integers(1, 1024))
def test_inlined_hot_path_equals_the_components(mode, literal, ecn, wq, seed, v_max):
    build = Build(vec_bits=1024, table_depth=256)
    cfg = Config(build=build, mode=mode, clear_literal=literal, ecn=ecn, wq_shift=wq,
                 v_max=v_max, n_cap=255, limit_pkts=40, red_min_th=2, red_max_th=20,
                 red_max_p=0.3, tick_hz=1e6, t_clear_s=0.05, p_pkts=5.0, seed_decide=seed)
    fast, ref = QueueManager(cfg), ComponentReference(cfg)
    rnd = random.Random(seed)
    flows = [pack_flow(rnd.getrandbits(32), 1, 2, 3, 6) for _ in range(60)]
    t = 0
    for _ in range(1500):
        t += rnd.choice((0, 1, 30, 200, 5000))
        if rnd.random() < 0.45:
            d = Departure(t, 100)
            fast.depart(d)
            ref.depart(d)
        else:
            a = Arrival(t, rnd.choice(flows), 100, rnd.random() < 0.5)
            assert tuple(fast.arrive(a)) == ref.arrive(a)
    assert fast.snapshot() == ref.snapshot()
