"""The queue manager's cocotb bench (``fpq_hdl.queue_manager.QueueManager`` on Verilator).

``QueueManagerTB(dut, plan)`` owns the clock, reset, the configuration port and tables, two
:class:`StreamSource` (arrivals, departures) and a :class:`StreamSink` (verdicts, with random
back-pressure), and runs a script (see ``scoreboard``) with the golden model predicting every
verdict. One ``await`` per clock serves all ports.

Ordering rule of the DUT: a departure presented in the same clock as an arrival applies first.
So a departure is presented together with the arrival that follows it in the script, or alone;
never while an earlier arrival is still waiting for ``ready``.

Plan keys: ``build``, ``script``, ``gap`` (probability that a step waits one idle clock),
``gap_burst``, ``ready`` (probability that the verdict sink is ready), ``ready_burst``,
``seed``."""

import time

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from fpq import Arrival, Departure
from fpq.queue_manager import COUNTERS

from fpq_hdl.layouts import ARRIVAL, DEPARTURE, config_layout

from .streams import Pattern, StreamSource, StreamSink, pack
from .scoreboard import predict, Scoreboard, Coverage

__all__ = ["QueueManagerTB", "arrival_word", "departure_word"]

_A = {name: f.offset for name, f in ARRIVAL}
_D = {name: f.offset for name, f in DEPARTURE}
_TMASK = (1 << 48) - 1


def arrival_word(a):
    return (((a.ts & _TMASK) << _A["ts"]) | (a.flow << _A["flow"]) | (a.length << _A["length"])
            | (int(bool(a.ecn)) << _A["ecn"]))


def departure_word(d):
    return ((d.ts & _TMASK) << _D["ts"]) | (d.length << _D["length"])


def steps_of(events, first_arrival):
    """(departure word or None, arrival word or None, arrival number or -1) per step."""
    steps, dep = [], None
    k = first_arrival
    for ev in events:
        if type(ev) is Departure:
            if dep is not None:
                steps.append((dep, None, -1))
            dep = departure_word(ev)
        else:
            steps.append((dep, arrival_word(ev), k))
            dep = None
            k += 1
    if dep is not None:
        steps.append((dep, None, -1))
    return steps


