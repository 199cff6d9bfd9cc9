"""FlowCounter against fpq.flow_counter.FlowCounter: N after every arrival, in carry and
paper-literal mode, with backlogs (the port stalls), flushes (wipes) and repeated flows."""
import random

import pytest
from amaranth.sim import Simulator

from fpq import Build, Config
from fpq.flow_counter import FlowCounter as Model
from fpq.flow_hash import reduce_index
from fpq_hdl.flow_counter import FlowCounter
from fpq_hdl.layouts import config_layout
from .hdl_harness import pack

SET_DELAY = 3


def run(config, events, optimise, regs=None):
    """``events``: (ts, hash) per arrival. Returns the DUT's N after each arrival and the
    number of clocks the port stalled. ``regs`` overrides ``config.registers()``."""
    build = config.build
    regs = regs or config.registers()
    dut = FlowCounter(build, SET_DELAY, optimise=optimise)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    got = []
    stalls = [0]

    async def bench(ctx):
        ctx.set(dut.config.as_value(), pack(config_layout(build), regs))
        ctx.set(dut.load_rng, 1)
        ctx.set(dut.restart, 1)
        ctx.set(dut.can_accept, 1)
        await ctx.tick()
        ctx.set(dut.load_rng, 0)
        ctx.set(dut.restart, 0)
        # out of reset the vector is wiped (memories keep their contents across a reset)
        assert ctx.get(dut.busy) and not ctx.get(dut.ready)
        wiped = 0
        # bounded, so a schedule that never leaves busy fails instead of hanging the suite
        while ctx.get(dut.busy) and wiped <= build.vec_bits + 2:
            await ctx.tick()
            wiped += 1
        assert wiped == build.vec_bits + 2
        accepted = {}          # cycle -> index
        reads = {}             # cycle -> arrival number
        i, cycle = 0, 0
        # a clear takes a clock and a wipe vec_bits + 2: past every clear the span can owe
        # (clear_period is in ticks with 16 fraction bits) plus a wipe per arrival, it hangs
        clears = ((events[-1][0] + 1) << 16) // regs["clear_period"] + 1 if events else 0
        max_cycles = clears + (len(events) + 1) * (build.vec_bits + 18) + 1000
        while len(got) < len(events):
            assert cycle < max_cycles, \
                f"only {len(got)} of {len(events)} arrivals done by clock {cycle}"
            if i < len(events):
                ctx.set(dut.arrival_valid, 1)
                ctx.set(dut.ts, events[i][0])
            else:
                ctx.set(dut.arrival_valid, 0)
            idx = accepted.pop(cycle - SET_DELAY, None)
            ctx.set(dut.set_valid, idx is not None)
            ctx.set(dut.set_index, idx or 0)
            _, _, ready, n = await ctx.tick().sample(dut.ready, dut.n_raw)
            if cycle in reads:
                got.append(n)
                del reads[cycle]
            if i < len(events):
                if ready:
                    accepted[cycle] = reduce_index(events[i][1], regs["v_max"])
                    reads[cycle + SET_DELAY + FlowCounter.LATENCY] = i
                    i += 1
                else:
                    stalls[0] += 1
            cycle += 1
    sim.add_testbench(bench)
    sim.run()
    return got, stalls[0]


def expected(config, events, regs=None):
    regs = regs or config.registers()
    m = Model(config.build.vec_bits, regs["v_max"], regs["clear_period"], regs["flush_after"],
              regs["clear_literal"], regs["rng_clear_state"])
    out = []
    for ts, h in events:
        m.advance(ts)
        m.set(h)
        out.append(m.n_raw)
    return out, m


def make_events(seed, n, flows, dts, repeat=0.3):
    rnd = random.Random(seed)
    pool = [rnd.getrandbits(32) for _ in range(flows)]
    t, h, out = 0, pool[0], []
    for _ in range(n):
        t += rnd.choice(dts)
        if rnd.random() >= repeat:
            h = rnd.choice(pool)
        out.append((t, h))
    return out


OPTIMISE = pytest.mark.parametrize("optimise", ["speed", "area"])


