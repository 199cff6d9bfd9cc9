"""The top, QueueManager, against the golden model: every field of every verdict, counters,
throughput, back-pressure, clears and wipes."""
import random
from bisect import bisect_right

import pytest
from amaranth import Elaboratable, Module, Signal, ResetInserter
from amaranth.sim import Simulator

from fpq import Config, Build
from fpq.config import ConfigError
from fpq.queue_manager import Arrival, Departure, QueueManager as Model

from fpq_hdl.queue_manager import (QueueManager, FIFO_DEPTH, LATENCY, MIN_AVG_LAG,
                                    MIN_COUNTER_BITS, VERDICT_FIFOS, OPTIMISE)
from .hdl_harness import traffic, run, compare, configure, commit, drive

#: The bit-exact runs use a small r(N) table so that loading it takes few simulated clocks.
BUILD = Build(table_depth=1024)
COMMON = dict(build=BUILD, tick_hz=1e6, t_clear_s=0.1, idle_pkt_time_s=1e-4, ecn=True,
              n_cap=1023)
MODES = {
    "fpq": Config(mode="fpq", wq_shift=6, limit_pkts=300, lc_correction=True, **COMMON),
    "red": Config(mode="red", wq_shift=5, red_min_th=5, red_max_th=45, red_max_p=0.1,
                  red_gentle=True, limit_pkts=70, **COMMON),
    "droptail": Config(mode="droptail", limit_pkts=60, limit_bytes=50_000, **COMMON),
}
SEEDS = {"fpq": 101, "red": 102, "droptail": 103}


def check(config, n, seed, ready_pattern=None, dut=None, **kw):
    steps, expected, model = traffic(config, n, seed, **kw)
    res = run(config, steps, n, ready_pattern=ready_pattern, dut=dut)
    compare(res["verdicts"], expected)
    assert res["counters"] == list(model.counters.values())
    snap = model.snapshot()
    for k, v in res["snapshot"].items():
        assert v == snap[k], k
    return res, model


@pytest.mark.parametrize("mode", MODES)
def test_bit_exact_100k_arrivals(mode):
    _, model = check(MODES[mode], 100_000, seed=SEEDS[mode])
    c = model.counters
    # the traffic exercised what the mode can do
    assert c["forced_drops"] > 100 and c["departures"] > 50_000 and c["dep_errors"] > 10
    if mode != "droptail":
        assert c["early_drops"] > 100 and c["marked"] > 100


@pytest.mark.long
@pytest.mark.parametrize("mode", MODES)
def test_bit_exact_long(mode):
    check(MODES[mode], 1_000_000, seed=7)


def test_fixed_registers_are_the_build_s_constants_whatever_the_port_carries():
    """A build that fixes fields (``Build.fixed``) decides with them, bit-exact with the model
    of that build, while the port carries other values for the fixed registers: values that
    change the verdicts when they are used (another mode, weight, clear period, key, seed)."""
    from fpq.regmap import registers as regmap
    from .hdl_harness import pack, config_layout
    ref = MODES["fpq"]
    names = ("mode", "wq_shift", "tick_hz", "idle_pkt_time_s", "t_clear_s", "v_max",
             "hash_key", "seed_decide", "seed_clear", "red_gentle")
    build = Build(table_depth=1024, fixed={f: getattr(ref, f) for f in names})
    cfg = Config(build=build, ecn=True, n_cap=1023, limit_pkts=300, lc_correction=True)
    fixed = {r.name for r in regmap(build) if r.kind == "fixed"}
    assert {"mode", "wq_shift", "clear_period", "hash_key", "rng_decide_state"} <= fixed
    other = ref.replace(mode="red", red_max_p=0.5, wq_shift=2, t_clear_s=0.03,
                        hash_key=bytes(range(20)), seed_decide=77, seed_clear=78)
    port = dict(cfg.registers(), **{n: other.registers()[n] for n in fixed})
    assert all(port[n] != cfg.registers()[n] for n in fixed - {"red_gentle", "v_max"})

    async def configure_other(ctx, dut, config):
        await configure(ctx, dut, config)
        ctx.set(dut.config.as_value(), pack(config_layout(build), port))

    steps, expected, _ = traffic(cfg, 20_000, seed=11)
    res = run(cfg, steps, 20_000, configure_fn=configure_other)
    compare(res["verdicts"], expected)
    # and the values on the port do change the verdicts of a build that does not fix them
    other_cfg = Config(build=Build(table_depth=1024), **dict(cfg.values, **{
        f: getattr(other, f) for f in names}))
    assert traffic(other_cfg, 2000, seed=11)[1] != expected[:2000]


