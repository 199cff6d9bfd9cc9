"""xorshift128: Marsaglia's published first outputs, block form vs one step at a time."""
from hypothesis import given, strategies as st

from fpq.random_source import XorShift128, BLOCK
from fpq.config import expand_seed


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
