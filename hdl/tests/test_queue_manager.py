"""The top, QueueManager, against the golden model: every field of every verdict, counters,
telemetry, throughput, back-pressure, commits at a clock, wipes, reset. (The long bit-exact
runs, the fixed registers and the hash options: ``test_queue_manager_bit_exact.py``.)"""
import random
from bisect import bisect_right

import pytest
from amaranth.sim import Simulator

from fpq import Config, Build
from fpq.fields import ConfigError
from fpq.queue_manager import Arrival, Departure, QueueManager as Model

from fpq_hdl.queue_manager import (QueueManager, FIFO_DEPTH, LATENCY, MIN_AVG_DELAY,
                                    MIN_COUNTER_BITS, VERDICT_FIFOS, OPTIMISE, _S_VERDICT)
from .hdl_harness import traffic, run, compare, replay, check_bench, Bench

from tb_lib.sim_amaranth import UnderReset
from tb_lib.stimulus import t_clear_s

from .qm_cases import BUILD, COMMON, MODES, T0, check

@pytest.mark.parametrize("verdict_fifo, optimise",
                         [("distributed", "speed"), ("block", "area")])   # ULX3S, iCEBreaker
def test_back_pressure_loses_and_duplicates_nothing(verdict_fifo, optimise):
    rnd = random.Random(11)
    pattern = [rnd.random() < 0.4 for _ in range(1 << 16)]
    dut = QueueManager(MODES["red"].build, verdict_fifo=verdict_fifo, optimise=optimise)
    bench, model = check(MODES["red"], 5000, seed=12, gap_every=700,
                         ready_pattern=lambda c: int(pattern[c & 0xFFFF]), dut=dut)
    assert model.snapshot()["avg"] > 0 and len(bench.refused_cycles) > 1000


@pytest.mark.parametrize("verdict_fifo, optimise",
                         [("distributed", "speed"), ("block", "area")])   # ULX3S, iCEBreaker
def test_long_verdict_stalls_fill_the_fifo_exactly(verdict_fifo, optimise):
    """The sink stalls 300 clocks in every 400. By the end of each stall ``FIFO_DEPTH - 1`` or
    ``FIFO_DEPTH`` verdicts are accepted and not yet taken (the credit counts accepts and
    reads two clocks late, and keeps the two places they may use); never more (the full FIFO
    would lose one), the whole FIFO in some stall, and every verdict still comes out once,
    bit-exact."""
    dut = QueueManager(MODES["red"].build, verdict_fifo=verdict_fifo, optimise=optimise)
    bench, _ = check(MODES["red"], 3000, seed=13, dut=dut,
                     ready_pattern=lambda c: int(c % 400 >= 300))
    accepts, verdicts = bench.accept_cycles, bench.verdict_cycles
    ends = [t for t in range(299, verdicts[-1], 400)
            if t - accepts[0] >= 100 and bisect_right(accepts, t) < 3000]
    assert len(ends) >= 20
    held = [bisect_right(accepts, t) - bisect_right(verdicts, t) for t in ends]
    assert set(held) <= {FIFO_DEPTH - 1, FIFO_DEPTH}, held
    assert max(held) == FIFO_DEPTH, held


@pytest.mark.parametrize("verdict_fifo, optimise",
                         [("distributed", "speed"), ("block", "area")])   # ULX3S, iCEBreaker
def test_credit_refuses_arrivals_exactly_as_documented(verdict_fifo, optimise):
    """Clock for clock, in both directions: after the reset's wipe an arrival is refused
    exactly when ``A - R > FIFO_DEPTH - 2``, A the arrivals accepted and R the verdicts taken
    up to two clocks before (the documented credit, from registers only). The sink stalls
    120 clocks in every 200, so the FIFO fills and drains 20 times."""
    config = MODES["red"]
    dut = QueueManager(config.build, verdict_fifo=verdict_fifo, optimise=optimise)
    bench, _ = check(config, 3000, seed=14, dut=dut,
                     ready_pattern=lambda c: int(c % 200 >= 120))
    accepts, reads = bench.accept_cycles, bench.verdict_cycles

    def credit(c):
        return bisect_right(accepts, c - 2) - bisect_right(reads, c - 2) <= FIFO_DEPTH - 2
    refused = [c for c in bench.refused_cycles if c > accepts[0]]
    assert len(refused) > 1000          # the credit, not the traffic, held arrivals back
    assert [c for c in refused if credit(c)] == []
    assert [c for c in accepts if not credit(c)] == []


