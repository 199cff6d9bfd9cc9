"""The queue manager's bench (``fpq_hdl.queue_manager.QueueManager`` on Verilator), a
:class:`tb_lib.bench.Bench`: reset, the configuration port and tables, the arrival and
departure ports and the verdict sink (with random back-pressure, a port agent of the kit's
clock loop), and its script items (see ``scoreboard``); its model adapter is
``scoreboard.Record``. Clock 0 is the clock after the one with ``restart`` (loaded after
the reset's vector wipe); ``now`` counts from it. Each script step (a departure, an arrival,
or a departure and an arrival of one clock) is presented in the clock it asks for, or later:
after random valid gaps (``gap``), or while the port refuses the arrival (no credit, a
vector wipe, a commit's hold). The bench records the clock in which the RTL accepted each
event and every commit's clock, and feeds the golden model that record as it happens
(``scoreboard.Record``), so every verdict is compared field by field when it leaves the RTL.
Stretches with nothing to present and no verdict outstanding are skipped with one timer
(the simulator adapter's ``skip``).

Ordering rule of the DUT: a departure presented in the same clock as an arrival applies first.
So a departure goes out in its step's first clock, alone or with its arrival; a step waits for
the previous step's arrival to be accepted.

Script items: ``("config", Config)`` (reset, the vector wipe, the configuration loaded),
``("commit", Config[, clock])``, ``("reset", Config)`` (mid-stream: arrivals in flight and
verdicts waiting are lost), ``("idle", clocks)`` (the asked clocks after it shift by
``clocks``), ``("events", events)``. Plan keys: ``build``, ``script``, ``gap`` (probability
that a step waits one more clock), ``gap_burst``, ``ready`` (probability that the verdict sink
is ready), ``ready_burst``, ``seed``."""

import time

from fpq import Departure
from fpq.bitfields import pack
from fpq.register_specs import key_registers
from fpq.queue_manager import COUNTERS

from fpq_hdl.layouts import ARRIVAL, DEPARTURE, config_layout
from fpq_hdl.queue_manager import (N_RAW_DELAY, N_TELEMETRY_DELAY, AVG_TELEMETRY_DELAY,
                                   LATENCY)

from ..bench import Bench
from ..streams import Pattern, StreamSink
from ..scoreboard import Record, Scoreboard

__all__ = ["QueueManagerBench", "arrival_word", "steps_of", "commit_strobes"]

_A = {name: f.offset for name, f in ARRIVAL}
_D = {name: f.offset for name, f in DEPARTURE}
#: idle stretches at least this long are skipped with a timer instead of clock by clock
_SKIP_MIN = 4


def arrival_word(a):
    return (a.flow << _A["flow"]) | (a.length << _A["length"]) | (int(bool(a.ecn)) << _A["ecn"])


def commit_strobes(old, new, build):
    """The strobes a commit of the registers ``new`` over ``old`` (``Config.registers()``)
    pulses with them, as the register file's COMMIT does: ``wipe`` when ``v_max`` or a key
    of the build (``fpq.register_specs.key_registers``) changes, ``rekey`` for the latter,
    a generator's load when its state changes."""
    rekey = any(new[k] != old[k] for k in key_registers(build))
    return [s for s, on in (
        ("wipe", new["v_max"] != old["v_max"] or rekey), ("rekey", rekey),
        ("load_rng_decide", new["rng_decide_state"] != old["rng_decide_state"]),
        ("load_rng_clear", new["rng_clear_state"] != old["rng_clear_state"])) if on]


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



class _Ports:
    """The port agent of the queue manager's streams: the arrival and departure valids as
    the bench wants them (written only on a change), the verdict sink's ``ready``, and the
    scoreboard's check of each verdict taken (while verdicts are expected, or the bench
    watches for one too many)."""

    idle = True

    def __init__(self, tb, sink):
        self.tb, self.sink = tb, sink

    def drive(self):
        tb = self.tb
        tb.set("arrivals__valid", tb.a_want)
        tb.set("departures__valid", tb.d_want)
        self.sink.drive()

    def sample(self):
        tb = self.tb
        if tb.sb.expected or tb.watch:
            w = self.sink.sample()
            if w is not None:
                tb.sb.check(w)


