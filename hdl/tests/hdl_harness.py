"""Shared test bench for the RTL: drive events into ``QueueManager`` in Amaranth's simulator and
compare every verdict field with the golden model (imported from ``fpq``, never copied).

Traffic is generated with the golden model in the loop (departures take the real head-of-line
packet length), so queues build up, drain and go idle as they would at a router."""

from collections import deque
import random

from amaranth.sim import Simulator

from fpq import Config, Build
from fpq.queue_manager import QueueManager as Model, Arrival, Departure, ENQUEUE, MARK

from fpq_hdl.queue_manager import QueueManager
from fpq_hdl.layouts import ARRIVAL, DEPARTURE, VERDICT, config_layout


def pack(layout, values):
    word = 0
    for name, field in layout:
        v = values[name]
        assert 0 <= v < (1 << field.width), (name, v)
        word |= int(v) << field.offset
    return word


def unpack(layout, word):
    return {name: (word >> f.offset) & ((1 << f.width) - 1) for name, f in layout}


def traffic(config, n_arrivals, seed, flows=40, p_arr=0.8, dep_fast=0.95, dep_slow=0.7,
            phase=3000, same_flow=0.3, gap_every=20000, gap=(100, 2000), bogus=0.002,
            jump=0.002, jump_ticks=(5, 120), model=None, t0=0):
    """Steps ``(departure or None, arrival or None)`` and the model's verdicts for them
    (``model``: a golden model to continue from, default a fresh one for ``config``;
    ``t0``: the first timestamp)."""
    rnd = random.Random(seed)
    model = model or Model(config)
    pool = [rnd.getrandbits(104) for _ in range(flows)]
    queue = deque()
    steps, expected = [], []
    t, last_flow, n, k = t0, pool[0], 0, 0
    while n < n_arrivals:
        k += 1
        t += rnd.choice((0, 1, 1, 1, 2, 3))
        if rnd.random() < jump:
            t += rnd.randint(*jump_ticks)
        if k % gap_every == 0:             # drain, then an idle period
            while queue:
                steps.append((Departure(t, queue.popleft()), None))
                model.depart(steps[-1][0])
                t += 1
            t += rnd.randint(*gap)
        if rnd.random() < 0.01:            # flows come and go
            pool[rnd.randrange(flows)] = rnd.getrandbits(104)
        dep_p = dep_slow if (k // phase) % 2 == 0 else dep_fast
        dep = None
        if queue and rnd.random() < dep_p * p_arr:
            dep = Departure(t, queue.popleft())
        elif rnd.random() < bogus:
            dep = Departure(t, rnd.randint(1, 3000))
        if dep is not None:
            model.depart(dep)
        arr = None
        if rnd.random() < p_arr:
            flow = last_flow if rnd.random() < same_flow else rnd.choice(pool)
            last_flow = flow
            arr = Arrival(t, flow, rnd.choice((40, 64, 576, 1500, rnd.randint(1, 65535))),
                          rnd.random() < 0.5)
            v = model.arrive(arr)
            expected.append(v)
            n += 1
            if v.action in (ENQUEUE, MARK):
                queue.append(arr.length)
        steps.append((dep, arr))
    return steps, expected, model


async def configure(ctx, dut, config):
    """Load the raw registers and both tables, then the seeds and the clear schedule."""
    regs = config.registers()
    layout = config_layout(config.build)
    ctx.set(dut.config.as_value(), pack(layout, regs))
    for i, w in enumerate(config.rate_table()):
        ctx.set(dut.rate_we, 1)
        ctx.set(dut.rate_addr, i)
        ctx.set(dut.rate_data, w)
        await ctx.tick()
    ctx.set(dut.rate_we, 0)
    for i, w in enumerate(config.decay_table()):
        ctx.set(dut.decay_we, 1)
        ctx.set(dut.decay_addr, i)
        ctx.set(dut.decay_data, w)
        await ctx.tick()
    ctx.set(dut.decay_we, 0)
    strobes = (dut.load_rng_decide, dut.load_rng_clear, dut.restart, dut.rate_bank,
               dut.decay_bank)
    for s in strobes:         # the tables were written into bank 1: make it active
        ctx.set(s, 1)
    await ctx.tick()
    for s in strobes[:3]:
        ctx.set(s, 0)


def run(config, steps, n_arrivals, ready_pattern=None, max_cycles=None, result=None,
        dut=None, configure_fn=None, top=None):
    """Simulate; returns a dict with ``verdicts`` (dicts), the cycles (counted from the first
    presented event) ``first_accept`` and ``last_verdict``, ``accept_cycles``,
    ``refused_cycles`` and ``verdict_cycles`` (the cycles, ascending, in which an arrival was
    accepted / presented and not accepted / a verdict was taken) and the DUT. ``dut`` and
    ``configure_fn(ctx, dut, config)`` replace the bare QueueManager and its loading;
    ``top`` (containing ``dut``) is simulated instead of ``dut`` if given."""
    dut = dut or QueueManager(config.build)
    configure_fn = configure_fn or configure
    sim = Simulator(top if top is not None else dut)
    sim.add_clock(1e-8)
    result = {} if result is None else result
    a_off = {name: f.offset for name, f in ARRIVAL}
    d_off = {name: f.offset for name, f in DEPARTURE}
    arr_valid, arr_payload = dut.arrivals.valid, dut.arrivals.payload.as_value()
    dep_valid, dep_payload = dut.departures.valid, dut.departures.payload.as_value()
    v_ready = dut.verdicts.ready
    sample = (dut.arrivals.ready, dut.verdicts.valid, dut.verdicts.payload.as_value())

    async def bench(ctx):
        await configure_fn(ctx, dut, config)
        out = []
        accept_cycles = result["accept_cycles"] = []
        verdict_cycles = result["verdict_cycles"] = []
        refused_cycles = result["refused_cycles"] = []
        idx, cur = 0, None
        dep_on = arr_on = False
        ready_on = None
        cycle = 0
        limit = max_cycles or (len(steps) * 4 + 100_000)
        while len(out) < n_arrivals:
            dep = None
            if cur is None and idx < len(steps):
                dep, cur = steps[idx]
                idx += 1
                if cur is not None:
                    ctx.set(arr_payload, (cur.ts << a_off["ts"]) | (cur.flow << a_off["flow"])
                            | (cur.length << a_off["length"]) | (int(cur.ecn) << a_off["ecn"]))
            if dep is not None:
                ctx.set(dep_payload, (dep.ts << d_off["ts"]) | (dep.length << d_off["length"]))
                if not dep_on:
                    ctx.set(dep_valid, 1)
                    dep_on = True
            elif dep_on:
                ctx.set(dep_valid, 0)
                dep_on = False
            if (cur is not None) != arr_on:
                arr_on = not arr_on
                ctx.set(arr_valid, int(arr_on))
            r = 1 if ready_pattern is None else ready_pattern(cycle)
            if r != ready_on:
                ctx.set(v_ready, r)
                ready_on = r
            _, _, a_ready, v_valid, v_word = await ctx.tick().sample(*sample)
            if cur is not None and a_ready:
                if "first_accept" not in result:
                    result["first_accept"] = cycle
                accept_cycles.append(cycle)
                cur = None
            elif cur is not None:
                refused_cycles.append(cycle)
            if v_valid and r:
                out.append(v_word)
                result["last_verdict"] = cycle
                verdict_cycles.append(cycle)
            cycle += 1
            assert cycle < limit, f"stuck: {len(out)} of {n_arrivals} verdicts"
        ctx.set(arr_valid, 0)
        ctx.set(dep_valid, 0)
        for _ in range(40):      # nothing more may come out
            _, _, _, v_valid, _ = await ctx.tick().sample(*sample)
            assert not v_valid, "a verdict more than arrivals"
        result["verdicts"] = [unpack(VERDICT, w) for w in out]
        result["counters"] = [ctx.get(c) for c in dut.counters]
        result["snapshot"] = {k: ctx.get(getattr(dut, k)) for k in
                              ("n_raw", "avg", "occ_pkts", "occ_bytes", "max_queue")}

    sim.add_testbench(bench)
    sim.run()
    result["dut"] = dut
    return result


def compare(verdicts, expected):
    """Assert every field of every verdict equals the model's; names the first mismatch."""
    assert len(verdicts) == len(expected)
    for i, (got, exp) in enumerate(zip(verdicts, expected)):
        want = {"seq": exp.seq, "action": exp.action, "n": exp.n, "avg": exp.avg,
                "prob": exp.prob}
        if got != want:
            raise AssertionError(f"verdict {i}: RTL {got} != model {want}")


async def commit(ctx, dut, old, new):
    """Apply ``new`` while the pipeline is empty, as the register file's ``CONTROL.COMMIT``
    does (and ``fpq.QueueManager.configure`` in the model): changed tables into the inactive
    bank and a bank swap, the registers in one clock with the strobes a wipe (``v_max``
    or ``hash_key`` changed), a re-key and seed reloads need, one clock with the port held."""
    while not ctx.get(dut.idle):
        await ctx.tick()
    for name, table in (("rate", new.rate_table()), ("decay", new.decay_table())):
        if table == getattr(old, f"{name}_table")():
            continue
        bank = getattr(dut, f"{name}_bank")
        we, addr, data = (getattr(dut, f"{name}_{k}") for k in ("we", "addr", "data"))
        for i, w in enumerate(table):
            ctx.set(we, 1)
            ctx.set(addr, i)
            ctx.set(data, w)
            await ctx.tick()
        ctx.set(we, 0)
        ctx.set(bank, 1 - ctx.get(bank))
    old_r, new_r = old.registers(), new.registers()
    ctx.set(dut.config.as_value(), pack(config_layout(new.build), new_r))
    await ctx.tick()
    rekey = new_r["hash_key"] != old_r["hash_key"]
    strobes = [(dut.wipe, new_r["v_max"] != old_r["v_max"] or rekey), (dut.rekey, rekey),
               (dut.load_rng_decide, new_r["rng_decide_state"] != old_r["rng_decide_state"]),
               (dut.load_rng_clear, new_r["rng_clear_state"] != old_r["rng_clear_state"])]
    for s, on in strobes:
        ctx.set(s, int(on))
    await ctx.tick()
    for s, _ in strobes:
        ctx.set(s, 0)


async def drive(ctx, dut, steps):
    """Present ``steps`` (departure, arrival) in order with the verdict sink always ready,
    without collecting verdicts; returns right after the last arrival's accept."""
    a_off = {name: f.offset for name, f in ARRIVAL}
    d_off = {name: f.offset for name, f in DEPARTURE}
    ctx.set(dut.verdicts.ready, 1)
    for dep, arr in steps:
        ctx.set(dut.departures.valid, int(dep is not None))
        if dep is not None:
            ctx.set(dut.departures.payload.as_value(),
                    (dep.ts << d_off["ts"]) | (dep.length << d_off["length"]))
        if arr is None:
            await ctx.tick()
            ctx.set(dut.departures.valid, 0)
            continue
        ctx.set(dut.arrivals.payload.as_value(),
                (arr.ts << a_off["ts"]) | (arr.flow << a_off["flow"])
                | (arr.length << a_off["length"]) | (int(arr.ecn) << a_off["ecn"]))
        ctx.set(dut.arrivals.valid, 1)
        while True:
            _, _, ready = await ctx.tick().sample(dut.arrivals.ready)
            ctx.set(dut.departures.valid, 0)      # a departure goes with the first clock
            if ready:
                break
        ctx.set(dut.arrivals.valid, 0)
