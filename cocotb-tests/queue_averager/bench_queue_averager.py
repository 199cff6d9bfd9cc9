"""cocotb bench of ``fpq_hdl.queue_averager.QueueAverager`` alone, against the golden model
``fpq.queue_averager.QueueAverager`` (imported).

Per arrival (``valid`` high) the model runs ``went_idle(t0)`` if the arrival found the queue
idle, then ``update(q, t0 + idle_diff)``; the bench compares ``avg`` on *every* clock with the
model's average after the inputs of ``QueueAverager.LATENCY`` clocks earlier (so idle clocks
must leave it unchanged), and ``avg_next`` with the ``avg`` of the next clock (its documented
register). Arrivals come with seeded idle clocks.

The idle-decay table is double-banked: the bench keeps a copy of both banks, writes random
entries into the inactive bank while arrivals stream, and on a swap gives the model the
bank that became active.

Script items (plan["script"]): ``("config", wq_shift, idle_cell_log, table_a, table_b)``
(after reset: bank A written and made active, bank B written), ``("events", [(q, idle,
idle_diff, t0), ...], p_write[, drain])`` (``p_write``: probability of a table write per
clock; ``drain`` False: end with arrivals in flight), ``("reset",)`` (reset held two clocks),
``("commit", wq_shift, idle_cell_log, table or None, swap)`` (pipeline drained; ``table``
written into the inactive bank first; ``swap`` makes the inactive bank active), ``("stream",
{gap, gap_burst})``."""

import random
from collections import deque

import cocotb

from fpq import Config
from fpq.queue_averager import QueueAverager as Model
from fpq.formats import QPKTS_BITS, TIME_BITS

from fpq_hdl.queue_averager import QueueAverager

from tb_lib.component_bench import start, reset, Ports, config_word
from tb_lib.runner import load_plan, save_result
from tb_lib.scoreboard import Coverage
from tb_lib.streams import Pattern

P = "queue averager: "
TMASK = (1 << TIME_BITS) - 1
Q_MAX = (1 << QPKTS_BITS) - 1


