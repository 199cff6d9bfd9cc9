"""RegisterFile against fpq.regmap: addresses, defaults, shadow/commit semantics, range
checks (check_registers), counters, tables, error bits."""
import random

from amaranth.sim import Simulator

from fpq import Build, Config
from fpq.regmap import (registers, tables, check_registers, ID_VALUE, CONTROL_COMMIT,
                        CONTROL_CLEAR_ERRORS, STATUS_BITS, STATUS_REJECT_INDEX_SHIFT)
from fpq_hdl.registers import RegisterFile

BUILD = Build(table_depth=64)
REGS = {r.name: r for r in registers(BUILD)}
INDEX = {r.name: i for i, r in enumerate(registers(BUILD))}
REJECTED = 1 << STATUS_BITS["COMMIT_REJECTED"]
BAD_WRITE = 1 << STATUS_BITS["BAD_WRITE"]


class Host:
    def __init__(self, ctx, dut):
        self.ctx, self.dut = ctx, dut

    async def write(self, addr, value):
        c, b = self.ctx, self.dut.bus
        c.set(b.addr, addr)
        c.set(b.w_data, value & 0xFFFFFFFF)
        c.set(b.w_en, 1)
        _, _, clear, cmq, rate_we = await c.tick().sample(self.dut.counter_clear,
                                                          self.dut.clear_max_queue,
                                                          self.dut.rate_we)
        c.set(b.w_en, 0)
        return clear, cmq, rate_we

    async def read(self, addr):
        c, b = self.ctx, self.dut.bus
        c.set(b.addr, addr)
        c.set(b.r_en, 1)
        await c.tick()
        c.set(b.r_en, 0)
        return c.get(b.r_data)

    async def write_reg(self, name, value):
        r = REGS[name]
        for w in range(r.words):
            await self.write(r.offset + 4 * w, value >> (32 * w))

    async def read_reg(self, name):
        r = REGS[name]
        v = 0
        for w in range(r.words):
            v |= await self.read(r.offset + 4 * w) << (32 * w)
        return v

    async def commit(self):
        await self.write(REGS["control"].offset, CONTROL_COMMIT)
        for _ in range(4):
            await self.ctx.tick()

    def active(self):
        return {name: self.ctx.get(self.dut.config[name]) for name in self.dut.config.shape().members}


def simulate(bench):
    dut = RegisterFile(BUILD)
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
        for name in ("hash_key", "flush_after", "red_max_p", "clear_period"):
            assert await host.read_reg(name) == defaults[name]
        new = Config(build=BUILD, mode="red", v_max=3000, seed_clear=99, wq_shift=4,
                     red_max_p=0.5, ecn=True, hash_key=bytes(range(20))).registers()
        for name, value in new.items():
            await host.write_reg(name, value)
        assert host.active() == {k: defaults[k] for k in host.active()}   # shadows only
        await host.write(REGS["control"].offset, CONTROL_COMMIT)
        seen = set()
        for _ in range(4):
            _, _, *s = await ctx.tick().sample(dut.wipe, dut.load_rng_decide,
                                               dut.load_rng_clear)
            seen |= {n for n, v in zip(("wipe", "decide", "clear"), s) if v}
        assert seen == {"wipe", "clear"}            # v_max and the clear seed changed
        assert host.active() == {k: new[k] for k in host.active()}
        assert await host.read(REGS["status"].offset) == 0
    simulate(bench)


def test_out_of_range_commit_is_rejected_naming_the_first_bad_register():
    async def bench(ctx, dut, host):
        before = host.active()
        values = Config(build=BUILD).registers()
        bad = dict(values, wq_shift=17, n_cap=64, red_max_th=values["red_min_th"])
        for name in ("wq_shift", "n_cap", "red_max_th"):
            await host.write_reg(name, bad[name])
        await host.commit()
        status = await host.read(REGS["status"].offset)
        want = check_registers(bad, BUILD)
        assert want == INDEX["n_cap"]
        assert status == REJECTED | want << STATUS_REJECT_INDEX_SHIFT
        assert host.active() == before
        for name, v in (("n_cap", 63), ("wq_shift", 16)):
            await host.write_reg(name, v)
        await host.commit()
        status = await host.read(REGS["status"].offset)
        assert status >> STATUS_REJECT_INDEX_SHIFT == INDEX["red_max_th"]
        await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
        await host.write_reg("red_max_th", values["red_min_th"] + (1 << 16))
        await host.commit()
        assert await host.read(REGS["status"].offset) == 0
        assert host.active()["red_max_th"] == values["red_min_th"] + (1 << 16)
        assert host.active()["n_cap"] == 63
    simulate(bench)


