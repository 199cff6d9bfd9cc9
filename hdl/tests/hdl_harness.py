"""Shared test bench for the RTL: drive events into ``QueueManager`` in Amaranth's simulator and
compare every verdict field with the golden model (imported from ``fpq``, never copied).

The queue manager decides from the clock each event is accepted in, counted from its time
base (clock 0 is the clock after ``restart``). The bench presents each step at the clock the
traffic asks for (or as soon after as the port allows), records the clock in which each event
was accepted and every commit's clock, and the golden model replays exactly that record
(``replay``). Traffic is generated with the golden model in the loop (departures take the real
head-of-line packet length), so queues build up, drain and go idle as they would at a router;
where the port takes every event at its asked clock the generator's verdicts are the replay's.
"""

from collections import deque
import random

from amaranth.sim import Simulator

from fpq.bitfields import pack, unpack
from fpq.queue_manager import QueueManager as Model, Arrival, Departure, ENQUEUE, MARK

from fpq_hdl.queue_manager import QueueManager, N_RAW_DELAY, AVG_TELEMETRY_DELAY
from fpq_hdl.layouts import DEPARTURE, VERDICT, config_layout

from tb_lib.blocks.queue_manager import commit_strobes


def run_testbench(dut, bench):
    """Simulate ``dut`` on a 100 MHz clock with the testbench ``bench`` (an async function of
    ``ctx``) until it returns."""
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def clock_through(dut, program, output, setup=None):
    """Simulate ``dut`` one clock per item of ``program`` (``(port, value)`` pairs, set
    before the clock edge; a port is written only when its value changes, which keeps long
    programs fast); returns ``output`` as sampled at every edge. ``setup(ctx)`` runs before
    the first clock (e.g. to preset registers)."""
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    seen = []

    async def bench(ctx):
        if setup is not None:
            setup(ctx)
        last = {}
        for inputs in program:
            for port, value in inputs:
                if last.get(id(port), not value) != value:
                    ctx.set(port, value)
                    last[id(port)] = value
            _, _, value = await ctx.tick().sample(output)
            seen.append(value)
    sim.add_testbench(bench)
    sim.run()
    return seen


async def write_words(ctx, port, words, tick):
    """Write ``words`` at addresses 0, 1, ... through ``port`` = ``(we, addr, data)``, one per
    ``await tick()``; ``we`` low afterwards."""
    we, addr, data = port
    for i, w in enumerate(words):
        ctx.set(we, 1)
        ctx.set(addr, i)
        ctx.set(data, w)
        await tick()
    ctx.set(we, 0)


