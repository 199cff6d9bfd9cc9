"""The loop-bound fixtures (``hdl/experiments/loop_bounds.py``) are the queue manager's own
blocks: the timer is its component (tested in test_periodic_timer.py), the decision's
loops are the functions ``Decision`` builds them with (tested through it in
test_decision.py), the counter is ``_split_counter`` and counts
like a 64-bit counter whose readout is one clock late and consistent, and the hold loop is
the re-key hold's down-counter. Every fixture elaborates in the synthesis harness."""
import random

import pytest
from amaranth.back import rtlil

from fpq.formats import CLEAR_PERIOD, HOLD_BITS
import fpq_hdl.queue_manager as qm_module
from fpq_hdl.periodic_timer import PeriodicTimer
from fpq_hdl.decision import Decision
from fpq_hdl.synth import SynthHarness, loop_fixtures

from .hdl_harness import clock_through

LOOPS = loop_fixtures()
CounterLoop, HoldLoop = LOOPS["loop_counter"], LOOPS["loop_hold"]

M64 = (1 << 64) - 1


@pytest.mark.parametrize("name", sorted(LOOPS) + ["periodic_timer"])
def test_loop_fixture_converts_in_the_synthesis_harness(name):
    text = rtlil.convert(SynthHarness(None, name), name="top")
    assert "module" in text and len(text) > 1000


def test_fixtures_are_the_queue_manager_s_blocks():
    assert set(LOOPS) == {"loop_timer", "loop_decision", "loop_counter", "loop_hold"}
    timer = LOOPS["loop_timer"]()
    assert type(timer) is PeriodicTimer
    assert (timer.int_bits, timer.frac_bits) == (CLEAR_PERIOD.int_bits, CLEAR_PERIOD.frac_bits)
    timer._MustUse__silence = True


def test_decision_loops_are_the_decision_s_own(monkeypatch):
    """The decision fixture builds its loops with the functions ``Decision(optimise="speed")``
    builds them with, and both call each of them once, with the same options."""
    import fpq_hdl.decision as decision_module
    from fpq.config import Build
    calls = []

    def recording(name):
        real = getattr(decision_module, name)

        def call(*args, **kw):
            # options as given; a signal passed by keyword as "signal"
            calls.append((name, tuple(sorted(
                (k, v if isinstance(v, (bool, int, str)) else "signal") for k, v in kw.items()))))
            return real(*args, **kw)
        monkeypatch.setattr(decision_module, name, call)
    for name in ("red_spacing", "admission", "track_max"):
        recording(name)
    rtlil.convert(LOOPS["loop_decision"]())
    fixture, calls[:] = sorted(calls), []
    rtlil.convert(Decision(Build(), optimise="speed"))
    assert fixture == sorted(calls)
    assert [c[0] for c in fixture] == ["admission", "red_spacing", "track_max"]
    assert ("separate_hit", True) in fixture[1][1]


def _counter_run(program, preset=None, monkeypatch=None):
    """``CounterLoop`` driven by ``program`` (per clock ``(event, clear)``); returns ``count``
    as seen in every clock. ``preset``: ``(low, high)`` written into the counter's halves
    before the first clock (the registers ``_split_counter`` returns, captured)."""
    regs = []
    real = qm_module._split_counter

    def capture(*args, **kw):
        value, halves = real(*args, **kw)
        regs.append(halves)
        return value, halves
    monkeypatch.setattr(qm_module, "_split_counter", capture)
    dut = CounterLoop()

    def setup(ctx):
        if preset is not None:
            low, low_d, high = regs[0]
            ctx.set(low, preset & 0xFFFFFFFF)
            ctx.set(low_d, preset & 0xFFFFFFFF)
            ctx.set(high, preset >> 32)
    seen = clock_through(dut, [((dut.event, e), (dut.clear, c)) for e, c in program], dut.count,
                         setup)
    assert len(regs) == 1
    return seen


def _counter_expected(program, preset=0):
    """The count in clock c: the events of the clocks after the latest clear up to c - 3,
    modulo 2**64 (the inputs are registered, then the event counted, then the low half read
    a clock late so that it goes with the high half's registered carry); a clear in clock j
    reads 0 from clock j + 2 on and drops events up to clock j."""
    out = []
    for c in range(len(program)):
        clears = [j for j in range(c - 1) if program[j][1]]
        start = clears[-1] + 1 if clears else 0
        base = 0 if clears else preset
        out.append((base + sum(e for e, _ in program[start:max(start, c - 2)])) & M64)
    return out


@pytest.mark.parametrize("preset", [0, (1 << 32) - 40, (1 << 64) - 40, (5 << 32) - 3])
def test_counter_loop_counts_like_a_64_bit_counter(preset, monkeypatch):
    """Events in most clocks from a preset just below the low half's wrap (and the whole
    counter's): every clock's readout is the exact count of the events three clocks old and
    earlier, never a half-carried value (``2**32`` missing, or counted twice), across the
    carry between the halves and the wrap at ``2**64``; then clears."""
    rnd = random.Random(preset)
    program = [(int(rnd.random() < 0.9), 0) for _ in range(300)]
    for j in (150, 151, 230):                         # clears, two back to back
        program[j] = (program[j][0], 1)
    got = _counter_run(program, preset, monkeypatch)
    want = _counter_expected(program, preset)
    assert got == want
    if preset:
        # the readout passed the carry (or the wrap) one by one
        crossed = (preset & 0xFFFFFFFF) + 100 > 1 << 32
        assert crossed and any(v & 0xFFFFFFFF < 100 for v in got[:150])


def test_counter_loop_readout_is_one_clock_late(monkeypatch):
    """A single event in clock 10: the count reads 1 from clock 13 on (not 12)."""
    program = [(int(c == 10), 0) for c in range(20)]
    got = _counter_run(program, monkeypatch=monkeypatch)
    assert got == [0] * 13 + [1] * 7


def _hold_run(program):
    dut = HoldLoop()
    return clock_through(dut, [((dut.load, load), (dut.value, v)) for load, v in program],
                         dut.held)


def _hold_expected(program):
    """``held`` in clock c, after the latest load in clock i (value V) with c >= i + 2: the
    count ``V - 2`` loaded at i + 2, one less per clock until below 0, so held exactly while
    ``c - i <= V``. Before any load the counter starts at 0 (held in clock 0 only)."""
    out = []
    for c in range(len(program)):
        loads = [i for i in range(c - 1) if program[i][0]]
        if loads:
            i = loads[-1]
            out.append(int(c - i <= program[i][1]))
        else:
            out.append(int(c == 0))
    return out


def test_hold_loop_counts_down_and_stops():
    """Loads of 0, 1, 2 and 3 clocks (the ends: no hold, one clock), of random values, of the
    48-bit maximum (not negative in the 49-bit counter), reloads while counting, and long
    stretches after the count ran out (it stays out: the counter stops below 0)."""
    rnd = random.Random(1)
    program = [(0, rnd.getrandbits(HOLD_BITS)) for _ in range(3000)]
    at = 10
    for v in [0, 1, 2, 3, 40, 7, (1 << HOLD_BITS) - 1, 5, 100, 2, 1]:
        program[at] = (1, v)
        at += min(v, 60) + rnd.choice((0, 3, 20))     # some reloads before the end
    program[2000] = (1, 300)
    got = _hold_run(program)
    want = _hold_expected(program)
    assert got == want
    runs = sum(1 for c in range(1, len(want)) if want[c] and not want[c - 1])
    assert runs >= 6 and 0 in want[2400:] and sum(want[2000:2400]) == 299
