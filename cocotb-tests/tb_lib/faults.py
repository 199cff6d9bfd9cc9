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
``FAULTS``. ``COMPONENT_FAULTS`` are faults of single blocks for the component benches
(``flow_counter/``, ``queue_averager/``, ``decision/``): each factory returns a class with the
block's constructor, used as the DUT itself."""

import contextlib
import inspect
import textwrap

from amaranth import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from fpq.queue_manager import MARK, DROP_EARLY

import fpq_hdl.queue_manager as qm_mod
import fpq_hdl.flow_counter as fc_mod
import fpq_hdl.queue_averager as qa_mod
import fpq_hdl.decision as dc_mod

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


def _clear_one_tick_late(m, outer, inner):
    m.d.comb += inner.ts.eq(outer.ts - 1)


def _limit_off_by_one(m, outer, inner):
    m.d.comb += inner.config.limit_pkts.eq(outer.config.limit_pkts + 1)


def _fifo_one_short(*args, depth, **kwargs):
    return SyncFIFO(*args, depth=depth - 1, **kwargs)


def _no_forwarding():
    # the vector's read-after-write forwarding: the old bits come straight from the RAMs
    src = inspect.getsource(fc_mod.FlowCounter.elaborate)
    start = src.index("def forward(")
    ret = src.index("return ", start)
    line = src[ret:src.index("\n", ret)]
    if "r_data" not in line:
        raise AssertionError(f"fault anchor: FlowCounter.elaborate's forward() no longer "
                             f"returns a RAM read ({line!r}); update tb_lib/faults.py")
    return mutate(fc_mod.FlowCounter, "elaborate", [(line, "return rams[key].r_data")])


#: name -> (what it breaks, how to install it: (module, attribute, replacement factory))
FAULTS = {
    "no-forwarding": ("flow vector: the read-after-write forwarding removed",
                      (fc_mod, "FlowCounter", None), _no_forwarding),
    "clear-off-by-one": ("clear schedule: every clear owed one tick late (ts - 1)",
                         (qm_mod, "FlowCounter", None),
                         lambda: wrap(fc_mod.FlowCounter, _clear_one_tick_late)),
    "swap-mark-drop": ("decision: MARK and DROP_EARLY swapped",
                       (qm_mod, "Decision", None),
                       lambda: wrap(qm_mod.Decision, _swap_mark_drop)),
    "limit-off-by-one": ("decision: hard packet limit one too high",
                         (qm_mod, "Decision", None),
                         lambda: wrap(qm_mod.Decision, _limit_off_by_one)),
    "fifo-one-short": ("verdict FIFO one entry smaller than its credit count",
                       (qm_mod, "SyncFIFO", None), lambda: _fifo_one_short),
}


#: Faults of single blocks: name -> (what it breaks, block, factory of the faulty class).
COMPONENT_FAULTS = {
    "fc-no-forwarding": ("flow vector: the read-after-write forwarding removed", "FlowCounter",
                         _no_forwarding),
    "fc-same-slot-clear": ("flow vector: a clear and a set of the same index in one slot both "
                           "write (the clear's write is no longer dropped)", "FlowCounter",
                           lambda: mutate(fc_mod.FlowCounter, "elaborate",
                                          [("clr_w = cv & ~same & old_b",
                                            "clr_w = cv & old_b")])),
    "qa-ewma-floor": ("averager: the EWMA's rounding term lost (A - floor(A / 2**s) instead of "
                      "A - ceil(A / 2**s))", "QueueAverager",
                      lambda: mutate(qa_mod.QueueAverager, "elaborate",
                                     # c = 0: the adder's carry-in is always 1
                                     [('rounding = {"c": (a & mask) != 0}',
                                       'rounding = {"c": Const(0, 1)}')])),
    "qa-decay-clamp": ("averager: idle cells clamped at 254 instead of 255", "QueueAverager",
                       # (speed, the benches' build: a clamped count reads a copy of entry
                       # 255 kept beside the table; the copy follows entry 254 instead)
                       lambda: mutate(qa_mod.QueueAverager, "_read_split",
                                      [("ends_at = (0, DECAY_TABLE_DEPTH - 1)",
                                        "ends_at = (0, DECAY_TABLE_DEPTH - 2)")])),
    "dc-limit-off-by-one": ("decision: hard packet limit one too high", "Decision",
                            lambda: wrap(dc_mod.Decision, _limit_off_by_one)),
    "dc-byte-limit-with-departure": (
        "decision: byte limit off by one byte when a departure shares the slot (> became >=)",
        "Decision",
        lambda: mutate(dc_mod.Decision, "_occupancy_speed",
                       [("self.limit_bytes - self.length + self.dep_length",
                         "self.limit_bytes - self.length + self.dep_length - 1")])),
}


@contextlib.contextmanager
def _installed(fault):
    _, (module, attr, _), factory = FAULTS[fault]
    if fault == "no-forwarding":
        module, attr = qm_mod, "FlowCounter"     # the top instantiates the mutated class
    original = getattr(module, attr)             # AttributeError if the RTL renamed it
    setattr(module, attr, factory())
    try:
        yield
    finally:
        setattr(module, attr, original)


def faulty_top(build, fault):
    """Elaborate-on-demand: a ``QueueManager`` whose ``elaborate`` runs with ``fault``
    installed (Verilog generation elaborates it)."""

    class FaultyTop(qm_mod.QueueManager):
        def elaborate(self, platform):
            with _installed(fault):
                return super().elaborate(platform)

    return FaultyTop(build)
