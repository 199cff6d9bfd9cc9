"""PeriodicTimer against the golden model's schedules: its strobes come in exactly the clocks
in which ``fpq.flow_counter.FlowCounter`` applies its clears (``advance``) and, without a
fraction, in which ``fpq.queue_averager.QueueAverager`` takes its samples (``sample_until``),
for constant periods, periods that change at any clock, and restarts of the time base.

The expected clocks come from the model's own code: a model is created at every restart
with the period the port shows in the restart's clock, a period change in clock c is the model's
``configure`` at c (after the clock before it was advanced), and a strobe is expected in
clock c exactly when the model's ``advance(c)`` applies a clear there (``sample_until(c +
1)`` takes a sample at c). A timer narrower than the queue manager's (``PeriodicTimer(6,
4)``) reaches the top of its period range and every relation of its 4-bit fraction owed to
the period's fraction within a short run; the model works in UQ.16, so its periods are the
narrow ones shifted left by ``16 - frac_bits``.
"""
import random

import pytest

from fpq.formats import CLEAR_PERIOD, SAMPLE_PERIOD_BITS
from fpq.flow_counter import FlowCounter as ClearModel
from fpq.queue_averager import QueueAverager as SampleModel
from fpq_hdl.periodic_timer import PeriodicTimer

from .hdl_harness import clock_through

FX = CLEAR_PERIOD.frac_bits                # the model's fraction bits (16)
ONE = 1 << FX


def simulate(int_bits, frac_bits, program):
    """``program``: per clock from reset ``(restart, period)`` on the ports. Returns per clock
    whether ``fire`` was high in it."""
    dut = PeriodicTimer(int_bits, frac_bits)
    return clock_through(dut, [((dut.restart, restart), (dut.period, period))
                               for restart, period in program], dut.fire)


class _Clears:
    """The clear schedule of ``fpq.flow_counter.FlowCounter`` for a timer with ``frac_bits``
    fraction bits."""

    def __init__(self, frac_bits, period):
        self.scale = FX - frac_bits
        self.model = ClearModel(64, 1, period << self.scale, 1)

    def configure(self, period, clock):
        self.model.configure(1, period << self.scale, clock)

    def fires(self, clock):
        n = self.model.advance(clock)
        assert n <= 1                          # at most one clear per clock (period >= 1)
        return n


class _Samples:
    """The sample schedule of ``fpq.queue_averager.QueueAverager`` (integer periods)."""

    def __init__(self, frac_bits, period):
        assert frac_bits == 0
        self.model = SampleModel(0, period, 1)

    def configure(self, period, clock):
        self.model.configure(0, period, clock)

    def fires(self, clock):
        before = self.model.samples
        self.model.sample_until(clock + 1, 0)
        return self.model.samples - before


def expected(frac_bits, program, schedule=_Clears):
    """Per clock of ``program``, whether the model's schedule has a strobe in it; and the
    clock numbers (counted from the latest restart) of the period changes."""
    out, changes = [], []
    model, clock, prev = None, None, None
    for restart, period in program:
        if clock is not None:
            if clock == 0:
                # the first gap is read in the restart's clock, like any later one
                model = schedule(frac_bits, prev)
            if period != prev:
                model.configure(period, clock)
                changes.append(clock)
            out.append(model.fires(clock))
            clock += 1
        else:
            out.append(0)                          # stopped until the first restart
        if restart:
            clock = 0
        prev = period
    return out, changes


def check(int_bits, frac_bits, program, schedule=_Clears):
    want, changes = expected(frac_bits, program, schedule)
    got = simulate(int_bits, frac_bits, program)
    first = next((k for k, (g, w) in enumerate(zip(got, want)) if g != w), None)
    assert first is None, (f"clock {first} from reset: fire {got[first]}, the model's "
                           f"schedule {want[first]}; strobes before it at "
                           f"{[k for k in range(first) if want[k]][-5:]}")
    return want, changes


def constant(period, clocks, idle=20):
    """``idle`` clocks out of reset without a restart (the timer must stay stopped, whatever
    the period port carries), then a restart and ``clocks`` clocks at ``period``."""
    return [(0, period)] * idle + [(1, period)] + [(0, period)] * clocks