@OPTIMISE
@pytest.mark.parametrize("literal", [False, True])
def test_n_matches_model_with_clears_every_clock_and_backlogs(literal, optimise):
    build = Build(vec_bits=256, table_depth=256)
    # period 1.25 ticks; time steps 0..4 ticks: 0 to 4 clears owed per arrival
    config = Config(build=build, v_max=200, tick_hz=1e6, t_clear_s=250e-6, n_cap=255,
                    clear_literal=literal)
    events = make_events(1, 3000, 150, (0, 1, 1, 1, 2, 4))
    want, model = expected(config, events)
    got, stalls = run(config, events, optimise)
    assert got == want
    assert model.clears > 1000 and stalls > 100


@OPTIMISE
def test_same_flow_every_clock_counts_once(optimise):
    build = Build(vec_bits=64, table_depth=16)
    config = Config(build=build, v_max=64, tick_hz=1e6, t_clear_s=64e-3, n_cap=15)
    events = [(t, 0x12345678 if t % 50 < 40 else t * 2654435761 % (1 << 32))
              for t in range(1, 1500)]
    want, _ = expected(config, events)
    got, stalls = run(config, events, optimise)
    assert got == want and stalls == 0


@OPTIMISE
def test_flush_wipes_like_the_model(optimise):
    build = Build(vec_bits=64, table_depth=16)
    config = Config(build=build, v_max=50, tick_hz=1e6, t_clear_s=500e-6, n_cap=15)
    events = make_events(3, 600, 40, (0, 1, 2, 3, 5000))   # 5000 ticks > 8 t_clear: flush
    want, model = expected(config, events)
    got, _ = run(config, events, optimise)
    assert got == want and model.wipes > 10


@OPTIMISE
def test_flush_after_with_its_top_bit_set_never_flushes(optimise):
    """The register allows any 64-bit ``flush_after``; the backlog is a signed 64-bit
    difference, so a threshold of 2**63 or more is never reached: gaps of 5000 ticks (500
    clears owed each) are worked off clear by clear, with no wipe, as in the model. The
    threshold is 2**63 plus the usual one: modulo 2**64, backlogs below the usual threshold
    are "past" it, so hardware that ignores the top bit wipes on nearly every clear."""
    build = Build(vec_bits=64, table_depth=16)
    config = Config(build=build, v_max=50, tick_hz=1e6, t_clear_s=500e-6, n_cap=15)
    regs = config.registers()
    regs = dict(regs, flush_after=(1 << 63) + regs["flush_after"])
    events = make_events(3, 200, 40, (0, 1, 2, 3, 5000))
    want, model = expected(config, events, regs)
    got, stalls = run(config, events, optimise, regs)
    assert got == want
    assert model.wipes == 0 and model.clears > 5000 and stalls > 5000


@OPTIMISE
def test_flush_at_its_threshold(optimise):
    """Arrivals one tick before, at and one tick after ``next_due + flush_after``: a backlog
    of exactly ``flush_after`` wipes the vector, one tick less works it off clear by clear
    (the port stalls), as in the model."""
    build = Build(vec_bits=64, table_depth=16)
    config = Config(build=build, v_max=50, tick_hz=1e6, t_clear_s=500e-6, n_cap=15)
    regs = config.registers()
    fx = 16
    assert regs["clear_period"] % (1 << fx) == 0 and regs["flush_after"] % (1 << fx) == 0
    m = Model(build.vec_bits, regs["v_max"], regs["clear_period"], regs["flush_after"],
              regs["clear_literal"], regs["rng_clear_state"])
    rnd = random.Random(5)
    pool = [rnd.getrandbits(32) for _ in range(40)]
    events, t, offsets = [], 0, []
    for i in range(400):
        if i % 8 == 7:
            offset = rnd.choice((-1, 0, 1))
            t = ((m.next_due + regs["flush_after"]) >> fx) + offset
            offsets.append(offset)
        else:
            t += rnd.choice((0, 1, 2, 5))
        h = rnd.choice(pool)
        m.advance(t)
        m.set(h)
        events.append((t, h))
    want, model = expected(config, events)
    got, stalls = run(config, events, optimise)
    assert got == want
    assert {-1, 0, 1} <= set(offsets) and model.wipes >= offsets.count(0) > 5 and stalls > 1000
