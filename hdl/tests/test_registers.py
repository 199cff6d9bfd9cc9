"""RegisterFile against fpq.regmap: addresses, defaults, shadow/commit semantics, range
checks (check_registers), counters, tables, error bits."""
import random

import pytest
from amaranth.sim import Simulator

from fpq import Build, Config
from fpq.regmap import (registers, tables, check_registers, ID_VALUE, CONTROL_COMMIT,
                        CONTROL_CLEAR_ERRORS, STATUS_BITS, STATUS_REJECT_INDEX_SHIFT)
from fpq.queue_manager import COUNTERS
from fpq_hdl.registers import RegisterFile
from amaranth import Module
from amaranth.lib import wiring

BUILD = Build(table_depth=64)
REGS = {r.name: r for r in registers(BUILD)}
INDEX = {r.name: i for i, r in enumerate(registers(BUILD))}
REJECTED = 1 << STATUS_BITS["COMMIT_REJECTED"]
BAD_WRITE = 1 << STATUS_BITS["BAD_WRITE"]


class Host:
    def __init__(self, ctx, dut):
        self.ctx, self.dut = ctx, dut
        self.regs = {r.name: r for r in dut.regs}

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
        for _ in range(self.dut.read_latency - 1):
            await c.tick()
        return c.get(b.r_data)

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
        for _ in range(4):
            await self.ctx.tick()

    def active(self):
        return {name: self.ctx.get(self.dut.config[name]) for name in self.dut.config.shape().members}


def simulate(bench, build=BUILD, const_rom=False, read_latency=1):
    dut = RegisterFile(build, const_rom=const_rom, read_latency=read_latency)
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


def test_commit_of_a_new_hash_key_pulses_wipe_and_rekey_once():
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
    from fpq.queue_manager import QueueManager as Model
    from .hdl_harness import traffic, run, compare

    build = Build(vec_bits=1024, table_depth=256)
    config = Config(build=build, mode="fpq", v_max=1000, tick_hz=1e6, t_clear_s=0.02,
                    idle_pkt_time_s=1e-4, wq_shift=5, limit_pkts=80, n_cap=255, ecn=True,
                    seed_decide=77, hash_key=bytes(range(3, 23)))
    model = Model(Config(build=build))          # reset state, then COMMIT of ``config``
    model.configure(config)
    steps, expected, model = traffic(config, 3000, seed=21, flows=60, model=model)

    system = System(build)
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


def test_value_wider_than_its_register_is_refused_and_rejects_every_commit():
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
                    status = await host.read(REGS["status"].offset)
                    assert status == (REJECTED | BAD_WRITE | want << STATUS_REJECT_INDEX_SHIFT), \
                        (r.name, hex(status))
                    assert host.active() == before
                await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
                await host.commit()                            # CLEAR_ERRORS is not a fix
                assert await host.read(REGS["status"].offset) >> STATUS_REJECT_INDEX_SHIFT == \
                    INDEX[r.name]
                await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
            await host.write(top, values[r.name] >> shift)     # fits: accepted again
            await host.commit()
            assert await host.read(REGS["status"].offset) == 0, r.name
            assert host.active() == before
    simulate(bench)


def test_random_register_writes_and_commits_follow_check_registers():
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
            status = await host.read(REGS["status"].offset)
            await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
            if want is None:
                active = {k: written[k] for k in active}
                assert status & (REJECTED | 0xFF << STATUS_REJECT_INDEX_SHIFT) == 0
            else:
                assert status & REJECTED and status >> STATUS_REJECT_INDEX_SHIFT == want
            assert host.active() == active
            for r in rnd.sample(CONFIG_REGS, 2):       # reads return the shadow
                if written[r.name] >> r.width == 0:
                    assert await host.read_reg(r.name) == written[r.name], r.name
            outcomes.add(want is None)
            if rnd.random() < 0.3:                     # back to a good configuration
                good = Config(build=BUILD, wq_shift=rnd.randint(0, 16)).registers()
                for name, v in good.items():
                    await host.write_reg(name, v)
                written = dict(good)
        assert outcomes == {True, False}
    simulate(bench)


def test_read_only_undefined_and_control_writes():
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
                    assert ctx.get(dut.decay_we) == 0
                    status = await host.read(REGS["status"].offset)
                    assert status == BAD_WRITE, (r.name, hex(status))
                    await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
        assert {r.name: await host.read_reg(r.name) for r in READ_ONLY} == ro_before
        for w in unmapped:
            assert await host.read(4 * w) == 0, hex(4 * w)
            clear, cmq, we = await host.write(4 * w + (w & 3), 0xFFFFFFFF)   # low bits ignored
            assert (clear, cmq, we) == (0, 0, 0)
            assert await host.read(REGS["status"].offset) == BAD_WRITE, hex(4 * w)
            await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
        assert await host.read(REGS["control"].offset) == 0
        assert await host.read(tabs[0].offset) == 0 and await host.read(tabs[1].offset) == 0
        # control: an undefined bit makes the whole write void (no commit, no clear)
        await host.write_reg("wq_shift", 3)
        await host.write(REGS["control"].offset, CONTROL_COMMIT | 1 << 7)
        for _ in range(4):
            await ctx.tick()
        assert host.active() == active
        status = await host.read(REGS["status"].offset)
        assert status == BAD_WRITE
        await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS | 1 << 31)
        assert await host.read(REGS["status"].offset) == BAD_WRITE
        await host.commit()
        assert host.active() == dict(active, wq_shift=3)
    simulate(bench)