@pytest.mark.parametrize("period", [
    ONE, ONE + 0xFFFF, ONE + ONE // 2, 2 * ONE, 3 * ONE, 7 * ONE + 0x1234,
    13 * ONE + 1, 1000 * ONE + ONE // 2, 4321 * ONE + 0xFEDC,
], ids=lambda p: f"{p / ONE:.6f}")
def test_strobes_at_the_model_clear_clocks_for_a_constant_period(period):
    """The queue manager's clear timer (UQ32.16) with a constant period: every strobe in the
    clock of the model's clear, none before the first ``restart``; at least 40 strobes, or
    3000 clocks for the large periods."""
    clocks = max(3000, min(40 * (period >> FX) + 40, 13_000))
    want, _ = check(CLEAR_PERIOD.int_bits, CLEAR_PERIOD.frac_bits, constant(period, clocks))
    assert sum(want) >= (40 if clocks < 13_000 else 3)


def test_period_one_plus_2_to_the_minus_16_skips_one_clock_in_65536():
    """``1 + 2**-16`` clocks: a strobe in every clock from clock 2 on but one, clock 65538
    (``ceil(k (1 + 2**-16))``), where the fraction owed runs out."""
    period = ONE + 1
    want, _ = check(CLEAR_PERIOD.int_bits, CLEAR_PERIOD.frac_bits,
                    constant(period, 65_560, idle=3))
    base = 4                                    # clock 0 of the time base, from reset
    missing = [c - base for c in range(base + 2, len(want)) if not want[c]]
    assert missing == [65538]


def _random_program(rnd, clocks, periods, p_change, p_restart, idle=10):
    program = [(0, rnd.choice(periods)) for _ in range(idle)]
    program.append((1, program[-1][1]))
    period = program[-1][1]
    for _ in range(clocks):
        if rnd.random() < p_change:
            period = rnd.choice(periods)
        restart = int(rnd.random() < p_restart)
        program.append((restart, period))
    return program


def _coverage(want, program, changes):
    """How period changes fell relative to the strobes: in a strobe's clock, the clock before
    it and the clock after it (the strobe reads the period in the clock before it), counted on the
    model's schedule."""
    fire_clocks = [k for k, f in enumerate(want) if f]
    change_clocks = [k for k in range(1, len(program))
                     if program[k][1] != program[k - 1][1] and not program[k - 1][0]]
    fires = set(fire_clocks)
    return {"at a strobe": sum(k in fires for k in change_clocks),
            "just before one": sum(k + 1 in fires and k not in fires for k in change_clocks),
            "just after one": sum(k - 1 in fires and k not in fires for k in change_clocks)}


def test_period_changes_at_any_clock_keep_the_scheduled_strobe():
    """The clear timer with its period changed at random clocks (1 in 12), among periods with
    fractions that are 0, one LSB, all ones and random: the strobe already scheduled keeps its
    clock, and each later one follows the period the port showed in the clock before the
    strobe before it. Restarts now and then (1 in 3000)."""
    rnd = random.Random(5)
    periods = [ONE, ONE + 1, ONE + 0xFFFF, 2 * ONE + 0x8000, 2 * ONE + 1, 3 * ONE + 0xFFFF,
               5 * ONE] + [rnd.randrange(ONE, 9 * ONE) for _ in range(5)]
    program = _random_program(rnd, 15_000, periods, 1 / 12, 1 / 3000)
    want, changes = check(CLEAR_PERIOD.int_bits, CLEAR_PERIOD.frac_bits, program)
    cov = _coverage(want, program, changes)
    assert min(cov.values()) >= 50, cov
    assert sum(r for r, _ in program) >= 3 and sum(want) > 5000


