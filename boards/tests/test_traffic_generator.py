"""Traffic generator alone: arrival rate, flow sets and order, back-pressure, drain and
backlog, register range checks."""

import pytest

from fpq.bitfields import unpack
from fpq.queue_manager import ENQUEUE, MARK, DROP_EARLY
from fpq_hdl.layouts import ARRIVAL
from fpq_boards.traffic_generator import TrafficGenerator, TG_REG, TG_REGISTERS, TG_ID, flow_key

from board_sim import run


async def bus_write(ctx, dut, name, value, settle=True):
    """A write; with ``settle``, the clocks until a read sees it too (``read_latency 2``:
    the write takes effect a clock later)."""
    ctx.set(dut.bus.addr, TG_REG[name].offset)
    ctx.set(dut.bus.w_data, value)
    ctx.set(dut.bus.w_en, 1)
    await ctx.tick()
    ctx.set(dut.bus.w_en, 0)
    for _ in range(dut.read_latency - 1 if settle else 0):
        await ctx.tick()


async def bus_read(ctx, dut, name):
    return await bus_read_at(ctx, dut, TG_REG[name].offset)


async def bus_read_at(ctx, dut, offset):
    ctx.set(dut.bus.addr, offset)
    ctx.set(dut.bus.r_en, 1)
    await ctx.tick()
    ctx.set(dut.bus.r_en, 0)
    for _ in range(dut.read_latency - 1):
        await ctx.tick()
    return ctx.get(dut.bus.r_data)


def generate(settings, clocks, ready=lambda t: True, verdict=None):
    """Run the generator with ``settings`` for ``clocks``; returns (arrivals as (clock,
    payload dict), departures as clocks, register reads at the end). ``ready(t)`` is the
    arrival port's ready at clock t; ``verdict(t)`` an action to return at clock t (or None)."""
    dut = TrafficGenerator()
    arrivals, departures, held = [], [], []
    regs = {}

    async def tb(ctx):
        # out of reset the generator runs: stop it and let its last arrival go
        ctx.set(dut.arrivals.ready, 1)
        await bus_write(ctx, dut, "tg_enable", 0)
        await ctx.tick().repeat(3)
        for name, v in settings.items():
            await bus_write(ctx, dut, name, v)
        sent_before = await bus_read(ctx, dut, "tg_sent")
        await bus_write(ctx, dut, "tg_enable", 1)
        waiting = None            # payload of an arrival offered and not yet taken
        for t in range(clocks):
            r = ready(t)
            ctx.set(dut.arrivals.ready, r)
            action = verdict(t) if verdict else None
            ctx.set(dut.verdicts.valid, action is not None)
            ctx.set(dut.verdicts.payload.action, action or 0)
            valid = ctx.get(dut.arrivals.valid)
            word = ctx.get(dut.arrivals.payload.as_value())
            if valid and waiting is not None and word != waiting:
                held.append(t)
            if valid and r:
                arrivals.append((t, unpack(ARRIVAL, word)))
            waiting = word if (valid and not r) else None
            if ctx.get(dut.departures.valid):
                departures.append(t)
            await ctx.tick()
        ctx.set(dut.verdicts.valid, 0)
        ctx.set(dut.arrivals.ready, 0)
        await bus_write(ctx, dut, "tg_enable", 0)
        for name in TG_REG:
            regs[name] = await bus_read(ctx, dut, name)
        regs["tg_sent"] -= sent_before

    run(dut, tb)
    assert not held, f"arrival payload changed while valid and not ready at {held}"
    return arrivals, departures, regs


