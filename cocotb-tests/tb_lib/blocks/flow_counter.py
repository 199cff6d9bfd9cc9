"""``fpq_hdl.flow_counter.FlowCounter`` against the golden model
``fpq.flow_counter.FlowCounter`` (imported).

Each clock is a slot of the queue manager's pipeline: it may hold a clear (the ``clear``
strobe, at the slot's cycle 0), an arrival (its vector index on ``set_index`` ``set_delay``
clocks later), a wipe, or nothing. The model is driven through its own interface: its clear
schedule runs on a clock that counts the clear strobes (``clear_period`` one clock of that
clock: ``advance(k)`` after the k-th strobe applies exactly that clear), then ``set(h)`` for
the slot's arrival; ``wipe()``, ``configure(v_max, ...)`` and ``rng.load`` for the strobes.
So the bench presents any pattern of clears (every clock, none for a while, bursts), not only
a periodic one: the block does not know the period (a ``PeriodicTimer`` in the top does).

Checked: ``n_raw`` is N after the slot ``set_delay + LATENCY`` clocks before (clears-only
and empty slots included), ``over`` is ``n_raw > n_cap`` with the cap the port showed two
clocks before (a register beside ``n_raw``, from a register of the cap), ``n_next`` is the
next clock's ``n_raw``, and ``busy`` is high exactly in the ``vec_bits + 2`` clocks after a
wipe's slot, ``vec_bits + 3`` out of reset (no arrival is presented then, as the top's port
refuses them).

Script items: ``("config", regs[, wait])`` after reset (raw registers, as
``Config.registers()``): with ``wait`` (default) the wipe out of reset waited for, then a
slot with a ``load_rng`` strobe; without, that slot is clock 0 and the slots from it run
through the wipe; ``("slots", [(clear, hash or None), ...])``; ``("clocks", [(clear, hash or
None, wipe, regs or None, load), ...])`` (any strobes in any slot); ``("commit", regs[,
clear])`` (a slot with the new registers and the strobes a register-file commit gives:
``wipe`` if ``v_max`` changed, ``load_rng`` if the clear seed changed); ``("wipe", clear)``
(a ``wipe`` strobe alone); ``("reset", regs, slots)`` (``slots`` presented, then reset with
them in the pipeline: a fresh model). Plan option ``record``: keep N after every slot in
``rows``."""

import bisect
import copy
import random
from collections import deque

from fpq import Config
from fpq.bitfields import pack
from fpq.flow_counter import FlowCounter as Model
from fpq.flow_hash import reduce_index
from fpq.random_source import XorShift128

from fpq_hdl.flow_counter import FlowCounter

from ..bench import Bench
from ..stimulus import t_clear_s

__all__ = ["FlowCounterBench", "OUTPUTS", "Slots", "regs", "mode_script", "rewrite_script",
           "arrivals", "scheduled_clocks"]

OUTPUTS = ("n_raw", "n_next", "over", "busy")
#: the model's clear period: one clock of its clock, which counts clear strobes
ONE = 1 << 16


def _peek(rng):
    """The next number of a copy of the model's clear generator (coverage only)."""
    c = XorShift128.__new__(XorShift128)
    c.x, c.y, c.z, c.w, c._buf, c._pos = rng.x, rng.y, rng.z, rng.w, rng._buf, rng._pos
    return c.next()


