"""Fault injection, one mechanism: a faulty block built at a construction seam of the RTL,
wrapped around the real one (``hdl/`` untouched, no module global replaced, no source
edited). The seams:

* ``QueueManager(build, parts={name: factory})``: the top builds that sub-block with the
  factory (``fpq_hdl.queue_manager.PARTS`` lists the names);
* ``FlowCounter(build, set_delay, ram=...)``: the class of its four vector RAMs;
* ``Decision(build, optimise, admission=...)``: the speed form's cycle 1, the admission and
  the occupancy (:func:`fpq_hdl.decision.admission`), which a fault feeds flags from the
  wrong outcome of the slot before;
* a block's ports: :func:`wrap` builds a component with the block's constructor and ports
  that contains the real block and passes every port through except where ``modify`` bends
  one (an output changed, an input offset).

``FAULTS`` are faults of the top (``faulty_top(build, name)``: the top with a faulty part),
``COMPONENT_FAULTS`` faults of single blocks (a factory with the block's constructor, the
component benches' DUT), ``DECISION_ADMISSION`` the admission faults the formal harness
injects. Each fault must make its catching bench fail (``cocotb-tests/faults/``, the
component benches' ``test_fault_is_caught``, ``hdl/tests/test_formal.py``)."""

from amaranth import C, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from fpq.queue_manager import MARK, DROP_EARLY

from fpq_hdl import decision as dc_mod
from fpq_hdl.block_ram import BlockRAM
from fpq_hdl.flow_counter import FlowCounter
from fpq_hdl.flow_hash import reduce_index
from fpq_hdl.periodic_timer import PeriodicTimer
from fpq_hdl.queue_averager import QueueAverager
from fpq_hdl.queue_manager import QueueManager
from fpq_hdl.random_source import RandomSource
from fpq_hdl.verdict_fifo import VerdictFIFO

__all__ = ["FAULTS", "COMPONENT_FAULTS", "DECISION_ADMISSION", "faulty_top", "wrap",
           "LateWriteRAM", "ShallowFIFO"]

#: Attributes of a block that its users read besides the ports (the wrapper passes them on).
_PASSED = ("LATENCY", "FIELDS_AHEAD", "fields_at", "int_bits", "frac_bits")


def wrap(cls, modify):
    """A wrapper of ``cls`` (same constructor, same ports, the attributes of ``_PASSED``):
    ``modify(m, outer, inner)`` bends the pass-through connections (a later comb assignment
    wins)."""

    class Faulty(wiring.Component):
        def __init__(self, *args, **kwargs):
            self.inner = cls(*args, **kwargs)
            for attr in _PASSED:
                if hasattr(self.inner, attr):
                    setattr(self, attr, getattr(self.inner, attr))
            super().__init__(dict(self.inner.signature.members.items()))

        def elaborate(self, platform):
            m = Module()
            m.submodules.inner = inner = self.inner
            for name, member in self.signature.members.items():
                outer, real = getattr(self, name), getattr(inner, name)
                if member.flow == In:
                    m.d.comb += real.eq(outer)
                else:
                    m.d.comb += outer.eq(real)
            modify(m, self, inner)
            return m

    Faulty.__name__ = f"Faulty{cls.__name__}"
    for attr in _PASSED:
        if hasattr(cls, attr):
            setattr(Faulty, attr, getattr(cls, attr))
    return Faulty


# ---- sub-blocks ------------------------------------------------------------------------------
class LateWriteRAM(BlockRAM):
    """A ``BlockRAM`` whose writes commit a clock late: a read sees the write of the slot
    four before it stale, one more than the flow counter's three forwarding registers
    cover (the read-after-write hazard the forwarding exists for)."""

    def elaborate(self, platform):
        m = Module()
        m.submodules.ram = ram = BlockRAM(self.width, self.depth, self.style)
        m.d.sync += [ram.w_en.eq(self.w_en), ram.w_addr.eq(self.w_addr),
                     ram.w_data.eq(self.w_data)]
        m.d.comb += [ram.r_addr.eq(self.r_addr), self.r_data.eq(ram.r_data)]
        return m