def test_literal_clear_mode_and_clear_backlogs():
    # period 1.5 ticks: most arrivals owe 0-2 clears, jumps owe dozens (the port stalls)
    cfg = MODES["fpq"].replace(clear_literal=True, t_clear_s=1.5 * 5000 / 1e6)
    check(cfg, 6000, seed=3, jump=0.01, jump_ticks=(5, 60))
    check(cfg.replace(clear_literal=False), 6000, seed=4, jump=0.01, jump_ticks=(5, 60))


def test_flush_wipes_the_vector():
    # small vector; idle gaps longer than 8 t_clear wipe it (the port stalls vec_bits clocks)
    build = Build(vec_bits=256, table_depth=256)
    cfg = Config(build=build, mode="fpq", v_max=200, tick_hz=1e6, t_clear_s=1e-3,
                 idle_pkt_time_s=1e-4, n_cap=255, wq_shift=4, limit_pkts=100)
    _, model = check(cfg, 4000, seed=5, gap_every=700, gap=(7000, 12000), flows=150)
    assert model.fc.wipes >= 3


@pytest.mark.parametrize("verdict_fifo, optimise",
                         [("distributed", "speed"), ("block", "area")])   # ULX3S, iCEBreaker
def test_back_pressure_loses_and_duplicates_nothing(verdict_fifo, optimise):
    rnd = random.Random(11)
    pattern = [rnd.random() < 0.4 for _ in range(1 << 16)]
    dut = QueueManager(MODES["red"].build, verdict_fifo=verdict_fifo, optimise=optimise)
    # idle gaps every 700 arrivals put the averager's idle decay (whose shifter differs with
    # ``optimise``) on the path: 138 arrivals find the queue idle, 3 of them with a decay
    # that changes the average (the shifter's own test covers every shift)
    res, model = check(MODES["red"], 5000, seed=12, gap_every=700,
                       ready_pattern=lambda c: int(pattern[c & 0xFFFF]), dut=dut)
    assert model.snapshot()["avg"] > 0


@pytest.mark.parametrize("verdict_fifo, optimise",
                         [("distributed", "speed"), ("block", "area")])   # ULX3S, iCEBreaker
def test_long_verdict_stalls_fill_the_fifo_exactly(verdict_fifo, optimise):
    """The sink stalls 300 clocks in every 400. By the end of each stall ``FIFO_DEPTH`` or
    ``FIFO_DEPTH - 1`` verdicts are accepted and not yet taken: the credit compare does not
    see the arrival accepted a clock before, so it keeps one place in reserve, which only
    back-to-back accepts use. Never more (the full FIFO would lose one), the whole FIFO in
    some stall (a credit one short would never fill it), and every verdict still comes out
    once, bit-exact. The random back-pressure above rarely fills the FIFO: a read among
    ~20 clocks at p = 0.4 nearly always frees a place first."""
    dut = QueueManager(MODES["red"].build, verdict_fifo=verdict_fifo, optimise=optimise)
    res, _ = check(MODES["red"], 3000, seed=13, dut=dut,
                   ready_pattern=lambda c: int(c % 400 >= 300))
    accepts, verdicts = res["accept_cycles"], res["verdict_cycles"]
    # the stalls after the reset's wipe (the port is busy for vec_bits + 2 clocks) that end
    # with arrivals still waiting: the credit, not the traffic, stopped them
    ends = [t for t in range(299, res["last_verdict"], 400)
            if t - res["first_accept"] >= 100 and bisect_right(accepts, t) < 3000]
    assert len(ends) >= 20
    held = [bisect_right(accepts, t) - bisect_right(verdicts, t) for t in ends]
    assert set(held) <= {FIFO_DEPTH - 1, FIFO_DEPTH}, held
    assert max(held) == FIFO_DEPTH, held


@pytest.mark.parametrize("verdict_fifo, optimise",
                         [("distributed", "speed"), ("block", "area")])   # ULX3S, iCEBreaker
