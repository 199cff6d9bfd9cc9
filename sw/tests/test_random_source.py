"""xorshift128: Marsaglia's published first outputs, block form vs one step at a time, skips
and jumps ahead vs as many steps."""
from hypothesis import given, settings, strategies as st
import pytest

from fpq.random_source import XorShift128, BLOCK, advance_state, expand_seed


def _state(x, y, z, w):
    return x | (y << 32) | (z << 64) | (w << 96)


def test_marsaglia_reference_sequence():
    # Marsaglia (2003), "Xorshift RNGs", xor128 with its default seeds
    g = XorShift128(_state(123456789, 362436069, 521288629, 88675123))
    assert [g.next() for _ in range(4)] == [3701687786, 458299110, 2500872618, 3633119408]


@given(seed=st.integers(0, (1 << 64) - 1))
def test_block_generation_equals_single_steps(seed):
    state = _state(*expand_seed(seed))
    a, b = XorShift128(state), XorShift128(state)
    n = BLOCK + 7
    assert [a.next() for _ in range(n)] == [b.step() for _ in range(n)]


def test_zero_state_is_replaced():
    g = XorShift128(0)
    assert (g.x, g.y, g.z, g.w) == (0, 0, 0, 1)
    assert g.next() != 0


def test_seed_expansion_never_zero_and_differs():
    assert expand_seed(1) != expand_seed(2)
    assert any(expand_seed(0))


@given(seed=st.integers(0, (1 << 64) - 1),
       takes=st.lists(st.integers(0, 3 * BLOCK), min_size=1, max_size=8))
def test_take_equals_repeated_next(seed, takes):
    state = _state(*expand_seed(seed))
    a, b = XorShift128(state), XorShift128(state)
    for k in takes:
        assert a.take(k) == [b.next() for _ in range(k)]
        assert a.next() == b.next()


# ---- jumps: XorShift128.skip, advance_state (the clears of an empty vector) ----------------
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, (1 << 64) - 1), before=st.integers(0, BLOCK + 3),
       k=st.one_of(st.integers(0, 3 * BLOCK), st.integers(0, 20_000)))
def test_skip_equals_that_many_steps(seed, before, k):
    # from anywhere in the buffer: a skip within it, into the next block, or a jump-ahead
    state = _state(*expand_seed(seed))
    a, ref = XorShift128(state), XorShift128(state)
    for _ in range(before):
        assert a.next() == ref.step()
    a.skip(k)
    for _ in range(k):
        ref.step()
    assert [a.next() for _ in range(5)] == [ref.step() for _ in range(5)]


@pytest.mark.parametrize("k", [0, 1, 2, 127, 128, 129, 1000, 4097])
def test_advance_state_is_k_single_steps(k):
    state = _state(*expand_seed(k + 3))
    ref = XorShift128(state)
    for _ in range(k):
        ref.step()
    assert advance_state(state, k) == _state(ref.x, ref.y, ref.z, ref.w)


def test_advance_state_by_the_period_is_the_identity():
    # xorshift128's period is 2**128 - 1 from every nonzero state (Marsaglia 2003): a jump
    # of exactly that many steps, which uses every power of the transition, changes nothing,
    # and one more is a single step
    for state in (_state(123456789, 362436069, 521288629, 88675123), 1 << 96,
                  _state(*expand_seed(99))):
        assert advance_state(state, (1 << 128) - 1) == state
        g = XorShift128(state)
        g.step()
        assert advance_state(state, 1 << 128) == _state(g.x, g.y, g.z, g.w)
        assert advance_state(state, (1 << 127) - 1) != state
