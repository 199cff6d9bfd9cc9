"""Bench of the register file + queue manager (``system_top.System``) through the bus.

Like :class:`tb_lib.blocks.queue_manager.QueueManagerBench`, but the configuration goes through the register map
(``fpq.regmap``): out of reset the register file restarts the time base with its defaults
(clock 0 is the clock after its ``restart``: the golden model starts there with
``Config(build)``); shadow registers and table words are written over the bus *while the
previous segment's arrivals stream* (they must change nothing until COMMIT), and COMMIT is
written while the last fifth of them still stream: the register file holds the arrival port,
waits for an empty pipeline and applies everything in one clock, which the bench sees on the
monitor ports (``config`` or ``rate_bank`` change) and gives the model as the commit's clock.
Then STATUS is polled; the final counters and telemetry are read over the bus, each word
compared with the model at the clock its read sampled. Extra script items:

* ``("bad_commit", {register: raw value})``: shadows out of range, COMMIT; STATUS must show
  COMMIT_REJECTED with REJECT_INDEX = ``fpq.regmap.check_registers``; the verdicts keep
  following the old configuration; then the shadows are restored and the errors cleared;
* ``("bad_write", address)``: a write to a read-only or unmapped address sets BAD_WRITE."""

from fpq import Config
from fpq.regmap import (registers, tables, check_registers, CONTROL_COMMIT,
                        CONTROL_CLEAR_ERRORS, STATUS_BITS, STATUS_REJECT_INDEX_SHIFT)
from fpq.queue_manager import COUNTERS

from fpq_hdl.queue_manager import N_RAW_DELAY, N_TELEMETRY_DELAY, AVG_TELEMETRY_DELAY

from .queue_manager import QueueManagerBench, steps_of
from ..bus import RegisterBus
from ..streams import Pattern
from ..scoreboard import Record

__all__ = ["SystemBench"]

_BUSY = 1 << STATUS_BITS["BUSY"]
_REJ = 1 << STATUS_BITS["COMMIT_REJECTED"]
_BAD = 1 << STATUS_BITS["BAD_WRITE"]
#: the part of a segment's steps presented before its COMMIT is written
_COMMIT_AT = 0.8


class CommitMonitor:
    """Armed with the configuration a COMMIT applies; in the clock in which the register
    file's ``config`` or ``rate_bank`` change (read on the monitor ports after each edge) it
    gives the model ``configure(config, that clock)``: before an event accepted in that
    clock is recorded (agents sample first)."""

    def __init__(self, tb):
        self.tb = tb
        self.config_h, self.bank_h = tb.sim.handle("mon_config"), tb.sim.handle("mon_rate_bank")
        self.pending = None
        self.applied = []

    @property
    def idle(self):
        return self.pending is None

    def _ports(self):
        return self.config_h.value.to_unsigned(), int(self.bank_h.value)

    def arm(self, cfg):
        self.pending = cfg
        self.before = self._ports()

    def disarm(self):
        self.pending = None

    def drive(self):
        pass

    def sample(self):
        if self.pending is None:
            return
        if self._ports() != self.before:
            ts = self.tb.now - 1
            self.tb.rec.configure(self.pending, ts)
            self.applied.append(ts)
            self.pending = None