def test_credit_refuses_arrivals_exactly_while_the_fifo_holds_its_reserve(verdict_fifo,
                                                                            optimise):
    """Clock for clock, in both directions: after the reset's wipe, with clears too slow to
    be owed at all, an arrival is refused exactly when ``outstanding >= FIFO_DEPTH - 1``,
    ``outstanding`` being the arrivals accepted up to two clocks before less the verdicts
    taken up to the clock before (the documented credit). The sink stalls 120 clocks in
    every 200, so the FIFO fills and drains 20 times. A credit given back a clock late after
    a stall loses no verdict and keeps the order; only this test sees it."""
    config = MODES["red"].replace(t_clear_s=100)   # 20,000 ticks per clear: none is due
    dut = QueueManager(config.build, verdict_fifo=verdict_fifo, optimise=optimise)
    res, _ = check(config, 3000, seed=14, dut=dut, ready_pattern=lambda c: int(c % 200 >= 120))
    accepts, reads = res["accept_cycles"], res["verdict_cycles"]

    def credit(c):
        return bisect_right(accepts, c - 2) - bisect_right(reads, c - 1) < FIFO_DEPTH - 1
    refused = [c for c in res["refused_cycles"] if c > res["first_accept"]]
    assert len(refused) > 1000          # the credit, not the traffic, held arrivals back
    assert [c for c in refused if credit(c)] == []
    assert [c for c in accepts if not credit(c)] == []


@pytest.mark.parametrize("verdict_fifo", VERDICT_FIFOS)
def test_throughput_one_verdict_per_clock(verdict_fifo):
    # 10k back-to-back arrivals, one clear due on every clock (period exactly one tick), the
    # same flow on every clock for the first half: 10k verdicts in 10k + LATENCY clocks
    v_max = 4096
    cfg = Config(build=BUILD, mode="fpq", v_max=v_max, tick_hz=1e6, t_clear_s=v_max / 1e6,
                 n_cap=1023, limit_pkts=100, wq_shift=3)
    assert cfg.clear_period_raw() == 1 << 16
    rnd = random.Random(1)
    model = Model(cfg)
    steps, expected = [], []
    for i in range(10_000):
        flow = 0x0A000001_0A000002_1F90_0050_06 if i < 5000 else rnd.getrandbits(104)
        dep = Departure(i + 1, 576) if i % 3 == 0 and model.occ_pkts else None
        if dep:
            model.depart(dep)
        arr = Arrival(i + 1, flow, 576, False)
        expected.append(model.arrive(arr))
        steps.append((dep, arr))
    dut = QueueManager(cfg.build, verdict_fifo=verdict_fifo)
    res = run(cfg, steps, len(steps), dut=dut)
    compare(res["verdicts"], expected)
    assert model.fc.clears >= 9999
    assert dut.latency == LATENCY + (verdict_fifo == "block")
    assert res["last_verdict"] - res["first_accept"] + 1 == 10_000 + dut.latency


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_unknown_optimise_is_refused():
    with pytest.raises(ValueError, match="optimise"):
        QueueManager(BUILD, optimise="fast")


def test_unknown_verdict_fifo_is_refused():
    with pytest.raises(ValueError, match="verdict_fifo: 'lutram' is not one of "
                                         "distributed, block"):
        QueueManager(BUILD, verdict_fifo="lutram")


def test_default_build():
    # the synthesised configuration: vec_bits 8192, table_depth 8192, avg_lag 12
    cfg = Config(mode="fpq", tick_hz=1e6, t_clear_s=0.05, idle_pkt_time_s=1e-4, wq_shift=6,
                 limit_pkts=200, ecn=True)
    check(cfg, 3000, seed=9)


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_avg_lag_below_pipeline_is_refused():
    with pytest.raises(ConfigError, match=rf"avg_lag: {MIN_AVG_LAG - 1} is below the RTL "
                                          rf"pipeline distance; allowed range \[{MIN_AVG_LAG}, 64\]"):
        QueueManager(Build(avg_lag=MIN_AVG_LAG - 1))
    QueueManager(Build(avg_lag=MIN_AVG_LAG))._MustUse__silence = True


# ---- reset and commits mid-stream --------------------------------------------------------
SMALL = Build(vec_bits=256, table_depth=256)
SMALL_FPQ = Config(build=SMALL, mode="fpq", v_max=200, tick_hz=1e6, t_clear_s=1e-3,
                   idle_pkt_time_s=1e-4, n_cap=255, wq_shift=2, limit_pkts=100, ecn=True)


