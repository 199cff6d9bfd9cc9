"""ActivityLEDs: each event lights its LED for at least stretch clocks and less than two
prescaler periods more, retriggered by later events; the heartbeat's half-period."""
import random

import pytest
from amaranth.sim import Simulator

from fpq_boards.leds import ActivityLEDs


@pytest.mark.parametrize("stretch", [2, 37, 4000])
def test_an_event_lights_its_led_for_stretch_clocks(stretch):
    dut = ActivityLEDs(3, stretch=stretch, beat=3 * stretch)
    period = 1 << dut.prescale_bits
    assert period <= max(stretch // 16, 1)
    rnd = random.Random(stretch)
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    checked = {"on": 0, "off": 0, "toggles": 0}

    async def bench(ctx):
        last = [None] * 3                 # clock of each LED's last event
        beat_prev, beat_edges = 0, []
        for t in range(12 * stretch + 200):
            ev = [rnd.random() < 1.5 / stretch for _ in range(3)]
            ctx.set(dut.events, sum(e << i for i, e in enumerate(ev)))
            await ctx.tick()
            for i in range(3):
                if ev[i]:
                    last[i] = t
                lit = ctx.get(dut.leds[i])
                if last[i] is None:
                    assert not lit
                    continue
                age = t - last[i]                  # clocks since the event, after the tick
                if age < stretch:
                    assert lit, (i, t, age)
                    checked["on"] += 1
                elif age >= stretch + 2 * period - 1:
                    assert not lit, (i, t, age)
                    checked["off"] += 1
            hb = ctx.get(dut.heartbeat)
            if hb != beat_prev:
                beat_edges.append(t)
                beat_prev = hb
        gaps = [b - a for a, b in zip(beat_edges, beat_edges[1:])]
        checked["toggles"] = len(gaps)
        for g in gaps:
            assert 3 * stretch - period <= g <= 3 * stretch + period, (g, period)
    sim.add_testbench(bench)
    sim.run()
    assert checked["on"] > 3 * stretch and checked["off"] > stretch and checked["toggles"] >= 2


def test_out_of_range_is_refused():
    with pytest.raises(ValueError, match="stretch: 1"):
        ActivityLEDs(1, stretch=1, beat=10)