@pytest.mark.parametrize("period", [1, 2, 7])
def test_arrival_rate_and_round_robin_flows(period):
    arrivals, _, regs = generate({"tg_arrival_period": period, "tg_flows": 5,
                                  "tg_pattern": 0, "tg_length": 100, "tg_drain_period": 0},
                                 40 * period)
    times = [t for t, _ in arrivals]
    assert all(b - a == period for a, b in zip(times, times[1:]))
    assert len(arrivals) >= 38
    keys = [a["flow"] for _, a in arrivals]
    # round robin continues from wherever it stood: compare up to a rotation
    start = [flow_key(i) for i in range(5)].index(keys[0])
    assert keys == [flow_key((start + i) % 5) for i in range(len(keys))]
    assert all(a["length"] == 100 for _, a in arrivals)
    assert set(arrivals[0][1]) == {"flow", "length", "ecn"}      # no time in the descriptor
    assert all(a["ecn"] == 0 for _, a in arrivals)
    assert regs["tg_sent"] == len(arrivals)
    assert regs["tg_id"] == TG_ID


@pytest.mark.parametrize("flows", [1, 3, 16, 17, 33, 100])   # 17, 33: the mask fills bits 0-3
def test_random_flows_cover_the_set(flows):
    arrivals, _, _ = generate({"tg_arrival_period": 1, "tg_flows": flows, "tg_pattern": 1,
                               "tg_salt": 0x01020304, "tg_drain_period": 0}, 12 * flows + 20)
    keys = {a["flow"] for _, a in arrivals}
    allowed = {flow_key(i, 0x01020304) for i in range(flows)}
    assert keys <= allowed
    assert len(keys) >= min(flows, int(0.9 * flows))   # ~12 draws per flow: nearly all seen


def test_back_pressure_holds_payload_and_counts_stalls():
    pattern = lambda t: (t * 7919) % 5 not in (1, 2)      # ready 60 % of the clocks
    arrivals, _, regs = generate({"tg_arrival_period": 1, "tg_flows": 9, "tg_pattern": 0,
                                  "tg_drain_period": 0}, 200, ready=pattern)
    keys = [a["flow"] for _, a in arrivals]
    start = [flow_key(i) for i in range(9)].index(keys[0])
    assert keys == [flow_key((start + i) % 9) for i in range(len(keys))]   # none skipped
    assert regs["tg_stalls"] > 0
    assert regs["tg_sent"] == len(arrivals)


def test_departures_follow_enqueue_verdicts_only():
    # verdicts: enqueue at clocks 10..19, mark at 20, early drops at 30..39
    def verdict(t):
        if 10 <= t < 20:
            return ENQUEUE
        if t == 20:
            return MARK
        if 30 <= t < 40:
            return DROP_EARLY
        return None
    _, departures, regs = generate({"tg_arrival_period": 50, "tg_drain_period": 3}, 120,
                                   verdict=verdict)
    assert len(departures) == 11                        # 10 enqueued + 1 marked
    assert departures[0] > 10
    assert all(b - a >= 3 for a, b in zip(departures, departures[1:]))
    assert regs["tg_backlog"] == 0


@pytest.mark.parametrize("gap", [0, 1, 37])
def test_time_counts_clocks(gap):
    """``tg_time`` (the monitor's time base for rates) advances by one per clock: two reads
    ``gap + 1`` clocks apart differ by exactly that, and it runs whether the generator is on
    or not."""
    dut = TrafficGenerator()
    seen = []

    async def tb(ctx):
        for enable in (1, 0):
            await bus_write(ctx, dut, "tg_enable", enable)
            first = await bus_read(ctx, dut, "tg_time")
            for _ in range(gap):
                await ctx.tick()
            seen.append((await bus_read(ctx, dut, "tg_time") - first) & 0xFFFFFFFF)

    run(dut, tb)
    assert seen == [gap + 1, gap + 1]


