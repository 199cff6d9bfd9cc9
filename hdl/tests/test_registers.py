"""RegisterFile against fpq.regmap: addresses, defaults, shadow/commit semantics, range
checks (check_registers), counters, tables, error bits."""
import random

import pytest
from amaranth.sim import Simulator

from fpq import Build, Config
from fpq.bitfields import pack
from fpq.queue_averager import ewma_time_constant
from fpq.regmap import (registers, tables, check_registers, ID_VALUE, CONTROL_COMMIT,
                        CONTROL_CLEAR_ERRORS, STATUS_BITS, STATUS_REJECT_INDEX_SHIFT)
from fpq.queue_manager import COUNTERS
from fpq_hdl.registers import RegisterFile, WRITE_SETUPS, READ_SETUPS
from amaranth import Module
from amaranth.lib import wiring

from fpq_hdl.layouts import config_layout
from .hdl_harness import Bench, traffic, check_bench

from tb_lib.sim_amaranth import UnderReset

BUILD = Build(table_depth=64)
REGS = {r.name: r for r in registers(BUILD)}
INDEX = {r.name: i for i, r in enumerate(registers(BUILD))}
REJECTED = 1 << STATUS_BITS["COMMIT_REJECTED"]
#: Clocks from a COMMIT write to its configuration applied, with the queue manager idle:
#: three clocks without a bus write (the checks are registered in two stages), the decision,
#: the apply (``RegisterFile``'s documented latency).
COMMIT_CLOCKS = 5
#: Fields that fix the averager's registers (wq_shift 9, a sample every 40 clocks).
AVG_FIXED = {"avg_tau_s": ewma_time_constant(9, 40) / 1e6, "tick_hz": 1e6}
BAD_WRITE = 1 << STATUS_BITS["BAD_WRITE"]
TABLES_DEFAULT = 1 << STATUS_BITS["TABLES_DEFAULT"]
BUSY = 1 << STATUS_BITS["BUSY"]


def write_latency(write_setup):
    """Clocks from ``w_en`` to the clock in which a write applies, as ``RegisterFile``'s
    docstring gives them: 1 with ``write_setup`` 3 (each word's enable registered), else 0."""
    return 1 if write_setup >= 3 else 0


class Host:
    def __init__(self, ctx, dut):
        self.ctx, self.dut = ctx, dut
        self.regs = {r.name: r for r in dut.regs}

    async def write(self, addr, value):
        c, b = self.ctx, self.dut.bus
        c.set(b.addr, addr)
        c.set(b.w_data, value & 0xFFFFFFFF)
        # the promise: address and data write_setup clocks before the write (before that the
        # bus holds the previous access's, so a decode later than promised would show)
        for _ in range(self.dut.write_setup):
            await c.tick()
        c.set(b.w_en, 1)
        # the strobes of the clock in which the write applies (documented, not the dut's
        # attribute); the bus reads nothing before that clock has passed
        for _ in range(write_latency(self.dut.write_setup) + 1):
            _, _, clear, cmq, rate_we = await c.tick().sample(self.dut.counter_clear,
                                                              self.dut.clear_max_queue,
                                                              self.dut.rate_we)
            c.set(b.w_en, 0)
        return clear, cmq, rate_we

    async def read(self, addr):
        c, b = self.ctx, self.dut.bus
        c.set(b.addr, addr)
        # the promise: the address read_setup clocks before the read
        for _ in range(self.dut.read_setup):
            await c.tick()
        c.set(b.r_en, 1)
        await c.tick()
        c.set(b.r_en, 0)
        for _ in range(self.dut.read_latency - 1):
            await c.tick()
        return c.get(b.r_data)

    async def status(self):
        """STATUS without TABLES_DEFAULT, which says what the table RAM holds (its own tests:
        ``test_tables_default_*``); the other bits are what these tests check."""
        return await self.read(REGS["status"].offset) & ~TABLES_DEFAULT

    async def write_reg(self, name, value):
        r = self.regs[name]
        for w in range(r.words):
            await self.write(r.offset + 4 * w, value >> (32 * w))

    async def read_reg(self, name):
        r = self.regs[name]
        v = 0
        for w in range(r.words):
            v |= await self.read(r.offset + 4 * w) << (32 * w)
        return v

    async def commit(self):
        await self.write(REGS["control"].offset, CONTROL_COMMIT)
        for _ in range(COMMIT_CLOCKS):
            await self.ctx.tick()

    def active(self):
        return {name: self.ctx.get(self.dut.config[name]) for name in self.dut.config.shape().members}


def simulate(bench, build=BUILD, const_rom=False, read_latency=1, write_setup=0,
             read_setup=0):
    dut = RegisterFile(build, const_rom=const_rom, read_latency=read_latency,
                       write_setup=write_setup, read_setup=read_setup)
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def tb(ctx):
        ctx.set(dut.idle, 1)
        await bench(ctx, dut, Host(ctx, dut))
    sim.add_testbench(tb)
    sim.run()


def test_reset_values_identity_and_commit_of_a_new_configuration():
    async def bench(ctx, dut, host):
        strobes = set()
        for _ in range(3):
            _, _, *s = await ctx.tick().sample(dut.load_rng_decide, dut.load_rng_clear,
                                               dut.restart)
            strobes.add(tuple(s))
        assert (1, 1, 1) in strobes and (0, 0, 0) in strobes   # once, out of reset
        assert await host.read(REGS["id"].offset) == ID_VALUE
        assert await host.read_reg("build") == REGS["build"].reset
        defaults = Config(build=BUILD).registers()
        assert host.active() == {k: defaults[k] for k in host.active()}
        for name in ("avg_sample_period", "red_max_p", "clear_period", "rekey_hold"):
            assert await host.read_reg(name) == defaults[name]
        assert await host.read_reg("hash_key") == 0            # write-only (secret)
        new = Config(build=BUILD, mode="red", v_max=3000, seed_clear=99, red_max_p=0.5,
                     ecn=True, hash_key=bytes(range(20))) \
            .override(wq_shift=4, avg_sample_period=77).registers()
        for name, value in new.items():
            await host.write_reg(name, value)
        assert host.active() == {k: defaults[k] for k in host.active()}   # shadows only
        await host.write(REGS["control"].offset, CONTROL_COMMIT)
        seen = set()
        for _ in range(COMMIT_CLOCKS):
            _, _, *s = await ctx.tick().sample(dut.wipe, dut.load_rng_decide,
                                               dut.load_rng_clear)
            seen |= {n for n, v in zip(("wipe", "decide", "clear"), s) if v}
        assert seen == {"wipe", "clear"}            # v_max and the clear seed changed
        assert host.active() == {k: new[k] for k in host.active()}
        assert await host.status() == 0
    simulate(bench)