def test_commits_while_traffic_flows_apply_between_two_arrivals():
    """Arrivals on every clock the port takes them, with departures; meanwhile the host writes
    shadows and tables over the bus and commits three times (registers only; the r(N) table
    and a seed; v_max with a wipe, the decay table and the clear period). Every verdict equals
    the golden model's with ``configure`` placed between the two arrivals around each commit
    (the split taken from the RTL's accepts): none used half-old, half-new parameters."""
    from fpq.queue_manager import QueueManager as Model
    from fpq_hdl.layouts import ARRIVAL, DEPARTURE, VERDICT
    from .hdl_harness import traffic, unpack, compare

    build = Build(vec_bits=256, table_depth=64)
    c0 = Config(build=build, mode="fpq", v_max=200, tick_hz=1e6, t_clear_s=0.002,
                idle_pkt_time_s=1e-4, wq_shift=3, limit_pkts=60, n_cap=63, p_pkts=8.0)
    configs = [c0,
               c0.replace(mode="red", red_max_p=0.3, red_min_th=1, red_max_th=6, wq_shift=2,
                          ecn=True),
               c0.replace(mode="fpq", p_pkts=3.0, seed_decide=5, n_cap=40, ecn=True),
               c0.replace(v_max=100, t_clear_s=0.0005, idle_pkt_time_s=1e-5, limit_pkts=20,
                          seed_clear=9)]
    at = [200, 500, 800]                        # writes start after this many arrivals
    n_arr = 1300
    steps, _, _ = traffic(c0, n_arr, seed=44, flows=80, same_flow=0.1)
    system = System(build)
    rf, qm = system.rf, system.qm
    tabs = {t.name: t for t in tables(build)}
    state = {"loaded": False, "accepts": 0, "splits": [], "verdicts": []}

    async def write_config(host, new, old):
        for name, value in new.registers().items():
            await host.write_reg(name, value)
        for tname, get in (("rate_table", Config.rate_table), ("decay_table",
                                                               Config.decay_table)):
            if old is None or get(new) != get(old):
                for i, w in enumerate(get(new)):
                    await host.write(tabs[tname].offset + 4 * i, w)

    async def host_tb(ctx):
        host = Host(ctx, rf)
        await write_config(host, c0, None)
        await host.write(REGS["control"].offset, CONTROL_COMMIT)
        for _ in range(2 * build.vec_bits + 40):
            await ctx.tick()
        assert await host.read(REGS["status"].offset) == 0
        state["loaded"] = True
        for j, (k, old, new) in enumerate(zip(at, configs, configs[1:])):
            while state["accepts"] < k:
                await ctx.tick()
            await write_config(host, new, old)          # arrivals keep flowing meanwhile
            await host.write(REGS["control"].offset, CONTROL_COMMIT)
            while len(state["splits"]) <= j:
                await ctx.tick()
            assert await host.read(REGS["status"].offset) & REJECTED == 0

    async def traffic_tb(ctx):
        a_off = {name: f.offset for name, f in ARRIVAL}
        d_off = {name: f.offset for name, f in DEPARTURE}
        ctx.set(qm.verdicts.ready, 1)
        while not state["loaded"]:
            await ctx.tick()
        idx, cur = 0, None
        last_cfg = ctx.get(rf.config.as_value())
        for _ in range(200_000):
            if len(state["verdicts"]) == n_arr:
                break
            dep = None
            if cur is None and idx < len(steps):
                dep, cur = steps[idx]
                idx += 1
                if cur is not None:
                    ctx.set(qm.arrivals.payload.as_value(),
                            (cur.ts << a_off["ts"]) | (cur.flow << a_off["flow"])
                            | (cur.length << a_off["length"]) | (int(cur.ecn) << a_off["ecn"]))
            if dep is not None:
                ctx.set(qm.departures.payload.as_value(),
                        (dep.ts << d_off["ts"]) | (dep.length << d_off["length"]))
            ctx.set(qm.departures.valid, int(dep is not None))
            ctx.set(qm.arrivals.valid, int(cur is not None))
            _, _, a_ready, v_valid, v_word, cfg = await ctx.tick().sample(
                qm.arrivals.ready, qm.verdicts.valid, qm.verdicts.payload.as_value(),
                rf.config.as_value())
            if cfg != last_cfg:
                state["splits"].append(state["accepts"])
                last_cfg = cfg
            if cur is not None and a_ready:
                state["accepts"] += 1
                cur = None
            if v_valid:
                state["verdicts"].append(unpack(VERDICT, v_word))
        ctx.set(qm.arrivals.valid, 0)

    sim = Simulator(system)
    sim.add_clock(1e-8)
    sim.add_testbench(host_tb)
    sim.add_testbench(traffic_tb)
    sim.run()

    splits = state["splits"]
    # the shadow and table writes took a few hundred clocks of traffic after ``at``
    assert len(splits) == 3 and all(k < s for k, s in zip(at, splits)), splits
    assert splits == sorted(splits) and splits[-1] < n_arr - 20, splits
    model = Model(Config(build=build))
    model.configure(c0)
    expected, n, nxt = [], 0, 1
    for dep, arr in steps:
        if dep is not None:
            model.depart(dep)
        if arr is not None:
            if nxt < len(configs) and n == splits[nxt - 1]:
                model.configure(configs[nxt])
                nxt += 1
            expected.append(model.arrive(arr))
            n += 1
    compare(state["verdicts"], expected[:n_arr])


