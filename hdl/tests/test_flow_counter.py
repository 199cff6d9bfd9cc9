"""FlowCounter against fpq.flow_counter.FlowCounter: N after every slot, clock for clock.

The bench runs the model on the queue manager's clock (clock t is slot t's cycle 0, the
clock in which the component sees the slot's ``clear``, ``wipe`` and ``load_rng``): in each
clock, the commit's changes (a seed reloaded, a wipe), then the clears the model's schedule
applies in that clock (``advance``), then the set of the arrival of that clock (``set``, whose
return value is the index driven on ``set_index`` ``set_delay`` clocks later). The bench
drives ``clear`` in exactly the clocks where ``advance`` applied one, so the component draws
the same random numbers in the same order. ``n_raw`` must show N after slot t at clock t +
``set_delay + LATENCY`` for every slot (and ``n_next`` a clock earlier), and ``busy`` must
be high exactly as documented (``vec_bits + 3`` clocks out of reset, ``vec_bits + 2`` after a
``wipe``). Arrivals come in every clock the port may take one (none while busy).
"""
import copy
import random

import pytest
from amaranth.sim import Simulator

from fpq import Build, Config
from fpq.flow_counter import FlowCounter as Model
from fpq_hdl.flow_counter import FlowCounter
from fpq_hdl.layouts import config_layout
from fpq_hdl.queue_manager import _S_SET
from fpq.bitfields import pack

LAT = FlowCounter.LATENCY
# the queue manager's set_delay, and the smallest the component allows
SET_DELAYS = pytest.mark.parametrize("set_delay", [_S_SET, 4])


def plan(config, clocks, arrive, wipes=(), seeds=None, v_maxes=None, period=None, caps=None):
    """The model clock by clock. ``arrive(t)``: the arrival's 32-bit hash in clock t or
    None (asked only in clocks where the port is not busy); ``wipes``: clocks of a ``wipe``
    strobe (a re-key's); ``seeds``: clock -> new ``rng_clear_state`` (loaded in that clock);
    ``v_maxes``: clock -> new ``v_max`` (a commit: wipe and new registers in that clock);
    ``period``: clock -> new clear period; ``caps``: clock -> new ``n_cap`` (for ``over``).
    Returns the per-clock drive, the model's N after each slot, the clocks where ``busy``
    must be high, coverage counts and the model."""
    regs = config.registers()
    vb = config.build.vec_bits
    model = Model(vb, regs["v_max"], regs["clear_period"], regs["rng_clear_state"])
    seeds, v_maxes, period, caps = seeds or {}, v_maxes or {}, period or {}, caps or {}
    seed, v_max, n_cap = regs["rng_clear_state"], regs["v_max"], regs["n_cap"]
    wipe_clocks = {0} | set(wipes) | set(v_maxes)        # slot 0: the wipe out of reset
    busy = [False] * clocks
    for w in wipe_clocks:
        for c in range(w + 1, min(w + vb + 3, clocks)):
            busy[c] = True
    busy[0] = True
    drive, n_after = [], []
    cov = {"clears": 0, "same index": 0, "clears in a wipe": 0, "seed loads with a clear": 0,
           "sets": 0, "set right after a wipe": 0, "clears right after a wipe": 0}
    for t in range(clocks):
        n_cap = caps.get(t, n_cap)
        load = t in seeds
        if load:
            seed = seeds[t]
            model.rng.load(seed)
        if t in v_maxes or t in period:
            v_max = v_maxes.get(t, v_max)
            model.configure(v_max, period.get(t, model.period), t)  # a new v_max wipes
        wipe = t in wipe_clocks
        if wipe and t not in v_maxes:
            model.wipe()
        probe = copy.deepcopy(model.rng)
        cleared = model.advance(t)
        assert cleared <= 1
        idx = None
        h = None if busy[t] or wipe else arrive(t)
        if h is not None:
            idx = model.set(h)
            cov["sets"] += 1
            cov["set right after a wipe"] += busy[t - 1] if t else 0
        if cleared:
            cov["clears"] += 1
            cidx = (probe.next() * v_max) >> 32
            cov["same index"] += cidx == idx
            cov["clears in a wipe"] += busy[t]
            cov["seed loads with a clear"] += load
            cov["clears right after a wipe"] += busy[t - 1] and not busy[t]
        drive.append({"clear": cleared, "wipe": wipe and t > 0, "load": load or t == 0,
                      "v_max": v_max, "seed": seed, "n_cap": n_cap, "index": idx})
        n_after.append(model.n_raw)
    return drive, n_after, busy, cov, model


