"""Fault injection into the RTL at elaboration, without touching ``hdl/``.

Two mechanisms:

* :func:`wrap`: a component with the same signature as an RTL block, which contains the real
  block and passes every port through, except where ``modify`` overrides a connection (an
  output bent, an input offset). It is installed in place of the block's class in the module
  that instantiates it (``fpq_hdl.queue_manager``) while the top is elaborated.
* :func:`mutate`: a source mutation of one method (mutation testing): the method's source is
  edited by exact text replacement and re-compiled in its module's namespace. Each anchor must
  occur exactly once, so an RTL change that moves the code makes the fault test fail loudly
  ("anchor not found") instead of silently injecting nothing.

``faulty_top(build, fault)`` returns a fault-injected ``QueueManager`` for a name of
``FAULTS`` (a block replaced while the top elaborates, or the top's own ``elaborate``
mutated). ``COMPONENT_FAULTS`` are faults of single blocks for the component benches
(``flow_counter/``, ``queue_averager/``, ``decision/``): each factory returns a class with the
block's constructor, used as the DUT itself."""

import contextlib
import inspect
import textwrap

from amaranth import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In

from fpq.queue_manager import MARK, DROP_EARLY

import fpq_hdl.queue_manager as qm_mod
import fpq_hdl.flow_counter as fc_mod
import fpq_hdl.queue_averager as qa_mod
import fpq_hdl.decision as dc_mod
import fpq_hdl.periodic_timer as pt_mod

__all__ = ["FAULTS", "COMPONENT_FAULTS", "faulty_top", "wrap", "mutate"]


#: Attributes of a block that its users read besides the ports (the wrapper passes them on).
_PASSED = ("LATENCY", "fields_at")


def wrap(cls, modify):
    """A subclass-like wrapper of ``cls`` (same constructor, same ports, the attributes of
    ``_PASSED``)."""

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
            modify(m, self, inner)      # a later comb assignment wins
            return m

    Faulty.__name__ = f"Faulty{cls.__name__}"
    for attr in _PASSED:
        if hasattr(cls, attr):
            setattr(Faulty, attr, getattr(cls, attr))
    return Faulty


def mutate(cls, method, edits):
    """A subclass of ``cls`` whose ``method`` is the original with ``edits`` ((old, new)
    text pairs) applied."""
    src = textwrap.dedent(inspect.getsource(getattr(cls, method)))
    for old, new in edits:
        n = src.count(old)
        if n != 1:
            raise AssertionError(f"fault anchor found {n} times (want 1) in "
                                 f"{cls.__module__}.{cls.__name__}.{method}: {old!r}; the "
                                 f"RTL changed, update the fault in tb_lib/faults.py")
        src = src.replace(old, new)
    module = inspect.getmodule(cls)
    namespace = dict(vars(module))
    exec(compile(src, f"<mutated {cls.__name__}.{method}>", "exec"), namespace)
    return type(f"Mutated{cls.__name__}", (cls,), {method: namespace[method]})


# ---- the faults ----------------------------------------------------------------------------
def _swap_mark_drop(m, outer, inner):
    a = inner.action
    m.d.comb += outer.action.eq(Mux(a == MARK, DROP_EARLY, Mux(a == DROP_EARLY, MARK, a)))


def _limit_off_by_one(m, outer, inner):
    m.d.comb += inner.config.limit_pkts.eq(outer.config.limit_pkts + 1)


def _fifo_one_short(*args, depth, **kwargs):
    return SyncFIFO(*args, depth=depth - 1, **kwargs)


def _no_forwarding():
    # the vector's read-after-write forwarding of the bank words: the old words come straight
    # from the RAMs
    src = inspect.getsource(fc_mod.FlowCounter._old_bits)
    start = src.index("def forward(")
    ret = src.index("return ", start)
    line = src[ret:src.index("\n", ret)]
    if "r_data" not in line:
        raise AssertionError(f"fault anchor: FlowCounter._old_bits's forward() no longer "
                             f"returns a RAM read ({line!r}); update tb_lib/faults.py")
    return mutate(fc_mod.FlowCounter, "_old_bits", [(line, "return rams[key].r_data")])


def _no_logical_old_bit():
    # the logical forwarding of the old bit (a set or clear of the three slots before decides
    # it, not the RAMs): N from the RAMs' bits alone
    return mutate(fc_mod.FlowCounter, "_old_bits",
                  [('old_a = Mux(hit_a, val_a, rams["pa"].r_data ^ rams["qa"].r_data)',
                    'old_a = rams["pa"].r_data ^ rams["qa"].r_data')])


def _same_slot_clear():
    # a clear and a set of the same index in one slot: the clear's write is no longer dropped
    return mutate(fc_mod.FlowCounter, "_slot", [("cw = cv2 & ~same", "cw = cv2")])


