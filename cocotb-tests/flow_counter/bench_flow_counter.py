"""cocotb bench of ``fpq_hdl.flow_counter.FlowCounter`` alone, against the golden model
``fpq.flow_counter.FlowCounter`` (imported).

Per arrival the model runs ``advance(ts)`` (the clears owed, or a wipe) then ``set(h)``, which
returns the vector index; the bench drives that index on ``set_index`` ``set_delay`` clocks
after the RTL accepted the arrival and reads ``n_raw`` ``FlowCounter.LATENCY`` clocks after
that, where it must equal the model's ``n_raw``. Arrivals come with seeded idle clocks and
``can_accept`` (the downstream credit) is driven low at random: back-pressure.

Besides N, the bench checks the documented throughput: with ``can_accept`` high and no wipe
under way (``busy`` low) the port stalls exactly once per clear beyond the first one an
arrival owes (that one rides along) and once per flush; and ``ready`` is never high while
``busy`` is.

Script items (plan["script"]): ``("config", regs)`` after reset (raw registers, as
``Config.registers()``), ``("events", [(ts, hash32), ...])``, ``("commit", regs)`` (pipeline
drained; ``wipe_req`` if ``v_max`` changed, ``load_rng`` if the clear seed changed, as the
register file's COMMIT), ``("stream", {gap, gap_burst, accept, accept_burst})`` (new stream
conditions from here on), ``("wipe",)`` (a ``wipe_req`` strobe alone), ``("reset", regs,
inflight)`` (``inflight`` arrivals accepted, then reset with them in the pipeline: a fresh
model)."""

import copy
from collections import deque

import cocotb

from fpq.flow_counter import FlowCounter as Model
from fpq.flow_hash import reduce_index

from fpq_hdl.flow_counter import FlowCounter

from tb_lib.component_bench import start, reset, Ports, config_word
from tb_lib.runner import load_plan, save_result
from tb_lib.scoreboard import Coverage
from tb_lib.streams import Pattern

P = "flow counter: "


def new_model(build, regs):
    return Model(build.vec_bits, regs["v_max"], regs["clear_period"], regs["flush_after"],
                 regs["clear_literal"], regs["rng_clear_state"])


