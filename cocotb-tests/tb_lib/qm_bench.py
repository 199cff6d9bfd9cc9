"""The queue manager's cocotb bench (``fpq_hdl.queue_manager.QueueManager`` on Verilator).

``QueueManagerTB(dut, plan)`` owns the clock, reset, the configuration port and tables, the
arrival and departure ports and the verdict sink (with random back-pressure), and runs a
script (see ``scoreboard``). Clock 0 is the clock after the one with ``restart`` (loaded after
the reset's vector wipe); ``now`` counts from it. Each script step (a departure, an arrival,
or a departure and an arrival of one clock) is presented in the clock it asks for, or later:
after random valid gaps (``gap``), or while the port refuses the arrival (no credit, a
vector wipe, a commit's hold). The bench records the clock in which the RTL accepted each
event and every commit's clock, and feeds the golden model that record as it happens
(``scoreboard.Record``), so every verdict is compared field by field when it leaves the RTL.
One ``await`` per clock serves all ports; stretches with nothing to present and no verdict
outstanding are skipped with one timer (the simulator toggles the clock on its own).

Ordering rule of the DUT: a departure presented in the same clock as an arrival applies first.
So a departure goes out in its step's first clock, alone or with its arrival; a step waits for
the previous step's arrival to be accepted.

Plan keys: ``build``, ``script``, ``gap`` (probability that a step waits one more clock),
``gap_burst``, ``ready`` (probability that the verdict sink is ready), ``ready_burst``,
``seed``."""

import time

from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer

from fpq import Departure
from fpq.bitfields import pack
from fpq.register_specs import key_registers
from fpq.queue_manager import COUNTERS

from fpq_hdl.layouts import ARRIVAL, DEPARTURE, config_layout
from fpq_hdl.queue_manager import (N_RAW_DELAY, N_TELEMETRY_DELAY, AVG_TELEMETRY_DELAY,
                                   LATENCY)

from .streams import Pattern, StreamSink
from .scoreboard import Record, Scoreboard, Coverage

__all__ = ["QueueManagerTB", "arrival_word", "steps_of", "PERIOD_NS"]

_A = {name: f.offset for name, f in ARRIVAL}
_D = {name: f.offset for name, f in DEPARTURE}
#: the clock period of the benches (any: the RTL counts clocks)
PERIOD_NS = 10
#: idle stretches at least this long are skipped with a timer instead of clock by clock
_SKIP_MIN = 4


def arrival_word(a):
    return (a.flow << _A["flow"]) | (a.length << _A["length"]) | (int(bool(a.ecn)) << _A["ecn"])


def steps_of(events):
    """``(clock, departure or None, arrival or None)`` per step: a departure and an arrival
    of the same clock are one step (the departure first)."""
    steps, dep = [], None
    for ev in events:
        if type(ev) is Departure:
            if dep is not None:
                steps.append((dep.ts, dep, None))
            dep = ev
        else:
            if dep is not None and dep.ts != ev.ts:
                steps.append((dep.ts, dep, None))
                dep = None
            steps.append((ev.ts, dep, ev))
            dep = None
    if dep is not None:
        steps.append((dep.ts, dep, None))
    return steps