class _WithReset(Elaboratable):
    """The queue manager under a reset the bench drives (``rst``), as a board's reset."""

    def __init__(self, dut):
        self.dut, self.rst = dut, Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = ResetInserter(self.rst)(self.dut)
        return m


def test_reset_mid_stream_restores_the_reset_state():
    """Traffic fills the vector and the lag line, reset comes while arrivals are in the
    pipeline and verdicts in the FIFO; after it the same traffic (same flows) gives exactly
    the verdicts of a fresh model: vector empty (n), lag line zero (avg), queue empty,
    counters 0, generators and clear schedule from the configuration (sw/README.md, Reset)."""
    cfg = SMALL_FPQ.replace(t_clear_s=0.05)
    before, _, _ = traffic(cfg, 1500, seed=21, flows=150, jump=0)
    steps, expected, model = traffic(cfg, 1500, seed=21, flows=150, jump=0)
    dut = QueueManager(cfg.build)
    top = _WithReset(dut)
    seen = {}

    async def configure_reset_configure(ctx, dut, config):
        await configure(ctx, dut, config)
        await drive(ctx, dut, before)
        seen["n_raw"], seen["avg"] = ctx.get(dut.n_raw), ctx.get(dut.avg)
        seen["idle"], seen["fifo"] = ctx.get(dut.idle), ctx.get(dut.verdicts.valid)
        ctx.set(top.rst, 1)
        await ctx.tick().repeat(2)
        ctx.set(top.rst, 0)
        seen["busy"] = ctx.get(dut.busy)
        await configure(ctx, dut, config)

    res = run(cfg, steps, len(expected), dut=dut, top=top,
              configure_fn=configure_reset_configure)
    # the state before the reset was not the reset state, and the reset hit a busy pipeline
    assert seen["n_raw"] > 100 and seen["avg"] > 0 and not seen["idle"] and seen["fifo"]
    assert seen["busy"]                    # the vector wipe out of reset
    compare(res["verdicts"], expected)
    assert res["counters"] == list(model.counters.values())


@pytest.mark.parametrize("optimise", OPTIMISE)
@pytest.mark.parametrize("periods", [(1e-3, 3e-3, 0.5e-3, 1e-3)])
def test_commit_changing_the_clear_period(periods, optimise):
    """Commits that change t_clear_s (the clear period, and with it flush_after) mid-stream,
    both ways: the schedule keeps next_due and continues with the new period, as the model's
    configure() does. Arrivals owe 0, 1 or several clears, jumps owe dozens, long gaps a
    flush; every verdict after the commits equals the model's."""
    configs = [SMALL_FPQ.replace(t_clear_s=t) for t in periods]
    model = Model(configs[0])
    phases, t0 = [], 0
    for i, c in enumerate(configs):
        if i:
            model.configure(c)
        steps, expected, model = traffic(c, 800, seed=30 + i, flows=150, model=model,
                                         jump=0.02, jump_ticks=(5, 60), gap_every=500,
                                         gap=(2000, 14000), t0=t0)
        t0 = max(e.ts for step in steps for e in step if e is not None) + 1
        phases.append((c, steps, expected))
    *first, (last_cfg, last_steps, last_expected) = phases

    async def configure_and_commit(ctx, dut, config):
        await configure(ctx, dut, configs[0])
        prev = configs[0]
        for c, steps, _ in first:
            if c is not prev:
                await commit(ctx, dut, prev, c)
            await drive(ctx, dut, steps)
            prev = c
        await commit(ctx, dut, prev, last_cfg)

    dut = QueueManager(last_cfg.build, optimise=optimise)
    res = run(last_cfg, last_steps, len(last_expected), dut=dut,
              configure_fn=configure_and_commit)
    compare(res["verdicts"], last_expected)
    assert res["counters"] == list(model.counters.values())
    assert model.fc.clears > 1000 and model.fc.wipes >= 1


