"""cocotb bench of ``fpq_hdl.flow_counter.FlowCounter`` alone, against the golden model
``fpq.flow_counter.FlowCounter`` (imported).

Each clock is a slot of the queue manager's pipeline: it may hold a clear (the ``clear``
strobe, at the slot's cycle 0), an arrival (its vector index on ``set_index`` ``set_delay``
clocks later), a wipe, or nothing. The model is driven through its own interface: its clear
schedule runs on a clock that counts the clear strobes (``clear_period`` one clock of that
clock: ``advance(k)`` after the k-th strobe applies exactly that clear), then ``set(h)`` for
the slot's arrival; ``wipe()``, ``configure(v_max, ...)`` and ``rng.load`` for the strobes.
So the bench presents any pattern of clears (every clock, none for a while, bursts), not only
a periodic one: the block does not know the period (a ``PeriodicTimer`` in the top does).

Checked on every clock: ``n_raw`` is N after the slot ``set_delay + LATENCY`` clocks before
(clears-only and empty slots included), ``over`` is ``n_raw > n_cap`` (the cap is never
changed here), ``n_next`` is the next clock's ``n_raw``, and
``busy`` is high exactly in the ``vec_bits + 2`` clocks after a wipe's slot (no arrival is
presented then, as the top's port refuses them).

Script items (plan["script"]): ``("config", regs)`` after reset (the wipe out of reset
waited for; raw registers, as ``Config.registers()``) with a ``load_rng`` strobe; ``("slots",
[(clear, hash or None), ...])``; ``("commit", regs)`` (a slot with the new registers and the
strobes a register-file commit gives: ``wipe`` if ``v_max`` changed, ``load_rng`` if the
clear seed changed; a clear may share it); ``("wipe", clear)`` (a ``wipe`` strobe alone);
``("reset", regs, slots)`` (``slots`` presented, then reset with them in the pipeline: a fresh
model)."""

from collections import deque

import cocotb

from fpq.flow_counter import FlowCounter as Model
from fpq.flow_hash import reduce_index
from fpq.random_source import XorShift128

from fpq_hdl.flow_counter import FlowCounter

from tb_lib.component_bench import start, reset, Ports, config_word
from tb_lib.runner import load_plan, save_result
from tb_lib.scoreboard import Coverage

P = "flow counter: "
#: the model's clear period: one clock of its clock, which counts clear strobes
ONE = 1 << 16


def new_model(build, regs):
    return Model(build.vec_bits, regs["v_max"], ONE, regs["rng_clear_state"])


def _peek(rng):
    """The next number of a copy of the model's clear generator (coverage only)."""
    c = XorShift128.__new__(XorShift128)
    c.x, c.y, c.z, c.w, c._buf, c._pos = rng.x, rng.y, rng.z, rng.w, rng._buf, rng._pos
    return c.next()