class FlowCounterTB:
    def __init__(self, dut, plan):
        self.dut, self.plan = dut, plan
        self.build = plan["build"]
        self.delay = plan["set_delay"]
        self.seed = plan["seed"]
        self.streams(plan)
        self.ports = Ports(dut, ["arrival_valid", "ts", "can_accept", "set_valid", "set_index",
                                 "load_rng", "restart", "wipe_req", "config"])
        self.cov = Coverage()
        self.cycle = 0
        self.checked = 0
        self.regs = None
        self.model = None
        self.prev = deque(maxlen=2)        # (accept cycle, set index, last clear index)
        self.mismatch = None

    def streams(self, st):
        seed = self.seed = self.seed + 1
        self.gap = Pattern(1.0 - st.get("gap", 0.0), seed * 7 + 1, st.get("gap_burst", 1))
        self.credit = Pattern(st.get("accept", 1.0), seed * 7 + 2, st.get("accept_burst", 1))

    async def tick(self, n=1):
        for _ in range(n):
            await self.edge
            self.cycle += 1

    async def load(self, regs, strobes):
        ps = self.ports
        ps.set("config", config_word(self.build, regs))
        for s in strobes:
            ps.set(s, 1)
        await self.tick()
        for s in strobes:
            ps.set(s, 0)
        await self.tick()
        self.regs = regs

    # ---- the model's view ------------------------------------------------------------------
    def predict(self, events):
        """Per arrival: (ts, index, clears owed, wiped, n_raw after it, last clear index)."""
        model, out = self.model, []
        for ts, h in events:
            w0 = model.wipes
            probe = copy.copy(model.rng)       # the numbers advance() draws: coverage only
            clears = model.advance(ts)
            last_clear = reduce_index(probe.take(clears)[-1], model.v_max) if clears else None
            idx = model.set(h)
            out.append((ts, idx, clears, model.wipes - w0, model.n_raw, last_clear))
        return out

    # ---- the clock loop ----------------------------------------------------------------------
    async def run_events(self, events, stop_after=None):
        """Stream ``events``; returns when every n_raw was checked, or (``stop_after``) right
        after that many accepts, with arrivals in flight."""
        exp = self.predict(events)
        dut, ps, edge, gap, credit = self.dut, self.ports, self.edge, self.gap, self.credit
        ready, busy, n_raw = dut.ready, dut.busy, dut.n_raw
        D, L = self.delay, FlowCounter.LATENCY
        sets, reads = deque(), deque()
        n, i, offering, cycle = len(exp), 0, False, self.cycle
        stall_backlog = stall_busy = stall_credit = gaps = 0
        while i < n or reads or sets:
            if not offering:
                if i < n and gap.next():
                    ps.set("arrival_valid", 1)
                    ps.set("ts", exp[i][0])
                    offering = True
                else:
                    ps.set("arrival_valid", 0)
                    if i < n:
                        gaps += 1
            ca = credit.next()
            ps.set("can_accept", int(ca))
            if sets and sets[0][0] == cycle:
                ps.set("set_valid", 1)
                ps.set("set_index", sets.popleft()[1])
            else:
                ps.set("set_valid", 0)
            await edge
            if offering:
                if not ca:
                    stall_credit += 1
                elif ready.value:
                    if busy.value:
                        raise AssertionError(f"cycle {cycle}: ready high while busy")
                    sets.append((cycle + D, exp[i][1]))
                    reads.append((cycle + D + L, i))
                    self._hazards(cycle, exp[i])
                    offering = False
                    i += 1
                    if stop_after is not None and i == stop_after:
                        self.cycle = cycle + 1
                        return
                elif busy.value:
                    stall_busy += 1
                else:
                    stall_backlog += 1
            if reads and reads[0][0] == cycle:
                k = reads.popleft()[1]
                got = n_raw.value.to_unsigned()
                if got != exp[k][4]:
                    ts, idx, clears, wiped, want, _ = exp[k]
                    raise AssertionError(
                        f"arrival {self.checked + k} (ts {ts}, index {idx}, {clears} clears "
                        f"owed, wiped {wiped}): RTL n_raw {got} != model {want}")
            cycle += 1
        ps.set("arrival_valid", 0)
        self.cycle = cycle
        self.checked += n
        want_stalls = sum(max(c - 1, 0) + w for _, _, c, w, _, _ in exp)
        if stall_backlog != want_stalls:
            raise AssertionError(f"the port stalled {stall_backlog} clocks with can_accept high "
                                 f"and busy low; the clears owed beyond one per arrival plus "
                                 f"the flushes are {want_stalls}")
        cov = self.cov
        cov.hit(P + "arrivals checked", n)
        cov.hit(P + "port stalls for a clear backlog", stall_backlog)
        cov.hit(P + "port stalls during a wipe (busy)", stall_busy)
        cov.hit(P + "can_accept low (back-pressure) cycles", stall_credit)
        cov.hit(P + "arrival valid gap cycles", gaps)

    def _hazards(self, cycle, e):
        _, idx, clears, wiped, _, last_clear = e
        cov = self.cov
        if clears == 1:
            cov.hit(P + "one clear owed: rides along with the arrival")
        if clears > 1:
            cov.hit(P + "clear backlog > 1 (port stalls)")
        if wiped:
            cov.hit(P + "flush: vector wiped (backlog >= flush_after)")
        if clears and last_clear == idx:
            cov.hit(P + "clear and set of the same index in one slot")
        for c, pidx, pclr in self.prev:
            d = cycle - c
            if d in (1, 2):
                if pidx == idx:
                    cov.hit(P + f"set of the index set {d} clock(s) earlier (forwarding)")
                if clears and pidx == last_clear:
                    cov.hit(P + f"clear of the index set {d} clock(s) earlier")
                if pclr is not None and pclr == idx:
                    cov.hit(P + f"set of the index cleared {d} clock(s) earlier")
        self.prev.append((cycle, idx, last_clear))

    # ---- the script --------------------------------------------------------------------------
    async def run(self):
        dut, build = self.dut, self.build
        self.edge = await start(dut, ["arrival_valid", "ts", "can_accept", "set_valid",
                                      "set_index", "load_rng", "restart", "wipe_req"])
        for item in self.plan["script"]:
            kind = item[0]
            if kind == "config":
                self.model = new_model(build, item[1])
                await self.load(item[1], ["restart", "load_rng"])
            elif kind == "events":
                await self.run_events(item[1])
            elif kind == "commit":
                regs, old = item[1], self.regs
                strobes = []
                if regs["v_max"] != old["v_max"]:
                    strobes.append("wipe_req")
                    self.cov.hit(P + "v_max rewritten (wipe)")
                if regs["rng_clear_state"] != old["rng_clear_state"]:
                    strobes.append("load_rng")
                    self.model.rng.load(regs["rng_clear_state"])
                    self.cov.hit(P + "clear generator reseeded")
                if regs["clear_period"] != old["clear_period"]:
                    self.cov.hit(P + "clear period rewritten")
                if regs["clear_literal"] != old["clear_literal"]:
                    self.cov.hit(P + "clear mode rewritten (carry / literal)")
                self.model.configure(regs["v_max"], regs["clear_period"], regs["flush_after"],
                                     regs["clear_literal"])
                await self.load(regs, strobes)
            elif kind == "stream":
                self.streams(item[1])
            elif kind == "wipe":
                self.model.wipe()
                await self.load(self.regs, ["wipe_req"])
                self.cov.hit(P + "wipe strobe")
            elif kind == "reset":
                regs, inflight = item[1], item[2]
                # the arrivals in flight are checked as long as they come out before the reset
                await self.run_events(inflight, stop_after=len(inflight))
                self.ports.set("arrival_valid", 0)
                self.ports.set("set_valid", 0)
                await reset(dut, self.edge)
                self.cycle += 2
                self.ports.forget()
                self.prev.clear()
                self.model = new_model(build, regs)
                await self.load(regs, ["restart", "load_rng"])
                self.cov.hit(P + "reset mid-stream (arrivals in flight)")
            else:
                raise ValueError(f"script item {kind!r}")
        for _ in range(self.delay + FlowCounter.LATENCY + 4):
            await self.tick()
        if dut.n_raw.value.to_unsigned() != self.model.n_raw:
            raise AssertionError(f"idle: RTL n_raw {dut.n_raw.value.to_unsigned()} != model "
                                 f"{self.model.n_raw}")
        return {"inputs": self.checked, "cycles": self.cycle, "coverage": self.cov.bins}


@cocotb.test()
async def flow_counter(dut):
    save_result(await FlowCounterTB(dut, load_plan()).run())
