"""QueueAverager against fpq.queue_averager.QueueAverager: EWMA for every w_q shift and the
idle-time decay through the host-filled table."""
import random

import pytest
from amaranth.sim import Simulator

from fpq import Build, Config
from fpq.queue_averager import QueueAverager as Model
from fpq_hdl.queue_averager import QueueAverager
from fpq_hdl.layouts import config_layout, OPTIMISE
from .hdl_harness import pack

BUILD = Build(table_depth=16)


def _run(optimise, regs, table, samples, build=BUILD):
    """The averager's ``avg`` after each valid sample ``(valid, q, idle, idle_diff)``."""
    dut = QueueAverager(build, optimise)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    got = []

    async def bench(ctx):
        ctx.set(dut.config.as_value(), pack(config_layout(build), regs))
        for i, w in enumerate(table):
            ctx.set(dut.table_we, 1)
            ctx.set(dut.table_addr, i)
            ctx.set(dut.table_data, w)
            await ctx.tick()
        ctx.set(dut.table_we, 0)
        ctx.set(dut.table_bank, 1)       # the writes went to the inactive bank 1
        for k in range(len(samples) + QueueAverager.LATENCY):
            if k < len(samples):
                valid, q, idle, diff = samples[k]
                ctx.set(dut.valid, valid)
                ctx.set(dut.q, q)
                ctx.set(dut.idle, idle)
                ctx.set(dut.idle_diff, diff)
            else:
                ctx.set(dut.valid, 0)
            _, _, avg = await ctx.tick().sample(dut.avg)
            if k >= QueueAverager.LATENCY and samples[k - QueueAverager.LATENCY][0]:
                got.append(avg)
    sim.add_testbench(bench)
    sim.run()
    return got


@pytest.mark.parametrize("fixed", [False, True], ids=["runtime", "fixed"])
@pytest.mark.parametrize("optimise", OPTIMISE)
@pytest.mark.parametrize("wq_shift", [0, 1, 5, 9, 16])
def test_average_matches_model(wq_shift, optimise, fixed):
    # fixed: the build fixes wq_shift (Build.fixed), so the shift is wiring and the
    # rounding's chain bits are wq_shift, not 16 masked ones
    build = Build(table_depth=16, fixed={"wq_shift": wq_shift}) if fixed else BUILD
    rnd = random.Random(wq_shift)
    config = Config(build=build, wq_shift=wq_shift, tick_hz=1e6, idle_pkt_time_s=1e-4)
    regs = config.registers()
    table = config.decay_table()
    model = Model(regs["wq_shift"], regs["idle_cell_log"], table)
    samples, want = [], []
    q = 0
    for i in range(2000):
        q = max(0, min((1 << 20) - 1, q + rnd.randint(-3, 4))) if rnd.random() < 0.97 \
            else rnd.randrange(1 << 20)
        idle = rnd.random() < 0.05
        diff = rnd.choice((rnd.randint(-50, 3000), rnd.randint(0, 1 << 30),
                           rnd.randint(-(1 << 47), (1 << 47) - 1)))
        valid = rnd.random() < 0.8
        if valid:
            t0 = rnd.randrange(1 << 48)
            if idle:
                model.went_idle(t0)
            want.append(model.update(q, (t0 + diff) % (1 << 48)))
        samples.append((valid, q, idle, diff))
    got = _run(optimise, regs, table, samples, build)
    assert got == want
    assert len(set(want)) > 100


