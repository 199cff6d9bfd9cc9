"""Formal checks of the verdict port (``formal_harness.py``): one verdict per arrival, in
order, none lost or repeated under back-pressure, for both verdict FIFOs; the FIFO's depth
against the credit. The faults that these checks must catch: ``test_formal_verdict_port_faults.py``."""

import pytest

from .formal_harness import (FlowCounterHarness, QueueManagerHarness, DecisionLimitHarness,
                            SHALLOW_BY, run_formal)
from .formal_bounds import QM_VEC, QM_WIPE, QUICK_QM_DEPTH, fails
from fpq_hdl.queue_manager import FIFO_DEPTH, LATENCY, VERDICT_FIFOS


@pytest.mark.parametrize("verdict_fifo", VERDICT_FIFOS)
def test_one_verdict_per_arrival_bmc(verdict_fifo):
    # the block-RAM FIFO (iCE40) adds a clock of latency: one more clock of bound
    r = run_formal(QueueManagerHarness(QM_VEC, verdict_fifo=verdict_fifo),
                   depth=QUICK_QM_DEPTH + (verdict_fifo == "block"))
    assert r.passed, r.log[-3000:]


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_bad_fault_name_is_rejected():
    with pytest.raises(ValueError, match="fault"):
        FlowCounterHarness(fault="nonsense")
    with pytest.raises(ValueError, match="fault"):
        QueueManagerHarness(fault="nonsense")
    with pytest.raises(ValueError, match="fault"):
        DecisionLimitHarness(fault="nonsense")
    with pytest.raises(ValueError, match="optimise"):
        DecisionLimitHarness("fast")


# A full verdict FIFO: the design's 32 entries need a bound of about 70 clocks, out of the
# solver's reach here; a 6-entry FIFO (the credit logic is written for any depth) fills
# under a stalled sink within wipe + pipeline + 8 clocks
SMALL_FIFO = 6
FULL_FIFO_DEPTH = QM_WIPE + LATENCY + SMALL_FIFO + 2


@pytest.mark.long
@pytest.mark.parametrize("verdict_fifo", VERDICT_FIFOS)
def test_one_verdict_per_arrival_full_fifo_bmc_long(verdict_fifo):
    r = run_formal(QueueManagerHarness(QM_VEC, fifo_depth=SMALL_FIFO,
                                       verdict_fifo=verdict_fifo),
                   depth=FULL_FIFO_DEPTH + (verdict_fifo == "block"), timeout=3600)
    assert r.passed, r.log[-3000:]


@pytest.mark.long
def test_shallow_verdict_fifo_is_caught_long():
    # a FIFO 4 entries shallower than the credit count: with a third verdict due, none is
    # offered although verdicts wait
    r = run_formal(QueueManagerHarness(QM_VEC, fault="shallow_fifo", fifo_depth=SMALL_FIFO),
                   depth=FULL_FIFO_DEPTH, timeout=3600)
    steps = fails(r, "valid_iff_verdict_waits", "at_most_fifo_depth_wait")
    assert QM_WIPE + LATENCY < steps <= FULL_FIFO_DEPTH


@pytest.mark.parametrize("verdict_fifo", VERDICT_FIFOS)
@pytest.mark.parametrize("depth", [SMALL_FIFO, 32])
def test_shallow_fifo_fault_keeps_four_words_fewer(verdict_fifo, depth):
    # the fault's FIFO, as the harness builds it for the queue manager, written `depth`
    # times without a read (as the credit allows) and then read out: four words are lost,
    # for the 32-word FIFO too (its capacity is rounded up to 33)
    from amaranth.sim import Simulator
    from tb_lib.faults import shallow_fifo
    fifo = shallow_fifo(SHALLOW_BY)(width=8, depth=depth, memory=verdict_fifo)
    sim = Simulator(fifo)
    sim.add_clock(1e-8)
    read = []

    async def bench(ctx):
        for word in range(depth):
            ctx.set(fifo.w_data, word + 1)
            ctx.set(fifo.w_en, 1)
            await ctx.tick()
        ctx.set(fifo.w_en, 0)
        ctx.set(fifo.r_en, 1)
        for _ in range(depth + 4):
            if ctx.get(fifo.r_rdy):            # taken at this clock's edge (r_en high)
                read.append(ctx.get(fifo.r_data))
            await ctx.tick()
    sim.add_testbench(bench)
    sim.run()
    assert read == list(range(1, depth - 4 + 1))


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_a_part_the_top_does_not_build_is_refused():
    # the seam the shallow FIFO goes through names the parts it has: a fault of a part the
    # top no longer builds fails loudly instead of injecting nothing
    import gc
    from fpq_hdl.queue_manager import QueueManager
    with pytest.raises(ValueError, match="parts: SyncFIFO not among VerdictFIFO, FlowHash"):
        QueueManager(parts={"SyncFIFO": object})
    gc.collect()          # the refused object, never elaborated, goes while the filter holds


# the shallow FIFO of a SMALL_FIFO build holds SMALL_FIFO - SHALLOW_BY = 2 verdicts: a stalled
# sink overflows it once a third is due, a few clocks after the first verdict (so the
# counterexample is a few clocks longer than LATENCY; minutes per FIFO kind)
SHALLOW_DEPTH = QM_WIPE + LATENCY + 4


@pytest.mark.long
@pytest.mark.parametrize("verdict_fifo", VERDICT_FIFOS)
def test_shallow_verdict_fifo_overflow_is_caught_long(verdict_fifo):
    # a verdict written into the full FIFO is lost: the sink sees none offered while one
    # waits, or a later verdict in its place
    r = run_formal(QueueManagerHarness(QM_VEC, fault="shallow_fifo", fifo_depth=SMALL_FIFO,
                                       verdict_fifo=verdict_fifo),
                   depth=SHALLOW_DEPTH + (verdict_fifo == "block"))
    steps = fails(r, "valid_iff_verdict_waits", "kth_verdict_is_arrival_k",
                   "at_most_fifo_depth_wait")
    assert QM_WIPE + LATENCY < steps <= SHALLOW_DEPTH + (verdict_fifo == "block")


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_bad_fifo_depth_is_rejected():
    with pytest.raises(ValueError,
                       match=rf"fifo_depth: 5 must be an int in \[6, {FIFO_DEPTH}\]"):
        QueueManagerHarness(fifo_depth=5)
    with pytest.raises(ValueError, match=r"verdict_fifo: 'lut' must be one of"):
        QueueManagerHarness(verdict_fifo="lut")