class FlowCounterBench(Bench):
    INPUTS = ("clear", "wipe", "load_rng", "set_valid", "set_index")
    PREFIX = "flow counter: "

    def __init__(self, sim, plan):
        super().__init__(sim, plan)
        self.build, self.delay = plan["build"], plan["set_delay"]
        self.vec_bits = self.build.vec_bits
        self.regs = self.model = None
        self.clears = 0                      # the model's clock: clear strobes so far
        self.busy = (0, -1)                  # the first and the last clock busy is high
        self.sets = deque()                  # (clock, index) for set_index
        self.recent = deque(maxlen=2)        # (clock, set index or None, clear index or None)
        self.caps = ([-1], [0])              # clocks from which the port shows each n_cap

    def cap_at(self, clock):
        clocks, caps = self.caps
        return caps[bisect.bisect_right(clocks, clock) - 1]

    def write_regs(self, regs):
        self.set("config", pack_config(self.build, regs))
        self.caps[0].append(self.cycle)
        self.caps[1].append(regs["n_cap"])

    # ---- one slot ----------------------------------------------------------------------------
    def _model_slot(self, clear, h, wipe=False, regs=None, load=False):
        """The model's view of a slot at ``self.cycle``: returns (set index, clear index)."""
        m = self.model
        if regs is not None:
            m.configure(regs["v_max"], ONE, self.cycle)  # wipes if v_max changed
            self.regs = regs
        if wipe:
            m.wipe()
        if load:
            m.rng.load(self.regs["rng_clear_state"])
        cidx = None
        if clear:
            cidx = reduce_index(_peek(m.rng), m.v_max)
            self.clears += 1
            m.advance(self.clears)
        idx = m.set(h) if h is not None else None
        return idx, cidx

    async def slot(self, clear=False, h=None, wipe=False, regs=None, load=False):
        """One clock: the slot's strobes and arrival (its index follows ``set_delay`` clocks
        later), the model's N expected ``set_delay + LATENCY`` clocks later."""
        cyc, vb = self.cycle, self.vec_bits
        if h is not None and self.busy[0] <= cyc <= self.busy[1]:
            raise AssertionError(f"bench: an arrival at clock {cyc} during a wipe")
        if regs is not None:
            self.write_regs(regs)
        idx, cidx = self._model_slot(clear, h, wipe, regs, load)
        self.set("clear", int(clear))
        self.set("wipe", int(wipe))
        self.set("load_rng", int(load))
        if idx is not None:
            self.sets.append((cyc + self.delay, idx))
        if wipe:
            self.busy = (cyc + 1, cyc + vb + 2)
        self.expect_n(self.model.n_raw)
        self.expect(0, f"clock {cyc} (a wipe keeps busy high the {vb + 2} clocks after its "
                       f"slot)", False, busy=int(self.busy[0] <= cyc <= self.busy[1]))
        self._coverage(cyc, idx, cidx, clear, wipe, load)
        if self.sets and self.sets[0][0] == cyc:
            self.set("set_valid", 1)
            self.set("set_index", self.sets.popleft()[1])
        else:
            self.set("set_valid", 0)
        await self.tick()

    def expect_n(self, n):
        d, cyc = self.delay + FlowCounter.LATENCY, self.cycle
        self.expect(d, f"clock {cyc + d} (N after the slot of clock {cyc})", n_raw=n,
                    over=lambda: int(n > self.cap_at(cyc + d - 2)))
        self.expect(d - 1, f"clock {cyc + d - 1} (the next clock's n_raw)", False, n_next=n)
        self.hit("n_raw over n_cap" if n > self.regs["n_cap"] else "n_raw within n_cap")
        self.record(n)

    def _coverage(self, cyc, idx, cidx, clear, wipe, load):
        hit = self.hit
        if clear and idx is not None:
            hit("clear and set in one slot")
            if cidx == idx:
                hit("clear and set of the same index in one slot")
        if clear and cyc <= self.busy[1] and not wipe:
            hit("clear during a wipe (draws, clears nothing)")
        if clear and load:
            hit("clear in the clock of a reseed (the new seed's first number)")
        for c, pidx, pcidx in self.recent:
            d = cyc - c
            if idx is not None and pidx == idx:
                hit(f"set of the index set {d} clock(s) earlier (forwarding)")
            if cidx is not None and pidx == cidx:
                hit(f"clear of the index set {d} clock(s) earlier")
            if idx is not None and pcidx == idx:
                hit(f"set of the index cleared {d} clock(s) earlier")
            if cidx is not None and pcidx == cidx:
                hit(f"clear of the index cleared {d} clock(s) earlier")
        self.recent.append((cyc, idx, cidx))

    async def finish(self):
        """Empty slots until every slot presented so far has been checked."""
        for _ in range(self.delay + FlowCounter.LATENCY + 1):
            await self.slot()
        self.expected.drop()

    # ---- script items ------------------------------------------------------------------------
    async def do_config(self, regs, wait=True):
        """Out of reset the vector is wiped (busy from the first clock, ``vec_bits + 3``
        clocks): waited for, or run through; then the registers and a generator load."""
        self.write_regs(regs)
        if wait:
            n = 0
            while True:
                await self.tick()
                n += 1
                if not self.get("busy"):
                    break
            if n - 1 != self.vec_bits + 3:
                raise AssertionError(f"busy out of reset for {n - 1} clocks, want "
                                     f"{self.vec_bits + 3}")
            self.busy = (0, -1)
        else:
            self.busy = (self.cycle, self.cycle + self.vec_bits + 2)
            # before the first slot's N shows: n_raw 0, never over
            for c in range(self.delay + FlowCounter.LATENCY):
                self.expect(c, f"clock {self.cycle + c} (out of reset)", False, over=0,
                            **({"n_next": 0} if c < self.delay + FlowCounter.LATENCY - 1
                               else {}))
        self.model = Model(self.vec_bits, regs["v_max"], ONE, regs["rng_clear_state"])
        self.regs = regs
        self.clears = 0
        await self.slot(load=True)

    async def do_slots(self, slots):
        n_clear = n_set = 0
        for clear, h in slots:
            await self.slot(clear, h)
            n_clear += clear
            n_set += h is not None
        self.hit("clears", n_clear)
        self.hit("arrivals", n_set)
        self.hit("slots without an arrival", len(slots) - n_set)

    async def do_clocks(self, clocks):
        for clear, h, wipe, regs, load in clocks:
            await self.slot(clear, h, wipe, regs, load)

    async def do_commit(self, regs, clear=False):
        old = self.regs
        wipe = regs["v_max"] != old["v_max"]
        load = regs["rng_clear_state"] != old["rng_clear_state"]
        if wipe:
            self.hit("v_max rewritten (wipe)")
        if load:
            self.hit("clear generator reseeded")
        await self.slot(clear=clear, wipe=wipe, regs=regs, load=load)

    async def do_wipe(self, clear):
        await self.slot(clear=clear, wipe=True)
        self.hit("wipe strobe")

    async def do_reset(self, regs, inflight):
        for clear, h in inflight:
            await self.slot(clear, h)
        self.sets.clear()
        self.recent.clear()
        await self.reset()
        await self.do_config(regs)
        self.hit("reset mid-stream (slots in flight)")