@pytest.mark.parametrize("write_setup", WRITE_SETUPS)
def test_commit_of_a_new_hash_key_pulses_wipe_and_rekey_once(write_setup):
    """Live re-key: a commit that changes only ``hash_key`` wipes the vector and pulses
    ``rekey`` (with the new key already active); a commit that changes something else pulses
    neither."""
    async def bench(ctx, dut, host):
        await ctx.tick().repeat(3)

        async def commit_and_watch():
            await host.write(REGS["control"].offset, CONTROL_COMMIT)
            seen = []
            for _ in range(6):
                _, _, wipe, rekey, key = await ctx.tick().sample(dut.wipe, dut.rekey,
                                                                 dut.config.hash_key)
                seen.append((wipe, rekey, key))
            return seen
        key = int.from_bytes(bytes(range(1, 21)), "big")
        await host.write_reg("hash_key", key)
        seen = await commit_and_watch()
        assert [(w, r) for w, r, _ in seen].count((1, 1)) == 1
        assert all((w, r) in ((0, 0), (1, 1)) for w, r, _ in seen)
        assert all(k == key for w, r, k in seen if r)     # the new key is active by then
        await host.write_reg("wq_shift", 3)
        seen = await commit_and_watch()
        assert not any(w or r for w, r, _ in seen)
        assert host.active()["wq_shift"] == 3
    simulate(bench, write_setup=write_setup)


@pytest.mark.parametrize("write_setup", WRITE_SETUPS)
def test_out_of_range_commit_is_rejected_naming_the_first_bad_register(write_setup):
    async def bench(ctx, dut, host):
        before = host.active()
        values = Config(build=BUILD).registers()
        bad = dict(values, wq_shift=17, n_cap=64, red_max_th=values["red_min_th"])
        for name in ("wq_shift", "n_cap", "red_max_th"):
            await host.write_reg(name, bad[name])
        await host.commit()
        status = await host.status()
        want = check_registers(bad, BUILD)
        assert want == INDEX["n_cap"]
        assert status == REJECTED | want << STATUS_REJECT_INDEX_SHIFT
        assert host.active() == before
        for name, v in (("n_cap", 63), ("wq_shift", 16)):
            await host.write_reg(name, v)
        await host.commit()
        status = await host.status()
        assert status >> STATUS_REJECT_INDEX_SHIFT == INDEX["red_max_th"]
        await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
        await host.write_reg("red_max_th", values["red_min_th"] + (1 << 16))
        await host.commit()
        assert await host.status() == 0
        assert host.active()["red_max_th"] == values["red_min_th"] + (1 << 16)
        assert host.active()["n_cap"] == 63
    simulate(bench, write_setup=write_setup)


@pytest.mark.parametrize("write_setup", WRITE_SETUPS)
@pytest.mark.parametrize("name", ["red_max_th", "red_min_th"])
def test_the_threshold_check_sees_a_write_in_the_last_clock_a_commit_waits_for(write_setup,
                                                                                 name):
    """A commit waits for the queue manager's empty pipeline, and for the clocks after a bus
    write that its checks need. A threshold's low word written while the commit waits, in the
    very clock the pipeline empties (the latest write the commit must see), makes
    ``red_max_th < red_min_th + 1.0``: the commit is rejected naming red_max_th."""
    async def bench(ctx, dut, host):
        values = Config(build=BUILD).registers()
        assert check_registers(values, BUILD) is None
        bad_low = {"red_max_th": 0, "red_min_th": values["red_max_th"] & 0xFFFFFFFF}[name]
        assert check_registers(dict(values, **{name: bad_low}), BUILD) == INDEX["red_max_th"]
        ctx.set(dut.idle, 0)
        await host.write(REGS["control"].offset, CONTROL_COMMIT)
        b = dut.bus
        ctx.set(b.addr, REGS[name].offset)
        ctx.set(b.w_data, bad_low)
        for _ in range(dut.write_setup):
            await ctx.tick()
        ctx.set(b.w_en, 1)
        ctx.set(dut.idle, 1)
        await ctx.tick()
        ctx.set(b.w_en, 0)
        for _ in range(COMMIT_CLOCKS + 2):
            await ctx.tick()
        assert await host.status() == REJECTED | INDEX["red_max_th"] << STATUS_REJECT_INDEX_SHIFT
        assert host.active() == {k: values[k] for k in host.active()}
    simulate(bench, write_setup=write_setup)


def test_commit_waits_for_an_empty_pipeline():
    async def bench(ctx, dut, host):
        ctx.set(dut.idle, 0)
        await host.write_reg("wq_shift", 3)
        await host.write(REGS["control"].offset, CONTROL_COMMIT)
        for _ in range(10):
            _, _, hold = await ctx.tick().sample(dut.hold)
            assert hold and host.active()["wq_shift"] != 3
        assert await host.status() & 1      # BUSY
        ctx.set(dut.idle, 1)
        for _ in range(COMMIT_CLOCKS):
            await ctx.tick()
        assert host.active()["wq_shift"] == 3 and not ctx.get(dut.hold)
    simulate(bench)


@pytest.mark.parametrize("write_setup", WRITE_SETUPS)
def test_counters_read_64_bits_and_clear_on_write_and_bad_writes(write_setup):
    async def bench(ctx, dut, host):
        rnd = random.Random(1)
        values = [rnd.getrandbits(64) for _ in range(7)]
        for i, v in enumerate(values):
            ctx.set(dut.counters[i], v)
        ctx.set(dut.max_queue, 1234)
        for i, name in enumerate(("arrivals", "enqueued", "marked", "early_drops",
                                  "forced_drops", "departures", "dep_errors")):
            assert await host.read_reg(name) == values[i]
            clear, _, _ = await host.write(REGS[name].offset + 4 * (i % 2), 0)
            assert clear == 1 << i
        assert await host.read_reg("max_queue") == 1234
        _, cmq, _ = await host.write(REGS["max_queue"].offset, 0)
        assert cmq
        assert await host.status() == 0
        await host.write(REGS["id"].offset, 5)
        assert await host.status() == BAD_WRITE
        await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
        await host.write(0x3FFFC, 5)                          # unmapped
        assert await host.status() == BAD_WRITE
        assert await host.read(0x3FFFC) == 0
    simulate(bench, write_setup=write_setup)


