"""QueueAverager against fpq.queue_averager: the sampled EWMA ``ewma_step`` for every weight,
from 0 to the largest values of the queue and the average, with samples every 4 clocks (the
least the pipeline allows) and sparser; the weight taken with each sample; a weight the
build fixes; and the publication clock by the model's ``QueueAverager`` (``delay`` =
``LATENCY``). The bench is the Verilator bench's (``tb_lib.blocks.queue_averager``,
cocotb-tests/queue_averager/), here in Amaranth's simulator: ``avg`` is compared on every
clock with the model's ``read``; between samples it must not move."""
import random

import pytest

from fpq import Build
from fpq.queue_averager import ewma_time_constant
from fpq.formats import QAVG, MIN_SAMPLE_PERIOD
from fpq.queue_averager import ewma_step
from fpq_hdl.queue_averager import QueueAverager
from fpq_hdl.layouts import fixed_registers

from tb_lib.blocks.queue_averager import QueueAveragerBench, OUTPUTS, Q_MAX, gaps_of
from tb_lib.sim_amaranth import run_bench

BUILD = Build(table_depth=16)
LAT = QueueAverager.LATENCY
A_MAX = QAVG.max_raw


def simulate(samples, build=BUILD, preset=None, noise=1):
    """``samples``: ``(clock, q, wq_shift)`` in clock order, at least ``MIN_SAMPLE_PERIOD``
    apart. In the other clocks ``q`` and ``wq_shift`` carry random values (they must not
    count). ``preset``: a value written into the average's register before the first clock.
    The bench compares ``avg`` with the model's in every clock; returns the model's average
    of every clock and the model."""
    plan = {"build": build, "seed": noise, "noise": 1.0, "record": True,
            "script": [*([("preset", preset)] if preset is not None else []),
                       ("run", gaps_of(samples))]}
    bench, _ = run_bench(QueueAverager(build), lambda sim: QueueAveragerBench(sim, plan),
                         OUTPUTS)
    return bench.rows, bench.model


def expected(samples, start=0, fixed_shift=None):
    """The average in every clock: ``ewma_step`` per sample, each seen from ``LATENCY``
    clocks after its clock on."""
    out, a, i = [], start, 0
    end = samples[-1][0] + LAT + 3
    published = start
    steps = []
    for _, q, w in samples:
        a = ewma_step(a, q, w if fixed_shift is None else fixed_shift)
        steps.append(a)
    for c in range(end):
        while i < len(samples) and samples[i][0] + LAT <= c:
            published = steps[i]
            i += 1
        out.append(published)
    return out


def compare(got, want):
    """The bench's model (``QueueAverager``, which the RTL matched) against the chain of
    ``ewma_step``."""
    first = next((c for c, (g, w) in enumerate(zip(got, want)) if g != w), None)
    assert first is None, f"clock {first}: avg {got[first]:#x}, ewma_step {want[first]:#x}"
    assert len(got) == len(want)


def schedule(rnd, n, gaps=(4, 4, 4, 5, 6, 7, 11, 30), first=3):
    clocks, c = [], first
    for _ in range(n):
        clocks.append(c)
        c += rnd.choice(gaps)
    return clocks


def queue_values(rnd):
    """Queues over the whole range: the ends, neighbours of the ends, random, and small
    steps of a queue that builds up and drains."""
    state = [rnd.randrange(Q_MAX + 1)]

    def q():
        r = rnd.random()
        if r < 0.15:
            return rnd.choice((0, 1, Q_MAX, Q_MAX - 1))
        if r < 0.3:
            return rnd.randrange(Q_MAX + 1)
        state[0] = max(0, min(Q_MAX, state[0] + rnd.randint(-40, 40)))
        return state[0]
    return q