def test_commit_waits_for_an_empty_pipeline():
    async def bench(ctx, dut, host):
        ctx.set(dut.idle, 0)
        await host.write_reg("wq_shift", 3)
        await host.write(REGS["control"].offset, CONTROL_COMMIT)
        for _ in range(10):
            _, _, hold = await ctx.tick().sample(dut.hold)
            assert hold and host.active()["wq_shift"] != 3
        assert await host.read(REGS["status"].offset) & 1      # BUSY
        ctx.set(dut.idle, 1)
        for _ in range(4):
            await ctx.tick()
        assert host.active()["wq_shift"] == 3 and not ctx.get(dut.hold)
    simulate(bench)


def test_counters_read_64_bits_and_clear_on_write_and_bad_writes():
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
        assert await host.read(REGS["status"].offset) == 0
        await host.write(REGS["id"].offset, 5)
        assert await host.read(REGS["status"].offset) == BAD_WRITE
        await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
        await host.write(0x3FFFC, 5)                          # unmapped
        assert await host.read(REGS["status"].offset) == BAD_WRITE
        assert await host.read(0x3FFFC) == 0
    simulate(bench)


def test_table_writes_go_to_the_inactive_bank_and_commit_swaps():
    rate = {t.name: t for t in tables(BUILD)}["rate_table"]

    async def bench(ctx, dut, host):
        assert ctx.get(dut.rate_bank) == 0
        _, _, we = await host.write(rate.offset + 4 * 5, 0x12345)
        assert we
        assert ctx.get(dut.rate_bank) == 0
        await host.commit()
        assert ctx.get(dut.rate_bank) == 1 and ctx.get(dut.decay_bank) == 0
        await host.commit()                          # no table write since: no swap
        assert ctx.get(dut.rate_bank) == 1
        _, _, we = await host.write(rate.offset + 4 * rate.depth, 1)   # one past the end
        assert not we
        assert await host.read(REGS["status"].offset) == BAD_WRITE
    simulate(bench)


def test_queue_manager_configured_over_the_bus_matches_the_model_after_commit():
    """RegisterFile + QueueManager: load a configuration and both tables over the bus, COMMIT
    (the model's ``configure``), run traffic; verdicts and counters equal the model's."""
    from amaranth import Module
    from amaranth.lib import wiring
    from fpq.queue_manager import QueueManager as Model
    from fpq_hdl.queue_manager import QueueManager
    from .hdl_harness import traffic, run, compare

    build = Build(vec_bits=1024, table_depth=256)
    config = Config(build=build, mode="fpq", v_max=1000, tick_hz=1e6, t_clear_s=0.02,
                    idle_pkt_time_s=1e-4, wq_shift=5, limit_pkts=80, n_cap=255, ecn=True,
                    seed_decide=77, hash_key=bytes(range(3, 23)))
    model = Model(Config(build=build))          # reset state, then COMMIT of ``config``
    model.configure(config)
    steps, expected, model = traffic(config, 3000, seed=21, flows=60, model=model)

    class System(wiring.Component):
        def __init__(self):
            self.rf, self.qm = RegisterFile(build), QueueManager(build)
            super().__init__({})
            for name in ("arrivals", "departures", "verdicts", "counters", "n_raw", "avg",
                         "occ_pkts", "occ_bytes", "max_queue"):
                setattr(self, name, getattr(self.qm, name))

        def elaborate(self, platform):
            m = Module()
            m.submodules.rf, m.submodules.qm = rf, qm = self.rf, self.qm
            for name in ("config", "load_rng_decide", "load_rng_clear", "restart", "wipe",
                         "hold", "rate_bank", "rate_we", "rate_addr", "rate_data",
                         "decay_bank", "decay_we", "decay_addr", "decay_data",
                         "counter_clear", "clear_max_queue"):
                m.d.comb += getattr(qm, name).eq(getattr(rf, name))
            for name in ("counters", "n_raw", "n", "avg", "occ_pkts", "occ_bytes",
                         "max_queue", "busy", "idle"):
                m.d.comb += getattr(rf, name).eq(getattr(qm, name))
            return m

    system = System()
    counters_read = {}

    async def bus_configure(ctx, dut, config):
        host = Host(ctx, dut.rf)
        for name, value in config.registers().items():
            await host.write_reg(name, value)
        tabs = {t.name: t for t in tables(build)}
        for i, w in enumerate(config.rate_table()):
            await host.write(tabs["rate_table"].offset + 4 * i, w)
        for i, w in enumerate(config.decay_table()):
            await host.write(tabs["decay_table"].offset + 4 * i, w)
        await host.write(REGS["control"].offset, CONTROL_COMMIT)
        # the commit waits for the wipe out of reset, then v_max changed: a second wipe
        for _ in range(2 * build.vec_bits + 40):
            await ctx.tick()
        assert await host.read(REGS["status"].offset) == 0

    res = run(config, steps, len(expected), dut=system, configure_fn=bus_configure)
    compare(res["verdicts"], expected)
    assert res["counters"] == list(model.counters.values())