@pytest.mark.parametrize("optimise", OPTIMISE)
def test_idle_decay_by_every_table_shift(optimise):
    """A decay table that holds every 6-bit shift (0 .. 63: the average's 37 bits and
    beyond, which decay to 0), each idle arrival after a full queue that refills the
    average: every decayed value equals the model's."""
    config = Config(build=BUILD, wq_shift=0, tick_hz=1e6, idle_pkt_time_s=1e-4)
    regs = config.registers()
    rnd = random.Random(7)
    shifts = list(range(64)) * 4
    rnd.shuffle(shifts)
    model = Model(regs["wq_shift"], regs["idle_cell_log"], shifts)
    samples, want, seen = [], [], set()
    cl = regs["idle_cell_log"]
    for i in range(512):
        idle = i % 2 == 1                # wq_shift 0: a busy arrival sets A = q exactly
        q = rnd.randrange(1, 1 << 20)
        diff = ((i // 2) << cl) + rnd.randrange(1 << cl)     # each of the 256 cells once
        if idle:
            model.went_idle(0)
            seen.add(shifts[diff >> cl])
        want.append(model.update(q, diff))
        samples.append((True, q, idle, diff))
    assert seen == set(range(64))
    assert _run(optimise, regs, shifts, samples) == want


@pytest.mark.parametrize("cell_log", [None, 41], ids=["derived", "41"])
@pytest.mark.parametrize("optimise", OPTIMISE)
def test_clamped_cells_read_the_active_banks_ends(optimise, cell_log):
    """Idle times that clamp (negative: entry 0; 255 cells and more: entry 255) next to
    ones that do not, through random tables in both banks: each next table is written into
    the inactive bank while the arrivals run, then the banks flip (speed keeps entries 0 and
    255 in registers beside the table, so they must follow the writes and the flips).
    With cells of 2**41 ticks no positive idle time reaches 255 cells, and a negative one,
    read as unsigned, is below the 255-cell bound: only its sign clamps it."""
    config = Config(build=BUILD, wq_shift=3, tick_hz=1e6, idle_pkt_time_s=1e-4)
    regs = config.registers()
    if cell_log is not None:
        regs["idle_cell_log"] = cell_log
    cl = regs["idle_cell_log"]
    rnd = random.Random(11)
    tables = [[rnd.randrange(64) for _ in range(256)] for _ in range(5)]
    for t in tables:            # the ends differ from each other and from their neighbours
        t[0], t[1], t[254], t[255] = rnd.sample(range(1, 40), 4)
    model = Model(regs["wq_shift"], cl, tables[0])
    dut = QueueAverager(BUILD, optimise)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    got, want, kinds = [], [], set()

    # each kind of idle time, and the smallest it can be (kinds that do not fit a positive
    # 48-bit time are left out)
    every = {"neg": lambda: -rnd.randint(1, 1 << 40), "zero": lambda: rnd.randrange(1 << cl),
             "low": lambda: rnd.randrange(min(1 << (cl + 8), 1 << 47)),
             "254": lambda: (254 << cl) + rnd.randrange(1 << cl),
             "255": lambda: (255 << cl) + rnd.randrange(1 << cl),
             "over": lambda: (256 << cl) + rnd.randrange(1 << (cl + 2)),
             "huge": lambda: rnd.randrange(1 << 46, 1 << 47), "busy": lambda: 0}
    least = {"254": 255 << cl, "255": 256 << cl, "over": 260 << cl}
    kinds_used = [k for k in every if least.get(k, 0) <= 1 << 47]

    def sample():
        kind = rnd.choice(kinds_used)
        kinds.add(kind)
        return rnd.randrange(1 << 16), kind != "busy", every[kind]()

    async def bench(ctx):
        ctx.set(dut.config.as_value(), pack(config_layout(BUILD), regs))
        for i, w in enumerate(tables[0]):   # the first table into bank 1, then active
            ctx.set(dut.table_we, 1)
            ctx.set(dut.table_addr, i)
            ctx.set(dut.table_data, w)
            await ctx.tick()
        ctx.set(dut.table_we, 0)
        bank = 1
        ctx.set(dut.table_bank, bank)
        for phase, table in enumerate(tables):
            model.configure(regs["wq_shift"], cl, table)
            following = tables[phase + 1] if phase + 1 < len(tables) else []
            pending = []
            for k in range(300 + QueueAverager.LATENCY):
                if k < 300 and rnd.random() < 0.85:
                    q, idle, diff = sample()
                    t0 = rnd.randrange(1 << 48)
                    if idle:
                        model.went_idle(t0)
                    want.append(model.update(q, (t0 + diff) % (1 << 48)))
                    ctx.set(dut.valid, 1)
                    ctx.set(dut.q, q)
                    ctx.set(dut.idle, idle)
                    ctx.set(dut.idle_diff, diff)
                else:
                    ctx.set(dut.valid, 0)
                # the next table into the inactive bank meanwhile
                ctx.set(dut.table_we, k < len(following))
                if k < len(following):
                    ctx.set(dut.table_addr, k)
                    ctx.set(dut.table_data, following[k])
                pending.append(ctx.get(dut.valid))
                _, _, avg = await ctx.tick().sample(dut.avg)
                if len(pending) > QueueAverager.LATENCY and pending[-1 - QueueAverager.LATENCY]:
                    got.append(avg)
            ctx.set(dut.table_we, 0)
            bank ^= 1
            ctx.set(dut.table_bank, bank)

    sim.add_testbench(bench)
    sim.run()
    assert kinds == set(kinds_used) and len(kinds) >= 5
    assert got == want