class ShallowFIFO(VerdictFIFO):
    """A verdict FIFO that holds ``by`` words fewer than the ``depth`` the queue manager's
    credit count assumes: a write while it holds ``depth - by`` words is dropped. The limit
    is put on the fill level, not on the ``depth`` passed down, because the FIFO rounds its
    capacity up to a power of two plus one (``depth - 4`` would leave a 32-deep FIFO at 33
    words, and the fault would be gone)."""

    def __init__(self, *, width, depth, by, **kw):
        if depth - by < 1:
            raise ValueError(f"ShallowFIFO: depth {depth} minus by {by} leaves no entry")
        super().__init__(width=width, depth=depth, **kw)
        self.inner = VerdictFIFO(width=width, depth=depth, **kw)
        self.limit = depth - by

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self.inner
        room = inner.w_rdy & (inner.level < self.limit)
        m.d.comb += [inner.w_data.eq(self.w_data), inner.w_en.eq(self.w_en & room),
                     self.w_rdy.eq(room), self.r_data.eq(inner.r_data),
                     inner.r_en.eq(self.r_en), self.r_rdy.eq(inner.r_rdy),
                     self.level.eq(inner.level)]
        return m


def shallow_fifo(by):
    """A ``parts`` factory of the verdict FIFO, ``by`` words short."""
    return lambda **kw: ShallowFIFO(by=by, **kw)


def _admission_with(flags):
    """``Decision``'s ``admission`` seam: the real :func:`fpq_hdl.decision.admission` fed
    ``flags(m, cand, forced_if, short_bytes_if, short_pkts)`` instead of those three."""
    def faulty(m, cand, forced_if, short_bytes_if, short_pkts, *rest, **kw):
        return dc_mod.admission(m, cand, *flags(m, cand, forced_if, short_bytes_if, short_pkts),
                                *rest, **kw)
    return faulty


def _from_candidate(m, cand, forced_if, short_bytes_if, short_pkts):
    # the previous slot's outcome taken as "admitted" when it was a candidate, its forced
    # drop ignored (admission <= candidate, so the real select never sees the difference)
    c_prev = Signal(name="fault_candidate_prev")
    m.d.sync += c_prev.eq(cand)
    forced, short_b = Mux(c_prev, *forced_if[::-1]), Mux(c_prev, *short_bytes_if[::-1])
    return (forced, forced), (short_b, short_b), ~c_prev & short_pkts


#: Faults of the speed form's admission: name -> (what it breaks, the ``admission`` seam)
DECISION_ADMISSION = {
    "forced_ignores_admission": (
        "slot t's forced flag always the one formed for slot t - 1 not admitted",
        _admission_with(lambda m, c, f, sb, sp: ((f[0], f[0]), sb, sp))),
    "short_from_wrong_outcome": (
        "the byte departure's short flag always the one formed for slot t - 1 not admitted",
        _admission_with(lambda m, c, f, sb, sp: (f, (sb[0], sb[0]), sp))),
    "admission_from_candidate": (
        "the admission bit of the slot before taken before its forced-drop flags",
        _admission_with(_from_candidate)),
}


# ---- port faults -----------------------------------------------------------------------------
def _swap_mark_drop(m, outer, inner):
    a = inner.action
    m.d.comb += outer.action.eq(Mux(a == MARK, DROP_EARLY, Mux(a == DROP_EARLY, MARK, a)))


def _limit_pkts_plus_one(m, outer, inner):
    m.d.comb += inner.config.limit_pkts.eq(outer.config.limit_pkts + 1)


def _limit_bytes_minus_one(m, outer, inner):
    # "occupancy + length > limit - 1" is "occupancy + length >= limit": a queue exactly at
    # the byte limit refuses the arrival, in every compare of the limit
    m.d.comb += inner.config.limit_bytes.eq(outer.config.limit_bytes - 1)


def _period_rounded_up(m, outer, inner):
    # every gap the period's ceiling: the timer's fractional owed term as if never updated
    fb = inner.frac_bits
    if fb:
        whole, frac = outer.period[fb:], outer.period[:fb]
        m.d.comb += inner.period.eq(Cat(C(0, fb), whole + (frac != 0)))


def _weight_a_clock_early(m, outer, inner):
    # the sample's weight taken from the clock before the sample's
    w = Signal.like(outer.wq_shift, name="fault_wq_shift_prev")
    m.d.sync += w.eq(outer.wq_shift)
    m.d.comb += inner.wq_shift.eq(w)


def _never_falls(m, outer, inner):
    # a sample below the average is dropped: a falling average is wrong
    m.d.comb += inner.sample.eq(outer.sample & ~((outer.q << 16) < inner.avg))


def _weight_from(wq_shift):
    """The averager fed the configuration's ``wq_shift`` of the clock it updates in, not
    the weight its sample took at the accept."""
    def modify(m, outer, inner):
        m.d.comb += inner.wq_shift.eq(wq_shift)
    return wrap(QueueAverager, modify)