class QueueManagerBench(Bench):
    #: the port that says a vector wipe is under way
    BUSY = "busy"
    #: the control inputs, zeroed at the start and at a reset
    CONTROLS = ("load_rng_decide", "load_rng_clear", "restart", "wipe", "rekey", "hold",
                "rate_we", "rate_bank", "clear_max_queue", "counter_clear")
    INPUTS = ("arrivals__valid", "departures__valid", "rst") + CONTROLS

    def __init__(self, sim, plan):
        super().__init__(sim, plan)
        self.build = plan["build"]
        seed = plan.get("seed", 1)
        self.gap = Pattern(1.0 - plan.get("gap", 0.0), seed * 7 + 1, plan.get("gap_burst", 1))
        self.sink = StreamSink(*(sim.handle(f"verdicts__{p}") for p in ("valid", "ready",
                                                                         "payload")),
                               Pattern(plan.get("ready", 1.0), seed * 7 + 2,
                                       plan.get("ready_burst", 1)))
        self.a_want = self.d_want = 0    # the valids the next clock presents
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
        self.t0 = time.perf_counter()
        self.agents.append(_Ports(self, self.sink))

    @property
    def now(self):
        """The queue manager's clock whose inputs are being set."""
        return self.cycle - self.base

    # ---- clocks --------------------------------------------------------------------------
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
        """The kit's skip with the sink not ready meanwhile: a verdict nobody expects stays
        in the FIFO, to be seen at the next clock the bench watches."""
        self.sink.hold_off()
        await super().skip(n)
        self.skipped += n

    def _withdraw(self):
        self.a_want = self.d_want = 0
        self.set("arrivals__valid", 0)
        self.set("departures__valid", 0)

    # ---- events --------------------------------------------------------------------------
    def _hold_now(self):
        return self._hold

    async def run_events(self, events, hook=None):
        """Present ``events`` (see the module docstring); ``hook = (k, fn)``: ``fn()`` before
        the ``k``-th step."""
        gap, sb = self.gap, self.sb
        for k, (clock, dep, arr) in enumerate(steps_of(events)):
            if hook is not None and k == hook[0]:
                hook[1]()
            asked = clock + self.offset
            if self.now < asked:
                await self.idle_until(asked)
            while not gap.next():
                self.a_want = self.d_want = 0
                await self.tick()
                self.gaps += 1
            if dep is not None:
                self.set("departures__payload", dep.length << _D["length"])
            self.d_want = int(dep is not None)
            if arr is not None:
                self.set("arrivals__payload", arrival_word(arr))
            self.a_want = int(arr is not None)
            while True:
                t = self.now
                await self.tick()
                if dep is not None:
                    self._departed(t, asked, dep)
                    dep = None
                if arr is None:
                    break
                if self.get("arrivals__ready"):
                    sb.expect(self.rec.arrive(t, arr.flow, arr.length, bool(arr.ecn)), t)
                    self.shifted += t != asked
                    self.a_want = 0
                    break
                why = "hold" if self._hold_now() else "busy" if self.get(self.BUSY) else \
                    "credit"
                self.refused[why] += 1

    def _departed(self, t, asked, dep):
        if not self.get("departures__ready"):
            raise AssertionError(f"clock {t}: departures.ready low (departures are always "
                                 f"accepted)")
        self.rec.depart(t, dep.length)
        self.shifted += t != asked
        self.d_want = 0

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
        self.set("hold", v)
        self._hold = v

    async def write_table(self, table, active):
        """Every word into the bank that is not ``active``, one per clock."""
        self.set("rate_bank", active)
        self.set("rate_we", 1)
        for i, w in enumerate(table):
            self.set("rate_addr", i)
            self.set("rate_data", w)
            await self.tick()
        self.set("rate_we", 0)

    async def wait_wipe(self):
        """After a reset: clock until the vector wipe out of reset is over (most of it
        skipped: it takes ``vec_bits + 3`` clocks)."""
        await self.ticks(2)
        self.base = self.cycle
        await self.idle_until(self.build.vec_bits - 4)
        while self.get("busy"):
            await self.tick()

    async def start(self, cfg):
        """Out of reset (wipe over): the configuration and table, then ``restart`` and both
        generator loads in one clock; the next clock is clock 0."""
        self.set("config", pack(config_layout(cfg.build), cfg.registers()))
        await self.write_table(cfg.rate_table(), 0)
        self.rate_bank = 1
        self.set("rate_bank", 1)
        await self.pulse(("restart", "load_rng_decide", "load_rng_clear"))
        self.base = self.cycle
        self.offset = 0
        self.config = cfg
        self.rec = Record(cfg, self.cov)

    async def pulse(self, strobes):
        """``strobes`` high for one clock."""
        for s in strobes:
            self.set(s, 1)
        await self.tick()
        for s in strobes:
            self.set(s, 0)

    async def commit(self, cfg, ts=None):
        """As the register file's COMMIT: the arrival port held, a changed table into the
        inactive bank, then (no arrival in the pipeline, no wipe under way, and not before
        the asked clock ``ts``) the registers, the bank swap and the strobes in one clock,
        recorded for the model."""
        old = self.config
        self._withdraw()
        self._set_hold(1)
        table = cfg.rate_table()
        swap = table != old.rate_table()
        if swap:
            await self.write_table(table, self.rate_bank)
        while True:
            await self.tick()
            if self.get("idle") and not self.get("busy"):
                break
        if ts is not None and self.now < ts + self.offset:
            await self.idle_until(ts + self.offset)
        regs = cfg.registers()
        strobes = commit_strobes(old.registers(), regs, cfg.build)
        self.set("config", pack(config_layout(cfg.build), regs))
        if swap:
            self.rate_bank ^= 1
            self.set("rate_bank", self.rate_bank)
            self.cov.hit("table bank swap at a commit")
        for s in strobes:
            self.cov.hit(f"commit with {s}")
        at = self.now
        await self.pulse(strobes)
        self._set_hold(0)
        self.rec.configure(cfg, at)
        self.config = cfg
        self.cov.hit("registers rewritten mid-stream")
        return at

    async def reset(self):
        """Reset held two clocks (the agents served), the control inputs zeroed."""
        self._withdraw()
        self.set("rst", 1)
        await self.ticks(2)
        self.set("rst", 0)
        for s in self.CONTROLS:
            self.set(s, 0)
        self._hold = 0
        self.rate_bank = 0

    async def begin(self, cfg):
        """Out of reset: the vector wipe, then ``cfg`` loaded; the next clock is clock 0."""
        await self.wait_wipe()
        await self.start(cfg)

    # ---- script items --------------------------------------------------------------------
    async def do_config(self, cfg):
        await self.reset()
        await self.begin(cfg)

    async def do_reset(self, cfg):
        # mid-stream: arrivals in flight and verdicts waiting are lost with the reset
        self._withdraw()
        await self.ticks(5)
        await self.reset()
        self.sb.lose()
        self.cov.hit("reset mid-stream")
        await self.begin(cfg)

    async def do_commit(self, cfg, ts=None):
        await self.commit(cfg, ts)

    async def do_idle(self, clocks):
        self.offset += clocks

    async def do_events(self, events):
        await self.run_events(events)

    # ---- the end -------------------------------------------------------------------------
    async def finish(self):
        """Every verdict checked, nothing more out for 40 clocks (``Scoreboard.check``
        raises), the final state against the model (``check_end``)."""
        await self.drain()
        self.watch = True
        await self.ticks(40)
        self.sb.done()
        await self.check_end()
        cov = self.cov
        for why, n in self.refused.items():
            cov.hit(f"arrival refused: {why}", n)
        cov.hit("verdict back-pressure cycles", self.sink.backpressure)
        cov.hit("valid gap cycles", self.gaps)
        self.lost = self.sb.lost

    async def check_end(self):
        counters, snap = self.telemetry()
        self.check_telemetry(counters, snap, self.now - 1)

    def extra_result(self):
        return {"arrivals": self.sb.count - self.sb.lost, "skipped": self.skipped,
                "shifted": self.shifted, "wall_s": time.perf_counter() - self.t0,
                "counters": self.rec.model.counters, "events": len(self.rec.events)}

    def telemetry(self):
        """The ports after the last edge: the values of clock ``now - 1``."""
        word = self.get("counters")
        counters = [(word >> (64 * i)) & ((1 << 64) - 1) for i in range(len(COUNTERS))]
        snap = {k: self.get(k) for k in ("n_raw", "n", "avg", "occ_pkts", "occ_bytes",
                                         "max_queue")}
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
