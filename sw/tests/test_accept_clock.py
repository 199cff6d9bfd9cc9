"""Accept clocks: events wanted at given clocks stamped with the first clock the queue manager's
input order allows (one arrival and one departure per clock, the departure first; with
``verdict_wait``, nothing within that many clocks after an arrival)."""
import copy

from hypothesis import given, settings, strategies as st
import pytest

from fpq import Arrival, Departure, Config, Build, QueueManager
from fpq.accept_clock import AcceptClock


def test_worked_sequence_without_a_wait():
    c = AcceptClock()
    assert c.arrival(10) == 10
    assert c.arrival(10) == 11          # one arrival per clock
    assert c.departure(11) == 12        # a departure after the arrival of its clock: next
    assert c.arrival(12) == 12          # an arrival after the departure: the same clock
    assert c.departure(12) == 13
    assert c.departure(5) == 14         # one departure per clock; never back in time
    assert c.arrival(0) == 14
    assert c.arrival(100) == 100        # nothing held back: the clock wanted


def test_worked_sequence_with_a_verdict_wait():
    c = AcceptClock(verdict_wait=5)
    assert c.arrival(0) == 0
    assert c.departure(0) == 5          # waits for the verdict of the arrival at 0
    assert c.arrival(0) == 5
    assert c.arrival(6) == 10
    assert c.departure(20) == 20
    assert c.arrival(20) == 20          # a departure does not make the next event wait
    assert c.departure(21) == 25
    assert AcceptClock(1).arrival(3) == 3    # a wait of 0 or 1 is the order alone


# a fresh model per example is a copy of this one (building the hash tables takes longer)
MODEL = QueueManager(Config(build=Build(vec_bits=64, table_depth=16), v_max=64, n_cap=15,
                            mode="droptail"))


def first_allowed(kind, want, last_arr, last_dep, wait):
    """The first clock at or after ``want`` the rules allow, by search (the reference)."""
    c = want
    while True:
        after_arrival = c >= last_arr + max(1, wait)
        if kind == "arr" and after_arrival and c >= last_dep:
            return c
        if kind == "dep" and after_arrival and c > last_dep:
            return c
        c += 1


@settings(max_examples=60, deadline=None)
@given(wait=st.sampled_from([0, 1, 2, 7]),
       events=st.lists(st.tuples(st.sampled_from(["arr", "dep"]), st.integers(0, 40)),
                       max_size=60))
def test_stamps_are_the_first_clocks_the_order_allows(wait, events):
    clock = AcceptClock(wait)
    qm = copy.deepcopy(MODEL)
    last_arr, last_dep, t = -(1 << 40), -1, 0
    for kind, dt in events:
        t += dt
        if kind == "arr":
            c = clock.arrival(t)
            assert c == first_allowed(kind, t, last_arr, last_dep, wait)
            qm.arrive(Arrival(c, 1, 100))          # the queue manager takes them in order
            last_arr = c
        else:
            c = clock.departure(t)
            assert c == first_allowed(kind, t, last_arr, last_dep, wait)
            qm.depart(Departure(c, 100))
            last_dep = c


@pytest.mark.parametrize("wait", [-1, 1.5, (1 << 20) + 1])
def test_verdict_wait_out_of_range_names_field_and_range(wait):
    with pytest.raises(ValueError, match=r"verdict_wait: .* must be an integer in "
                                         r"\[0, 1048576\] clocks"):
        AcceptClock(wait)
