"""``fpq_hdl.queue_averager.QueueAverager`` against the golden model
``fpq.queue_averager.QueueAverager`` (imported).

The bench strobes ``sample`` at clocks of its choosing (at least ``MIN_SAMPLE_PERIOD`` apart,
as the block requires), with ``q`` and ``wq_shift`` of that clock; in the other clocks ``q``
and ``wq_shift`` carry random values (in a fraction ``noise`` of them, default a half), which
must change nothing. The model is driven through its own interface with the block's
``LATENCY`` as its publication delay: before each sample ``configure(wq_shift, gap to the
next sample)`` (so its schedule is the bench's: the sample already scheduled keeps its
clock, the next follows the new period), then ``sample_until(clock + 1, q)``. ``avg`` is
compared on *every* clock with ``read(clock)``, the average after every sample taken
``LATENCY`` or more clocks before.

A build that fixes ``wq_shift`` (``Build.fixed``) must use its constant whatever the port
carries: the model then takes the build's value.

Script items: ``("run", [(gap, q, wq_shift), ...])`` after reset (the model starts at clock
0, the clock after the reset; the first sample ``gap`` clocks after it, each next one ``gap``
clocks after the one before); ``("preset", avg)`` (the average's register written before a
run: Amaranth only); ``("reset", k)`` (reset ``k`` clocks after the last sample: samples in
flight are lost). Plan: ``seed`` of the idle values, ``noise``; ``record`` keeps the model's
average of every clock in ``rows``."""

import random

from fpq.queue_averager import QueueAverager as Model
from fpq.formats import QPKTS_BITS, MIN_SAMPLE_PERIOD

from fpq_hdl.queue_averager import QueueAverager
from fpq_hdl.layouts import fixed_registers

from ..bench import Bench

__all__ = ["QueueAveragerBench", "OUTPUTS", "Q_MAX", "SHIFTS", "samples", "script", "gaps_of"]

OUTPUTS = ("avg",)
Q_MAX = (1 << QPKTS_BITS) - 1
SHIFTS = list(range(17)) + [20, 31]


class QueueAveragerBench(Bench):
    INPUTS = ("sample", "q", "wq_shift")
    PREFIX = "queue averager: "

    def __init__(self, sim, plan):
        super().__init__(sim, plan)
        fixed = fixed_registers(plan["build"]).get("wq_shift")
        self.fixed = None if fixed is None else fixed.value
        self.rnd = random.Random(plan["seed"])
        self.noise = plan.get("noise", 0.5)
        self.model = None
        self.start = 0          # the average a run starts from
        self.clock = 0          # the model's clock of the clock whose inputs are set next
        self.next_sample = None
        self.resets = 0

    def extra_result(self):
        return {"resets": self.resets}

    async def clock_tick(self, sample=None):
        """One clock; ``sample = (q, wq_shift)`` strobes a sample in it. ``avg`` expected."""
        rnd, m, c = self.rnd, self.model, self.clock
        if sample is not None:
            self.set("sample", 1)
            self.set("q", sample[0])
            self.set("wq_shift", sample[1])
        else:
            self.set("sample", 0)
            if rnd.random() < self.noise:                    # ignored without a sample
                self.set("q", rnd.randrange(Q_MAX + 1))
                self.set("wq_shift", rnd.randrange(32))
        want = m.read(c)
        self.record(want)
        self.expect(0, f"clock {c} ({m.samples} samples so far, w_q 2^-{m.wq_shift})",
                    avg=want)
        self.clock = c + 1
        await self.tick()

    async def do_preset(self, avg):
        self.sim.preset("avg", avg)
        self.start = avg

    async def do_run(self, samples):
        # a fresh model at clock 0, its first sample at the first gap
        m = self.model = Model(0, samples[0][0], QueueAverager.LATENCY)
        m.avg = m.published = self.start
        self.clock = 0
        self.next_sample = samples[0][0]
        for i, (gap, q, shift) in enumerate(samples):
            at = self.next_sample
            while self.clock < at:
                await self.clock_tick()
            nxt = samples[i + 1][0] if i + 1 < len(samples) else MIN_SAMPLE_PERIOD
            used = shift if self.fixed is None else self.fixed
            if used != m.wq_shift:
                self.hit("w_q rewritten between samples")
            m.configure(used, nxt, at - 1)     # the period a sample steps with: a clock before
            a0 = m.avg
            m.sample_until(at + 1, q)
            self._coverage(gap, q, used, a0, m.avg)
            self.next_sample = at + nxt
            await self.clock_tick((q, shift))

    def _coverage(self, gap, q, used, before, after):
        self.hit(f"w_q = 2^-{used}")
        d = (q << 16) - before
        self.hit("average rises" if d > 0 else "average falls" if d < 0 else
                 "average equals the sample")
        if d and after == before:
            self.hit("step rounds to 0 (the fixed point)")
        if q == Q_MAX:
            self.hit("q at its maximum")
        if gap == MIN_SAMPLE_PERIOD:
            self.hit("samples MIN_SAMPLE_PERIOD clocks apart")
        elif gap > 50:
            self.hit("samples far apart")

    async def do_reset(self, k):
        for _ in range(k):
            await self.clock_tick()
        await self.reset()
        self.start = 0
        self.resets += 1
        self.hit("reset mid-stream (samples in flight)")

    async def finish(self):
        for _ in range(QueueAverager.LATENCY + 2):
            await self.clock_tick()


# ---- stimulus --------------------------------------------------------------------------------
def samples(rnd, n, shifts=SHIFTS, gaps=(MIN_SAMPLE_PERIOD, MIN_SAMPLE_PERIOD, 5, 7, 13, 200)):
    """(gap, q, wq_shift): a queue that walks, jumps, sits at its maximum and empties, and
    stays put for a while (the average reaches its fixed point); the shift changes every
    few samples."""
    out, q, shift, still = [], 0, rnd.choice(shifts), 0
    for k in range(n):
        r = rnd.random()
        if k == n // 3:
            still = n // 4
        if still:
            still -= 1
        else:
            q = Q_MAX if r < 0.02 else 0 if r < 0.05 else rnd.randrange(Q_MAX + 1) \
                if r < 0.08 else max(0, min(Q_MAX, q + rnd.randint(-30, 40)))
        if rnd.random() < 0.1:
            shift = rnd.choice(shifts)
        out.append((rnd.choice(gaps), q, shift))
    return out


def script(n, seed=1):
    """Three runs from reset; the first two end with samples in flight (a reset 1-3 clocks
    after their last sample)."""
    rnd = random.Random(seed)
    return [("run", samples(rnd, n)), ("reset", 1), ("run", samples(rnd, n // 2)),
            ("reset", 3), ("run", samples(rnd, n, shifts=(0, 1, 2, 16)))]


def gaps_of(at_clocks):
    """``(clock, q, wq_shift)`` samples at clocks counted from a run's clock 0 as the ``run``
    item's ``(gap, q, wq_shift)``."""
    out, last = [], 0
    for clock, q, w in at_clocks:
        out.append((clock - last, q, w))
        last = clock
    return out