class SystemBench(QueueManagerBench):
    BUSY = "mon_busy"
    CONTROLS = ()
    INPUTS = ("arrivals__valid", "departures__valid", "rst")

    def __init__(self, sim, plan):
        super().__init__(sim, plan)
        self.bus = RegisterBus(sim.dut, Pattern(1.0 - plan.get("bus_gap", 0.3),
                                            plan.get("seed", 1) * 7 + 3), lambda: self.now)
        self.monitor = CommitMonitor(self)
        self.agents += [self.bus, self.monitor]
        self.regs = {r.name: r for r in registers(self.build)}
        self.tables = {t.name: t for t in tables(self.build)}
        self.shadow = None          # the register file's shadows as the bench wrote them
        self.table_written = None   # the r(N) table as the bench wrote it (None: not yet)
        self.queued = None          # the configuration whose writes are queued / written
        self.issued = None          # the configuration whose COMMIT is written
        self.commits = 0
        self.rejects = 0

    def _hold_now(self):
        return self.get("mon_hold")

    # ---- bus helpers --------------------------------------------------------------------
    def write_reg(self, name, value):
        r = self.regs[name]
        for w in range(r.words):
            self.bus.write(r.offset + 4 * w, value >> (32 * w))

    async def read_words(self, name):
        """The register's words as ``[(word, clock of its read), ...]``."""
        r = self.regs[name]
        box = {}
        for w in range(r.words):
            self.bus.read(r.offset + 4 * w, lambda v, at, w=w: box.__setitem__(w, (v, at)))
        while len(box) < r.words:
            await self.tick()
        return [box[w] for w in range(r.words)]

    async def read_reg(self, name):
        return sum(v << (32 * w) for w, (v, _) in enumerate(await self.read_words(name)))

    async def bus_drain(self):
        while not self.bus.idle:
            await self.tick()

    def queue_config(self, cfg, old):
        """Shadow and table writes that turn ``old`` (None: unknown) into ``cfg``."""
        regs = cfg.registers()
        for r in self.regs.values():
            if r.kind == "config" and (self.shadow is None or self.shadow[r.name] != regs[r.name]):
                self.write_reg(r.name, regs[r.name])
        self.shadow = {n: regs[n] for n, r in self.regs.items() if r.kind == "config"}
        self.queued = cfg
        # the table as the bench last wrote it, not ``old``'s: the bench writes it once
        # whatever the power-on contents, then only when it changes
        table = cfg.rate_table()
        if self.table_written != table:
            base = self.tables["rate_table"].offset
            for i, w in enumerate(table):
                self.bus.write(base + 4 * i, w)
            self.table_written = table

    def issue_commit(self, cfg):
        """COMMIT written (after the writes queued before it); the monitor armed."""
        self.write_reg("control", CONTROL_COMMIT)
        self.monitor.arm(cfg)
        self.issued = cfg

    async def commit(self, cfg, ts=None, expect_reject=None):
        if self.issued is not cfg:
            if self.queued is not cfg:
                self.queue_config(cfg, self.config)
            self.issue_commit(cfg)
        self._withdraw()
        await self.bus_drain()
        await self.ticks(4)
        while True:
            status = await self.read_reg("status")
            if not status & _BUSY:
                break
        self.issued = None
        if expect_reject is None:
            if status & (_REJ | _BAD):
                raise AssertionError(f"commit: STATUS {status:#x}, want no error bit")
            if self.monitor.pending is not None:
                raise AssertionError("commit: STATUS says done but the register file's "
                                     "config and rate_bank never changed")
            self.commits += 1
            self.config = cfg
            self.cov.hit("registers rewritten mid-stream")
        else:
            self.monitor.disarm()
            idx = status >> STATUS_REJECT_INDEX_SHIFT
            if not status & _REJ or idx != expect_reject:
                raise AssertionError(f"bad commit: STATUS {status:#x} (REJECT_INDEX {idx}), "
                                     f"want COMMIT_REJECTED with REJECT_INDEX {expect_reject}")
            self.rejects += 1

    async def restart_after_reset(self):
        """Out of reset the register file pulses ``restart`` (with its defaults): the next
        clock is clock 0, the model a fresh one of ``Config(build)``."""
        self.bus.queue.clear()
        self.shadow = self.queued = self.issued = self.table_written = None
        self.monitor.disarm()
        for _ in range(8):
            await self.tick()
            if self.get("mon_restart"):
                break
        else:
            raise AssertionError("the register file pulsed no restart out of reset")
        self.base = self.cycle
        self.offset = 0
        self.config = Config(build=self.build)
        self.rec = Record(self.config, self.cov)

    async def begin(self, cfg):
        await self.restart_after_reset()
        await self.commit(cfg)

    # ---- script items ---------------------------------------------------------------------
    async def do_bad_commit(self, values):
        """Shadows out of range, COMMIT: rejected with REJECT_INDEX as
        ``fpq.regmap.check_registers`` says; the shadows restored and the errors cleared."""
        for name, v in values.items():
            self.write_reg(name, v)
        await self.commit(self.config,
                          expect_reject=check_registers(dict(self.shadow, **values), self.build))
        good = self.config.registers()
        for name in values:
            self.write_reg(name, good[name])
        self.write_reg("control", CONTROL_CLEAR_ERRORS)
        await self.bus_drain()
        status = await self.read_reg("status")
        if status & (_REJ | _BAD):
            raise AssertionError(f"CLEAR_ERRORS left STATUS {status:#x}")

    async def do_bad_write(self, address):
        self.bus.write(address, 0x12345678)
        status = await self.read_reg("status")
        if not status & _BAD:
            raise AssertionError(f"write to {address:#x}: STATUS {status:#x}, want BAD_WRITE")
        self.write_reg("control", CONTROL_CLEAR_ERRORS)

    async def do_events(self, events):
        # the next commit's shadow and table writes go out while these events stream, its
        # COMMIT while the last fifth of them still do
        script = self.plan["script"]
        nxt = script[self.step + 1] if self.step + 1 < len(script) else None
        hook = None
        if nxt is not None and nxt[0] == "commit":
            self.queue_config(nxt[1], self.config)
            hook = (int(len(steps_of(events)) * _COMMIT_AT),
                    lambda c=nxt[1]: self.issue_commit(c))
        await self.run_events(events, hook)

    # ---- the end ----------------------------------------------------------------------------
    async def check_end(self):
        await self.check_over_the_bus()
        self.cov.hit("bus accesses", self.bus.accesses)
        self.cov.hit("commits over the bus", self.commits)
        self.cov.hit("commits rejected (checked range)", self.rejects)

    def extra_result(self):
        return {**super().extra_result(), "commit_clocks": list(self.monitor.applied)}

    async def check_over_the_bus(self):
        """Counters and telemetry over the bus: each word against the model at the clock its
        read sampled (the average and the flow counts move with the clock); then the
        clear-on-write of a counter and of max_queue."""
        model = self.rec.model
        got = {name: await self.read_reg(name) for name in COUNTERS}
        if got != model.counters:
            raise AssertionError(f"counters over the bus: RTL {got} != model {model.counters}")
        snap = model.snapshot()
        for name in ("occ_pkts", "occ_bytes", "max_queue"):
            v = await self.read_reg(name)
            if v != snap[name]:
                raise AssertionError(f"telemetry {name} over the bus: RTL {v} != model "
                                     f"{snap[name]}")
        # in clock order, so that the model only moves forward
        for name, delay in (("avg", AVG_TELEMETRY_DELAY), ("n", N_TELEMETRY_DELAY),
                            ("n_raw", N_RAW_DELAY)):
            for w, (v, at) in enumerate(await self.read_words(name)):
                model.advance(at - delay)
                want = (model.snapshot()[name] >> (32 * w)) & 0xFFFFFFFF
                if v != want:
                    raise AssertionError(f"telemetry {name} word {w} over the bus, read at "
                                         f"clock {at}: RTL {v} != model {want} (the model at "
                                         f"clock {at - delay})")
        # clear-on-write: a counter, and max_queue (the model's clear_max_queue)
        self.write_reg("arrivals", 0)
        self.write_reg("max_queue", 0)
        model.clear_max_queue()
        await self.bus_drain()
        await self.ticks(2)
        cleared = {n: await self.read_reg(n) for n in ("arrivals", "max_queue", "occ_pkts")}
        want = {"arrivals": 0, "max_queue": model.max_queue, "occ_pkts": model.occ_pkts}
        if cleared != want:
            raise AssertionError(f"after writes to arrivals and max_queue: RTL {cleared} != "
                                 f"model {want}")