@pytest.mark.parametrize("read_latency", [1, 2])
def test_register_range_checks(read_latency):
    """Each write, then a read as soon as the write has taken effect: the read sees it
    (with read_latency 2 the write is registered once before it takes effect, and a read
    two clocks after the write sees it)."""
    dut = TrafficGenerator(read_latency=read_latency)
    seen = {}

    async def tb(ctx):
        await bus_write(ctx, dut, "tg_arrival_period", 0)       # below range: ignored
        seen["period"] = await bus_read(ctx, dut, "tg_arrival_period")
        seen["status"] = await bus_read(ctx, dut, "tg_status")
        await bus_write(ctx, dut, "tg_status", 0)                # clears BAD_WRITE
        seen["cleared"] = await bus_read(ctx, dut, "tg_status")
        await bus_write(ctx, dut, "tg_flows", 65537)             # above range
        seen["flows"] = await bus_read(ctx, dut, "tg_flows")
        await bus_write(ctx, dut, "tg_flows", 65536)
        seen["flows_max"] = await bus_read(ctx, dut, "tg_flows")
        await bus_write(ctx, dut, "tg_sent", 5)                  # read-only
        seen["sent_status"] = await bus_read(ctx, dut, "tg_status")

    run(dut, tb)
    assert seen == {"period": TG_REG["tg_arrival_period"].reset, "status": 1, "cleared": 0,
                    "flows": TG_REG["tg_flows"].reset, "flows_max": 65536, "sent_status": 1}


@pytest.mark.parametrize("optimise, read_latency", [("speed", 2), ("area", 1)])
def test_every_writable_register_takes_its_bounds_and_refuses_beyond(optimise, read_latency):
    """Each read-write register: its ``lo`` and ``hi`` are taken, ``lo - 1`` and ``hi + 1``
    (where they fit in 32 bits, and bits above the register's width) are refused with
    ``BAD_WRITE`` and leave the value as it was; with both styles of range check."""
    dut = TrafficGenerator(optimise, read_latency=read_latency)
    bad = []

    async def tb(ctx):
        await bus_write(ctx, dut, "tg_enable", 0)
        for r in TG_REGISTERS:
            if r.access != "rw":
                continue
            for v in (r.lo, r.hi):
                await bus_write(ctx, dut, r.name, v)
                if (await bus_read(ctx, dut, r.name), await bus_read(ctx, dut, "tg_status")) \
                        != (v, 0):
                    bad.append((r.name, v, "refused"))
            refused = [v for v in (r.lo - 1, r.hi + 1, 1 << r.width, 0x80000000 | r.lo)
                       if 0 <= v <= 0xFFFFFFFF and not r.lo <= v <= r.hi]
            for v in refused:
                await bus_write(ctx, dut, r.name, v)
                if (await bus_read(ctx, dut, r.name), await bus_read(ctx, dut, "tg_status")) \
                        != (r.hi, 1):
                    bad.append((r.name, v, "taken"))
                await bus_write(ctx, dut, "tg_status", 0)

    run(dut, tb)
    assert not bad


@pytest.mark.parametrize("read_latency", [1, 2])
def test_reads_return_each_word_and_0_where_none_is_mapped(read_latency):
    """A read of every word address the generator decodes (``TG_SIZE`` bytes): the mapped
    words read their reset values (``tg_id`` its constant), every other address 0, including
    those above the 16 words."""
    from fpq_boards.traffic_generator import TG_BASE, TG_SIZE
    dut = TrafficGenerator(read_latency=read_latency)
    seen = {}
    by_offset = {r.offset: r for r in TG_REGISTERS}
    # counting registers move while the generator runs: read with it stopped, from reset
    moving = {"tg_sent", "tg_stalls", "tg_time", "tg_backlog"}

    async def tb(ctx):
        await bus_write(ctx, dut, "tg_enable", 0)
        for offset in range(TG_BASE, TG_BASE + TG_SIZE, 4):
            seen[offset] = await bus_read_at(ctx, dut, offset)

    run(dut, tb)
    assert len(seen) == TG_SIZE // 4 > 16
    for offset, value in seen.items():
        r = by_offset.get(offset)
        if r is None:
            assert value == 0, hex(offset)
        elif r.name not in moving:
            want = 0 if r.name == "tg_enable" else r.reset
            assert value == want, (r.name, value, want)
    assert seen[TG_REG["tg_id"].offset] == TG_ID