@pytest.mark.parametrize("verdict_fifo", VERDICT_FIFOS)
def test_throughput_one_verdict_per_clock(verdict_fifo):
    """10k back-to-back arrivals, a clear in every clock (period exactly one clock), a
    departure in every third, the same flow on every clock for the first half: 10k verdicts
    in 10k + latency clocks, every one the model's."""
    v_max = 4096
    cfg = Config(build=BUILD, mode="fpq", v_max=v_max, tick_hz=1e6, t_clear_s=t_clear_s(1, v_max),
                 n_cap=1023, limit_pkts=100).override(wq_shift=3, avg_sample_period=4)
    assert cfg.clear_period_raw() == 1 << 16
    rnd = random.Random(1)
    model = Model(cfg)
    steps, expected = [], []
    for i in range(10_000):
        c = T0 + 10 + i
        flow = 0x0A000001_0A000002_1F90_0050_06 if i < 5000 else rnd.getrandbits(104)
        dep = Departure(c, 576) if i % 3 == 0 and model.occ_pkts else None
        if dep:
            model.depart(dep)
        arr = Arrival(c, flow, 576, False)
        expected.append(model.arrive(arr))
        steps.append((c, dep, arr))
    dut = QueueManager(cfg.build, verdict_fifo=verdict_fifo)
    bench = run(cfg, steps, dut=dut)
    compare(bench.verdicts(), expected)
    assert model.fc.clears >= 10_000
    assert dut.latency == LATENCY
    assert bench.verdict_cycles[-1] - bench.accept_cycles[0] + 1 == 10_000 + dut.latency


def test_ready_is_a_function_of_registers_only():
    """``arrivals.ready`` has no combinational path from any payload, from ``valid`` or from
    the verdict sink: within each clock of a run (wipe, traffic, credit stalls) every input
    but ``hold`` is set to many random values and ``ready`` never changes."""
    config = MODES["red"]
    dut = QueueManager(config.build)
    rnd = random.Random(3)
    seen = {"clocks": 0, "ready": set()}
    inputs = [(dut.arrivals.valid, 1), (dut.arrivals.payload.as_value(), 121),
              (dut.departures.valid, 1), (dut.departures.payload.as_value(), 16),
              (dut.verdicts.ready, 1)]
    steps, _, _ = traffic(config, 600, seed=4, t0=T0 - 200)

    async def bench(ctx):
        b = Bench(ctx, dut, ready_pattern=lambda c: int(c % 100 >= 70))
        await b.configure(config)
        orig_tick = b.tick

        async def tick(count=1):
            out = False
            for _ in range(count):
                ready = ctx.get(dut.arrivals.ready)
                saved = [ctx.get(sig) for sig, _ in inputs]
                for _ in range(8):
                    for sig, width in inputs:
                        ctx.set(sig, rnd.getrandbits(width))
                    assert ctx.get(dut.arrivals.ready) == ready, b.cycle
                for (sig, _), v in zip(inputs, saved):
                    ctx.set(sig, v)
                seen["clocks"] += 1
                seen["ready"].add(ready)
                out = await orig_tick()
            return out
        b.tick = tick
        await b.drive(steps)
        await b.drain(10)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen["clocks"] > 1000 and seen["ready"] == {0, 1}


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_unknown_optimise_is_refused():
    with pytest.raises(ValueError, match="optimise"):
        QueueManager(BUILD, optimise="fast")


def test_unknown_verdict_fifo_is_refused():
    with pytest.raises(ValueError, match="verdict_fifo: 'lutram' is not one of "
                                         "distributed, block"):
        QueueManager(BUILD, verdict_fifo="lutram")


def test_default_build():
    # the synthesised configuration: vec_bits 8192, table_depth 8192, avg_delay 13
    cfg = Config(mode="fpq", tick_hz=1e6, t_clear_s=0.05, avg_tau_s=1e-4, limit_pkts=200,
                 ecn=True)
    check(cfg, 3000, seed=9)


