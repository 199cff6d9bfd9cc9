"""Bench of the register file + queue manager (``system_top.System``) through the bus.

Like :class:`QueueManagerTB`, but the configuration goes through the register map
(``fpq.regmap``): shadow registers and table words are written over the bus *while the
previous segment's arrivals stream* (they must change nothing until COMMIT), then COMMIT is
written and STATUS polled; the final counters and telemetry are read over the bus. Extra
script items:

* ``("bad_commit", {register: raw value})``: shadows out of range, COMMIT; STATUS must show
  COMMIT_REJECTED with REJECT_INDEX = ``fpq.regmap.check_registers``; the verdicts keep
  following the old configuration; then the shadows are restored and the errors cleared;
* ``("bad_write", address)``: a write to a read-only or unmapped address sets BAD_WRITE."""

from fpq.regmap import (registers, tables, check_registers, CONTROL_COMMIT,
                        CONTROL_CLEAR_ERRORS, STATUS_BITS, STATUS_REJECT_INDEX_SHIFT)
from fpq.queue_manager import COUNTERS

from .qm_bench import QueueManagerTB, steps_of
from .bus import RegisterBus
from .streams import Pattern

__all__ = ["SystemTB"]

_BUSY = 1 << STATUS_BITS["BUSY"]
_REJ = 1 << STATUS_BITS["COMMIT_REJECTED"]
_BAD = 1 << STATUS_BITS["BAD_WRITE"]


class SystemTB(QueueManagerTB):
    def __init__(self, dut, plan):
        super().__init__(dut, plan)
        self.bus = RegisterBus(dut, Pattern(1.0 - plan.get("bus_gap", 0.3),
                                            plan.get("seed", 1) * 7 + 3))
        self.agents.append(self.bus)
        self.regs = {r.name: r for r in registers(self.build)}
        self.tables = {t.name: t for t in tables(self.build)}
        self.shadow = None          # the register file's shadows as the bench wrote them
        self.queued = None          # the configuration whose writes are queued / written
        self.commits = 0
        self.rejects = 0

    def _init_control(self):
        pass

    # ---- bus helpers --------------------------------------------------------------------
    def write_reg(self, name, value):
        r = self.regs[name]
        for w in range(r.words):
            self.bus.write(r.offset + 4 * w, value >> (32 * w))

    async def read_reg(self, name):
        r = self.regs[name]
        box = {}
        for w in range(r.words):
            self.bus.read(r.offset + 4 * w, lambda v, w=w: box.__setitem__(w, v))
        while len(box) < r.words:
            await self.tick()
        return sum(box[w] << (32 * w) for w in range(r.words))

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
        for name, table in (("rate_table", cfg.rate_table()), ("decay_table", cfg.decay_table())):
            if old is None or getattr(old, name)() != table:
                base = self.tables[name].offset
                for i, w in enumerate(table):
                    self.bus.write(base + 4 * i, w)

    async def commit(self, expect_reject=None):
        await self.bus_drain()
        self.write_reg("control", CONTROL_COMMIT)
        await self.bus_drain()
        for _ in range(4):
            await self.tick()
        while True:
            status = await self.read_reg("status")
            if not status & _BUSY:
                break
        if expect_reject is None:
            if status & (_REJ | _BAD):
                raise AssertionError(f"commit: STATUS {status:#x}, want no error bit")
            self.commits += 1
        else:
            idx = status >> STATUS_REJECT_INDEX_SHIFT
            if not status & _REJ or idx != expect_reject:
                raise AssertionError(f"bad commit: STATUS {status:#x} (REJECT_INDEX {idx}), "
                                     f"want COMMIT_REJECTED with REJECT_INDEX {expect_reject}")
            self.rejects += 1

    # ---- the script ---------------------------------------------------------------------
    async def load(self, cfg, old=None):
        if self.shadow is None or old is None or self.queued is not cfg:
            self.queue_config(cfg, old)
        await self.commit()
        self.config = cfg

    async def run_script(self):
        from cocotb.clock import Clock
        from .scoreboard import predict, Scoreboard
        plan = self.plan
        script = plan["script"]
        expected, facts, model = predict(script, self.cov)
        self.sb = Scoreboard(expected)
        Clock(self.clk, 10, unit="ns").start()
        await self.reset()
        k, lost = 0, 0
        for i, item in enumerate(script):
            kind = item[0]
            if kind == "config":
                self.shadow = None
                await self.load(item[1])
            elif kind == "commit":
                await self.load(item[1], self.config)
            elif kind == "reset":
                for _ in range(5):
                    await self.tick()
                await self.reset()
                self.bus.queue.clear()
                lost += k - self.sb.count
                self.sb.count = k
                self.shadow = None
                await self.load(item[1])
            elif kind == "bad_commit":
                values = dict(self.shadow, **item[1])
                for name, v in item[1].items():
                    self.write_reg(name, v)
                await self.commit(expect_reject=check_registers(values, self.build))
                good = self.config.registers()
                for name in item[1]:
                    self.write_reg(name, good[name])
                self.write_reg("control", CONTROL_CLEAR_ERRORS)
                await self.bus_drain()
                status = await self.read_reg("status")
                if status & (_REJ | _BAD):
                    raise AssertionError(f"CLEAR_ERRORS left STATUS {status:#x}")
            elif kind == "bad_write":
                self.bus.write(item[1], 0x12345678)
                status = await self.read_reg("status")
                if not status & _BAD:
                    raise AssertionError(f"write to {item[1]:#x}: STATUS {status:#x}, want "
                                         f"BAD_WRITE")
                self.write_reg("control", CONTROL_CLEAR_ERRORS)
            elif kind == "idle":
                await self.tick(item[1])
            elif kind == "events":
                # the next commit's shadow and table writes go out while these events stream
                nxt = script[i + 1] if i + 1 < len(script) else None
                if nxt is not None and nxt[0] == "commit":
                    self.queue_config(nxt[1], self.config)
                steps = steps_of(item[1], k)
                k += sum(1 for s in steps if s[2] >= 0)
                await self.run_events(steps)
        await self.drain(k)
        for _ in range(40):
            await self.tick()
        self.sb.done()
        got = {name: await self.read_reg(name) for name in COUNTERS}
        if got != model.counters:
            raise AssertionError(f"counters over the bus: RTL {got} != model {model.counters}")
        snap = model.snapshot()
        for name in ("n_raw", "n", "avg", "occ_pkts", "occ_bytes", "max_queue"):
            v = await self.read_reg(name)
            if v != snap[name]:
                raise AssertionError(f"telemetry {name} over the bus: RTL {v} != model "
                                     f"{snap[name]}")
        # clear-on-write: a counter, and max_queue (the model's clear_max_queue)
        self.write_reg("arrivals", 0)
        self.write_reg("max_queue", 0)
        model.clear_max_queue()
        await self.bus_drain()
        await self.tick(2)
        cleared = {n: await self.read_reg(n) for n in ("arrivals", "max_queue", "occ_pkts")}
        want = {"arrivals": 0, "max_queue": model.max_queue, "occ_pkts": model.occ_pkts}
        if cleared != want:
            raise AssertionError(f"after writes to arrivals and max_queue: RTL {cleared} != "
                                 f"model {want}")
        self._coverage(facts)
        self.cov.hit("bus accesses", self.bus.accesses)
        self.cov.hit("commits over the bus", self.commits)
        self.cov.hit("commits rejected (checked range)", self.rejects)
        return {"arrivals": len(expected) - lost, "lost_to_reset": lost, "cycles": self.cycles,
                "coverage": self.cov.bins, "counters": model.counters}