def test_table_writes_go_to_the_inactive_bank_and_commit_swaps():
    rate = {t.name: t for t in tables(BUILD)}["rate_table"]

    async def bench(ctx, dut, host):
        assert ctx.get(dut.rate_bank) == 0
        _, _, we = await host.write(rate.offset + 4 * 5, 0x12345)
        assert we
        assert ctx.get(dut.rate_bank) == 0
        await host.commit()
        assert ctx.get(dut.rate_bank) == 1
        await host.commit()                          # no table write since: no swap
        assert ctx.get(dut.rate_bank) == 1
        _, _, we = await host.write(rate.offset + 4 * rate.depth, 1)   # one past the end
        assert not we
        assert await host.status() == BAD_WRITE
    simulate(bench)


def test_tables_default_until_a_commit_swaps_in_host_data_and_after_reset_of_bank_0():
    """STATUS.TABLES_DEFAULT: 1 out of reset; a table write (into the inactive bank) leaves
    it 1 until the commit that swaps that bank in, a commit without a table write leaves it
    as it is; a reset makes bank 0 active again and the bit says whether bank 0 was ever
    written, as the RAM keeps its contents: 1 after a first run that wrote only bank 1,
    0 after one that wrote both."""
    rate = {t.name: t for t in tables(BUILD)}["rate_table"]
    dut = RegisterFile(BUILD)
    top = UnderReset(dut)
    seen = []

    async def tb(ctx):
        ctx.set(dut.idle, 1)
        host = Host(ctx, dut)

        async def note(step):
            status = await host.read(REGS["status"].offset)
            seen.append((step, ctx.get(dut.rate_bank), bool(status & TABLES_DEFAULT),
                         status & ~TABLES_DEFAULT))

        async def reset():
            ctx.set(top.rst, 1)
            await ctx.tick().repeat(2)
            ctx.set(top.rst, 0)
            await ctx.tick().repeat(3)

        seen.append(("power-on word", await host.read(REGS["status"].offset)))
        await note("power-on")
        await host.write(rate.offset + 4 * 7, 0x12345)
        await note("written")
        await host.commit()
        await note("commit")
        await host.commit()
        await note("commit, no write")
        await reset()
        await note("reset")
        await host.write(rate.offset, 1)              # bank 1 again
        await host.commit()
        await note("bank 1 again")
        await host.write(rate.offset, 2)              # bank 0
        await note("bank 0 written")
        await host.commit()
        await note("bank 0 active")
        await reset()
        await note("reset after both")

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
    # the map's reset value of status is the power-on word
    assert seen.pop(0) == ("power-on word", REGS["status"].reset) and REGS["status"].reset
    assert seen == [("power-on", 0, True, 0), ("written", 0, True, 0), ("commit", 1, False, 0),
                    ("commit, no write", 1, False, 0), ("reset", 0, True, 0),
                    ("bank 1 again", 1, False, 0), ("bank 0 written", 1, False, 0),
                    ("bank 0 active", 0, False, 0), ("reset after both", 0, False, 0)]


@pytest.mark.parametrize("write_setup", WRITE_SETUPS)
def test_a_commit_s_registers_bank_swap_and_strobes_come_in_one_clock(write_setup):
    """Commits of each kind, watched clock by clock: the active configuration changes in one
    clock ``ts`` (every register at once), and in that same clock, and in no other, the
    table's bank swaps (if the table was written since the last commit) and the strobes the
    change needs are high: ``wipe`` for v_max, ``wipe`` and ``rekey`` for the key,
    ``load_rng_decide`` / ``load_rng_clear`` for a seed (``fpq.QueueManager.configure(config,
    ts)``). ``ts`` is the clock after the first one in which the queue manager is idle and
    not busy with no bus write in it or the two clocks before (the checks are registered in
    two stages), a clock later with ``write_setup`` 2 or more (the decision registered);
    ``hold`` is high from the clock after the COMMIT write through ``ts``."""
    rate = {t.name: t for t in tables(BUILD)}["rate_table"]
    base = Config(build=BUILD)
    cases = [  # (changes, table written, strobes expected)
        (dict(v_max=3000, seed_clear=99), True, {"wipe", "load_rng_clear"}),
        (dict(hash_key=bytes(range(20))), False, {"wipe", "rekey"}),
        (dict(hash_mix_key=bytes(range(12))), False, {"wipe", "rekey"}),
        (dict(seed_decide=77), False, {"load_rng_decide"}),
        (dict(mode="red", red_max_p=0.5), False, set()),
        ({}, True, set()),
        (dict(v_max=1000, hash_key=bytes(range(1, 21)), seed_decide=5, seed_clear=6), True,
         {"wipe", "rekey", "load_rng_decide", "load_rng_clear"}),
    ]
    names = ("wipe", "rekey", "load_rng_decide", "load_rng_clear")

    async def bench(ctx, dut, host):
        await ctx.tick().repeat(3)
        cfg = base
        for k, (changes, table, want_strobes) in enumerate(cases):
            cfg = cfg.replace(**changes)
            for name, value in cfg.registers().items():
                await host.write_reg(name, value)
            if table:
                await host.write(rate.offset + 4 * k, k + 1)
            # the queue manager is busy for a few clocks (a pipeline that drains): the
            # commit waits for idle
            idle_at = 3 + k
            ctx.set(dut.idle, 0)
            await host.write(REGS["control"].offset, CONTROL_COMMIT)
            seen = []
            for c in range(14):
                ctx.set(dut.idle, int(c >= idle_at))
                _, _, conf, bank, hold, *strobes = await ctx.tick().sample(
                    dut.config.as_value(), dut.rate_bank, dut.hold,
                    *(getattr(dut, n) for n in names))
                seen.append((conf, bank, hold, {n for n, v in zip(names, strobes) if v}))
            changed = [c for c in range(1, len(seen)) if seen[c][0] != seen[c - 1][0]]
            swapped = [c for c in range(1, len(seen)) if seen[c][1] != seen[c - 1][1]]
            strobed = [c for c in range(len(seen)) if seen[c][3]]
            ts = idle_at + 1 + (write_setup >= 2)
            if changes:
                assert changed == [ts], (k, changed)
            assert swapped == ([ts] if table else []), (k, swapped)
            assert strobed == ([ts] if want_strobes else []), (k, strobed)
            assert seen[ts][3] == want_strobes, k
            assert [h for _, _, h, _ in seen] == [1] * (ts + 1) + [0] * (len(seen) - ts - 1)
            assert host.active() == cfg.registers()
    simulate(bench, write_setup=write_setup)


