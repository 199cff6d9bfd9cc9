"""Flow counter: N is the popcount, the clear schedule keeps its rate, flush and cap."""
from hypothesis import given, settings, strategies as st
import pytest

from fpq import Config, QueueManager, Arrival, Build
from fpq.flow_counter import FlowCounter
from fpq.formats import CLEAR_PERIOD

FX = CLEAR_PERIOD.frac_bits


def make_fc(v_max=64, period_ticks=10.5, literal=False, vec_bits=64, seed=7):
    period = int(period_ticks * (1 << FX))
    return FlowCounter(vec_bits, v_max, period, 8 * v_max * period, literal,
                       seed | 1 << 100)


events = st.lists(st.tuples(st.integers(0, 400), st.integers(0, (1 << 32) - 1)),
                  min_size=1, max_size=300)


@given(ev=events, v_max=st.integers(1, 64), period=st.floats(1.0, 50.0),
       literal=st.booleans())
def test_n_is_popcount_after_every_event(ev, v_max, period, literal):
    fc = make_fc(v_max, period, literal)
    t = 0
    for dt, h in ev:
        t += dt
        fc.advance(t)
        assert fc.n_raw == fc.popcount()
        fc.set(h)
        assert fc.n_raw == fc.popcount()
        assert 0 <= fc.n_raw <= v_max


@given(ev=events, period=st.floats(1.0, 50.0))
def test_carry_mode_clears_exactly_at_rate(ev, period):
    # from reset, clears performed by time t = floor(t / period) exactly (fixed-point period),
    # so over any window the count is within one bit of v_max * window / t_clear
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


def test_literal_mode_drops_the_remainder():
    # period 2.5 ticks, arrivals every 4 ticks: carry clears 1.6 per arrival, literal 1
    carry, literal = make_fc(64, 2.5), make_fc(64, 2.5, literal=True)
    for t in range(4, 4001, 4):
        carry.advance(t)
        literal.advance(t)
    assert carry.clears == 1600
    assert literal.clears == 1000


def test_backlog_beyond_flush_wipes_the_vector_without_drawing_numbers():
    fc = make_fc(64, 10.0)
    for h in range(0, 1 << 32, 1 << 27):
        fc.set(h)
    assert fc.n_raw > 20
    fc.rng.next()
    state_before = (fc.rng.x, fc.rng.y, fc.rng.z, fc.rng.w, fc.rng._pos)
    fc.advance(10 + 10 * 8 * 64)  # first clear due at 10: a backlog of exactly 8 sweeps
    assert fc.n_raw == 0 == fc.popcount()
    assert fc.clears == 0 and fc.wipes == 1
    assert (fc.rng.x, fc.rng.y, fc.rng.z, fc.rng.w, fc.rng._pos) == state_before


def test_timestamps_going_backwards_clear_nothing():
    fc = make_fc(64, 1.0)
    fc.advance(1000)
    c = fc.clears
    fc.advance(500)
    assert fc.clears == c


def test_timestamp_wrap_is_seamless():
    # the schedule lives modulo 2**48 ticks: crossing the wrap clears at the same rate
    period = 3 << FX
    # flush_after far beyond the 2000-clear backlog, so the clears are replayed, not wiped
    fc = FlowCounter(64, 64, period, 10_000 * period, False, 7 | 1 << 100)
    start = (1 << 48) - 3000
    fc.next_due = (start << FX) & ((1 << 64) - 1)
    fc.advance(start)
    c0 = fc.clears
    fc.advance((start + 6000) & ((1 << 48) - 1))
    assert fc.clears - c0 == 2000


@settings(max_examples=30)
@given(n_cap=st.integers(1, 200), nflows=st.integers(1, 600))
def test_n_never_exceeds_cap(n_cap, nflows):
    qm = QueueManager(Config(build=Build(vec_bits=1024, table_depth=256), v_max=1024,
                             n_cap=n_cap))
    for i in range(nflows):
        v = qm.arrive(Arrival(10 + i, i * 7919, 100))
        assert v.n == min(qm.n_raw, n_cap) <= n_cap
        assert qm.n_raw == qm.fc.popcount()


def test_changing_v_max_wipes_the_vector():
    qm = QueueManager(Config())
    for i in range(100):
        qm.arrive(Arrival(i, i, 100))
    assert qm.n_raw > 90
    qm.configure(qm.config.replace(v_max=4000))
    assert qm.n_raw == 0 == qm.fc.popcount()