def pack_config(build, regs):
    from fpq_hdl.layouts import config_layout
    return pack(config_layout(build), regs)


# ---- stimulus --------------------------------------------------------------------------------
def regs(build, v_max, seed_clear=2):
    """Raw registers with ``v_max`` bits (the block uses ``v_max`` and the clear seed)."""
    return Config(build=build, tick_hz=1e6, v_max=v_max, t_clear_s=t_clear_s(2, v_max),
                  seed_clear=seed_clear, n_cap=build.table_depth - 1).registers()


class Slots:
    """Slot patterns: ``(clear, hash or None)`` per clock."""

    def __init__(self, seed):
        self.rnd = random.Random(seed)

    def same_index(self, n):
        """A clear in every clock and an arrival in every clock: one flow, then two
        alternating, then a pool of 8 with repeats."""
        rnd = self.rnd
        a, b = rnd.getrandbits(32), rnd.getrandbits(32)
        pool = [rnd.getrandbits(32) for _ in range(8)]
        return [(True, a if k < n // 3 else (a, b)[k & 1] if k < 2 * n // 3 else
                 (rnd.choice(pool) if rnd.random() < 0.5 else a)) for k in range(n)]

    def random(self, n, p_clear=0.6, p_arr=0.7, flows=150, burst=0.02):
        """Random clears and arrivals from ``flows`` flows (repeats), with bursts of empty
        slots."""
        rnd = self.rnd
        pool = [rnd.getrandbits(32) for _ in range(flows)]
        out, h = [], pool[0]
        k = 0
        while k < n:
            if rnd.random() < burst:
                quiet = rnd.randint(3, 40)
                out += [(rnd.random() < p_clear, None)] * quiet
                k += quiet
                continue
            if rnd.random() >= 0.3:
                h = rnd.choice(pool)
            out.append((rnd.random() < p_clear, h if rnd.random() < p_arr else None))
            k += 1
        return out

    def quiet(self, n):
        """No clear and no arrival: before a v_max commit, so that no slot is in flight
        across it (the top commits with no arrival in the pipeline)."""
        return [(False, None)] * n