def _same_index_set_lost(m, outer, inner):
    # a clear and a set of one index in one slot: the set is lost. The clear's index is
    # formed here as the block documents it: its random number drawn in the clear's clock,
    # reduced with the v_max of that clock, ``set_delay`` clocks later
    cfg = outer.config
    m.submodules.fault_rng = rng = RandomSource()
    m.d.comb += [rng.seed.eq(cfg.rng_clear_state), rng.load.eq(outer.load_rng),
                 rng.step.eq(outer.clear)]
    r, vm, cv = rng.value, cfg.v_max, outer.clear
    for i in range(inner.set_delay - 3):
        r_n, vm_n, cv_n = Signal(32, name=f"fault_r{i}"), Signal.like(vm, name=f"fault_vm{i}"), \
            Signal(name=f"fault_cv{i}")
        m.d.sync += [r_n.eq(r), vm_n.eq(vm), cv_n.eq(cv)]
        r, vm, cv = r_n, vm_n, cv_n
    index = reduce_index(m, r, vm, inner.index_bits, name="fault_clr_index")
    for i in range(3):
        cv_n = Signal(name=f"fault_cva{i}")
        m.d.sync += cv_n.eq(cv)
        cv = cv_n
    same = cv & (index == outer.set_index)
    m.d.comb += inner.set_valid.eq(outer.set_valid & ~same)


def _with_ram(ram):
    return lambda build, set_delay, ram_style="generic": FlowCounter(build, set_delay,
                                                                      ram_style, ram=ram)


def _decision_with(admission):
    return lambda build, optimise="speed": dc_mod.Decision(build, optimise, admission=admission)


#: Faults of the top: name -> (what it breaks, ``parts(top)``: the top's ``parts``, given a
#: function that returns the top, for a part that reads the top's ports)
FAULTS = {
    "vector-ram-write-late": ("flow vector: the RAMs commit writes a clock late (a stale read "
                              "four slots after a write)",
                              lambda top: {"FlowCounter": _with_ram(LateWriteRAM)}),
    "clear-owed-fraction": ("clear timer: the fractional owed term dropped (every gap the "
                            "period's ceiling)",
                            lambda top: {"PeriodicTimer": wrap(PeriodicTimer,
                                                               _period_rounded_up)}),
    "swap-mark-drop": ("decision: MARK and DROP_EARLY swapped",
                       lambda top: {"Decision": wrap(dc_mod.Decision, _swap_mark_drop)}),
    "limit-off-by-one": ("decision: hard packet limit one too high",
                         lambda top: {"Decision": wrap(dc_mod.Decision, _limit_pkts_plus_one)}),
    "admission-bit": ("decision: the occupancy's admission bit ignores forced drops",
                      lambda top: {"Decision": _decision_with(
                          DECISION_ADMISSION["admission_from_candidate"][1])}),
    "sample-weight": ("averager: a sample's weight read when the average updates",
                      lambda top: {"QueueAverager": lambda build: _weight_from(
                          top().config.wq_shift)(build)}),
    "fifo-one-short": ("verdict FIFO one entry smaller than its credit count",
                       lambda top: {"VerdictFIFO": shallow_fifo(1)}),
}


#: Faults of single blocks: name -> (what it breaks, block, factory of the faulty block with
#: the block's constructor)
COMPONENT_FAULTS = {
    "fc-ram-write-late": ("flow vector: the RAMs commit writes a clock late (a stale read "
                          "four slots after a write)", "FlowCounter", _with_ram(LateWriteRAM)),
    "fc-same-slot-clear": ("flow vector: a clear and a set of the same index in one slot: the "
                           "set is lost", "FlowCounter", wrap(FlowCounter, _same_index_set_lost)),
    "qa-never-falls": ("averager: a sample below the average is dropped (a falling average "
                       "is wrong)", "QueueAverager", wrap(QueueAverager, _never_falls)),
    "qa-weight-early": ("averager: a sample's weight taken from the clock before it",
                        "QueueAverager", wrap(QueueAverager, _weight_a_clock_early)),
    "dc-limit-off-by-one": ("decision: hard packet limit one too high", "Decision",
                            wrap(dc_mod.Decision, _limit_pkts_plus_one)),
    "dc-byte-limit-exact": ("decision: a queue exactly at the byte limit refuses the arrival "
                            "(> became >=)", "Decision",
                            wrap(dc_mod.Decision, _limit_bytes_minus_one)),
    "dc-admission-bit": ("decision: the occupancy's admission bit ignores forced drops",
                         "Decision",
                         _decision_with(DECISION_ADMISSION["admission_from_candidate"][1])),
}


def faulty_top(build, fault):
    """A ``QueueManager`` built with ``fault``'s faulty part."""
    made = []
    top = QueueManager(build, parts=FAULTS[fault][1](lambda: made[0]))
    made.append(top)
    return top
