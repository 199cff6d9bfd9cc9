"""RandomSource against fpq.random_source.XorShift128, under the bench of
``tb_lib.blocks.random_source`` (the number of every clock compared with the model's); the
tests check the model's numbers the bench found equal against the sequences they expect."""
import copy
import random

from fpq import Config
from fpq.random_source import XorShift128
from fpq_hdl.random_source import RandomSource

from tb_lib.blocks.random_source import RandomSourceBench, OUTPUTS
from tb_lib.sim_amaranth import run_bench


def _run(seeds, program):
    """Clock ``RandomSource`` through ``program``: per clock ``(load, step)``, with the seed
    port at ``seeds[k]`` in clock k. Returns per clock the ``value`` seen in that clock."""
    clocks = [(seeds[k], load, step) for k, (load, step) in enumerate(program)]
    plan = {"script": [("clocks", clocks)], "record": True}
    bench, _ = run_bench(RandomSource(), lambda sim: RandomSourceBench(sim, plan), OUTPUTS)
    return bench.rows


def draws(seed, n, step_pattern):
    """The numbers drawn in ``n`` clocks after a load of ``seed``, stepping where
    ``step_pattern(i)``."""
    steps = [step_pattern(i) for i in range(n)]
    seen = _run([seed] * (n + 1), [(1, 0)] + [(0, step) for step in steps])
    return [v for v, step in zip(seen[1:], steps) if step]


def test_sequence_matches_model_with_idle_clocks():
    seed = Config(seed_decide=12345).registers()["rng_decide_state"]
    got = draws(seed, 3000, lambda i: int(i % 7 != 3))
    model = XorShift128(seed)
    assert got == [model.step() for _ in got]
    assert len(set(got)) > len(got) - 2


def test_all_zero_seed_is_replaced_like_the_model():
    got = draws(0, 50, lambda i: 1)
    model = XorShift128(0)
    assert got == [model.next() for _ in got]


def test_load_bypass_the_load_clock_shows_the_seed_s_first_number():
    """``load`` in clock L makes ``value`` in clock L the new seed's first number (the
    model's ``load`` then ``next``), with or without a ``step`` in that clock: with one, the
    clock after shows the second number; without, the first again. Loads come at random
    clocks (back to back too, and the all-zero seed) with the seed port changing every
    clock, so a load that took the seed a clock late or early would show another number.
    Every value is the model's ``next()`` at that point of the sequence."""
    rnd = random.Random(17)
    pool = [Config(seed_decide=s).registers()["rng_decide_state"] for s in range(1, 6)]
    n = 4000
    seeds = [rnd.choice(pool) for _ in range(n)]
    program = []
    for k in range(n):
        load = int(k == 0 or rnd.random() < 0.05 or (program[-1][0] and rnd.random() < 0.5))
        program.append((load, int(rnd.random() < 0.7)))
    got = _run(seeds, program)
    model = XorShift128(seeds[0])
    want, kinds = [], set()
    for k, (load, step) in enumerate(program):
        if load:
            model.load(seeds[k])
        # the number this clock shows is the model's next; a step consumes it
        ahead = copy.deepcopy(model)
        want.append(ahead.next())
        if step:
            model.next()
        kinds.add((load, step, k > 0 and program[k - 1][0]))
    assert got == want
    # loads with and without a step, and loads in consecutive clocks, all happened
    assert {(1, 0, 0), (1, 1, 0), (1, 1, 1), (1, 0, 1), (0, 1, 1)} <= kinds
    assert sum(l for l, _ in program) > 150


def test_load_of_an_all_zero_seed_without_a_step():
    """An all-zero seed (only a raw port can present one: the register map refuses it) shows
    0 in its load clock, as documented, and loads ``w = 1``: from the next clock the model's
    sequence for that seed, whether it steps at once or after idle clocks."""
    seed = Config(seed_clear=99).registers()["rng_clear_state"]
    a, b = XorShift128(seed), XorShift128(0)
    first = [a.next() for _ in range(3)]
    zero = [b.next() for _ in range(7)]
    for idle in (0, 1, 3):
        program = ([(1, 1), (0, 1), (0, 1)] + [(1, 0)] + [(0, 0)] * idle + [(0, 1)] * 6
                   + [(0, 0), (0, 1)])
        seeds = [seed] * 3 + [0] + [seed] * (8 + idle)
        got = _run(seeds, program)
        assert got == first + [0] + [zero[0]] * idle + zero[:6] + [zero[6], zero[6]], idle
    assert zero[:3] == [1, 1, 1] and 2056 in zero       # the seed's sequence, not 1s


def test_load_of_an_all_zero_seed_with_a_step():
    """The number drawn in the load clock of an all-zero seed is 0 (documented); a step in
    that clock consumes the model's first number, so the generator then goes on with the
    model's sequence for that seed after it."""
    program = [(1, 1)] + [(0, 1)] * 6
    got = _run([0] * 7, program)
    b = XorShift128(0)
    zero = [b.next() for _ in range(7)]
    assert got == [0] + zero[1:]