def mode_script(build, delay, n, seed=1):
    """A clear in every clock with one index streaming, two alternating, a pool of 8; v_max
    8 (a clear and a set of one bit in one slot); random clear and arrival patterns with
    quiet bursts."""
    sl = Slots(seed)
    v = min(5000, build.vec_bits)
    r0, r1, r2 = regs(build, v), regs(build, 8), regs(build, build.vec_bits)
    wipe_wait = [(True, None)] * (build.vec_bits + 2)            # clears during the wipe
    return [("config", r0), ("slots", sl.same_index(n)),
            ("slots", sl.quiet(delay)), ("commit", r1, True), ("slots", wipe_wait),
            ("slots", sl.same_index(n // 2)),
            ("slots", sl.quiet(delay)), ("commit", r2), ("slots", wipe_wait),
            ("slots", sl.random(n)), ("slots", sl.random(n, p_clear=0.95, flows=20)),
            ("slots", sl.random(n, p_clear=0.1, p_arr=0.95, flows=3000))]


def rewrite_script(build, delay, n, seed=7):
    """Commits of the clear seed (a clear in the reload's clock draws the new seed's first
    number), of v_max (wipe); wipe strobes alone (with and without a clear in their slot,
    clears during the wipe); a reset with slots in flight."""
    sl = Slots(seed)
    v = min(300, build.vec_bits)
    ra, rb, rc = regs(build, v), regs(build, v, seed_clear=99), regs(build, 40, seed_clear=99)
    wipe_wait = [(True, None)] * (build.vec_bits + 2)
    return [("config", ra), ("slots", sl.random(n, flows=400)),
            ("commit", rb, True), ("slots", sl.random(n)),
            ("commit", ra, False), ("slots", sl.same_index(n // 2)),
            ("wipe", True), ("slots", wipe_wait), ("slots", sl.random(n)),
            ("wipe", False), ("slots", [(False, None)] * (build.vec_bits + 2)),
            ("slots", sl.random(n // 2)),
            ("slots", sl.quiet(delay)), ("commit", rc, True), ("slots", wipe_wait),
            ("slots", sl.random(n, flows=60)),
            ("reset", ra, sl.same_index(12)), ("slots", sl.random(n))]


def arrivals(seed, flows, p=0.8, repeat=0.3):
    """``arrive(t)``: an arrival's hash in a fraction ``p`` of clocks, the previous flow again
    with ``repeat``."""
    rnd = random.Random(seed)
    pool = [rnd.getrandbits(32) for _ in range(flows)]
    last = [pool[0]]

    def arrive(t):
        if rnd.random() >= p:
            return None
        if rnd.random() >= repeat:
            last[0] = rnd.choice(pool)
        return last[0]
    return arrive


def scheduled_clocks(config, clocks, arrive, wipes=(), seeds=None, v_maxes=None, period=None,
                     caps=None):
    """The clears of the model's own schedule, clock by clock from reset (clock 0 is the
    ``config`` slot, no wait). ``arrive(t)``: the arrival's hash in clock t or None (asked
    only in clocks where the port is not busy); ``wipes``: clocks of a ``wipe`` strobe (a
    re-key's); ``seeds``: clock -> new ``rng_clear_state`` (loaded in that clock);
    ``v_maxes``: clock -> new ``v_max`` (a commit: wipe and new registers in that clock);
    ``period``: clock -> new clear period; ``caps``: clock -> new ``n_cap``. Returns the
    script, the model's N after each slot, coverage counts and the model."""
    regs0 = config.registers()
    vb = config.build.vec_bits
    model = Model(vb, regs0["v_max"], regs0["clear_period"], regs0["rng_clear_state"])
    seeds, v_maxes, period, caps = seeds or {}, v_maxes or {}, period or {}, caps or {}
    now = dict(regs0)
    wipe_clocks = {0} | set(wipes) | set(v_maxes)        # slot 0: the wipe out of reset
    busy = [False] * clocks
    for w in wipe_clocks:
        for c in range(w + 1, min(w + vb + 3, clocks)):
            busy[c] = True
    busy[0] = True
    out, n_after = [], []
    cov = {"clears": 0, "same index": 0, "clears in a wipe": 0, "seed loads with a clear": 0,
           "sets": 0, "set right after a wipe": 0, "clears right after a wipe": 0}
    for t in range(clocks):
        new = dict(now, n_cap=caps.get(t, now["n_cap"]),
                   rng_clear_state=seeds.get(t, now["rng_clear_state"]),
                   v_max=v_maxes.get(t, now["v_max"]))
        load = t in seeds
        if load:
            model.rng.load(new["rng_clear_state"])
        if t in v_maxes or t in period:
            model.configure(new["v_max"], period.get(t, model.period), t)  # a new v_max wipes
        wipe = t in wipe_clocks
        if wipe and t not in v_maxes:
            model.wipe()
        probe = copy.deepcopy(model.rng)
        cleared = model.advance(t)
        assert cleared <= 1
        idx, h = None, None if busy[t] or wipe else arrive(t)
        if h is not None:
            idx = model.set(h)
            cov["sets"] += 1
            cov["set right after a wipe"] += busy[t - 1] if t else 0
        if cleared:
            cov["clears"] += 1
            cidx = (probe.next() * new["v_max"]) >> 32
            cov["same index"] += cidx == idx
            cov["clears in a wipe"] += busy[t]
            cov["seed loads with a clear"] += load
            cov["clears right after a wipe"] += busy[t - 1] and not busy[t]
        out.append((bool(cleared), h, wipe and t > 0, new if new != now else None, load))
        now = new
        n_after.append(model.n_raw)
    assert out[0] == (False, None, False, None, False), "clock 0 is the config slot"
    return [("config", regs0, False), ("clocks", out[1:])], n_after, cov, model
