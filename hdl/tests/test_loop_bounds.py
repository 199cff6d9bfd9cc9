"""The loop-bound fixtures (``fpq_hdl.loop_bounds``) compute what they stand for: the EWMA
fixture steps as the golden model's averager does, so its Fmax bounds the real recurrence;
the others elaborate and are reachable from the synthesis CLI."""
import random

import pytest
from amaranth.back import rtlil
from amaranth.sim import Simulator

from fpq.formats import QAVG, QPKTS_BITS
from fpq.queue_averager import QueueAverager
from fpq_hdl.loop_bounds import EwmaLoop, LOOPS
from fpq_hdl.synth import SynthHarness


@pytest.mark.parametrize("wq_shift,fixed", [(0, False), (1, False), (9, False), (16, False),
                                            (9, True)])
def test_ewma_loop_steps_as_the_model(wq_shift, fixed):
    rnd = random.Random(wq_shift)
    model = QueueAverager(wq_shift, 0, [0] * 256)
    dut = EwmaLoop(wq_shift if fixed else None)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    want, got = [], []

    async def bench(ctx):
        ctx.set(dut.wq, 1 << wq_shift)
        for k in range(400):
            # bursts of full queues and of empty ones: the average climbs and decays
            q = rnd.randrange(1 << QPKTS_BITS) if (k // 50) % 2 == 0 else rnd.randrange(4)
            valid = rnd.random() < 0.8
            ctx.set(dut.valid, valid)
            ctx.set(dut.qs, (q << QAVG.frac_bits) >> wq_shift)
            if valid:
                model.update(q, 0)
            want.append(model.avg)
            await ctx.tick()                  # the inputs' register
            if k:
                got.append(ctx.get(dut.avg))  # the previous step's result
        await ctx.tick()
        got.append(ctx.get(dut.avg))
    sim.add_testbench(bench)
    sim.run()
    assert got == want
    assert max(want) > 1 << (QAVG.frac_bits + 10) or wq_shift == 16


@pytest.mark.parametrize("wq_shift,fixed", [(0, False), (9, False), (16, False), (9, True)])
def test_ewma_loop_with_idle_decay_steps_as_the_model(wq_shift, fixed):
    # the averager's whole recurrence: the EWMA, or after an idle period the decay shift
    # ``A >> decay[cells]``; the table here maps cells k to a shift of k (0..40, so shifts of
    # the width and more, which leave 0, come up too), the model's time being the cells
    width = QAVG.width
    rnd = random.Random(100 + wq_shift)
    model = QueueAverager(wq_shift, 0, list(range(41)) + [0] * (256 - 41))
    dut = EwmaLoop(wq_shift if fixed else None, decay=True)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    want, got, idles = [], [], 0

    async def bench(ctx):
        nonlocal idles
        ctx.set(dut.wq, 1 << wq_shift)
        for k in range(600):
            q = rnd.randrange(1 << QPKTS_BITS) if (k // 50) % 2 == 0 else rnd.randrange(4)
            valid = rnd.random() < 0.8
            idle = valid and rnd.random() < 0.15
            d = rnd.choice([0, 1, 2, 7, 16, 35, width - 1, width, 40]) if idle else 0
            ctx.set(dut.valid, valid)
            ctx.set(dut.idle, idle)
            ctx.set(dut.dsel, (1 << d) & ((1 << width) - 1))
            ctx.set(dut.qs, (q << QAVG.frac_bits) >> wq_shift)
            if valid:
                if idle:
                    model.went_idle(0)
                    idles += model.avg >> d != model.avg
                model.update(q, d)
            want.append(model.avg)
            await ctx.tick()
            if k:
                got.append(ctx.get(dut.avg))
        await ctx.tick()
        got.append(ctx.get(dut.avg))
    sim.add_testbench(bench)
    sim.run()
    assert got == want
    assert idles > 30                         # decays that changed the average


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_loop_fixture_converts_in_the_synthesis_harness(name):
    text = rtlil.convert(SynthHarness(None, name), name="top")
    assert "module" in text and len(text) > 1000