@pytest.mark.parametrize("delay", [MIN_AVG_DELAY + 1, MIN_AVG_DELAY + 7])
def test_a_longer_avg_delay_delays_the_average_by_registers(delay):
    """``Build.avg_delay`` above the pipeline's own: the average reaches the decisions that
    many clocks after its sample (weight 1, so every sample shows in the verdicts)."""
    build = Build(table_depth=1024, avg_delay=delay)
    cfg = Config(build=build, mode="red", red_min_th=2, red_max_th=30, limit_pkts=70,
                 tick_hz=1e6, t_clear_s=0.005, v_max=4000, n_cap=1023) \
        .override(wq_shift=0, avg_sample_period=5)
    check(cfg, 3000, seed=15)


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_avg_delay_below_pipeline_is_refused():
    with pytest.raises(ConfigError, match=rf"avg_delay: {MIN_AVG_DELAY - 1} is below the "
                                          rf"RTL's pipeline distance; allowed range "
                                          rf"\[{MIN_AVG_DELAY}, 127\] clocks"):
        QueueManager(Build(avg_delay=MIN_AVG_DELAY - 1))
    QueueManager(Build(avg_delay=MIN_AVG_DELAY))._MustUse__silence = True


# ---- reset and commits mid-stream --------------------------------------------------------
SMALL = Build(vec_bits=256, table_depth=256)
SMALL_FPQ = Config(build=SMALL, mode="fpq", v_max=200, tick_hz=1e6, t_clear_s=1e-3,
                   n_cap=255, limit_pkts=100, ecn=True, avg_tau_s=5e-5)


def test_reset_mid_stream_restores_the_reset_state():
    """Traffic fills the vector and the average, reset comes while arrivals are in the
    pipeline and verdicts in the FIFO; after it, with the time base restarted, the same
    traffic gives exactly the verdicts of a fresh model: vector empty (n), average zero,
    queue empty, counters 0, generators and timers from the configuration (sw/README.md,
    Reset)."""
    cfg = SMALL_FPQ.replace(t_clear_s=0.05)
    before, _, _ = traffic(cfg, 1500, seed=21, flows=150, jump=0, t0=300)
    steps, expected, model = traffic(cfg, 1500, seed=21, flows=150, jump=0, t0=300)
    dut = QueueManager(cfg.build)
    top = UnderReset(dut)
    seen = {}

    async def configure_reset_configure(bench, config):
        await bench.configure(config)
        await bench.drive(before)
        bench.ready_pattern = lambda c: 0       # verdicts wait in the FIFO
        await bench.tick(5)
        ctx = bench.ctx
        seen["n_raw"], seen["avg"] = ctx.get(dut.n_raw), ctx.get(dut.avg)
        seen["idle"], seen["fifo"] = ctx.get(dut.idle), ctx.get(dut.verdicts.valid)
        bench.present(None, None)
        ctx.set(top.rst, 1)
        await ctx.tick().repeat(2)
        ctx.set(top.rst, 0)
        seen["busy"] = ctx.get(dut.busy)
        # what came out before the reset is of the old run: start the record afresh
        bench.events.clear()
        bench.verdict_words.clear()
        bench.arrivals = 0
        bench.ready_pattern = None
        await bench.configure(config)

    bench = run(cfg, steps, dut=dut, top=top, script=configure_reset_configure)
    # the state before the reset was not the reset state, and the reset hit a busy pipeline
    assert seen["n_raw"] > 100 and seen["avg"] > 0 and not seen["idle"] and seen["fifo"]
    assert seen["busy"]                    # the vector wipe out of reset
    compare(bench.verdicts(), expected)
    check_bench(cfg, bench)