def traffic(config, n_arrivals, seed, flows=40, p_arr=0.8, dep_fast=0.95, dep_slow=0.7,
            phase=3000, same_flow=0.3, gap_every=20000, gap=(100, 2000), bogus=0.002,
            jump=0.002, jump_clocks=(5, 120), model=None, t0=0, flow_bits=104):
    """Steps ``(clock, departure or None, arrival or None)``, one per clock at most, and the
    model's verdicts for them if each is accepted at its clock (``model``: a golden model to
    continue from, default a fresh one for ``config``; ``t0``: the first clock;
    ``flow_bits``: of the random flow keys, 32 for a build whose descriptors carry a
    hash)."""
    rnd = random.Random(seed)
    model = model or Model(config)
    pool = [rnd.getrandbits(flow_bits) for _ in range(flows)]
    queue = deque()
    steps, expected = [], []
    t, last_flow, n, k = t0 - 1, pool[0], 0, 0

    def step(dep, arr):
        if dep is not None:
            model.depart(dep)
        if arr is not None:
            v = model.arrive(arr)
            expected.append(v)
            if v.action in (ENQUEUE, MARK):
                queue.append(arr.length)
        steps.append((t, dep, arr))

    while n < n_arrivals:
        k += 1
        t += rnd.choice((1, 1, 1, 1, 2, 3))
        if rnd.random() < jump:
            t += rnd.randint(*jump_clocks)
        if k % gap_every == 0:             # drain, then an idle period
            while queue:
                step(Departure(t, queue.popleft()), None)
                t += 1
            t += rnd.randint(*gap)
        if rnd.random() < 0.01:            # flows come and go
            pool[rnd.randrange(flows)] = rnd.getrandbits(flow_bits)
        dep_p = dep_slow if (k // phase) % 2 == 0 else dep_fast
        dep = None
        if queue and rnd.random() < dep_p * p_arr:
            dep = Departure(t, queue.popleft())
        elif rnd.random() < bogus:
            dep = Departure(t, rnd.randint(1, 3000))
        arr = None
        if rnd.random() < p_arr:
            flow = last_flow if rnd.random() < same_flow else rnd.choice(pool)
            last_flow = flow
            arr = Arrival(t, flow, rnd.choice((40, 64, 576, 1500, rnd.randint(1, 65535))),
                          rnd.random() < 0.5)
            n += 1
        if dep is not None or arr is not None:
            step(dep, arr)
    return steps, expected, model


def replay(config, events):
    """The golden model run on a bench's record (accepted events with their clocks, and
    ``("configure", config, ts)`` commits); returns the model and its verdicts."""
    model = Model(config)
    out = []
    for ev in events:
        if type(ev) is Departure:
            model.depart(ev)
        elif type(ev) is Arrival:
            out.append(model.arrive(ev))
        else:
            _, cfg, ts = ev
            model.configure(cfg, ts)
    return model, out


class Bench:
    """Drives ``dut`` from a testbench coroutine: every clock goes through ``tick``, which
    also takes verdicts (the sink's ready from ``ready_pattern(cycle)``) and records what
    the ports accepted. ``now`` is the queue manager's clock (``base`` is the cycle of its
    clock 0)."""

    def __init__(self, ctx, dut, ready_pattern=None):
        self.ctx, self.dut = ctx, dut
        self.ready_pattern = ready_pattern
        self.cycle = 0
        self.base = None
        self.events = []
        self.verdict_words = []
        self.accept_cycles, self.refused_cycles, self.verdict_cycles = [], [], []
        self.arrivals = 0
        self._arr = self._dep = None
        self._ready_on = None
        # the build's arrival layout (its flow is wider in an IPv6 build)
        self._a = {name: f.offset for name, f in dut.arrivals.payload.shape()}
        self._d = {name: f.offset for name, f in DEPARTURE}

    @property
    def now(self):
        return self.cycle - self.base

    def present(self, dep=None, arr=None):
        """Offer a departure and/or an arrival (fields of ``Departure`` / ``Arrival``; their
        ``ts`` is ignored) in the next ``tick``."""
        ctx, dut = self.ctx, self.dut
        self._dep, self._arr = dep, arr
        ctx.set(dut.departures.valid, int(dep is not None))
        if dep is not None:
            ctx.set(dut.departures.payload.as_value(), dep.length << self._d["length"])
        ctx.set(dut.arrivals.valid, int(arr is not None))
        if arr is not None:
            ctx.set(dut.arrivals.payload.as_value(),
                    (arr.flow << self._a["flow"]) | (arr.length << self._a["length"])
                    | (int(arr.ecn) << self._a["ecn"]))

    async def tick(self, count=1):
        """``count`` clocks; returns whether the offered arrival was accepted (in the last)."""
        dut = self.dut
        accepted = False
        for _ in range(count):
            r = 1 if self.ready_pattern is None else int(self.ready_pattern(self.cycle))
            if r != self._ready_on:
                self.ctx.set(dut.verdicts.ready, r)
                self._ready_on = r
            _, _, a_ready, v_valid, v_word = await self.ctx.tick().sample(
                dut.arrivals.ready, dut.verdicts.valid, dut.verdicts.payload.as_value())
            now = self.cycle - self.base if self.base is not None else None
            if self._dep is not None:
                self.events.append(Departure(now, self._dep.length))
                self.present(None, self._arr)     # a departure goes with its first clock
            accepted = False
            if self._arr is not None:
                if a_ready:
                    a = self._arr
                    self.events.append(Arrival(now, a.flow, a.length, a.ecn))
                    self.accept_cycles.append(self.cycle)
                    self.arrivals += 1
                    accepted = True
                    self.present(None, None)
                else:
                    self.refused_cycles.append(self.cycle)
            if v_valid and r:
                self.verdict_words.append(v_word)
                self.verdict_cycles.append(self.cycle)
            self.cycle += 1
        return accepted

    async def drive(self, steps):
        """Present ``steps`` ``(clock, departure, arrival)``, each at its clock or, if the
        port held the previous arrival longer, as soon as it took it."""
        for clock, dep, arr in steps:
            if self.now < clock:
                self.present(None, None)
                await self.tick(clock - self.now)
            self.present(dep, arr)
            while not await self.tick() and self._arr is not None:
                pass

    async def drain(self, extra=40):
        """Clock until every accepted arrival's verdict is out, then ``extra`` clocks."""
        self.present(None, None)
        limit = self.cycle + 100_000
        while len(self.verdict_words) < self.arrivals:
            await self.tick()
            assert self.cycle < limit, f"stuck: {len(self.verdict_words)} of " \
                f"{self.arrivals} verdicts"
        await self.tick(extra)
        assert len(self.verdict_words) == self.arrivals, "a verdict more than arrivals"

    async def configure(self, config):
        """Load the raw registers and the table, then the seeds and the time base: the
        clock after this is clock 0."""
        ctx, dut = self.ctx, self.dut
        ctx.set(dut.config.as_value(), pack(config_layout(config.build), config.registers()))
        for i, w in enumerate(config.rate_table()):
            ctx.set(dut.rate_we, 1)
            ctx.set(dut.rate_addr, i)
            ctx.set(dut.rate_data, w)
            await self.tick()
        ctx.set(dut.rate_we, 0)
        strobes = (dut.load_rng_decide, dut.load_rng_clear, dut.restart)
        for s in strobes:
            ctx.set(s, 1)
        ctx.set(dut.rate_bank, 1)    # the table was written into bank 1: make it active
        await self.tick()
        for s in strobes:
            ctx.set(s, 0)
        self.base = self.cycle

    async def commit(self, old, new):
        """Apply ``new`` with no arrival in the pipeline, as the register file's
        ``CONTROL.COMMIT`` does: a changed table into the inactive bank, then the registers,
        the bank swap and the strobes a wipe (``v_max`` or ``hash_key`` changed), a re-key
        and seed reloads need, in one clock ``ts``; recorded for the model. Returns ``ts``."""
        ctx, dut = self.ctx, self.dut
        self.present(None, None)
        while not ctx.get(dut.idle):
            await self.tick()
        table = new.rate_table()
        swap = table != old.rate_table()
        if swap:
            await write_words(ctx, (dut.rate_we, dut.rate_addr, dut.rate_data), table,
                              self.tick)
        new_r = new.registers()
        strobes = [getattr(dut, s) for s in commit_strobes(old.registers(), new_r, new.build)]
        ctx.set(dut.config.as_value(), pack(config_layout(new.build), new_r))
        if swap:
            ctx.set(dut.rate_bank, 1 - ctx.get(dut.rate_bank))
        for s in strobes:
            ctx.set(s, 1)
        ts = self.now
        self.events.append(("configure", new, ts))
        await self.tick()
        for s in strobes:
            ctx.set(s, 0)
        return ts

    def verdicts(self):
        return [unpack(VERDICT, w) for w in self.verdict_words]

    def telemetry(self):
        """The telemetry ports now, with the clock each field's value belongs to."""
        ctx, dut = self.ctx, self.dut
        return {"clock": self.now, "counters": [ctx.get(c) for c in dut.counters],
                **{k: ctx.get(getattr(dut, k)) for k in
                   ("n_raw", "avg", "occ_pkts", "occ_bytes", "max_queue")}}


def run(config, steps, ready_pattern=None, dut=None, script=None, top=None):
    """Simulate ``steps`` (after ``script(bench, config)``, an async function that may drive
    traffic and commit first; default: configure); returns the ``Bench`` after the drain.
    ``dut`` replaces the bare QueueManager; ``top`` (containing ``dut``) is simulated instead
    of ``dut`` if given."""
    dut = dut or QueueManager(config.build)
    sim = Simulator(top if top is not None else dut)
    sim.add_clock(1e-8)
    result = {}

    async def bench(ctx):
        b = result["bench"] = Bench(ctx, dut, ready_pattern)
        if script is None:
            await b.configure(config)
        else:
            await script(b, config)
        await b.drive(steps)
        await b.drain()
        result["telemetry"] = b.telemetry()

    sim.add_testbench(bench)
    sim.run()
    b = result["bench"]
    b.dut = dut
    b.final = result["telemetry"]
    return b


def compare(verdicts, expected):
    """Assert every field of every verdict equals the model's; names the first mismatch."""
    assert len(verdicts) == len(expected), (len(verdicts), len(expected))
    for i, (got, exp) in enumerate(zip(verdicts, expected)):
        want = {"seq": exp.seq, "action": exp.action, "n": exp.n, "avg": exp.avg,
                "prob": exp.prob}
        if got != want:
            raise AssertionError(f"verdict {i}: RTL {got} != model {want}")


def check_bench(config, bench):
    """The model's replay of ``bench``'s record: every verdict, the counters and the final
    telemetry (each field at the clock it belongs to) equal the RTL's. Returns the model."""
    model, expected = replay(config, bench.events)
    compare(bench.verdicts(), expected)
    tele = bench.final
    assert tele["counters"] == list(model.counters.values())
    for k in ("occ_pkts", "occ_bytes", "max_queue"):
        assert tele[k] == model.snapshot()[k], k
    model.advance(tele["clock"] - AVG_TELEMETRY_DELAY)
    assert tele["avg"] == model.snapshot()["avg"]
    model.advance(tele["clock"] - N_RAW_DELAY)
    assert tele["n_raw"] == model.n_raw
    return model