class QueueAveragerTB:
    def __init__(self, dut, plan):
        self.dut, self.plan = dut, plan
        self.build = plan["build"]
        self.base = Config(build=self.build).registers()
        self.seed = plan["seed"]
        self.rnd = random.Random(self.seed)
        self.streams(plan)
        self.ports = Ports(dut, ["valid", "q", "idle", "idle_diff", "config", "table_bank",
                                 "table_we", "table_addr", "table_data"])
        self.cov = Coverage()
        self.cycle = 0
        self.checked = 0
        self.lost = 0
        self.bank = 0                          # active bank
        self.banks = [[None] * 256, [None] * 256]
        self.model = None

    def streams(self, st):
        self.seed += 1
        self.gap = Pattern(1.0 - st.get("gap", 0.0), self.seed * 7 + 1, st.get("gap_burst", 1))

    async def tick(self, n=1):
        for _ in range(n):
            await self.edge
            self.cycle += 1

    async def write_table(self, table):
        """All entries into the inactive bank (pipeline drained)."""
        ps = self.ports
        ps.set("table_we", 1)
        for i, w in enumerate(table):
            ps.set("table_addr", i)
            ps.set("table_data", w)
            await self.tick()
        ps.set("table_we", 0)
        self.banks[self.bank ^ 1] = list(table)

    async def apply(self, wq_shift, cell_log, swap):
        regs = dict(self.base, wq_shift=wq_shift, idle_cell_log=cell_log)
        ps = self.ports
        ps.set("config", config_word(self.build, regs))
        if swap:
            self.bank ^= 1
            ps.set("table_bank", self.bank)
            self.cov.hit(P + "bank swap")
        table = self.banks[self.bank]
        assert None not in table, "the active bank was never fully written"
        if self.model is None:
            self.model = Model(wq_shift, cell_log, table)
        else:
            old = (self.model.wq_shift, self.model.cell_log)
            if old != (wq_shift, cell_log):
                self.cov.hit(P + "w_q / cell size rewritten")
            self.model.configure(wq_shift, cell_log, table)
        await self.tick()              # the configuration a clock before the next arrival

    async def run_events(self, events, p_write, drain=True):
        dut, ps, edge, gap, model, rnd = self.dut, self.ports, self.edge, self.gap, \
            self.model, self.rnd
        avg_h, next_h = dut.avg, dut.avg_next
        L = QueueAverager.LATENCY
        want = deque([model.avg] * L, maxlen=L)   # the model's average after each clock
        hit = self.cov.hit
        s = model.wq_shift
        mask = (1 << s) - 1
        cell_top = 256 << model.cell_log
        n, i, tail, gaps, writes, clocks = len(events), 0, 0, 0, 0, 0
        prev_next = None
        inactive = self.banks[self.bank ^ 1]
        presented = deque([0] * L, maxlen=L)   # arrivals of the last L clocks (in flight)
        while i < n or (drain and tail <= L):  # every arrival, then L + 1 idle clocks to drain
            if i < n and gap.next():
                q, idle, diff, t0 = events[i]
                ps.set("valid", 1)
                ps.set("q", q)
                ps.set("idle", idle)
                ps.set("idle_diff", diff & TMASK)
                a0 = model.avg
                if idle:
                    model.went_idle(t0)
                a = model.update(q, (t0 + diff) & TMASK)
                if idle:
                    hit(P + ("idle time negative (cells 0)" if diff < 0 else
                             "idle decay, cells clamped at 255" if diff >= cell_top else
                             "idle decay, cells < 255"))
                    if a0 and not a:
                        hit(P + "decay shift >= 36 (average to 0)")
                else:
                    hit(P + f"w_q = 2^-{s}")
                    if a0 & mask:
                        hit(P + "EWMA with A mod 2^s != 0 (rounding term)")
                if q == Q_MAX:
                    hit(P + "q at its maximum")
                i += 1
                presented.append(1)
            else:
                presented.append(0)
                ps.set("valid", 0)
                if i < n:
                    gaps += 1
                else:
                    tail += 1
            if p_write and rnd.random() < p_write:
                addr, w = rnd.randrange(256), rnd.randrange(64)
                ps.set("table_we", 1)
                ps.set("table_addr", addr)
                ps.set("table_data", w)
                inactive[addr] = w
                writes += 1
            else:
                ps.set("table_we", 0)
            expect = want[0]
            want.append(model.avg)
            await edge
            got = avg_h.value.to_unsigned()
            if got != expect:
                raise AssertionError(
                    f"clock {clocks} of the phase ({self.checked + i} arrivals presented so "
                    f"far): RTL avg {got} != model {expect} (w_q 2^-{s}, cell log "
                    f"{model.cell_log})")
            if prev_next is not None and prev_next != got:
                raise AssertionError(f"clock {clocks}: avg {got} is not the avg_next "
                                     f"{prev_next} of the clock before")
            prev_next = next_h.value.to_unsigned()
            clocks += 1
        ps.set("table_we", 0)
        self.cycle += clocks
        # without the drain the arrivals of the last L clocks are in flight: a reset follows
        # and they never reach ``avg`` (unchecked)
        lost = 0 if drain else sum(presented)
        self.lost += lost
        self.checked += n - lost
        hit(P + "arrivals checked", n - lost)
        hit(P + "valid gap cycles", gaps)
        if writes:
            hit(P + "table writes while streaming", writes)

    async def run(self):
        self.edge = await start(self.dut, ["valid", "q", "idle", "idle_diff", "table_bank",
                                           "table_we", "table_addr", "table_data"])
        for item in self.plan["script"]:
            kind = item[0]
            if kind == "config":
                _, wq, cl, ta, tb = item
                self.ports.set("table_bank", 0)
                await self.write_table(ta)             # into bank 1
                await self.apply(wq, cl, swap=True)     # bank 1 active
                await self.write_table(tb)             # into bank 0
            elif kind == "events":
                await self.run_events(*item[1:])
            elif kind == "commit":
                _, wq, cl, table, swap = item
                if table is not None:
                    await self.write_table(table)
                await self.apply(wq, cl, swap)
            elif kind == "stream":
                self.streams(item[1])
            elif kind == "reset":
                # after the events item that ended with arrivals in flight: A = 0 (as
                # documented); configuration and bank select are inputs, the tables keep
                # their contents (memories are not reset): a fresh model on the active bank
                self.ports.set("valid", 0)
                self.ports.set("table_we", 0)
                await reset(self.dut, self.edge)
                self.cycle += 2
                self.ports.forget()
                self.ports.set("table_bank", self.bank)
                m = self.model
                self.model = Model(m.wq_shift, m.cell_log, self.banks[self.bank])
                await self.tick()
                self.cov.hit(P + "reset mid-stream (arrivals in flight)")
            else:
                raise ValueError(f"script item {kind!r}")
        return {"inputs": self.checked, "lost_to_reset": self.lost, "cycles": self.cycle,
                "coverage": self.cov.bins}


@cocotb.test()
async def queue_averager(dut):
    save_result(await QueueAveragerTB(dut, load_plan()).run())