@pytest.mark.parametrize("optimise", OPTIMISE)
def test_commits_of_clear_period_v_max_average_and_seeds(optimise):
    """Commits mid-stream, each at a clock the bench records and the model replays: the
    clear period both ways (the clear already scheduled keeps its clock), v_max (a wipe, the
    port not ready meanwhile), the average's weight and sample period, the seeds. Every
    verdict, before and after each commit, equals the model's."""
    c0 = SMALL_FPQ
    configs = [c0.replace(t_clear_s=3e-3), c0.replace(t_clear_s=3e-3, v_max=150),
               c0.replace(t_clear_s=0.5e-3, v_max=150, seed_clear=9, seed_decide=8)
               .override(wq_shift=6, avg_sample_period=33), c0]
    phases = []
    model = Model(c0)
    t0 = 300
    for i, c in enumerate([c0] + configs):
        steps, _, model = traffic(c, 700, seed=30 + i, flows=150, model=model, t0=t0,
                                  jump=0.02, jump_clocks=(5, 60), gap_every=500,
                                  gap=(2000, 9000))
        phases.append((c, steps))
        t0 = steps[-1][0] + 2000            # room for the commit (a wipe: 259 clocks)
        if i < len(configs):
            model.configure(configs[i], t0 - 1000)
    *first, (last_cfg, last_steps) = phases

    async def script(bench, config):
        await bench.configure(c0)
        prev = c0
        for c, steps in first:
            if c is not prev:
                await bench.commit(prev, c)
            await bench.drive(steps)
            prev = c
        await bench.commit(prev, last_cfg)

    dut = QueueManager(c0.build, optimise=optimise)
    bench = run(c0, last_steps, dut=dut, script=script)
    model = check_bench(c0, bench)
    assert sum(1 for e in bench.events if type(e) is tuple and e[0] == "configure") == 4
    assert model.fc.clears > 5000 and model.fc.wipes >= 2


#: The re-keys: ``(key, verdict_fifo, byte flipped in, traffic seed)``; the mix key alone
#: (its build's default FIFO) re-keys as the Toeplitz key does.
REKEYS = [("hash_key", fifo, 0x5A, 41) for fifo in VERDICT_FIFOS] + \
    [("hash_mix_key", None, 0xA5, 43)]


@pytest.mark.parametrize("key, verdict_fifo, flip, seed", REKEYS)
def test_live_rekey_holds_the_count(key, verdict_fifo, flip, seed):
    """A commit of a new hash key (``hash_key``, or ``hash_mix_key`` alone) mid-stream with a
    re-key hold: N is latched after the clears due before the commit's clock, the hold's end
    is counted in clocks from the first arrival after it. Every verdict after the commit,
    held ones included, equals the model's."""
    c0 = SMALL_FPQ.replace(rekey_hold_t_clear=0.5)
    c1 = c0.replace(**{key: bytes(b ^ flip for b in getattr(c0, key))})
    assert [k for k in ("hash_key", "hash_mix_key") if getattr(c1, k) != getattr(c0, k)] == [key]
    steps0, _, _ = traffic(c0, 1500, seed=seed, flows=150, t0=300)
    steps1, _, _ = traffic(c1, 1500, seed=seed + 1, flows=150, t0=steps0[-1][0] + 600)

    async def script(bench, config):
        await bench.configure(c0)
        await bench.drive(steps0)
        await bench.commit(c0, c1)

    dut = QueueManager(c1.build, **({} if verdict_fifo is None else
                                     {"verdict_fifo": verdict_fifo}))
    bench = run(c0, steps1, dut=dut, script=script)
    model = check_bench(c0, bench)
    # the hold was in force (verdicts after the commit carry the count from before,
    # although the vector was wiped) and ended (later verdicts count the refilled vector)
    ns = [v["n"] for v in bench.verdicts()[1500:]]
    n_before = bench.verdicts()[1499]["n"]
    assert n_before > 50 and ns[0] == ns[20] and abs(ns[0] - n_before) <= 3
    assert ns[-1] != ns[0] and model.fc.wipes >= 1


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_counter_bits_out_of_range_is_refused():
    for bad in (MIN_COUNTER_BITS - 1, 65, 48.0):
        with pytest.raises(ValueError, match=rf"counter_bits: {bad!r} is out of the allowed "
                                             rf"range \[{MIN_COUNTER_BITS}, 64\]"):
            QueueManager(BUILD, counter_bits=bad)


