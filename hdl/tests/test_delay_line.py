"""DelayLine: every word comes out exactly ``delay`` clocks after it went in."""
import random

import pytest
from amaranth import *
from amaranth.sim import Simulator

from fpq_hdl.delay_line import DelayLine


def run(width, delay, n, reset_at=None):
    """Drive ``n`` random words; returns (words in, words out per clock)."""
    dut = DelayLine(width, delay)
    rst = Signal()
    top = Module()
    top.submodules.dut = ResetInserter(rst)(dut)
    rnd = random.Random(width * 1000 + delay)
    words = [rnd.getrandbits(width) for _ in range(n)]
    out = []

    async def bench(ctx):
        for t, w in enumerate(words):
            ctx.set(dut.i, w)
            if t == reset_at:
                # an external reset: the pointer restarts (the RAM keeps its words)
                ctx.set(rst, 1)
            await ctx.tick()
            ctx.set(rst, 0)
            out.append(ctx.get(dut.o))

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return words, out


@pytest.mark.parametrize("width, delay", [(1, 2), (7, 3), (129, 16), (40, 17)])
def test_output_is_input_delay_clocks_earlier(width, delay):
    words, out = run(width, delay, 300)
    # out[t] is sampled after the clock edge t + 1, so it is the word of clock t + 1 - delay
    got = out[delay - 1:]
    assert got == words[:len(got)]
    # not a constant that happens to match
    assert len(set(got)) >= min(len(got) // 4, 2 ** (width - 1))


def test_after_a_reset_words_from_then_on_arrive_on_time():
    delay, reset_at = 16, 100
    words, out = run(33, delay, 300, reset_at=reset_at)
    # the word driven during the reset clock is lost with the pointer; from the next clock on
    # every word comes out delay clocks later
    start = reset_at + 1
    got = out[start + delay - 1:]
    assert got == words[start:start + len(got)]


@pytest.mark.parametrize("delay", [1, 4097])
def test_delay_out_of_range_is_refused(delay):
    with pytest.raises(ValueError, match=rf"delay: {delay} is out of the allowed range "
                                         r"\[2, 4096\]"):
        DelayLine(8, delay)