@pytest.mark.parametrize("verdict_fifo", VERDICT_FIFOS)
def test_live_rekey_holds_the_count(verdict_fifo):
    """A commit of a new hash key mid-stream with a re-key hold: the hold's end is formed
    from the timestamp at stage 1, which each ``verdict_fifo`` takes from a different
    register (the wide fields' delay line starts at stage 1 or at the ports). Every verdict
    after the commit, held ones included, equals the model's."""
    c0 = SMALL_FPQ.replace(rekey_hold_t_clear=0.5)
    c1 = c0.replace(hash_key=bytes(b ^ 0x5A for b in c0.hash_key))
    model = Model(c0)
    steps0, _, model = traffic(c0, 1500, seed=41, flows=150, model=model)
    n_before = model.snapshot()["n"]
    model.configure(c1)
    t0 = max(e.ts for step in steps0 for e in step if e is not None) + 1
    steps1, expected, model = traffic(c1, 1500, seed=42, flows=150, model=model, t0=t0)
    assert n_before > 50 and model.fc.wipes >= 1

    async def configure_and_commit(ctx, dut, config):
        await configure(ctx, dut, c0)
        await drive(ctx, dut, steps0)
        await commit(ctx, dut, c0, c1)

    dut = QueueManager(c1.build, verdict_fifo=verdict_fifo)
    res = run(c1, steps1, len(expected), dut=dut, configure_fn=configure_and_commit)
    compare(res["verdicts"], expected)
    # the hold was in force (the first verdicts after the commit carry the count from before,
    # although the vector was wiped) and ended (later verdicts count the refilled vector)
    ns = [v["n"] for v in res["verdicts"]]
    assert ns[0] == ns[20] == n_before and ns[-1] != n_before
    assert res["counters"] == list(model.counters.values())


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_counter_bits_out_of_range_is_refused():
    for bad in (MIN_COUNTER_BITS - 1, 65, 48.0):
        with pytest.raises(ValueError, match=rf"counter_bits: {bad!r} is out of the allowed "
                                             rf"range \[{MIN_COUNTER_BITS}, 64\]"):
            QueueManager(BUILD, counter_bits=bad)


@pytest.mark.parametrize("counter_bits", [MIN_COUNTER_BITS, 48, 64])
def test_counters_wrap_after_2_to_the_counter_bits_events(counter_bits):
    """Each counter starts 5 events short of its wrap (set in its register: 2**40 events are
    out of a simulation's reach) and counts on from there modulo ``2**counter_bits``; the
    ``counters`` port's bits above ``counter_bits`` stay 0."""
    # RED with a short buffer and queues that empty: every counter counts (marks, early
    # and forced drops, departures of an empty queue)
    config = Config(mode="red", wq_shift=5, red_min_th=5, red_max_th=45, red_max_p=0.1,
                    red_gentle=True, limit_pkts=25, **COMMON)
    start = 2 ** counter_bits - 5
    steps, expected, model = traffic(config, 600, seed=7, phase=150, bogus=0.3)
    dut = QueueManager(config.build, counter_bits=counter_bits)

    async def configure_and_preset(ctx, dut_, config_):
        await configure(ctx, dut_, config_)
        for reg in dut.counter_registers:
            ctx.set(reg, start)

    res = run(config, steps, len(expected), dut=dut, configure_fn=configure_and_preset)
    compare(res["verdicts"], expected)
    counts = list(model.counters.values())
    # every counter passed its wrap, so the check below is about wrapping, not counting
    assert min(counts) >= 5, model.counters
    assert res["counters"] == [(start + c) % 2 ** counter_bits for c in counts]


def test_idle_means_empty_and_nothing_entering():
    """``idle`` (the register file's commit waits for it with ``hold`` high): the pipeline is
    empty and no arrival enters this clock, because none is offered or ``hold`` is high;
    an arrival offered while ``hold`` is low enters, so the pipeline is not idle then."""
    config = MODES["droptail"]
    dut = QueueManager(config.build)
    seen = []

    async def bench(ctx):
        await configure(ctx, dut, config)
        while ctx.get(dut.busy):                  # the vector wipe out of reset
            await ctx.tick()
        await ctx.tick().repeat(3)
        ctx.set(dut.verdicts.ready, 1)
        ctx.set(dut.arrivals.payload.length, 100)
        for valid, hold in ((0, 0), (1, 0), (1, 1), (0, 1)):
            ctx.set(dut.arrivals.valid, valid)
            ctx.set(dut.hold, hold)
            seen.append((valid, hold, ctx.get(dut.idle), ctx.get(dut.arrivals.ready)))
        # an arrival accepted: not idle until its slot has left the last stage (22)
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
    assert seen[4] >= LATENCY
