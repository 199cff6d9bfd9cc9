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
* ``loop_decision``: the one-clock loops of ``Decision(optimise="speed")``: RED's spacing
  register (``red_spacing``), the admission bit and the exact occupancy in bytes and packets
  (``admission``), and the largest occupancy (``track_max``); their other inputs (the
  probability, the flags and the fields, registers in the ``Decision``) from the harness's
  registers. The whole ``Decision`` is ``--component decision``.
* ``loop_counter``: one 64-bit statistics counter as the queue manager builds it (two halves,
  the carry registered).
* ``loop_hold``: the re-key hold's down-counter (49 bits, counting while not negative).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpq.formats import HOLD_BITS, LENGTH_BITS, PROB, QBYTES_BITS, QPKTS_BITS, RAND_BITS

__all__ = ["CounterLoop", "HoldLoop", "DecisionLoops", "LOOPS"]


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


class DecisionLoops(wiring.Component):
    """The ``Decision``'s one-clock loops, as ``Decision(optimise="speed")`` builds them:
    ``red_spacing`` (stepped by ``step``), ``admission`` and ``track_max`` of the packet
    occupancy. Ports are the functions' arguments and results."""

    def __init__(self):
        super().__init__({
            "p": In(PROB.width), "p_zero": In(1), "u_load": In(RAND_BITS), "step": In(1),
            "cand": In(1), "cand_packets": In(1), "forced_if": In(2), "short_bytes_if": In(2), "short_pkts": In(1),
            "dv": In(1), "length": In(LENGTH_BITS), "dep": In(LENGTH_BITS),
            "grow": In(signed(LENGTH_BITS + 2)), "clear_max_queue": In(1),
            "red_hit": Out(1), "forced": Out(1), "dep_error": Out(1),
            "occ_pkts": Out(QPKTS_BITS), "occ_bytes": Out(QBYTES_BITS),
            "max_queue": Out(QPKTS_BITS),
        })

    def elaborate(self, platform):
        from fpq_hdl.decision import admission, red_spacing, track_max
        m = Module()
        m.d.comb += self.red_hit.eq(red_spacing(m, self.p, self.p_zero, self.u_load,
                                                self.step, separate_hit=True))
        forced, dep_error = admission(
            m, self.cand, tuple(self.forced_if), tuple(self.short_bytes_if), self.short_pkts,
            self.dv, self.length, self.dep, self.grow, self.occ_pkts, self.occ_bytes,
            cand_packets=self.cand_packets)
        m.d.comb += [self.forced.eq(forced), self.dep_error.eq(dep_error)]
        track_max(m, self.occ_pkts, self.clear_max_queue, self.max_queue)
        return m


def _timer():
    from fpq.formats import CLEAR_PERIOD
    from fpq_hdl.periodic_timer import PeriodicTimer
    return PeriodicTimer(CLEAR_PERIOD.int_bits, CLEAR_PERIOD.frac_bits)


#: ``--component`` names of ``fpq_hdl.synth`` -> factory
LOOPS = {
    "loop_timer": _timer,
    "loop_decision": DecisionLoops,
    "loop_counter": CounterLoop,
    "loop_hold": HoldLoop,
}