class SystemBench(Bench):
    """``hdl_harness.Bench`` on the register file and the queue manager wired as on a board
    (``System``): the clock after the register file's ``restart`` (out of reset) is clock 0,
    and a clock in which the active configuration differs from the clock before is a commit
    at that clock, recorded for the model's replay (``configure(config, ts)``; ``configs``
    names the configurations the host commits)."""

    def __init__(self, ctx, system, configs):
        super().__init__(ctx, system)
        self.rf = system.rf
        self.layout = config_layout(system.rf.build)
        self.configs = {pack(self.layout, c.registers()): c for c in configs}
        self.active = None

    async def tick(self, count=1):
        accepted = False
        for _ in range(count):
            cfg = self.ctx.get(self.rf.config.as_value())
            if self.base is not None and cfg != self.active:
                self.events.append(("configure", self.configs[cfg], self.now))
            self.active = cfg
            restart = self.ctx.get(self.rf.restart)
            accepted = await super().tick()
            if restart:
                assert self.base is None, "a second restart"
                self.base = self.cycle
        return accepted


#: Builds of the system runs fix ``tick_hz`` at 1 kHz, so that the defaults the register file
#: starts with (t_clear_s 4 s, avg_tau_s 2.36 s) schedule the first clear and the first
#: sample within a few clocks of clock 0: a commit keeps the clear and the sample already
#: scheduled, which with a real clock rate would come after the end of a simulation.
SLOW_CLOCK = {"tick_hz": 1e3}


def run_system(build, initial, configs, steps, host_script):
    """The system run: ``host_script(host, state)`` drives the bus (``state["bench"]`` is the
    traffic's ``SystemBench``), the traffic bench drives ``steps`` after ``state["go"]``.
    Returns the bench, its record replayed and checked by ``check_bench``."""
    system = System(build)
    state = {"go": False}

    async def host_tb(ctx):
        await host_script(Host(ctx, system.rf), state)

    async def traffic_tb(ctx):
        b = state["bench"] = SystemBench(ctx, system, [initial] + configs)
        while not state["go"]:
            await b.tick()
        await b.drive(steps)
        await b.drain()
        b.final = b.telemetry()
        state["done"] = True

    sim = Simulator(system)
    sim.add_clock(1e-8)
    sim.add_testbench(host_tb)
    sim.add_testbench(traffic_tb)
    sim.run()
    bench = state["bench"]
    model = check_bench(initial, bench)
    return bench, model


async def write_config(host, new, old=None):
    """The shadows of ``new`` that differ from ``old`` and, if it changed, the r(N) table."""
    tabs = {t.name: t for t in tables(new.build)}
    old_r = old.registers() if old is not None else {}
    for name, value in new.registers().items():
        if old_r.get(name) != value:
            await host.write_reg(name, value)
    if old is None or new.rate_table() != old.rate_table():
        for i, w in enumerate(new.rate_table()):
            await host.write(tabs["rate_table"].offset + 4 * i, w)


async def load_and_commit(host, config, build):
    """Write ``config``, commit it and wait out the wipes (the one out of reset, then the one
    of a changed ``v_max``): afterwards the status reads 0."""
    await write_config(host, config)
    await host.write(REGS["control"].offset, CONTROL_COMMIT)
    for _ in range(2 * build.vec_bits + 40):
        await host.ctx.tick()
    assert await host.status() == 0


def test_queue_manager_configured_over_the_bus_matches_the_model_after_commit():
    """RegisterFile + QueueManager: out of reset the defaults (the model's initial state at
    clock 0, the clock after the register file's restart); a configuration and its table
    written over the bus and committed (the model's ``configure`` at the clock the active
    configuration changed), then traffic: verdicts, counters and telemetry equal the
    model's."""
    build = Build(vec_bits=1024, table_depth=256, fixed=SLOW_CLOCK)
    initial = Config(build=build)
    assert initial.registers()["avg_sample_period"] < 10
    config = Config(build=build, mode="fpq", v_max=1000, t_clear_s=2.0,
                    limit_pkts=80, n_cap=255, ecn=True, seed_decide=77, seed_clear=78,
                    p_pkts=1.0, hash_key=bytes(range(3, 23))) \
        .override(wq_shift=3, avg_sample_period=9)
    steps, _, _ = traffic(config, 3000, seed=21, flows=4, t0=4000)

    async def host_script(host, state):
        await load_and_commit(host, config, build)
        state["go"] = True

    bench, model = run_system(build, initial, [config], steps, host_script)
    commits = [e for e in bench.events if type(e) is tuple]
    assert len(commits) == 1 and commits[0][1] is config
    c = model.counters
    assert c["marked"] > 10 and c["early_drops"] > 10 and c["forced_drops"] > 10, c
    assert model.fc.wipes == 1


class System(wiring.Component):
    """RegisterFile wired to QueueManager, as on a board."""
    def __init__(self, build):
        from fpq_hdl.queue_manager import QueueManager
        self.rf, self.qm = RegisterFile(build), QueueManager(build)
        super().__init__({})
        for name in ("arrivals", "departures", "verdicts", "counters", "n_raw", "avg",
                     "occ_pkts", "occ_bytes", "max_queue"):
            setattr(self, name, getattr(self.qm, name))

    def elaborate(self, platform):
        m = Module()
        m.submodules.rf, m.submodules.qm = rf, qm = self.rf, self.qm
        # every register-file port but the bus has a queue-manager port of the same name
        for name, member in rf.signature.members.items():
            if name == "bus":
                continue
            a, b = getattr(rf, name), getattr(qm, name)
            m.d.comb += (b.eq(a) if member.flow == wiring.Out else a.eq(b))
        return m



# ---- hardening (issue 8): every bad write has the documented effect -------------------------
CONFIG_REGS = [r for r in registers(BUILD) if r.kind == "config"]
READ_ONLY = [r for r in registers(BUILD) if r.access == "ro"]