def simulate(config, drive, set_delay):
    """The component driven by ``drive`` (``plan``); returns per clock ``(n_raw, n_next,
    busy, over, n_cap)`` as seen in that clock."""
    build = config.build
    regs = config.registers()
    dut = FlowCounter(build, set_delay)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    seen = []

    async def bench(ctx):
        cfg = None
        for t in range(len(drive) + set_delay + LAT + 1):
            d = drive[t] if t < len(drive) else {"clear": 0, "wipe": 0, "load": 0}
            if t < len(drive) and (d["v_max"], d["seed"], d["n_cap"]) != cfg:
                cfg = d["v_max"], d["seed"], d["n_cap"]
                ctx.set(dut.config.as_value(), pack(config_layout(build), dict(
                    regs, v_max=cfg[0], rng_clear_state=cfg[1], n_cap=cfg[2])))
            ctx.set(dut.clear, d["clear"])
            ctx.set(dut.wipe, d["wipe"])
            ctx.set(dut.load_rng, d["load"])
            s = t - set_delay
            idx = drive[s]["index"] if 0 <= s < len(drive) else None
            ctx.set(dut.set_valid, idx is not None)
            ctx.set(dut.set_index, idx or 0)
            _, _, n_raw, n_next, busy, over, cap = await ctx.tick().sample(
                dut.n_raw, dut.n_next, dut.busy, dut.over, dut.config.n_cap)
            seen.append((n_raw, n_next, busy, over, cap))
    sim.add_testbench(bench)
    sim.run()
    return seen


def check(config, set_delay, clocks, arrive, **kw):
    drive, n_after, busy, cov, model = plan(config, clocks, arrive, **kw)
    seen = simulate(config, drive, set_delay)
    d = set_delay + LAT
    for t in range(clocks):
        n_raw = seen[t + d][0]
        assert n_raw == n_after[t], (f"slot {t}: n_raw {n_raw} at clock {t + d}, model N "
                                     f"{n_after[t]} (slot: {drive[t]})")
    for c in range(len(seen) - 1):
        assert seen[c][1] == seen[c + 1][0], f"clock {c}: n_next {seen[c][1]}, next n_raw " \
                                             f"{seen[c + 1][0]}"
    # ``over``: n_raw above the cap the port showed two clocks before (a register beside
    # n_raw, from a register of the cap); out of reset, n_raw 0 is never over
    for c in range(len(seen)):
        cap = seen[c - 2][4] if c >= 2 else 0
        assert seen[c][3] == (seen[c][0] > cap), f"clock {c}: over {seen[c][3]}, " \
            f"n_raw {seen[c][0]}, n_cap {cap}"
    cov["over"] = sum(s[3] for s in seen)
    cov["not over"] = sum(1 - s[3] for s in seen)
    got_busy = [bool(b) for _, _, b, _, _ in seen[:clocks]]
    first = next((c for c in range(clocks) if got_busy[c] != busy[c]), None)
    assert first is None, f"clock {first}: busy {got_busy[first]}, documented {busy[first]}"
    return cov, model


def arrivals(seed, flows, p=0.8, repeat=0.3):
    """An arrival in a fraction ``p`` of clocks, the previous flow again with ``repeat``."""
    rnd = random.Random(seed)
    pool = [rnd.getrandbits(32) for _ in range(flows)]
    last = [pool[0]]

    def arrive(t):
        if rnd.random() >= p:
            return None
        if rnd.random() >= repeat:
            last[0] = rnd.choice(pool)
        return last[0]
    return arrive


SMALL = Build(vec_bits=64, table_depth=16)
MID = Build(vec_bits=256, table_depth=256)


def config(build, v_max, period, seed=2, n_cap=10):
    """A configuration with ``clear_period`` ``period`` clocks (UQ32.16 from t_clear_s)."""
    return Config(build=build, v_max=v_max, tick_hz=1e6, t_clear_s=period * v_max / 1e6,
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
    c0 = Config(build=build, mode="fpq", v_max=200, tick_hz=1e6, t_clear_s=200e-6,
                n_cap=255, limit_pkts=100, rekey_hold_t_clear=0.5) \
        .override(wq_shift=3, avg_sample_period=4)
    c1 = c0.replace(v_max=150, t_clear_s=150e-6, hash_key=bytes(b ^ 0x5A for b in
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