@pytest.mark.parametrize("int_bits, frac_bits", [(6, 4), (3, 2), (2, 1)])
def test_a_narrow_timer_over_its_whole_period_range(int_bits, frac_bits):
    """A narrow timer (the RTL is generic in its format) with periods drawn from its whole
    range, 1.0 to ``2**int_bits - 2**-frac_bits``, changed at random clocks, restarted at
    random clocks (in a strobe's clock too, and in consecutive clocks): the top of the range
    fills the down-counter, and the few fraction values meet every relation of the fraction
    owed to the period's (below, equal, above)."""
    rnd = random.Random(int_bits * 10 + frac_bits)
    top = (1 << (int_bits + frac_bits)) - 1
    one = 1 << frac_bits
    periods = list(range(one, top + 1))
    ends = [one, one + 1, top, top - 1, top - one]
    program = _random_program(rnd, 12_000, periods + ends * 4, 1 / 10, 1 / 400)
    # restarts in consecutive clocks, and in the clocks of a few strobes
    for k in range(5000, 5003):
        program[k] = (1, program[k][1])
    strobes = [k for k, f in enumerate(expected(frac_bits, program)[0]) if f and k > 5003]
    for k in rnd.sample(strobes, 5):
        program[k] = (1, program[k][1])
    want, changes = check(int_bits, frac_bits, program)
    cov = _coverage(want, program, changes)
    assert min(cov.values()) >= 30, cov
    restarts_at_strobes = sum(1 for k, (r, _) in enumerate(program) if r and want[k])
    assert restarts_at_strobes >= 3


@pytest.mark.parametrize("int_bits", [SAMPLE_PERIOD_BITS, 4])
def test_integer_timer_at_the_model_sample_clocks(int_bits):
    """The sample timer's form (no fraction) against ``QueueAverager``'s samples: periods 1
    to 64 (the register map allows 4 and up; the timer takes any period >= 1) and, for a
    4-bit timer, its largest (15), changed at random clocks, with restarts."""
    rnd = random.Random(int_bits)
    periods = [1, 2, 3, 4, 4, 5, 6, 7, 17, 64] if int_bits > 4 else list(range(1, 16)) + [15] * 5
    program = _random_program(rnd, 12_000, periods, 1 / 15, 1 / 2000)
    want, changes = check(int_bits, 0, program, _Samples)
    cov = _coverage(want, program, changes)
    assert min(cov.values()) >= 20, cov


def test_restart_starts_the_time_base_afresh():
    """A restart in the middle of a period (and in the clock of a strobe) drops the strobe
    that was scheduled: the next one comes ``ceil(period)`` clocks after clock 0, the clock
    after the restart, and the fraction owed starts from 0 again."""
    period = 2 * ONE + 0x4000                   # 2.25: strobes at 3, 5, 7, 9, 12, ...
    program = constant(period, 40, idle=2)
    r = len(program)
    program += [(1, period)] + [(0, period)] * 9       # restart mid-period
    program += [(1, period)] + [(0, period)] * 30
    want, _ = check(CLEAR_PERIOD.int_bits, CLEAR_PERIOD.frac_bits, program)
    base0, base1 = 3, r + 1
    assert [c - base0 for c in range(base0, r + 1) if want[c]][:5] == [3, 5, 7, 9, 12]
    assert [c - base1 for c in range(base1, base1 + 10) if want[c]] == [3, 5, 7, 9]
    # the second restart came in a strobe's clock (clock 9 of that time base): dropped
    assert want[base1 + 9] == 1 and program[base1 + 9][0] == 1
    base2 = base1 + 10
    assert [c - base2 for c in range(base2, len(want)) if want[c]][:4] == [3, 5, 7, 9]


def test_a_period_change_in_clock_0_keeps_the_first_strobe():
    """``fpq.QueueManager.configure(config, ts=0)``: the clear and the sample already
    scheduled (at reset, from the period before clock 0) keep their clocks, and the ones
    after the first follow the new period. The timer shows the old period in the restart's
    clock and the new one from clock 0 on."""
    old, new = 10 * ONE, 3 * ONE
    program = [(0, old)] * 3 + [(1, old)] + [(0, new)] * 60
    model = ClearModel(64, 1, old, 1)           # the reset state: the first clear at 10
    model.configure(1, new, 0)                  # the commit at clock 0
    want = [0] * 4 + [model.advance(c) for c in range(60)]
    assert want.index(1) == 4 + 10
    assert [c for c in range(60) if want[4 + c]][:3] == [10, 13, 16]
    got = simulate(CLEAR_PERIOD.int_bits, CLEAR_PERIOD.frac_bits, program)
    assert got == want