def _owed_fraction_dropped():
    # the clear timer's fractional owed term never updated: every gap rounds the period's
    # fraction up (fewer clears than v_max / t_clear when the period has a fraction)
    return mutate(pt_mod.PeriodicTimer, "elaborate",
                  [("m.d.sync += owed.eq(diff[:fb])", "m.d.sync += owed.eq(0)")])


def _sample_weight_at_update():
    # a sample's weight taken when the averager updates (22 clocks later), not in the
    # sample's clock: wrong for samples in flight across a commit of wq_shift
    return mutate(qm_mod.QueueManager, "_sample",
                  [("s.qa.wq_shift.eq(wq_s)", "s.qa.wq_shift.eq(s.cfg.wq_shift)")])


def _admission_bit_ignores_forced():
    # the occupancy's admission bit of the previous slot taken before its forced-drop flags
    return mutate(dc_mod.Decision, "_occupancy_speed", [("a_prev.eq(a)", "a_prev.eq(cand)")])


#: name -> (what it breaks, how to install it: (module, attribute), replacement factory)
FAULTS = {
    "no-forwarding": ("flow vector: the bank words' read-after-write forwarding removed",
                      (qm_mod, "FlowCounter"), _no_forwarding),
    "logical-old-bit": ("flow vector: the logical forwarding of the old bit removed",
                        (qm_mod, "FlowCounter"), _no_logical_old_bit),
    "clear-owed-fraction": ("clear timer: the fractional owed term dropped",
                            (qm_mod, "PeriodicTimer"), _owed_fraction_dropped),
    "swap-mark-drop": ("decision: MARK and DROP_EARLY swapped",
                       (qm_mod, "Decision"), lambda: wrap(qm_mod.Decision, _swap_mark_drop)),
    "limit-off-by-one": ("decision: hard packet limit one too high",
                         (qm_mod, "Decision"), lambda: wrap(qm_mod.Decision, _limit_off_by_one)),
    "admission-bit": ("decision: the occupancy's admission bit ignores forced drops",
                      (qm_mod, "Decision"), _admission_bit_ignores_forced),
    "sample-weight": ("averager: a sample's weight read when the average updates",
                      None, _sample_weight_at_update),
    "fifo-one-short": ("verdict FIFO one entry smaller than its credit count",
                       (qm_mod, "SyncFIFO"), lambda: _fifo_one_short),
}


#: Faults of single blocks: name -> (what it breaks, block, factory of the faulty class).
COMPONENT_FAULTS = {
    "fc-no-forwarding": ("flow vector: the bank words' read-after-write forwarding removed",
                         "FlowCounter", _no_forwarding),
    "fc-same-slot-clear": ("flow vector: a clear and a set of the same index in one slot both "
                           "write (the clear's write is no longer dropped)", "FlowCounter",
                           _same_slot_clear),
    "fc-logical-old-bit": ("flow vector: the logical forwarding of the old bit removed",
                           "FlowCounter", _no_logical_old_bit),
    "qa-shift-logical": ("averager: the difference unsigned, so its shift is logical (a "
                         "falling average is wrong)", "QueueAverager",
                         lambda: mutate(qa_mod.QueueAverager, "elaborate",
                                        [("d1 = Signal(signed(w))", "d1 = Signal(w)")])),
    "qa-weight-late": ("averager: the coarse shift reads wq_shift a clock after the sample",
                       "QueueAverager",
                       lambda: mutate(qa_mod.QueueAverager, "elaborate",
                                      [("for j in range(8)])[s1[2:]]",
                                        "for j in range(8)])[self.wq_shift[2:]]")])),
    "dc-limit-off-by-one": ("decision: hard packet limit one too high", "Decision",
                            lambda: wrap(dc_mod.Decision, _limit_off_by_one)),
    "dc-byte-limit-exact": ("decision: a queue exactly at the byte limit refuses the arrival "
                            "(> became >=)", "Decision",
                            lambda: mutate(dc_mod.Decision, "_limit_flags",
                                           [('split_less(m, tb0, y, "f0b")', "~(y < tb0)")])),
}


@contextlib.contextmanager
def _installed(fault):
    _, where, factory = FAULTS[fault]
    if where is None:                            # a mutation of the top itself
        yield
        return
    module, attr = where
    original = getattr(module, attr)             # AttributeError if the RTL renamed it
    setattr(module, attr, factory())
    try:
        yield
    finally:
        setattr(module, attr, original)


def faulty_top(build, fault):
    """A ``QueueManager`` with ``fault``: its blocks replaced while it elaborates (Verilog
    generation elaborates it), or its own ``elaborate`` mutated."""
    _, where, factory = FAULTS[fault]
    base = factory() if where is None else qm_mod.QueueManager

    class FaultyTop(base):
        def elaborate(self, platform):
            with _installed(fault):
                return super().elaborate(platform)

    return FaultyTop(build)