class QueueManagerTB:
    def __init__(self, dut, plan):
        self.dut = dut
        self.plan = plan
        self.build = plan["build"]
        seed = plan.get("seed", 1)
        self.gap = Pattern(1.0 - plan.get("gap", 0.0), seed * 7 + 1, plan.get("gap_burst", 1))
        self.cov = Coverage()
        self.clk = dut.clk
        self.edge = RisingEdge(dut.clk)
        self.arr = StreamSource(dut.arrivals__valid, dut.arrivals__ready, dut.arrivals__payload)
        self.dep = StreamSource(dut.departures__valid, dut.departures__ready,
                                dut.departures__payload, always_ready=False)
        self.sink = StreamSink(dut.verdicts__valid, dut.verdicts__ready, dut.verdicts__payload,
                               Pattern(plan.get("ready", 1.0), seed * 7 + 2,
                                       plan.get("ready_burst", 1)))
        self.cycles = 0
        self.rate_bank = 0
        self.decay_bank = 0
        self.config = None
        self._init_control()
        dut.rst.value = 0
        self.accept_cycle = []
        #: more port agents (``drive()`` before, ``sample()`` after each edge), e.g. a bus
        self.agents = []

    def _init_control(self):
        dut = self.dut
        for s in ("load_rng_decide", "load_rng_clear", "restart", "wipe", "rekey", "hold", "rate_we",
                  "decay_we", "rate_bank", "decay_bank", "clear_max_queue"):
            getattr(dut, s).value = 0
        dut.counter_clear.value = 0

    async def tick(self, n=1):
        agents = self.agents
        for _ in range(n):
            self.sink.drive()
            for a in agents:
                a.drive()
            await self.edge
            self.cycles += 1
            w = self.sink.sample()
            if w is not None:
                self.sb.check(w)
            for a in agents:
                a.sample()

    async def reset(self):
        self.dut.rst.value = 1
        self.arr.withdraw()
        self.dep.withdraw()
        await self.edge
        await self.edge
        self.dut.rst.value = 0
        await self.edge
        self.cycles += 3

    async def load(self, cfg, old=None):
        """Apply a configuration as the register file's COMMIT does: config registers, tables
        into the inactive bank and a bank swap, then the strobes (wipe on a v_max change,
        generator loads on seed changes; after reset: both loads and the schedule restart)."""
        dut = self.dut
        regs = cfg.registers()
        dut.config.value = pack(config_layout(cfg.build), regs)
        if old is None or cfg.rate_table() != old.rate_table():
            dut.rate_bank.value = self.rate_bank
            dut.rate_we.value = 1
            for i, w in enumerate(cfg.rate_table()):
                dut.rate_addr.value = i
                dut.rate_data.value = w
                await self.tick()
            dut.rate_we.value = 0
            self.rate_bank ^= 1
        if old is None or cfg.decay_table() != old.decay_table():
            dut.decay_bank.value = self.decay_bank
            dut.decay_we.value = 1
            for i, w in enumerate(cfg.decay_table()):
                dut.decay_addr.value = i
                dut.decay_data.value = w
                await self.tick()
            dut.decay_we.value = 0
            self.decay_bank ^= 1
        dut.rate_bank.value = self.rate_bank
        dut.decay_bank.value = self.decay_bank
        oregs = old.registers() if old is not None else None
        strobes = []
        if old is None:
            strobes = ["load_rng_decide", "load_rng_clear", "restart"]
        else:
            rekey = regs["hash_key"] != oregs["hash_key"]
            if regs["v_max"] != oregs["v_max"] or rekey:
                strobes.append("wipe")
            if rekey:
                strobes.append("rekey")
            if regs["rng_decide_state"] != oregs["rng_decide_state"]:
                strobes.append("load_rng_decide")
            if regs["rng_clear_state"] != oregs["rng_clear_state"]:
                strobes.append("load_rng_clear")
        for s in strobes:
            getattr(dut, s).value = 1
        await self.tick()
        for s in strobes:
            getattr(dut, s).value = 0
        await self.tick()
        self.config = cfg

    async def run_events(self, steps):
        arr, dep, sink, gap = self.arr, self.dep, self.sink, self.gap
        edge, sb, agents = self.edge, self.sb, self.agents
        accept = self.accept_cycle
        cur = -1
        i, n = 0, len(steps)
        cycle = self.cycles
        while i < n or cur >= 0:
            if cur < 0:
                if gap.next():
                    dw, aw, cur = steps[i]
                    i += 1
                    if dw is None:
                        dep.withdraw()
                    else:
                        dep.offer(dw)
                    if aw is None:
                        arr.withdraw()
                    else:
                        arr.offer(aw)
                else:
                    dep.withdraw()
                    arr.withdraw()
            else:
                dep.withdraw()
            sink.drive()
            for a in agents:
                a.drive()
            await edge
            cycle += 1
            for a in agents:
                a.sample()
            if dep.busy and not dep.sample():
                raise AssertionError("departures.ready was low (departures are always accepted)")
            if cur >= 0 and arr.sample():
                accept.append(cycle)
                cur = -1
            w = sink.sample()
            if w is not None:
                sb.check(w)
        dep.withdraw()
        arr.withdraw()
        self.cycles = cycle

    async def drain(self, upto, limit=100_000):
        """Clock until ``upto`` verdicts have been checked."""
        self.arr.withdraw()
        self.dep.withdraw()
        start = self.cycles
        while self.sb.count < upto:
            await self.tick()
            if self.cycles - start > limit:
                raise AssertionError(f"stuck: {self.sb.count} of {upto} verdicts")

    def telemetry(self):
        dut = self.dut
        word = dut.counters.value.to_unsigned()
        counters = [(word >> (64 * i)) & ((1 << 64) - 1) for i in range(len(COUNTERS))]
        snap = {k: getattr(dut, k).value.to_unsigned()
                for k in ("n_raw", "avg", "occ_pkts", "occ_bytes", "max_queue")}
        return counters, snap

    async def run_script(self):
        plan = self.plan
        script = plan["script"]
        expected, facts, model = predict(script, self.cov)
        self.sb = Scoreboard(expected)
        Clock(self.clk, 10, unit="ns").start()
        await self.reset()
        t0 = time.perf_counter()
        k = 0                      # arrivals scripted so far
        lost = 0
        for item in script:
            kind = item[0]
            if kind == "config":
                await self.load(item[1])
            elif kind == "commit":
                self.dut.hold.value = 1
                await self.tick()
                while not self.dut.idle.value:
                    await self.tick()
                await self.load(item[1], self.config)
                self.dut.hold.value = 0
            elif kind == "reset":
                # mid-stream: arrivals in flight and verdicts waiting are lost with the reset
                for _ in range(5):
                    await self.tick()
                await self.reset()
                lost += k - self.sb.count
                self.sb.count = k
                self.accept_cycle += [None] * (k - len(self.accept_cycle))
                self.rate_bank = self.decay_bank = 0
                await self.load(item[1])
            elif kind == "idle":
                await self.tick(item[1])
            elif kind == "events":
                steps = steps_of(item[1], k)
                k += sum(1 for s in steps if s[2] >= 0)
                await self.run_events(steps)
        await self.drain(k)
        for _ in range(40):
            await self.tick()          # nothing more may come out (Scoreboard.check raises)
        self.sb.done()
        counters, snap = self.telemetry()
        want = list(model.counters.values())
        if counters != want:
            raise AssertionError(f"counters: RTL {dict(zip(COUNTERS, counters))} != model "
                                 f"{model.counters}")
        msnap = model.snapshot()
        for key, v in snap.items():
            if v != msnap[key]:
                raise AssertionError(f"telemetry {key}: RTL {v} != model {msnap[key]}")
        wall = time.perf_counter() - t0
        self._coverage(facts)
        return {"arrivals": len(expected) - lost, "lost_to_reset": lost, "cycles": self.cycles,
                "wall_s": wall, "coverage": self.cov.bins, "counters": model.counters}

    def _coverage(self, facts):
        cov, acc = self.cov, self.accept_cycle
        prev_idx, prev_c, prev2_idx, prev2_c = None, None, None, None
        for (idx, clears, wipes), c in zip(facts, acc):
            if c is None:
                prev_idx = prev2_idx = None
                continue
            if prev_c is not None and c - prev_c == 1:
                if idx == prev_idx:
                    cov.hit("forwarding hazard: same vector bit on consecutive clocks")
                if clears == 1:
                    cov.hit("clear due while arrivals stream (rides along)")
            if prev2_c is not None and c - prev2_c == 2 and idx == prev2_idx:
                cov.hit("forwarding hazard: same vector bit two clocks apart")
            if clears > 1:
                cov.hit("clear backlog > 1 (arrival port stalls)")
            if wipes:
                cov.hit("vector wipe (backlog >= flush_after)")
            prev2_idx, prev2_c = prev_idx, prev_c
            prev_idx, prev_c = idx, c
        cov.hit("verdict back-pressure cycles", self.sink.backpressure)
        cov.hit("arrival port stall cycles", self.arr.stalls)