def test_fixed_registers_read_their_value_refuse_writes_and_stay_out_of_commits():
    """A build that fixes fields: their registers are constants on the config port, read back
    the build's value, a write sets BAD_WRITE and changes nothing, and commits neither
    reject nor change them (not even a key or seed write: no re-key, no reload)."""
    build = Build(table_depth=64, fixed={"wq_shift": 3, "hash_key": bytes(range(20)),
                                         "seed_decide": 5, "red_min_th": 2.0})
    raw = Config(build=build).registers()
    fixed = [r for r in registers(build) if r.kind == "fixed"]
    assert {r.name for r in fixed} == {"wq_shift", "hash_key", "rng_decide_state",
                                       "red_min_th"}

    async def bench(ctx, dut, host):
        for _ in range(3):
            await ctx.tick()
        assert host.active() == raw
        for r in fixed:
            assert await host.read_reg(r.name) == raw[r.name], r.name
            await host.write_reg(r.name, raw[r.name] ^ 1)
            assert await host.read(REGS["status"].offset) & BAD_WRITE, r.name
            await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
            assert await host.read_reg(r.name) == raw[r.name], r.name
        # red_max_th is checked against the fixed red_min_th (2.0): 2.5 is rejected, 3.0 not
        await host.write_reg("red_max_th", int(2.5 * 65536))
        await host.commit()
        status = await host.read(REGS["status"].offset)
        assert status & REJECTED and status >> STATUS_REJECT_INDEX_SHIFT == \
            INDEX["red_max_th"]
        await host.write(REGS["control"].offset, CONTROL_CLEAR_ERRORS)
        await host.write_reg("red_max_th", 3 << 16)
        await host.write_reg("mode", 1)
        strobes = set()
        await host.write(REGS["control"].offset, CONTROL_COMMIT)
        for _ in range(4):
            for name in ("wipe", "rekey", "load_rng_decide", "load_rng_clear"):
                if ctx.get(getattr(dut, name)):
                    strobes.add(name)
            await ctx.tick()
        assert not await host.read(REGS["status"].offset) & (REJECTED | BAD_WRITE)
        assert host.active() == dict(raw, red_max_th=3 << 16, mode=1)
        assert strobes == set()
    simulate(bench, build)


def read_every_word(build, const_rom, counters, read_latency=1):
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
    simulate(bench, build, const_rom, read_latency)
    return got


def test_two_stage_read_reads_every_word_as_one_stage():
    """``read_latency=2``: every word (shadows, counters, telemetry, status, constants,
    unmapped and table addresses) reads the same as with one stage, a clock later."""
    build = Build(vec_bits=1024, table_depth=64, fixed={"wq_shift": 5})
    rng = random.Random(6)
    counters = [rng.getrandbits(64) for _ in range(7)]
    want = read_every_word(build, False, counters)
    got = read_every_word(build, False, counters, read_latency=2)
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


def test_constant_words_from_a_rom_read_as_from_the_multiplexer():
    """``const_rom``: the constant words (id, build, the registers the build fixes) come from
    a ROM; every word reads the same as without it, in the same clock, back to back with live
    words (counters, shadows, status) and unmapped ones."""
    build = Build(vec_bits=1024, table_depth=64,
                  fixed={"wq_shift": 5, "mode": "red", "hash_key": bytes(range(20)),
                         "seed_clear": 7, "t_clear_s": 0.25, "red_max_p": 0.3})
    rng = random.Random(5)
    counters = [rng.getrandbits(64) for _ in range(7)]
    want = read_every_word(build, False, counters)
    got = read_every_word(build, True, counters)
    assert got == want
    fixed = {r.name for r in registers(build) if r.kind == "fixed"}
    assert {"wq_shift", "hash_key", "mode"} <= fixed
    # the ROM's words are not all zero, and it answers only for them
    hk = REGS["hash_key"]
    assert got[registers(build)[0].offset] == ID_VALUE
    assert any(got[hk.offset + 4 * w] for w in range(hk.words))