@pytest.mark.parametrize("wq_shift", range(17))
def test_sampled_update_matches_ewma_step(wq_shift):
    """Every weight of the register map (``wq_shift`` 0..16): 250 samples, 4 or more
    clocks apart, of queues from 0 to ``2**20 - 1``, from a preset average of
    ``2**36 - 1`` (the register's top, above any average of a queue: the first steps go
    down by the widest difference)."""
    rnd = random.Random(wq_shift)
    q = queue_values(rnd)
    samples = [(c, q(), wq_shift) for c in schedule(rnd, 250)]
    got, _ = simulate(samples, preset=A_MAX, noise=wq_shift)
    want = expected(samples, start=A_MAX)
    compare(got, want)
    assert len(set(want)) > 100 or wq_shift >= 14


def test_extreme_differences_at_every_weight():
    """The largest differences both ways at every weight: from an average of ``2**36 - 1``
    a sample of an empty queue, from 0 a sample of ``2**20 - 1``, alternated, each weight
    0..16 in turn (the sign of the shifted difference and the carry of the sum)."""
    samples, c = [], 4
    for w in range(17):
        for q in (Q_MAX, 0, Q_MAX, Q_MAX, 0, 0, 1, Q_MAX - 1):
            samples.append((c, q, w))
            c += MIN_SAMPLE_PERIOD
    for start in (0, A_MAX, A_MAX - (1 << 16) + 1):
        got, _ = simulate(samples, preset=start, noise=start & 0xFF)
        compare(got, expected(samples, start=start))


def test_the_weight_is_taken_with_each_sample():
    """A different ``wq_shift`` for every sample (0..31: the register map allows 16, the
    shifter is exact to 31), samples every 4 clocks, the port changing in every clock in
    between: each sample is weighted by the value in its own clock."""
    rnd = random.Random(99)
    q = queue_values(rnd)
    samples = [(c, q(), rnd.randrange(32)) for c in schedule(rnd, 1500, gaps=(4, 4, 4, 5))]
    got, _ = simulate(samples, noise=7)
    want = expected(samples)
    compare(got, want)
    assert len({w for _, _, w in samples}) == 32


@pytest.mark.parametrize("k", [0, 1, 4, 9, 15])
def test_a_weight_the_build_fixes(k):
    """``Build.fixed`` with ``avg_tau_s`` and ``tick_hz``: ``wq_shift`` is the build's
    constant (the shifts are wiring), whatever the port carries."""
    tick_hz = 1e10
    period = 4 if k < 9 else 1000 if k < 12 else 3_000_000_000
    tau = ewma_time_constant(k, period) / tick_hz
    build = Build(table_depth=16, fixed={"avg_tau_s": tau, "tick_hz": tick_hz})
    fixed = fixed_registers(build)
    assert fixed["wq_shift"].value == k
    rnd = random.Random(k)
    q = queue_values(rnd)
    samples = [(c, q(), rnd.randrange(32)) for c in schedule(rnd, 300)]
    start = rnd.randrange(A_MAX + 1)
    got, _ = simulate(samples, build=build, preset=start, noise=k)
    want = expected(samples, start=start, fixed_shift=k)
    compare(got, want)
    # the port's values would have given another average
    assert expected(samples, start=start) != want


def test_publication_clock_is_the_model_s_with_delay_latency():
    """The model's ``QueueAverager`` with ``delay = LATENCY`` and the sample period changed
    after every sample (``configure``: the sample already scheduled keeps its clock): the
    average an arrival of each clock reads (``read``) is ``avg`` in that clock."""
    rnd = random.Random(3)
    q = queue_values(rnd)
    gaps = [rnd.choice((4, 4, 5, 9, 17)) for _ in range(600)]
    shifts = [rnd.randrange(17) for _ in gaps]
    qs = [q() for _ in gaps]
    clocks, c = [], gaps[0]
    for g in gaps:
        clocks.append(c)
        c += g
    samples = list(zip(clocks, qs, shifts))
    # the bench configures its model before each sample (the weight, the period to the next
    # one, in the clock before: the period a sample steps with is read then), takes the
    # sample (``sample_until``) and compares ``read`` with ``avg`` in every clock
    _, model = simulate(samples, noise=3)
    assert model.samples == len(samples)