def _mapped_words(build):
    words = set()
    for r in registers(build):
        words |= {r.offset // 4 + w for w in range(r.words)}
    for t in tables(build):
        words |= set(range(t.offset // 4, t.offset // 4 + t.depth))
    return words


@pytest.mark.parametrize("write_setup", WRITE_SETUPS)
def test_value_wider_than_its_register_is_refused_and_rejects_every_commit(write_setup):
    """For every config register whose top word has unused bits: a write with a bit above the
    width keeps the old shadow, sets BAD_WRITE, and commits are rejected naming the register
    (the index ``check_registers`` gives for the written value) until a value that fits is
    written; the active configuration never changes meanwhile."""
    partial = [r for r in CONFIG_REGS if r.width % 32]
    assert len(partial) > 10

    async def bench(ctx, dut, host):
        values = Config(build=BUILD).registers()
        for r in partial:
            before = host.active()
            top = r.offset + 4 * (r.words - 1)
            shift = 32 * (r.words - 1)
            for bit in (r.width, 31 + shift):                 # lowest and highest excess bit
                old = await host.read_reg(r.name)
                await host.write(top, (values[r.name] >> shift) | 1 << (bit - shift))
                assert await host.read_reg(r.name) == old, r.name
                wide = values[r.name] | 1 << bit
                want = check_registers(dict(values, **{r.name: wide}), BUILD)
                assert want == INDEX[r.name]
                for _ in range(2):                             # stays rejected
                    await host.commit()
                    status = await host.status()
                    assert status == (REJECTED | BAD_WRITE | want << STATUS_REJECT_INDEX_SHIFT), \
                        (r.name, hex(status))
                    assert host.active() == before
                await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
                await host.commit()                            # CLEAR_ERRORS is not a fix
                assert await host.status() >> STATUS_REJECT_INDEX_SHIFT == \
                    INDEX[r.name]
                await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
            await host.write(top, values[r.name] >> shift)     # fits: accepted again
            await host.commit()
            assert await host.status() == 0, r.name
            assert host.active() == before
    simulate(bench, write_setup=write_setup)


@pytest.mark.parametrize("write_setup", WRITE_SETUPS)
def test_random_register_writes_and_commits_follow_check_registers(write_setup):
    """300 commits of 1-3 random register writes each (values at and around the range ends,
    at the width's end, random, wider than the register): the commit is accepted exactly when
    ``check_registers`` of the written values accepts, rejected with its index otherwise, and
    the active configuration is always either all old or all new values."""
    rnd = random.Random(8)

    def value(r):
        top = (1 << r.width) - 1
        v = rnd.choice([r.lo, r.hi, r.lo - 1 if r.lo else r.hi, r.hi + 1 if r.hi < top
                        else r.lo, top, top + 1, rnd.randint(r.lo, r.hi),
                        rnd.randint(r.lo, r.hi), rnd.getrandbits(r.width),
                        rnd.getrandbits(32 * r.words)])
        return v if v >> (32 * r.words) == 0 else r.hi     # what the bus words can carry

    async def bench(ctx, dut, host):
        written = Config(build=BUILD).registers()
        active = dict(host.active())
        outcomes = set()
        for _ in range(300):
            for r in rnd.sample(CONFIG_REGS, rnd.randint(1, 3)):
                v = value(r)
                await host.write_reg(r.name, v)
                written[r.name] = v
            await host.commit()
            want = check_registers(written, BUILD)
            status = await host.status()
            await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
            if want is None:
                active = {k: written[k] for k in active}
                assert status & (REJECTED | 0xFF << STATUS_REJECT_INDEX_SHIFT) == 0
            else:
                assert status & REJECTED and status >> STATUS_REJECT_INDEX_SHIFT == want
            assert host.active() == active
            for r in rnd.sample(CONFIG_REGS, 2):       # reads return the shadow
                if written[r.name] >> r.width == 0 and not r.secret:
                    assert await host.read_reg(r.name) == written[r.name], r.name
            outcomes.add(want is None)
            if rnd.random() < 0.3:                     # back to a good configuration
                good = Config(build=BUILD).override(
                    wq_shift=rnd.randint(0, 16),
                    avg_sample_period=rnd.choice((4, 5, 1 << 31))).registers()
                for name, v in good.items():
                    await host.write_reg(name, v)
                written = dict(good)
        assert outcomes == {True, False}
    simulate(bench, write_setup=write_setup)


@pytest.mark.parametrize("write_setup", WRITE_SETUPS)
def test_read_only_undefined_and_control_writes(write_setup):
    """Every word of every read-only register, every unmapped word below the first table and a
    spread of unmapped words around and between the tables: a write sets BAD_WRITE and changes
    nothing (reads, active configuration, no table write, no strobe); unmapped reads and reads
    of the write-only control return 0; a control write with an undefined bit does nothing."""
    mapped = _mapped_words(BUILD)
    tabs = tables(BUILD)
    unmapped = [w for w in range(0x1000 // 4) if w not in mapped]
    for t in tabs:
        end = t.offset // 4 + t.depth
        unmapped += [t.offset // 4 - 1, end, end + 1, end + 1000]
    unmapped += [(1 << 18) - 1]                             # top of the 20-bit byte address
    unmapped = sorted(set(w for w in unmapped if w not in mapped))
    assert len(unmapped) > 800

    async def bench(ctx, dut, host):
        active = host.active()
        ro_before = {r.name: await host.read_reg(r.name) for r in READ_ONLY}
        for r in READ_ONLY:
            for w in range(r.words):
                for data in (0, 0xFFFFFFFF, 0x12345678):
                    clear, cmq, we = await host.write(r.offset + 4 * w, data)
                    assert (clear, cmq, we) == (0, 0, 0)
                    status = await host.status()
                    assert status == BAD_WRITE, (r.name, hex(status))
                    await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
        assert {r.name: await host.read_reg(r.name) for r in READ_ONLY} == ro_before
        for w in unmapped:
            assert await host.read(4 * w) == 0, hex(4 * w)
            clear, cmq, we = await host.write(4 * w + (w & 3), 0xFFFFFFFF)   # low bits ignored
            assert (clear, cmq, we) == (0, 0, 0)
            assert await host.status() == BAD_WRITE, hex(4 * w)
            await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
        assert await host.read(REGS["control"].offset) == 0
        assert len(tabs) == 1 and await host.read(tabs[0].offset) == 0
        # control: an undefined bit makes the whole write void (no commit, no clear)
        await host.write_reg("wq_shift", 3)
        await host.write(REGS["control"].offset, CONTROL_COMMIT | 1 << 7)
        for _ in range(COMMIT_CLOCKS):
            await ctx.tick()
        assert host.active() == active
        status = await host.status()
        assert status == BAD_WRITE
        await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS | 1 << 31)
        assert await host.status() == BAD_WRITE
        await host.commit()
        assert host.active() == dict(active, wq_shift=3)
    simulate(bench, write_setup=write_setup)


@pytest.mark.parametrize("write_setup", WRITE_SETUPS)
def test_each_kind_of_write_applies_in_its_documented_clock(write_setup):
    """Writes watched clock by clock from their ``w_en`` (clock 0), with ``r_en`` high in
    every clock from it (read latency 1: ``r_data`` is, a clock later, the word as it was):
    a write applies in clock ``write_latency`` (0; 1 with ``write_setup`` 3), so the written
    word reads its old value through that clock and the new one from the next, and the
    counter clear and ``clear_max_queue`` are high in that clock and no other; BAD_WRITE (a
    write to ID, a value wider than its register, which keeps the shadow), its clear
    (CLEAR_ERRORS) and BUSY (COMMIT) read in STATUS from the next. From clock 1 the bus
    holds other data (and for STATUS another address), which the write must not take."""
    lat = write_latency(write_setup)
    clocks = 4

    async def bench(ctx, dut, host):
        bus = dut.bus

        async def watch(name, value, word=0, read=None):
            """Write ``value`` to ``name``'s ``word``, read ``read`` (the written word if
            None) from clock 1; per clock 0..clocks, (word read, counter_clear,
            clear_max_queue)."""
            addr = REGS[name].offset + 4 * word
            raddr = addr if read is None else REGS[read].offset
            ctx.set(bus.addr, addr)
            ctx.set(bus.w_data, value)
            for _ in range(write_setup):
                await ctx.tick()
            ctx.set(bus.w_en, 1)
            ctx.set(bus.r_en, 1)
            seen = []
            for _ in range(clocks + 2):
                _, _, r_data, clear, cmq = await ctx.tick().sample(
                    bus.r_data, dut.counter_clear, dut.clear_max_queue)
                seen.append((r_data, clear, cmq))
                ctx.set(bus.w_en, 0)
                ctx.set(bus.addr, raddr)
                ctx.set(bus.w_data, ~value & 0xFFFFFFFF)
            ctx.set(bus.r_en, 0)
            await ctx.tick().repeat(8)               # a commit's clocks, if one was written
            # the word read in clock k is r_data of clock k + 1
            return ([seen[k + 1][0] for k in range(clocks + 1)],
                    [seen[k][1] for k in range(clocks + 1)],
                    [seen[k][2] for k in range(clocks + 1)])

        def after(old, new, start=0):
            """``old`` through clock ``lat``, ``new`` from the next, from clock ``start``."""
            return [old if k <= lat else new for k in range(start, clocks + 1)]

        none = [0] * (clocks + 1)
        await ctx.tick().repeat(3)
        wq = await host.read_reg("wq_shift")
        words, clear, cmq = await watch("wq_shift", wq + 2)
        assert words == after(wq, wq + 2) and clear == cmq == none
        old = await host.read(REGS["rekey_hold"].offset + 4)
        words, clear, cmq = await watch("rekey_hold", 0x1234, word=1)
        assert words == after(old, 0x1234)
        # a generator's state is secret: its write applies alike, its reads are 0
        words, clear, cmq = await watch("rng_decide_state", 0x89ABCDEF, word=1)
        assert words == none

        i = COUNTERS.index("early_drops")
        _, clear, cmq = await watch("early_drops", 0, word=1)
        assert clear == [1 << i if k == lat else 0 for k in range(clocks + 1)]
        assert cmq == none
        _, clear, cmq = await watch("max_queue", 0)
        assert cmq == [int(k == lat) for k in range(clocks + 1)] and clear == none

        status = (await watch("control", CONTROL_COMMIT, read="status"))[0]
        assert [w & BUSY for w in status[1:lat + 2]] == [0] * lat + [BUSY]   # then applies
        assert host.active()["wq_shift"] == wq + 2                # the commit applied
        status = (await watch("id", 5, read="status"))[0]
        assert [w & BAD_WRITE for w in status[1:]] == after(0, BAD_WRITE, start=1)
        status = (await watch("control", CONTROL_CLEAR_ERRORS, read="status"))[0]
        assert [w & BAD_WRITE for w in status[1:]] == after(BAD_WRITE, 0, start=1)
        status = (await watch("wq_shift", 1 << REGS["wq_shift"].width, read="status"))[0]
        assert [w & BAD_WRITE for w in status[1:]] == after(0, BAD_WRITE, start=1)
        assert await host.read_reg("wq_shift") == wq + 2          # the shadow kept it
    simulate(bench, write_setup=write_setup)


def test_commits_while_traffic_flows_apply_at_the_recorded_clock():
    """Arrivals on every clock the port takes them, with departures; meanwhile the host
    writes shadows and the table over the bus and commits three times (registers only; the
    r(N) table and a seed; v_max with a wipe, the average's registers and the clear period
    with the clear seed). Every verdict, the counters and the telemetry equal the golden
    model's with each ``configure`` at the clock the active configuration changed: none used
    half-old, half-new parameters, and the clears and samples before each commit ran under
    the old ones."""
    build = Build(vec_bits=256, table_depth=64, fixed=SLOW_CLOCK)
    initial = Config(build=build)
    c0 = Config(build=build, mode="fpq", v_max=200, t_clear_s=2.0,
                limit_pkts=60, n_cap=63, p_pkts=8.0).override(wq_shift=3, avg_sample_period=5)
    configs = [c0,
               c0.replace(mode="red", red_max_p=0.3, red_min_th=1, red_max_th=6, ecn=True)
               .override(wq_shift=2, avg_sample_period=6),
               c0.replace(mode="fpq", p_pkts=3.0, seed_decide=5, n_cap=40, ecn=True),
               c0.replace(v_max=100, t_clear_s=0.5, limit_pkts=20, seed_clear=9)
               .override(wq_shift=5, avg_sample_period=4)]
    at = [200, 500, 800]                        # writes start after this many arrivals
    steps, _, _ = traffic(c0, 1300, seed=44, flows=80, same_flow=0.1, t0=1000)

    async def host_script(host, state):
        await load_and_commit(host, c0, build)
        state["go"] = True
        for k, old, new in zip(at, configs, configs[1:]):
            while state["bench"].arrivals < k:
                await host.ctx.tick()
            await write_config(host, new, old)          # arrivals keep flowing meanwhile
            await host.write(REGS["control"].offset, CONTROL_COMMIT)
            while await host.status() & 1:      # BUSY: pending
                pass
            assert await host.status() & REJECTED == 0

    bench, model = run_system(build, initial, configs, steps, host_script)
    # each commit's clock and the arrivals accepted before it
    commits, n = [], 0
    for e in bench.events:
        if type(e) is tuple:
            commits.append((e[2], n))
        n += type(e) is not tuple and type(e).__name__ == "Arrival"
    commits = commits[1:]
    # the shadow and table writes took a few hundred clocks of traffic after ``at``
    assert len(commits) == 3
    assert all(k < n < 1280 for k, (_, n) in zip(at, commits)), commits
    # the RED phase decided early (marks and drops), the v_max commit wiped
    c = model.counters
    assert model.fc.wipes == 2 and c["early_drops"] > 30 and c["marked"] > 30


def test_fixed_registers_read_their_value_refuse_writes_and_stay_out_of_commits():
    """A build that fixes fields: their registers are constants on the config port, read back
    the build's value, a write sets BAD_WRITE and changes nothing, and commits neither
    reject nor change them (not even a key or seed write: no re-key, no reload)."""
    build = Build(table_depth=64, fixed={**AVG_FIXED, "hash_key": bytes(range(20)),
                                         "seed_decide": 5, "red_min_th": 2.0})
    raw = Config(build=build).registers()
    fixed = [r for r in registers(build) if r.kind == "fixed"]
    # avg_tau_s and tick_hz fix both registers derived from them alone
    assert {r.name for r in fixed} == {"wq_shift", "avg_sample_period", "hash_key",
                                       "rng_decide_state", "red_min_th"}
    assert (raw["wq_shift"], raw["avg_sample_period"]) == (9, 40)

    async def bench(ctx, dut, host):
        for _ in range(3):
            await ctx.tick()
        assert host.active() == raw
        for r in fixed:
            # a fixed key is a constant of the build, and still reads 0
            want = 0 if r.secret else raw[r.name]
            assert await host.read_reg(r.name) == want, r.name
            await host.write_reg(r.name, raw[r.name] ^ 1)
            assert await host.status() & BAD_WRITE, r.name
            await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
            assert await host.read_reg(r.name) == want, r.name
        # red_max_th is checked against the fixed red_min_th (2.0): 2.5 is rejected, 3.0 not
        await host.write_reg("red_max_th", int(2.5 * 65536))
        await host.commit()
        status = await host.status()
        assert status & REJECTED and status >> STATUS_REJECT_INDEX_SHIFT == \
            INDEX["red_max_th"]
        await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
        await host.write_reg("red_max_th", 3 << 16)
        await host.write_reg("mode", 1)
        strobes = set()
        await host.write(REGS["control"].offset, CONTROL_COMMIT)
        for _ in range(COMMIT_CLOCKS):
            for name in ("wipe", "rekey", "load_rng_decide", "load_rng_clear"):
                if ctx.get(getattr(dut, name)):
                    strobes.add(name)
            await ctx.tick()
        assert not await host.status() & (REJECTED | BAD_WRITE)
        assert host.active() == dict(raw, red_max_th=3 << 16, mode=1)
        assert strobes == set()
    simulate(bench, build)


def read_every_word(build, const_rom, counters, read_latency=1, read_setup=0):
    """Every word of the register block and the first words of each table, read back to
    back after a write of a few shadows, with the counter inputs at ``counters``."""
    regs = registers(build)
    top = max(r.offset + 4 * r.words for r in regs)
    addrs = list(range(0, top + 8, 4)) + [t.offset + 4 * i for t in tables(build)
                                          for i in range(3)]
    got = {}

    async def bench(ctx, dut, host):
        for i, v in enumerate(counters):
            ctx.set(dut.counters[i], v)
        for r in regs:
            if r.kind == "config":                # shadows that differ from the defaults
                await host.write_reg(r.name, r.lo + (r.hi > r.lo))
        for a in addrs:
            got[a] = await host.read(a)
    simulate(bench, build, const_rom, read_latency, read_setup=read_setup)
    return got


@pytest.mark.parametrize("read_setup", READ_SETUPS)
def test_two_stage_read_reads_every_word_as_one_stage(read_setup):
    """``read_latency=2``: every word (shadows, counters, telemetry, status, constants,
    unmapped and table addresses) reads the same as with one stage, a clock later (with
    ``read_setup``, the address a clock before the read: the previous read's address is on
    the bus until then, so a decode from a later address would show)."""
    build = Build(vec_bits=1024, table_depth=64, fixed=AVG_FIXED)
    rng = random.Random(6)
    counters = [rng.getrandbits(64) for _ in range(7)]
    want = read_every_word(build, False, counters)
    got = read_every_word(build, False, counters, read_latency=2, read_setup=read_setup)
    assert got == want
    assert sum(1 for v in got.values() if v) > 30        # not a block of zeros (37 words)


def test_two_stage_read_one_read_per_clock():
    """``read_latency=2`` at full rate: ``r_en`` on consecutive clocks, each word two clocks
    later, 0 on the clocks without a read; a counter that changes every clock reads as it was
    in its read's clock."""
    build = Build(vec_bits=1024, table_depth=64)
    regs = {r.name: r for r in registers(build)}
    order = [regs["id"].offset, regs[COUNTERS[0]].offset, regs[COUNTERS[0]].offset,
             regs["wq_shift"].offset, regs["status"].offset, 0xFFC, regs[COUNTERS[0]].offset]

    async def bench(ctx, dut, host):
        seen = []
        for clock in range(len(order) + 3):
            ctx.set(dut.counters[0], 1000 + clock)        # the counter input moves each clock
            if clock < len(order):
                ctx.set(dut.bus.addr, order[clock])
            ctx.set(dut.bus.r_en, clock < len(order) and clock != 2)   # a gap at clock 2
            await ctx.tick()
            seen.append(ctx.get(dut.bus.r_data))
        # read in clock k is on r_data after the second tick from it: seen[k + 1]
        assert seen[0] == 0
        assert seen[1] == ID_VALUE
        assert seen[2] == 1001                             # the counter in clock 1
        assert seen[3] == 0                                # no read in clock 2
        assert seen[4] == Config(build=build).registers()["wq_shift"]
        assert seen[6] == 0                                # unmapped
        assert seen[7] == 1006
    simulate(bench, build, read_latency=2)


def test_bad_read_latency_is_rejected():
    with pytest.raises(ValueError, match="read_latency: 3 must be one of 1, 2"):
        RegisterFile(BUILD, read_latency=3)
    with pytest.raises(ValueError, match="read_latency: 2 with const_rom must be 1"):
        RegisterFile(BUILD, const_rom=True, read_latency=2)
    with pytest.raises(ValueError, match="read_setup: 3 must be one of 0, 1, 2"):
        RegisterFile(BUILD, read_latency=2, read_setup=3)
    with pytest.raises(ValueError, match="read_setup: 1 needs read_latency 2"):
        RegisterFile(BUILD, read_setup=1)
    with pytest.raises(ValueError, match="write_setup: 4 must be one of 0, 1, 2, 3"):
        RegisterFile(BUILD, write_setup=4)


def test_constant_words_from_a_rom_read_as_from_the_multiplexer():
    """``const_rom``: the constant words (id, build, the registers the build fixes) come from
    a ROM; every word reads the same as without it, in the same clock, back to back with live
    words (counters, shadows, status) and unmapped ones."""
    build = Build(vec_bits=1024, table_depth=64,
                  fixed={**AVG_FIXED, "mode": "red", "hash_key": bytes(range(20)),
                         "seed_clear": 7, "t_clear_s": 0.25, "red_max_p": 0.3})
    rng = random.Random(5)
    counters = [rng.getrandbits(64) for _ in range(7)]
    want = read_every_word(build, False, counters)
    got = read_every_word(build, True, counters)
    assert got == want
    fixed = {r.name for r in registers(build) if r.kind == "fixed"}
    assert {"wq_shift", "hash_key", "mode", "rng_clear_state"} <= fixed
    # the ROM's words are not all zero, and it answers only for them; the words of a fixed
    # key and of a fixed generator state (secret) are zeros in it
    hk, rng, p = REGS["hash_key"], REGS["rng_clear_state"], REGS["red_max_p"]
    assert got[registers(build)[0].offset] == ID_VALUE
    assert any(got[p.offset + 4 * w] for w in range(p.words))
    assert not any(got[hk.offset + 4 * w] for w in range(hk.words))
    assert not any(got[rng.offset + 4 * w] for w in range(rng.words))


# ---- secret registers: write-only ------------------------------------------------------------
#: A key no test elsewhere uses, so a read that returns it can only come from the shadow.
SECRET_KEY = int.from_bytes(bytes.fromhex("9b3e51c07a24d8f6e1058c3ba7d24f9061ec35b8"), "big")


@pytest.mark.parametrize("const_rom, read_latency", [(False, 1), (False, 2), (True, 1)])
def test_a_written_key_applies_at_the_commit_and_reads_zero(const_rom, read_latency):
    """``hash_key`` (access "secret"): its words take a write (no BAD_WRITE), the commit
    applies the key (the config port has it), and every read of its words returns 0 before
    and after the commit, on each read path (one stage, two stages, constants from a ROM),
    while the shadow of another register written with it reads back."""
    assert REGS["hash_key"].secret and REGS["hash_key"].access == "secret"

    async def bench(ctx, dut, host):
        await ctx.tick().repeat(3)
        await host.write_reg("hash_key", SECRET_KEY)
        await host.write_reg("v_max", 1234)
        assert await host.read_reg("hash_key") == 0
        await host.commit()
        await ctx.tick().repeat(2)
        assert ctx.get(dut.config.hash_key) == SECRET_KEY
        assert await host.status() == 0
        for w in range(REGS["hash_key"].words):
            assert await host.read(REGS["hash_key"].offset + 4 * w) == 0, w
        assert await host.read_reg("v_max") == 1234
    simulate(bench, const_rom=const_rom, read_latency=read_latency)


def test_the_generators_states_are_write_only_and_the_rule_is_the_declaration(monkeypatch):
    """The random generators' seeds are declared ``secret`` (whoever reads a state predicts
    every later random number): ``rng_decide_state`` and ``rng_clear_state`` read 0 in
    the map (the golden model's registers, access "secret") and over the bus while the
    register file loads the written states at the commit. The rule comes from the
    declaration: ``seed_clear`` declared not secret makes its state readable again."""
    import dataclasses
    from fpq.fields import FIELD_BY_NAME
    regs = {r.name: r for r in registers(BUILD)}
    for name in ("rng_decide_state", "rng_clear_state"):
        assert regs[name].secret and regs[name].access == "secret", name
    state = 0x0123456789ABCDEF_FEDCBA9876543210

    async def bench(ctx, dut, host):
        await ctx.tick().repeat(3)
        await host.write_reg("rng_clear_state", state)
        await host.write_reg("rng_decide_state", state ^ 1)
        await host.commit()
        assert ctx.get(dut.config.rng_clear_state) == state
        assert ctx.get(dut.config.rng_decide_state) == state ^ 1
        assert await host.read_reg("rng_clear_state") == 0
        assert await host.read_reg("rng_decide_state") == 0
    simulate(bench)

    monkeypatch.setitem(FIELD_BY_NAME, "seed_clear",
                        dataclasses.replace(FIELD_BY_NAME["seed_clear"], secret=False))
    regs = {r.name: r for r in registers(BUILD)}
    assert not regs["rng_clear_state"].secret and regs["rng_clear_state"].access == "rw"

    async def readable(ctx, dut, host):
        await ctx.tick().repeat(3)
        await host.write_reg("rng_clear_state", state)
        assert await host.read_reg("rng_clear_state") == state
    simulate(readable)


def test_ipv6_build_takes_the_328_bit_key_in_its_11_words():
    """``Build.flow_key`` "ipv6": the register file holds the 41-byte ``hash_key`` (reset
    the build's default key), a key with its top and bottom bits set applies at the commit
    and reads 0, a bit above bit 327 in its top word is a bad write, and the registers
    after it (placed further on in this build) read back at their addresses."""
    build = Build(table_depth=64, flow_key="ipv6")
    regs = {r.name: r for r in registers(build)}
    key = (1 << 327) | (SECRET_KEY << 100) | 1

    async def bench(ctx, dut, host):
        await ctx.tick().repeat(3)
        assert ctx.get(dut.config.hash_key) == \
            int.from_bytes(Config(build=build).hash_key, "big")
        await host.write_reg("hash_key", key)
        await host.write_reg("rekey_hold", 777)
        await host.commit()
        await ctx.tick().repeat(2)
        assert ctx.get(dut.config.hash_key) == key
        assert await host.status() == 0
        assert [await host.read(regs["hash_key"].offset + 4 * w) for w in range(11)] == [0] * 11
        assert await host.read_reg("rekey_hold") == 777
        await host.write(regs["hash_key"].offset + 40, 1 << 8)      # key bit 328: too wide
        assert await host.status() & BAD_WRITE
    simulate(bench, build=build)


def test_out_of_reset_the_key_registers_hold_the_build_s_power_on_keys():
    """A build with power-on keys (``Build.power_on_keys``) comes out of reset with them
    active, not the public defaults (``Config()``'s RSS key and mix key), and with them in
    the shadows: a commit with no write keeps them and neither wipes nor re-keys."""
    from fpq.fields import RSS_KEY, MIX_KEY_DEFAULT
    key = bytes.fromhex("3c7a0d5be2914f68a1c7e03b5d92f4a6087e1bc9")
    mix = bytes.fromhex("5e0c93a1d27b48f6a9e3b170")
    build = Build(table_depth=64, power_on_keys={"hash_key": key, "hash_mix_key": mix})
    want = {"hash_key": int(key.hex(), 16), "hash_mix_key": int(mix.hex(), 16)}
    assert want != {"hash_key": int(RSS_KEY.hex(), 16),
                    "hash_mix_key": int(MIX_KEY_DEFAULT.hex(), 16)}

    async def bench(ctx, dut, host):
        await ctx.tick().repeat(3)
        assert {name: ctx.get(dut.config[name]) for name in want} == want
        await host.write(REGS["control"].offset, CONTROL_COMMIT)
        seen = set()
        for _ in range(COMMIT_CLOCKS + 1):
            _, _, wipe, rekey = await ctx.tick().sample(dut.wipe, dut.rekey)
            seen |= {n for n, v in (("wipe", wipe), ("rekey", rekey)) if v}
        assert seen == set() and await host.status() == 0
        assert {name: ctx.get(dut.config[name]) for name in want} == want
    simulate(bench, build=build)