@pytest.mark.parametrize("counter_bits", [MIN_COUNTER_BITS, 48, 64])
def test_counters_wrap_after_2_to_the_counter_bits_events(counter_bits):
    """Each counter starts 5 events short of its wrap (set in its halves: 2**40 events are
    out of a simulation's reach) and counts on from there modulo ``2**counter_bits``, the
    carry between the halves included; the ``counters`` port's bits above ``counter_bits``
    stay 0."""
    config = Config(mode="red", red_min_th=5, red_max_th=45, red_max_p=0.1,
                    red_gentle=True, limit_pkts=25, **COMMON) \
        .override(wq_shift=2, avg_sample_period=7)
    start = 2 ** counter_bits - 5
    steps, _, _ = traffic(config, 600, seed=7, phase=150, bogus=0.3, t0=T0)
    dut = QueueManager(config.build, counter_bits=counter_bits)

    async def configure_and_preset(bench, config_):
        await bench.configure(config_)
        for lo, lo_d, hi in dut.counter_halves:
            bench.ctx.set(lo, start & 0xFFFFFFFF)
            bench.ctx.set(lo_d, start & 0xFFFFFFFF)
            bench.ctx.set(hi, start >> 32)

    bench = run(config, steps, dut=dut, script=configure_and_preset)
    model, expected = replay(config, bench.events)
    compare(bench.verdicts(), expected)
    counts = list(model.counters.values())
    # every counter passed its wrap, so the check below is about wrapping, not counting
    assert min(counts) >= 5, model.counters
    assert bench.final["counters"] == [(start + c) % 2 ** counter_bits for c in counts]


def test_idle_means_empty_and_nothing_entering():
    """``idle`` (the register file's commit waits for it with ``hold`` high): the pipeline is
    empty and no arrival enters this clock, because none is offered or ``hold`` is high;
    an arrival offered while ``hold`` is low enters, so the pipeline is not idle then."""
    config = MODES["droptail"]
    dut = QueueManager(config.build)
    seen = []

    async def bench(ctx):
        b = Bench(ctx, dut)
        await b.configure(config)
        while ctx.get(dut.busy):                  # the vector wipe out of reset
            await b.tick()
        await b.tick(3)
        ctx.set(dut.verdicts.ready, 1)
        ctx.set(dut.arrivals.payload.length, 100)
        for valid, hold in ((0, 0), (1, 0), (1, 1), (0, 1)):
            ctx.set(dut.arrivals.valid, valid)
            ctx.set(dut.hold, hold)
            seen.append((valid, hold, ctx.get(dut.idle), ctx.get(dut.arrivals.ready)))
        # an arrival accepted: not idle until its verdict is written into the FIFO, whose
        # read register shows it two clocks later and the output's register slice one more
        # (LATENCY)
        ctx.set(dut.hold, 0)
        ctx.set(dut.arrivals.valid, 1)
        await ctx.tick()
        ctx.set(dut.arrivals.valid, 0)
        busy_for = 0
        while not ctx.get(dut.idle):
            busy_for += 1
            await ctx.tick()
        seen.append(busy_for)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # (valid, hold) -> idle
    assert [(v, h, idle) for v, h, idle, _ in seen[:4]] == [(0, 0, 1), (1, 0, 0), (1, 1, 1),
                                                             (0, 1, 1)]
    # the offered arrival is taken with hold low, not with hold high
    assert [ready for v, _, _, ready in seen[:4] if v] == [1, 0]
    assert seen[4] == LATENCY - 3


def test_idle_is_no_arrival_in_flight_and_none_entering():
    """``idle`` (what the register file's commit waits for) in every clock of random
    arrivals and a random ``hold``: exactly "``hold`` is high or no arrival is offered, and
    none was accepted in the last ``_S_VERDICT`` clocks" (the stages an arrival occupies
    before its verdict is written), whatever the pipeline's register for it does."""
    config = MODES["fpq"]
    rng = random.Random(7)
    seen = {"idle": 0, "busy": 0, "accepted": 0}

    async def script(bench, cfg):
        await bench.configure(cfg)
        ctx, dut = bench.ctx, bench.dut
        while ctx.get(dut.busy):                  # the vector's wipe out of reset
            await bench.tick()
        accepts = []
        hold = 0
        for i in range(1500):
            if rng.random() < 0.1:
                hold ^= 1
            ctx.set(dut.hold, hold)
            offer = bench._arr is not None or rng.random() < (0.6 if i % 300 < 100 else 0.02)
            if bench._arr is None and offer:
                bench.present(None, Arrival(0, rng.getrandbits(104), 64, False))
            expected = int((hold or bench._arr is None)
                           and not any(c >= bench.cycle - _S_VERDICT for c in accepts))
            got = ctx.get(dut.idle)
            assert got == expected, (i, got, expected)
            seen["idle" if got else "busy"] += 1
            if await bench.tick():
                accepts.append(bench.cycle - 1)
                seen["accepted"] += 1
        ctx.set(dut.hold, 0)

    run(config, [], script=script)
    assert seen["idle"] > 300 and seen["busy"] > 300 and seen["accepted"] > 200, seen