class QueueManagerTB:
    #: the port that says a vector wipe is under way
    BUSY = "busy"

    def __init__(self, dut, plan):
        self.dut = dut
        self.plan = plan
        self.build = plan["build"]
        seed = plan.get("seed", 1)
        self.gap = Pattern(1.0 - plan.get("gap", 0.0), seed * 7 + 1, plan.get("gap_burst", 1))
        self.cov = Coverage()
        self.clk = dut.clk
        self.edge = RisingEdge(dut.clk)
        self.sink = StreamSink(dut.verdicts__valid, dut.verdicts__ready, dut.verdicts__payload,
                               Pattern(plan.get("ready", 1.0), seed * 7 + 2,
                                       plan.get("ready_burst", 1)))
        self.busy_h = getattr(dut, self.BUSY)
        self.a_valid, self.a_ready, self.a_payload = (dut.arrivals__valid, dut.arrivals__ready,
                                                      dut.arrivals__payload)
        self.d_valid, self.d_ready, self.d_payload = (dut.departures__valid,
                                                      dut.departures__ready,
                                                      dut.departures__payload)
        self.a_valid.value = 0
        self.d_valid.value = 0
        # valid as driven, and as the next clock wants it (written only on a change)
        self._a_on = self._d_on = self._a_want = self._d_want = 0
        self._a_word = None
        self.cycle = 0                   # clock edges since the start
        self.base = 0                    # the cycle of clock 0
        self.offset = 0                  # the asked clocks are shifted by "idle" items
        self.skipped = 0                 # clocks skipped with a timer
        self.refused = {"credit": 0, "busy": 0, "hold": 0}
        self.gaps = 0
        self.shifted = 0                 # events accepted later than asked
        self.rate_bank = 0
        self.config = None
        self.sb = Scoreboard()
        self.rec = None
        self._hold = 0
        self.watch = False               # sample the verdict port with nothing expected
        self._init_control()
        #: more port agents (``drive()`` before, ``sample()`` after each edge, ``idle``)
        self.agents = []

    def _init_control(self):
        dut = self.dut
        for s in ("load_rng_decide", "load_rng_clear", "restart", "wipe", "rekey", "hold",
                  "rate_we", "rate_bank", "clear_max_queue"):
            getattr(dut, s).value = 0
        dut.counter_clear.value = 0
        dut.rst.value = 0

    @property
    def now(self):
        """The queue manager's clock whose inputs are being set."""
        return self.cycle - self.base

    # ---- clocks --------------------------------------------------------------------------
    async def tick(self, n=1):
        """``n`` clocks with the inputs as they are; verdicts checked as they leave."""
        sink, sb, agents, edge = self.sink, self.sb, self.agents, self.edge
        for _ in range(n):
            if self._a_want != self._a_on:
                self.a_valid.value = self._a_on = self._a_want
            if self._d_want != self._d_on:
                self.d_valid.value = self._d_on = self._d_want
            sink.drive()
            for a in agents:
                a.drive()
            await edge
            self.cycle += 1
            if sb.expected or self.watch:
                w = sink.sample()
                if w is not None:
                    sb.check(w)
            for a in agents:
                a.sample()

    async def idle_until(self, clock):
        """Nothing presented until ``now`` is ``clock``. Clocks in which no verdict can be at
        the output (the oldest outstanding arrival's ``LATENCY`` is not over) are skipped
        with a timer when there are a few of them and no agent has work: the simulator
        clocks the RTL on its own meanwhile."""
        self._withdraw()
        sb = self.sb
        while self.now < clock:
            n = clock - self.now
            if sb.clocks:
                n = min(n, sb.clocks[0] + LATENCY - self.now)
            if n >= _SKIP_MIN and all(a.idle for a in self.agents):
                await self.skip(n)
            else:
                await self.tick()

    async def skip(self, n):
        """``n`` clocks with the inputs as they are, in one timer. The sink is not ready
        meanwhile: a verdict nobody expects stays in the FIFO, to be seen at the next clock
        the bench watches."""
        self.sink.hold_off()
        await Timer(n * PERIOD_NS - PERIOD_NS // 2, unit="ns")
        await self.edge
        self.cycle += n
        self.skipped += n

    def _withdraw(self):
        self._a_want = self._d_want = 0
        if self._a_on:
            self.a_valid.value = self._a_on = 0
        if self._d_on:
            self.d_valid.value = self._d_on = 0

    # ---- events --------------------------------------------------------------------------
    def _hold_now(self):
        return self._hold

    async def run_events(self, events, hook=None):
        """Present ``events`` (see the module docstring); ``hook = (k, fn)``: ``fn()`` before
        the ``k``-th step."""
        gap, sb = self.gap, self.sb
        a_ready, d_ready = self.a_ready, self.d_ready
        for k, (clock, dep, arr) in enumerate(steps_of(events)):
            if hook is not None and k == hook[0]:
                hook[1]()
            rec = self.rec
            asked = clock + self.offset
            if self.now < asked:
                await self.idle_until(asked)
            while not gap.next():
                self._a_want = self._d_want = 0
                await self.tick()
                self.gaps += 1
            if dep is not None:
                self.d_payload.value = dep.length << _D["length"]
                self._d_want = 1
            else:
                self._d_want = 0
            if arr is not None:
                word = arrival_word(arr)
                if word != self._a_word:
                    self.a_payload.value = self._a_word = word
                self._a_want = 1
            else:
                self._a_want = 0
            while True:
                t = self.now
                await self.tick()
                if dep is not None:
                    if not d_ready.value:
                        raise AssertionError(f"clock {t}: departures.ready low (departures "
                                             f"are always accepted)")
                    rec.depart(t, dep.length)
                    if t != asked:
                        self.shifted += 1
                    self._d_want = 0
                    dep = None
                if arr is None:
                    break
                if a_ready.value:
                    sb.expect(rec.arrive(t, arr.flow, arr.length, bool(arr.ecn)), t)
                    if t != asked:
                        self.shifted += 1
                    self._a_want = 0
                    break
                why = "hold" if self._hold_now() else "busy" if self.busy_h.value else "credit"
                self.refused[why] += 1

    async def drain(self, limit=200_000):
        """Clock until every accepted arrival's verdict has been checked."""
        start = self.cycle
        while self.sb.expected:
            await self.idle_until(max(self.now + 1, self.sb.clocks[0] + LATENCY))
            if self.cycle - start > limit:
                raise AssertionError(f"stuck: {self.sb.outstanding} verdicts outstanding "
                                     f"after {limit} clocks")

    # ---- configuration -------------------------------------------------------------------
    def _set_hold(self, v):
        if v != self._hold:
            self.dut.hold.value = v
            self._hold = v

    async def write_table(self, table, active):
        """Every word into the bank that is not ``active``, one per clock."""
        dut = self.dut
        dut.rate_bank.value = active
        dut.rate_we.value = 1
        for i, w in enumerate(table):
            dut.rate_addr.value = i
            dut.rate_data.value = w
            await self.tick()
        dut.rate_we.value = 0

    async def wait_wipe(self):
        """After a reset: clock until the vector wipe out of reset is over (most of it
        skipped: it takes ``vec_bits + 3`` clocks)."""
        dut = self.dut
        await self.tick(2)
        self.base = self.cycle
        await self.idle_until(self.build.vec_bits - 4)
        while dut.busy.value:
            await self.tick()

    async def start(self, cfg):
        """Out of reset (wipe over): the configuration and table, then ``restart`` and both
        generator loads in one clock; the next clock is clock 0."""
        dut = self.dut
        dut.config.value = pack(config_layout(cfg.build), cfg.registers())
        await self.write_table(cfg.rate_table(), 0)
        self.rate_bank = 1
        dut.rate_bank.value = 1
        strobes = ("restart", "load_rng_decide", "load_rng_clear")
        for s in strobes:
            getattr(dut, s).value = 1
        await self.tick()
        for s in strobes:
            getattr(dut, s).value = 0
        self.base = self.cycle
        self.offset = 0
        self.config = cfg
        self.rec = Record(cfg, self.cov)

    async def commit(self, cfg, ts=None):
        """As the register file's COMMIT: the arrival port held, a changed table into the
        inactive bank, then (no arrival in the pipeline, no wipe under way, and not before
        the asked clock ``ts``) the registers, the bank swap and the strobes in one clock,
        recorded for the model."""
        dut, old = self.dut, self.config
        self._withdraw()
        self._set_hold(1)
        table = cfg.rate_table()
        swap = table != old.rate_table()
        if swap:
            await self.write_table(table, self.rate_bank)
        while True:
            await self.tick()
            if dut.idle.value and not dut.busy.value:
                break
        if ts is not None and self.now < ts + self.offset:
            await self.idle_until(ts + self.offset)
        regs, oregs = cfg.registers(), old.registers()
        # a change of any key the build has re-keys (fpq.register_specs.key_registers)
        rekey = any(regs[k] != oregs[k] for k in key_registers(cfg.build))
        strobes = [s for s, on in (
            ("wipe", regs["v_max"] != oregs["v_max"] or rekey), ("rekey", rekey),
            ("load_rng_decide", regs["rng_decide_state"] != oregs["rng_decide_state"]),
            ("load_rng_clear", regs["rng_clear_state"] != oregs["rng_clear_state"])) if on]
        dut.config.value = pack(config_layout(cfg.build), regs)
        if swap:
            self.rate_bank ^= 1
            dut.rate_bank.value = self.rate_bank
            self.cov.hit("table bank swap at a commit")
        for s in strobes:
            getattr(dut, s).value = 1
            self.cov.hit(f"commit with {s}")
        at = self.now
        await self.tick()
        for s in strobes:
            getattr(dut, s).value = 0
        self._set_hold(0)
        self.rec.configure(cfg, at)
        self.config = cfg
        self.cov.hit("registers rewritten mid-stream")
        return at

    async def reset(self):
        dut = self.dut
        self._withdraw()
        dut.rst.value = 1
        await self.tick(2)
        dut.rst.value = 0
        self._init_control()
        self._hold = 0
        self.rate_bank = 0

    # ---- the script ----------------------------------------------------------------------
    def telemetry(self):
        """The ports after the last edge: the values of clock ``now - 1``."""
        dut = self.dut
        word = dut.counters.value.to_unsigned()
        counters = [(word >> (64 * i)) & ((1 << 64) - 1) for i in range(len(COUNTERS))]
        snap = {k: getattr(dut, k).value.to_unsigned()
                for k in ("n_raw", "n", "avg", "occ_pkts", "occ_bytes", "max_queue")}
        return counters, snap

    def check_telemetry(self, counters, snap, clock):
        """The ports' values of ``clock`` against the model, each field at the clock it
        belongs to (fpq_hdl.queue_manager's delays); every mismatch named."""
        model = self.rec.model
        bad = []
        want = list(model.counters.values())
        if counters != want:
            bad.append(f"counters: RTL {dict(zip(COUNTERS, counters))} != model "
                       f"{model.counters}")
        msnap = model.snapshot()
        for key in ("occ_pkts", "occ_bytes", "max_queue"):
            if snap[key] != msnap[key]:
                bad.append(f"{key}: RTL {snap[key]} != model {msnap[key]}")
        for key, delay in (("avg", AVG_TELEMETRY_DELAY), ("n", N_TELEMETRY_DELAY),
                           ("n_raw", N_RAW_DELAY)):
            model.advance(clock - delay)
            want = model.snapshot()[key]
            if snap[key] != want:
                bad.append(f"{key}: RTL {snap[key]} != model {want} (the model at clock "
                           f"{clock - delay})")
        if bad:
            raise AssertionError(f"telemetry at clock {clock}: " + "; ".join(bad))

    async def run_script(self):
        plan = self.plan
        Clock(self.clk, PERIOD_NS, unit="ns", impl="gpi").start()
        t0 = time.perf_counter()
        lost = 0
        for item in plan["script"]:
            kind = item[0]
            if kind == "config":
                await self.reset()
                await self.wait_wipe()
                await self.start(item[1])
            elif kind == "commit":
                await self.commit(item[1], item[2] if len(item) > 2 else None)
            elif kind == "reset":
                # mid-stream: arrivals in flight and verdicts waiting are lost with the reset
                self._withdraw()
                await self.tick(5)
                await self.reset()
                lost += self.sb.lose()
                self.cov.hit("reset mid-stream")
                await self.wait_wipe()
                await self.start(item[1])
            elif kind == "idle":
                self.offset += item[1]
            elif kind == "events":
                await self.run_events(item[1])
            else:
                raise ValueError(f"script item {kind!r}")
        await self.drain()
        self.watch = True
        await self.tick(40)          # nothing more may come out (Scoreboard.check raises)
        self.sb.done()
        counters, snap = self.telemetry()
        self.check_telemetry(counters, snap, self.now - 1)
        wall = time.perf_counter() - t0
        cov = self.cov
        cov.hit("verdict back-pressure cycles", self.sink.backpressure)
        for why, n in self.refused.items():
            cov.hit(f"arrival refused: {why}", n)
        cov.hit("valid gap cycles", self.gaps)
        return {"arrivals": self.sb.count - self.sb.lost, "lost_to_reset": self.sb.lost,
                "cycles": self.cycle, "skipped": self.skipped, "shifted": self.shifted,
                "wall_s": wall, "coverage": cov.bins, "counters": self.rec.model.counters,
                "events": len(self.rec.events)}
