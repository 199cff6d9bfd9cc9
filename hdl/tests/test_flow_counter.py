"""FlowCounter against fpq.flow_counter.FlowCounter: N after every slot, clock for clock.

The clears come in the clocks of the model's own clear schedule, run on the queue manager's
clock (clock t is slot t's cycle 0, the clock in which the component sees the slot's
``clear``, ``wipe`` and ``load_rng``): in each clock, the commit's changes (a seed reloaded,
a wipe), then the clears the schedule applies in that clock (``advance``), then the set of
the arrival of that clock (``set``) (``tb_lib.blocks.flow_counter.scheduled_clocks``), so
the component draws the same random numbers in the same order. The bench is the Verilator
bench's (``tb_lib.blocks.flow_counter``, cocotb-tests/flow_counter/), here in Amaranth's
simulator: ``n_raw`` must show N after slot t at clock t + ``set_delay + LATENCY`` for every
slot (and ``n_next`` a clock earlier), ``over`` is ``n_raw`` above the cap of two clocks
before, and ``busy`` must be high exactly as documented (``vec_bits + 3`` clocks out of
reset, ``vec_bits + 2`` after a ``wipe``). Arrivals come in every clock the port may take one
(none while busy).
"""
import random

import pytest

from fpq import Build, Config
from fpq_hdl.flow_counter import FlowCounter
from fpq_hdl.queue_manager import _S_SET

from tb_lib.blocks.flow_counter import FlowCounterBench, OUTPUTS, arrivals, scheduled_clocks
from tb_lib.sim_amaranth import run_bench
from tb_lib.stimulus import t_clear_s

# the queue manager's set_delay, and the smallest the component allows
SET_DELAYS = pytest.mark.parametrize("set_delay", [_S_SET, 4])


def check(config, set_delay, clocks, arrive, **kw):
    """The component under the bench for ``clocks`` clocks of ``scheduled_clocks``; returns
    its coverage counts (with the clocks ``n_raw`` was over and not over the cap) and the
    schedule's model."""
    script, n_after, cov, model = scheduled_clocks(config, clocks, arrive, **kw)
    plan = {"build": config.build, "set_delay": set_delay, "script": script, "record": True}
    bench, res = run_bench(FlowCounter(config.build, set_delay),
                           lambda sim: FlowCounterBench(sim, plan), OUTPUTS)
    # the bench's model, on a clock of clear strobes, is the schedule's model
    assert bench.rows[:clocks] == n_after
    cov["over"] = res["coverage"].get("flow counter: n_raw over n_cap", 0)
    cov["not over"] = res["coverage"].get("flow counter: n_raw within n_cap", 0)
    return cov, model


SMALL = Build(vec_bits=64, table_depth=16)
MID = Build(vec_bits=256, table_depth=256)


def config(build, v_max, period, seed=2, n_cap=10):
    """A configuration with ``clear_period`` ``period`` clocks (UQ32.16 from t_clear_s)."""
    return Config(build=build, v_max=v_max, tick_hz=1e6, t_clear_s=t_clear_s(period, v_max),
                  n_cap=n_cap, seed_clear=seed)


@SET_DELAYS
def test_n_matches_model_with_a_clear_in_most_clocks(set_delay):
    """A clear in 4 clocks of 5 (period 1.25), an arrival in 4 of 5, flows repeated: 6000
    slots, N after every one; ``n_cap`` changed every 200 clocks around N (``over``)."""
    cfg = config(MID, 200, 1.25)
    rnd = random.Random(2)
    caps = {t: rnd.randint(1, 120) for t in range(100, 6000, 200)}
    cov, model = check(cfg, set_delay, 6000, arrivals(1, 150), caps=caps)
    assert cov["clears"] > 4000 and cov["sets"] > 4000
    assert model.n_raw > 20 and cov["same index"] > 5
    assert cov["over"] > 1000 and cov["not over"] > 1000


@SET_DELAYS
def test_same_flow_every_clock_and_a_clear_every_clock(set_delay):
    """One flow on every clock for stretches of 40 clocks and a clear in every clock (period
    exactly 1.0) of a 16-bit range: the flow is counted once, its bit cleared and set again
    in the same slot now and then (the set wins, N as for the set alone)."""
    cfg = config(SMALL, 16, 1.0)
    flows = [0x12345678, 0x9ABCDEF0, 0x0F0F0F0F]

    def arrive(t):
        return flows[0] if t % 50 < 40 else (t * 2654435761) % (1 << 32)
    cov, model = check(cfg, set_delay, 3000, arrive)
    assert cov["clears"] >= 2990 and cov["same index"] > 50
    assert cov["sets"] > 2900