class FlowCounterTB:
    def __init__(self, dut, plan):
        self.dut, self.plan = dut, plan
        self.build = plan["build"]
        self.delay = plan["set_delay"]
        self.ports = Ports(dut, ["clear", "wipe", "load_rng", "set_valid", "set_index",
                                 "config"])
        self.cov = Coverage()
        self.cycle = 0
        self.checked = 0
        self.lost = 0
        self.regs = None
        self.model = None
        self.clears = 0                      # the model's clock: clear strobes so far
        self.busy_until = -1                 # the last clock busy is high
        # per clock in flight: (clock to check n_raw, expected n_raw)
        self.checks = deque()
        self.sets = deque()                  # (clock, index) for set_index
        self.recent = deque(maxlen=2)        # (clock, set index or None, clear index or None)

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
        later); the checks of this clock."""
        dut, ps, cyc = self.dut, self.ports, self.cycle
        if h is not None and cyc <= self.busy_until:
            raise AssertionError(f"bench: an arrival at clock {cyc} during a wipe")
        if regs is not None:
            ps.set("config", config_word(self.build, regs))
        idx, cidx = self._model_slot(clear, h, wipe, regs, load)
        ps.set("clear", int(clear))
        ps.set("wipe", int(wipe))
        ps.set("load_rng", int(load))
        if idx is not None:
            self.sets.append((cyc + self.delay, idx))
        self.checks.append((cyc + self.delay + FlowCounter.LATENCY, self.model.n_raw))
        if wipe:
            self.busy_until = cyc + self.build.vec_bits + 2
        self._coverage(cyc, idx, cidx, clear, wipe, load)
        if self.sets and self.sets[0][0] == cyc:
            ps.set("set_valid", 1)
            ps.set("set_index", self.sets.popleft()[1])
        else:
            ps.set("set_valid", 0)
        await self.edge
        self.cycle += 1
        busy = int(dut.busy.value)
        want_busy = int(self.busy_until - self.build.vec_bits - 2 < cyc <= self.busy_until)
        if busy != want_busy:
            raise AssertionError(f"clock {cyc}: busy {busy}, want {want_busy} (a wipe keeps it "
                                 f"high the {self.build.vec_bits + 2} clocks after its slot)")
        nxt = dut.n_next.value.to_unsigned()
        if self.checks and self.checks[0][0] == cyc:
            _, want = self.checks.popleft()
            got = dut.n_raw.value.to_unsigned()
            if got != want:
                raise AssertionError(f"clock {cyc}: RTL n_raw {got} != model {want} (N after "
                                     f"the slot of clock {cyc - self.delay - 4})")
            over = int(dut.over.value)
            if over != int(want > self.regs["n_cap"]):
                raise AssertionError(f"clock {cyc}: RTL over {over} with n_raw {want} and "
                                     f"n_cap {self.regs['n_cap']}")
            if self.checks and self.checks[0][0] == cyc + 1 and nxt != self.checks[0][1]:
                raise AssertionError(f"clock {cyc}: RTL n_next {nxt} != model "
                                     f"{self.checks[0][1]} (the next clock's n_raw)")
            self.checked += 1

    def _coverage(self, cyc, idx, cidx, clear, wipe, load):
        hit = self.cov.hit
        if clear and idx is not None:
            hit(P + "clear and set in one slot")
            if cidx == idx:
                hit(P + "clear and set of the same index in one slot")
        if clear and cyc <= self.busy_until and not wipe:
            hit(P + "clear during a wipe (draws, clears nothing)")
        if clear and load:
            hit(P + "clear in the clock of a reseed (the new seed's first number)")
        for c, pidx, pcidx in self.recent:
            d = cyc - c
            if idx is not None and pidx == idx:
                hit(P + f"set of the index set {d} clock(s) earlier (forwarding)")
            if cidx is not None and pidx == cidx:
                hit(P + f"clear of the index set {d} clock(s) earlier")
            if idx is not None and pcidx == idx:
                hit(P + f"set of the index cleared {d} clock(s) earlier")
            if cidx is not None and pcidx == cidx:
                hit(P + f"clear of the index cleared {d} clock(s) earlier")
        self.recent.append((cyc, idx, cidx))

    async def flush(self):
        """Empty slots until every slot presented so far has been checked."""
        for _ in range(self.delay + FlowCounter.LATENCY + 1):
            await self.slot()

    # ---- the script --------------------------------------------------------------------------
    async def run(self):
        dut = self.dut
        self.edge = await start(dut, ["clear", "wipe", "load_rng", "set_valid", "set_index"])
        for item in self.plan["script"]:
            kind = item[0]
            if kind == "config":
                await self.out_of_reset(item[1])
            elif kind == "slots":
                n_clear = n_set = 0
                for clear, h in item[1]:
                    await self.slot(clear, h)
                    n_clear += clear
                    n_set += h is not None
                self.cov.hit(P + "clears", n_clear)
                self.cov.hit(P + "arrivals", n_set)
                self.cov.hit(P + "slots without an arrival", len(item[1]) - n_set)
            elif kind == "commit":
                regs, old = item[1], self.regs
                wipe = regs["v_max"] != old["v_max"]
                load = regs["rng_clear_state"] != old["rng_clear_state"]
                if wipe:
                    self.cov.hit(P + "v_max rewritten (wipe)")
                if load:
                    self.cov.hit(P + "clear generator reseeded")
                await self.slot(clear=item[2] if len(item) > 2 else False, wipe=wipe,
                                regs=regs, load=load)
            elif kind == "wipe":
                await self.slot(clear=item[1], wipe=True)
                self.cov.hit(P + "wipe strobe")
            elif kind == "reset":
                regs, inflight = item[1], item[2]
                for clear, h in inflight:
                    await self.slot(clear, h)
                self.lost += len(self.checks)
                self.checks.clear()
                self.sets.clear()
                self.recent.clear()
                for name in ("set_valid", "clear", "wipe", "load_rng"):
                    self.ports.set(name, 0)
                await reset(dut, self.edge)
                self.cycle += 2
                self.ports.forget()
                await self.out_of_reset(regs)
                self.cov.hit(P + "reset mid-stream (slots in flight)")
            else:
                raise ValueError(f"script item {kind!r}")
        await self.flush()
        return {"inputs": self.checked, "lost_to_reset": self.lost, "cycles": self.cycle,
                "coverage": self.cov.bins}

    async def out_of_reset(self, regs):
        """Out of reset the vector is wiped (busy from the first clock, ``vec_bits + 3``
        clocks): wait, then the registers and a generator load."""
        dut = self.dut
        self.ports.set("config", config_word(self.build, regs))
        n = 0
        while True:
            await self.edge
            self.cycle += 1
            n += 1
            if not dut.busy.value:
                break
        if n - 1 != self.build.vec_bits + 3:
            raise AssertionError(f"busy out of reset for {n - 1} clocks, want "
                                 f"{self.build.vec_bits + 3}")
        self.model = new_model(self.build, regs)
        self.regs = regs
        self.clears = 0
        self.busy_until = -1
        await self.slot(load=True)


@cocotb.test()
async def flow_counter(dut):
    save_result(await FlowCounterTB(dut, load_plan()).run())
