"""The queue manager's one-clock recurrences, each in the smallest block that holds it, to
synthesise alone.

Benchmark code of the checkout, not part of the installed package: ``fpq_hdl.synth`` loads
it from here (``loop_fixtures``). Synthesised alone (``python -m fpq_hdl.synth --component
loop_...``), nothing else competes for
placement or routing, so the Fmax is an upper bound of what those recurrences reach on the
device with this flow, whatever surrounds them (docs/BENCHMARKS.md, "Bounds of the one-clock
loops"). They are the design's own code, not copies: a fixture is a component of the queue
manager, or a wrapper around one of its loops.

* ``loop_timer``: ``PeriodicTimer(32, 16)``, the clear engine (down-counter, fraction owed,
  strobe); the sample timer is the same with no fraction.
* ``loop_decision``: ``Decision(optimise="speed")``: RED's spacing register, the admission bit
  and the exact occupancy (bytes and packets) with their thresholds and flags.
* ``loop_counter``: one 64-bit statistics counter as the queue manager builds it (two halves,
  the carry registered).
* ``loop_hold``: the re-key hold's down-counter (49 bits, counting while not negative).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpq.config import Build
from fpq.formats import HOLD_BITS

__all__ = ["CounterLoop", "HoldLoop", "LOOPS"]


class CounterLoop(wiring.Component):
    """``fpq_hdl.queue_manager._split_counter`` of a registered event, 64 bits."""

    def __init__(self):
        super().__init__({"event": In(1), "clear": In(1), "count": Out(64)})

    def elaborate(self, platform):
        from fpq_hdl.queue_manager import _split_counter
        m = Module()
        ev, clr = Signal(), Signal()
        m.d.sync += [ev.eq(self.event), clr.eq(self.clear)]
        m.d.comb += self.count.eq(_split_counter(m, ev, clr, 64, "count")[0])
        return m


class HoldLoop(wiring.Component):
    """``fpq_hdl.queue_manager._hold_counter``: loaded (registered ``load`` and value), then
    counting down every clock while not negative; ``held`` is its sign, inverted."""

    def __init__(self):
        super().__init__({"load": In(1), "value": In(HOLD_BITS), "held": Out(1)})

    def elaborate(self, platform):
        from fpq_hdl.queue_manager import _hold_counter
        m = Module()
        load = Signal()
        m.d.sync += load.eq(self.load)
        run = Signal()
        # (the counter registers value - 2 itself, beside the registered load)
        negative = _hold_counter(m, load, self.value, run, "left")
        m.d.comb += [run.eq(~negative), self.held.eq(~negative)]
        return m


def _timer():
    from fpq.formats import CLEAR_PERIOD
    from fpq_hdl.periodic_timer import PeriodicTimer
    return PeriodicTimer(CLEAR_PERIOD.int_bits, CLEAR_PERIOD.frac_bits)


def _decision():
    from fpq_hdl.decision import Decision
    return Decision(Build(), optimise="speed")


#: ``--component`` names of ``fpq_hdl.synth`` -> factory
LOOPS = {
    "loop_timer": _timer,
    "loop_decision": _decision,
    "loop_counter": CounterLoop,
    "loop_hold": HoldLoop,
}