def test_clear_and_set_of_the_same_index_in_one_slot():
    """A 3-bit range, a clear and an arrival in every clock: a third of the slots clear and
    set the same bit (the bit ends 1; N changes as for the set alone), the others clear a
    bit the slot before set, or one set two slots before (the forwarding of both)."""
    cfg = config(SMALL, 3, 1.0)
    cov, _ = check(cfg, _S_SET, 2000, arrivals(3, 40, p=1.0, repeat=0.0))
    assert cov["same index"] > 400


@SET_DELAYS
def test_wipes_busy_and_clears_during_a_wipe(set_delay):
    """A wipe (as a re-key commits one) every 150-400 clocks, clears in 2 clocks of 3:
    ``busy`` for ``vec_bits + 2`` clocks after each (``vec_bits + 3`` out of reset); the
    clears during it draw their number and clear nothing (N stays 0); arrivals come from the
    first clock the port allows, and the clears right after the wipe read bits the wipe has
    just written (forwarding)."""
    cfg = config(SMALL, 50, 1.5)
    rnd = random.Random(4)
    wipes, t = [], 200
    while t < 5000:
        wipes.append(t)
        t += rnd.randint(150, 400)
    cov, model = check(cfg, set_delay, 5200, arrivals(5, 40, p=0.9), wipes=wipes)
    assert model.wipes == len(wipes) + 1
    assert cov["clears in a wipe"] > 500 and cov["set right after a wipe"] >= 10
    assert cov["clears right after a wipe"] >= 5


def test_seed_loads_with_a_clear_in_the_same_clock():
    """``load_rng`` at random clocks (new seeds and old ones again), half of them in the
    clock of a clear: that clear draws the new seed's first number (the model's
    ``configure`` at that clock reloads the generator before the clear)."""
    cfg = config(MID, 200, 1.5)
    rnd = random.Random(6)
    states = [Config(seed_clear=s).registers()["rng_clear_state"] for s in range(3, 9)]
    seeds = {t: rnd.choice(states) for t in rnd.sample(range(300, 6000), 120)}
    cov, _ = check(cfg, _S_SET, 6000, arrivals(7, 150), seeds=seeds)
    assert cov["seed loads with a clear"] > 40


def test_a_clear_every_clock_through_a_wipe_and_a_v_max_change_of_the_model_s_period():
    """The model's period changes (the bench drives its clears) and wipes with arrivals
    between: a clear in every clock, then every 3.5 clocks, then every clock again."""
    cfg = config(SMALL, 60, 1.0)
    cov, _ = check(cfg, _S_SET, 3000, arrivals(8, 100, p=0.95), wipes=[900, 2100],
                   period={1000: int(3.5 * 65536), 2000: 65536})
    assert cov["clears"] > 2000 and cov["clears in a wipe"] > 100


def test_v_max_change_clears_before_the_commit_use_the_old_v_max():
    """A commit that changes ``v_max`` (with its wipe) at clock ts: the clears of slots
    before ts belong to the old configuration (``QueueManager.configure``: every clear due
    before ts under the old one), so N after slot ts - 1 (``n_raw``, and the count a re-key
    in the same commit latches) must be the model's."""
    cfg = config(SMALL, 64, 1.0)
    v_maxes = {t: 64 if i % 2 else 16 for i, t in enumerate(range(400, 3000, 200))}
    check(cfg, _S_SET, 3000, arrivals(9, 200, p=1.0, repeat=0.0), v_maxes=v_maxes)


def test_rekey_with_a_v_max_change_holds_the_model_s_count():
    """The queue manager (through ``hdl_harness``): commits that change ``hash_key`` and
    ``v_max`` together, with a re-key hold and a clear in every clock. The held count is
    N after the clears due before the commit's clock, under the old ``v_max``; the
    verdicts during each hold report it."""
    from fpq_hdl.queue_manager import QueueManager
    from .hdl_harness import traffic, run, check_bench
    build = Build(vec_bits=256, table_depth=256)
    c0 = Config(build=build, mode="fpq", v_max=200, tick_hz=1e6, t_clear_s=t_clear_s(1, 200),
                n_cap=255, limit_pkts=100, rekey_hold_t_clear=0.5) \
        .override(wq_shift=3, avg_sample_period=4)
    c1 = c0.replace(v_max=150, t_clear_s=t_clear_s(1, 150), hash_key=bytes(b ^ 0x5A for b in
                                                                c0.hash_key))
    phases = []
    t0 = 300
    for i in range(6):
        steps, _, _ = traffic(c0 if i % 2 == 0 else c1, 400, seed=60 + i, flows=400,
                              same_flow=0.0, t0=t0)
        phases.append(steps)
        t0 = steps[-1][0] + 600

    async def script(bench, config):
        await bench.configure(c0)
        for i, steps in enumerate(phases[:-1]):
            await bench.drive(steps)
            await bench.commit(*((c0, c1) if i % 2 == 0 else (c1, c0)))

    bench = run(c0, phases[-1], dut=QueueManager(build), script=script)
    check_bench(c0, bench)
