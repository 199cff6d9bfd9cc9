"""LED drivers: activity pulses stretched to a visible length, and a heartbeat."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["ActivityLEDs"]


class ActivityLEDs(wiring.Component):
    """``count`` activity LEDs and a heartbeat, from one shared prescaler.

    An event on input i lights LED i for at least ``stretch`` clocks and less than two
    prescaler periods (``2**prescale_bits`` clocks, each at most a sixteenth of ``stretch``)
    more, long enough to see a single event; an event while it is lit starts it again. The
    heartbeat toggles every ``beat`` clocks, to within a prescaler period. One free-running
    prescaler counts clocks; each LED counts only its prescaler ticks, in a few bits: a
    counter of ``stretch`` clocks per LED (20 bits at the iCEBreaker's 15 MHz) would cost
    a logic cell per bit.

    Latency: an LED lights the clock after its event. Throughput: an event every clock.

    Parameters
    ----------
    count : int
        Number of activity LEDs.
    stretch : int
        Clocks an event keeps its LED lit, at least 2.
    beat : int
        Clocks per heartbeat half-period, at least 2.

    Attributes
    ----------
    events : In(count)
    leds : Out(count)
    heartbeat : Out(1)
    """

    def __init__(self, count, stretch, beat):
        for name, v in (("stretch", stretch), ("beat", beat)):
            if v < 2:
                raise ValueError(f"{name}: {v} is out of the allowed range [2, ...)")
        self.count, self.stretch, self.beat = count, stretch, beat
        #: the prescaler period is the largest power of two at most stretch / 16
        self.prescale_bits = max((stretch // 16).bit_length() - 1, 0)
        super().__init__({"events": In(count), "leds": Out(count), "heartbeat": Out(1)})

    def elaborate(self, platform):
        m = Module()
        p = self.prescale_bits
        prescaler = Signal(max(p, 1))
        tick = Signal()
        m.d.sync += prescaler.eq(prescaler + 1)
        # the tick (prescaler at its top) registered from the clock before, so that every
        # counter's enable follows a register, not the prescaler's compare
        if p:
            m.d.sync += tick.eq(prescaler == (1 << p) - 2)
        else:
            m.d.comb += tick.eq(1)
        # the first tick comes 1 to 2**p clocks after the event: ticks - 1 whole periods more
        # must cover stretch - 1 clocks
        ticks = -(-(self.stretch - 1) // (1 << p)) + 1
        for i in range(self.count):
            left = Signal(range(ticks + 1), name=f"led{i}_ticks")
            with m.If(self.events[i]):
                m.d.sync += left.eq(ticks)
            with m.Elif(tick & (left != 0)):
                m.d.sync += left.eq(left - 1)
            m.d.comb += self.leds[i].eq(left != 0)
        beat_ticks = max(self.beat >> p, 1)
        beat = Signal(range(beat_ticks))
        with m.If(tick):
            with m.If(beat == 0):
                m.d.sync += [beat.eq(beat_ticks - 1), self.heartbeat.eq(~self.heartbeat)]
            with m.Else():
                m.d.sync += beat.eq(beat - 1)
        return m
