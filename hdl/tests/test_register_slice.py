"""RegisterSlice: every word once, in order, under random valid and ready on both sides; the
stream rules (a word offered stays offered and unchanged until taken); one word per clock
when neither side stalls; and no combinational path between the two sides."""
import random

import pytest
from amaranth.sim import Simulator

from fpq_hdl.register_slice import RegisterSlice


def _run(words, p_valid, p_ready, seed, checks=None):
    """Drive ``words`` into a 16-bit slice (the producer offers with probability
    ``p_valid`` per clock and holds an offer until taken), take from it with probability
    ``p_ready``; returns (words taken in order, clocks used, stream-rule violations)."""
    dut = RegisterSlice(16)
    rnd = random.Random(seed)
    taken, violations, clocks = [], [], [0]

    async def bench(ctx):
        pending = list(words)
        offering = False
        last_offer = None                  # (payload) offered on o and not taken
        while len(taken) < len(words):
            if not offering and pending and rnd.random() < p_valid:
                offering = True
            ctx.set(dut.i.valid, offering)
            ctx.set(dut.i.payload, pending[0] if offering else rnd.getrandbits(16))
            ready = rnd.random() < p_ready
            ctx.set(dut.o.ready, ready)
            if checks:
                checks(ctx, dut)
            o_valid, o_payload = ctx.get(dut.o.valid), ctx.get(dut.o.payload)
            if last_offer is not None and (not o_valid or o_payload != last_offer):
                violations.append((clocks[0], "offer withdrawn or changed"))
            i_took = offering and ctx.get(dut.i.ready)
            if o_valid and ready:
                taken.append(o_payload)
                last_offer = None
            elif o_valid:
                last_offer = o_payload
            await ctx.tick()
            clocks[0] += 1
            if i_took:
                pending.pop(0)
                offering = False
            assert clocks[0] < 20 * len(words) + 100, "no progress"

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return taken, clocks[0], violations


@pytest.mark.parametrize("p_valid, p_ready", [(1.0, 1.0), (1.0, 0.5), (0.5, 1.0), (0.7, 0.3),
                                              (0.3, 0.9), (1.0, 0.1)])
@pytest.mark.parametrize("seed", [1, 2])
def test_every_word_once_in_order(p_valid, p_ready, seed):
    rnd = random.Random(seed * 7 + 1)
    words = [rnd.getrandbits(16) for _ in range(400)]
    taken, _, violations = _run(words, p_valid, p_ready, seed)
    assert taken == words
    assert violations == []


def test_one_word_per_clock_when_nothing_stalls():
    """Both sides always ready: 400 words in 401 clocks (the one clock of latency)."""
    words = list(range(400))
    taken, clocks, _ = _run(words, 1.0, 1.0, 3)
    assert taken == words and clocks == len(words) + 1


def test_no_combinational_path_between_the_sides():
    """Within a clock, ``i.ready`` does not follow ``o.ready``, and ``o.valid`` and
    ``o.payload`` do not follow ``i.valid`` or ``i.payload``."""
    seen = []

    def checks(ctx, dut):
        before = (ctx.get(dut.i.ready), ctx.get(dut.o.valid), ctx.get(dut.o.payload))
        ready, valid, payload = (ctx.get(dut.o.ready), ctx.get(dut.i.valid),
                                 ctx.get(dut.i.payload))
        ctx.set(dut.o.ready, not ready)
        ctx.set(dut.i.valid, not valid)
        ctx.set(dut.i.payload, payload ^ 0xFFFF)
        after = (ctx.get(dut.i.ready), ctx.get(dut.o.valid), ctx.get(dut.o.payload))
        ctx.set(dut.o.ready, ready)
        ctx.set(dut.i.valid, valid)
        ctx.set(dut.i.payload, payload)
        seen.append(before == after)
    words = list(range(200))
    taken, _, _ = _run(words, 0.7, 0.5, 4, checks)
    assert taken == words and len(seen) > 200 and all(seen)
