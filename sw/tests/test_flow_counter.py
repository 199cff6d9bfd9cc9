"""Flow counter: N is the popcount, clears run on the clock at exactly their rate whatever the
arrivals, a long gap is exact and cheap, the cap."""
from hypothesis import given, settings, strategies as st
import pytest

from fpq import Config, QueueManager, Arrival, Build
from fpq.flow_counter import FlowCounter
from fpq.formats import CLEAR_PERIOD
from fpq.random_source import XorShift128, advance_state

FX = CLEAR_PERIOD.frac_bits
SEED = 7 | 1 << 100


def make_fc(v_max=64, period_clocks=10.5, vec_bits=64, seed=SEED):
    return FlowCounter(vec_bits, v_max, int(period_clocks * (1 << FX)), seed)


def fill(fc, count=40):
    """Set ``count`` distinct bits (hashes spread over the whole range)."""
    for i in range(count):
        fc.set(i * ((1 << 32) // count))
    assert fc.n_raw == count
    return fc


def replay(bits, v_max, clears, seed=SEED):
    """``clears`` clears drawn one at a time with the reference step: the bits left and the
    generator after them."""
    bits, rng = bytearray(bits), XorShift128(seed)
    for _ in range(clears):
        bits[(rng.step() * v_max) >> 32] = 0
    return bits, rng


events = st.lists(st.tuples(st.integers(0, 400), st.integers(0, (1 << 32) - 1)),
                  min_size=1, max_size=300)


@given(ev=events, v_max=st.integers(1, 64), period=st.floats(1.0, 50.0))
def test_n_is_popcount_after_every_event(ev, v_max, period):
    fc = make_fc(v_max, period)
    t = 0
    for dt, h in ev:
        t += dt
        fc.advance(t)
        assert fc.n_raw == fc.popcount()
        fc.set(h)
        assert fc.n_raw == fc.popcount()
        assert 0 <= fc.n_raw <= v_max


@given(ev=events, period=st.floats(1.0, 50.0))
def test_clears_run_at_exactly_the_rate(ev, period):
    # clear j is due at (j + 1) * period (UQ.16 clocks): by clock t exactly
    # floor(t / period) clears, so over any window the count is within one of the rate
    fc = make_fc(64, period)
    p = fc.period
    t = 0
    history = []
    for dt, h in ev:
        t += dt
        fc.advance(t)
        fc.set(h)
        assert fc.clears == (t << FX) // p
        history.append((t, fc.clears))
    for (t1, c1) in history[::7]:
        for (t2, c2) in history[::11]:
            if t2 >= t1:
                assert abs((c2 - c1) - (t2 - t1) * (1 << FX) / p) <= 1


def test_each_clear_applies_in_the_clock_its_due_time_rounds_up_to():
    # period 2.5 clocks: due at 2.5, 5, 7.5, 10, 12.5, 15 -> clocks 3, 5, 8, 10, 13, 15
    fc = make_fc(64, 2.5)
    applied = [c for c in range(16) if fc.advance(c)]
    assert applied == [3, 5, 8, 10, 13, 15]
    assert fc.next_due == 7 * 5 * (1 << FX) // 2          # the 7th, at 17.5


def test_clears_do_not_depend_on_when_the_model_looks():
    # the paper's Fig. 4 code clears at arrivals and drops the fractional remainder: with a
    # period of 2.5 clocks and an arrival every 4 it clears 1000 bits in 4000 clocks (the
    # float model's clear_literal keeps that, test_float_model). The hardware clears 1600,
    # and the model's lazy clears leave the same vector and generator whether it catches up
    # every 4 clocks (at arrivals), every clock, or once
    fcs = [fill(make_fc(64, 2.5)) for _ in range(3)]
    start = bytearray(fcs[0].bits)
    for t in range(4, 4001, 4):
        fcs[0].advance(t)
    for t in range(4001):
        fcs[1].advance(t)
    fcs[2].advance(4000)
    bits, rng = replay(start, 64, 1600)
    after = [rng.step() for _ in range(4)]
    for fc in fcs:
        assert fc.clears == 1600
        assert fc.bits == bits and fc.n_raw == sum(bits)
        assert [fc.rng.next() for _ in range(4)] == after


@pytest.mark.parametrize("sweeps", [0.25, 5, 100, 3000])
def test_a_long_gap_clears_at_the_rate_and_draws_as_one_by_one(sweeps):
    # 40 bits set, then a gap of `sweeps` x v_max clears in one advance: exactly the clears
    # of the rate, the bits cleared those the generator's numbers name one at a time, and
    # the generator ends where as many single steps leave it (once the vector is empty the
    # model jumps the generator instead of drawing: within its buffer, one block, or by a
    # jump-ahead)
    fc = fill(make_fc(64, 10.0))
    start = bytearray(fc.bits)
    gap = int(sweeps * 64 * 10)
    assert fc.advance(gap) == gap // 10 == fc.clears
    bits, rng = replay(start, 64, fc.clears)
    assert fc.bits == bits and fc.n_raw == sum(bits)
    if sweeps >= 5:
        assert fc.n_raw == 0
    assert [fc.rng.next() for _ in range(4)] == [rng.step() for _ in range(4)]
    # and the schedule goes on at the rate
    assert fc.advance(gap + 1000) == 100


def test_a_gap_of_2_to_the_70_clocks():
    # no modulo-2**48 clock any more: the count is exact at any size, the vector is empty,
    # the generator has made exactly one step per clear (jump-ahead: test_random_source), and
    # the next clears follow at the rate (period 3 clocks: 2000 in 6000 clocks)
    fc = fill(make_fc(64, 3.0))
    t = 1 << 70
    fc.advance(t)
    assert fc.clears == t // 3
    assert fc.n_raw == 0 == fc.popcount()
    assert fc.next_due == (t // 3 + 1) * (3 << FX)
    ref = XorShift128(advance_state(SEED, t // 3))
    assert [fc.rng.next() for _ in range(4)] == [ref.step() for _ in range(4)]
    c0 = fc.clears
    fc.advance(t + 6000)
    assert fc.clears - c0 == 2000
    # a fractional period at that size: 2.5 clocks, floor(t / 2.5) clears
    frac = make_fc(64, 2.5)
    frac.advance(t)
    assert frac.clears == (2 * t) // 5


def test_advancing_to_a_clock_already_reached_clears_nothing():
    # (configure advances to ts - 1, which a QueueManager.advance may have passed)
    fc = make_fc(64, 1.0)
    assert fc.advance(1000) == 1000
    assert fc.advance(1000) == 0 and fc.advance(500) == 0
    assert fc.clears == 1000


@settings(max_examples=30)
@given(n_cap=st.integers(1, 200), nflows=st.integers(1, 600))
def test_n_never_exceeds_cap(n_cap, nflows):
    qm = QueueManager(Config(build=Build(vec_bits=1024, table_depth=256), v_max=1024,
                             n_cap=n_cap))
    for i in range(nflows):
        v = qm.arrive(Arrival(10 + i, i * 7919, 100))
        assert v.n == min(qm.n_raw, n_cap) <= n_cap
        assert qm.n_raw == qm.fc.popcount()


def test_changing_v_max_wipes_the_vector_and_the_clears_go_on():
    qm = QueueManager(Config(tick_hz=1e6, t_clear_s=0.5))     # a clear every 100 clocks
    for i in range(100):
        qm.arrive(Arrival(i, i, 100))
    assert qm.n_raw > 90 and qm.fc.clears == 0
    qm.configure(qm.config.replace(v_max=4000), 200)          # now every 125 clocks
    assert qm.n_raw == 0 == qm.fc.popcount() and qm.fc.clears == 1
    qm.arrive(Arrival(200, 5, 100))
    assert qm.n_raw == 1 and qm.fc.clears == 2                # the one due at 200
    qm.advance(200 + 125 * 8)
    assert qm.fc.clears == 10
