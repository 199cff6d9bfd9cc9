"""cocotb bench of ``fpq_hdl.queue_averager.QueueAverager`` alone, against the golden model
``fpq.queue_averager.QueueAverager`` (imported).

The bench strobes ``sample`` at clocks of its choosing (at least ``MIN_SAMPLE_PERIOD`` apart,
as the block requires), with ``q`` and ``wq_shift`` of that clock; in the other clocks ``q``
and ``wq_shift`` carry random values, which must change nothing. The model is driven through
its own interface with the block's ``LATENCY`` as its publication delay: before each sample
``configure(wq_shift, gap to the next sample)`` (so its schedule is the bench's: the sample
already scheduled keeps its clock, the next follows the new period), then
``sample_until(clock + 1, q)``. ``avg`` is compared on *every* clock with ``read(clock)``,
the average after every sample taken ``LATENCY`` or more clocks before.

A build that fixes ``wq_shift`` (``Build.fixed``) must use its constant whatever the port
carries: the model then takes the build's value.

Script items (plan["script"]): ``("run", [(gap, q, wq_shift), ...])`` after reset (the model
starts at clock 0, the clock after the reset; the first sample ``gap`` clocks after it, each
next one ``gap`` clocks after the one before); ``("reset", k)`` (reset ``k`` clocks after the
last sample: samples in flight are lost)."""

import random

import cocotb

from fpq.queue_averager import QueueAverager as Model
from fpq.formats import QPKTS_BITS, MIN_SAMPLE_PERIOD

from fpq_hdl.queue_averager import QueueAverager
from fpq_hdl.layouts import fixed_registers

from tb_lib.component_bench import start, reset, Ports
from tb_lib.runner import load_plan, save_result
from tb_lib.scoreboard import Coverage

P = "queue averager: "
Q_MAX = (1 << QPKTS_BITS) - 1


class QueueAveragerTB:
    def __init__(self, dut, plan):
        self.dut, self.plan = dut, plan
        self.build = plan["build"]
        fixed = fixed_registers(self.build).get("wq_shift")
        self.fixed = None if fixed is None else fixed.value
        self.rnd = random.Random(plan["seed"])
        self.ports = Ports(dut, ["sample", "q", "wq_shift"])
        self.cov = Coverage()
        self.cycle = 0
        self.checked = 0
        self.lost = 0
        self.model = None
        self.clock = 0          # the model's clock of the clock whose inputs are set next
        self.next_sample = None

    async def tick(self, sample=None):
        """One clock; ``sample = (q, wq_shift)`` strobes a sample in it. ``avg`` checked."""
        ps, rnd, m = self.ports, self.rnd, self.model
        c = self.clock
        if sample is not None:
            q, shift = sample
            ps.set("sample", 1)
            ps.set("q", q)
            ps.set("wq_shift", shift)
        else:
            ps.set("sample", 0)
            if rnd.random() < 0.5:                     # ignored without a sample
                ps.set("q", rnd.randrange(Q_MAX + 1))
                ps.set("wq_shift", rnd.randrange(32))
        want = m.read(c)
        await self.edge
        self.cycle += 1
        self.clock = c + 1
        got = self.dut.avg.value.to_unsigned()
        if got != want:
            raise AssertionError(f"clock {c}: RTL avg {got} != model {want} ({m.samples} "
                                 f"samples so far, w_q 2^-{m.wq_shift})")
        self.checked += 1

    async def run_samples(self, samples):
        m, hit = self.model, self.cov.hit
        for i, (gap, q, shift) in enumerate(samples):
            at = self.next_sample
            while self.clock < at:
                await self.tick()
            nxt = samples[i + 1][0] if i + 1 < len(samples) else MIN_SAMPLE_PERIOD
            used = shift if self.fixed is None else self.fixed
            if used != m.wq_shift:
                hit(P + "w_q rewritten between samples")
            m.configure(used, nxt, at - 1)     # the period a sample steps with: a clock before
            a0 = m.avg
            m.sample_until(at + 1, q)
            hit(P + f"w_q = 2^-{used}")
            d = (q << 16) - a0
            hit(P + ("average rises" if d > 0 else "average falls" if d < 0 else
                     "average equals the sample"))
            if d and m.avg == a0:
                hit(P + "step rounds to 0 (the fixed point)")
            if q == Q_MAX:
                hit(P + "q at its maximum")
            if gap == MIN_SAMPLE_PERIOD:
                hit(P + "samples MIN_SAMPLE_PERIOD clocks apart")
            elif gap > 50:
                hit(P + "samples far apart")
            self.next_sample = at + nxt
            await self.tick((q, shift))

    async def run(self):
        self.edge = await start(self.dut, ["sample", "q", "wq_shift"])
        resets = 0
        for item in self.plan["script"]:
            kind = item[0]
            if kind == "run":
                samples = item[1]
                # a fresh model at clock 0, its first sample at the first gap
                self.model = Model(0, samples[0][0], QueueAverager.LATENCY)
                self.clock = 0
                self.next_sample = samples[0][0]
                await self.run_samples(samples)
            elif kind == "reset":
                for _ in range(item[1]):
                    await self.tick()
                self.ports.set("sample", 0)
                await reset(self.dut, self.edge)
                self.cycle += 2
                self.ports.forget()
                resets += 1
                self.cov.hit(P + "reset mid-stream (samples in flight)")
            else:
                raise ValueError(f"script item {kind!r}")
        for _ in range(QueueAverager.LATENCY + 2):
            await self.tick()
        return {"inputs": self.checked, "cycles": self.cycle, "resets": resets,
                "coverage": self.cov.bins}


@cocotb.test()
async def queue_averager(dut):
    save_result(await QueueAveragerTB(dut, load_plan()).run())
