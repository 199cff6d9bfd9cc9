"""Formal checks of the flow counter, the verdict port and the decision's hard limits
(``formal_harness.py``).

Bounded model checking from reset, and k-induction where it closes, with yosys-smtbmc +
Yices on small builds; every property is paired with an injected fault that the solver must
catch (so a passing proof is not a vacuous one: the same environment reaches the failing
state within the same bound). Deeper bounds, induction that takes minutes and the
cross-check with Yosys' own ``sat`` are ``long`` tests. Results and run times:
docs/RELIABILITY.md ("Formal checks").
"""

import pytest

from .formal_harness import (FlowCounterHarness, QueueManagerHarness, DecisionLimitHarness,
                            DecisionEquivalenceHarness, DECISION_FAULTS, SHALLOW_BY, run_formal)
from fpq_hdl.decision import Decision
from fpq_hdl.queue_manager import FIFO_DEPTH, LATENCY, VERDICT_FIFOS

# (a) quick configuration: a 4-bit vector (reset wipe 7 clocks), the smallest set_delay (4),
# the configuration's seed (a free seed makes the solver's work about 50 times longer)
QUICK_FC = dict(vec_bits=4, set_delay=4, free_seed=False)
# 20 clocks: the shortest counterexample of the late-write fault (sets of one index four
# slots apart with a stale read between, after the reset wipe)
QUICK_FC_DEPTH = 20
# (b), (c): a 2-bit vector, the smallest: the reset wipe (vec_bits + 3 clocks), then
# LATENCY clocks to the first verdict and 2 more to a stall or a transfer after it
QM_VEC = 2
QM_WIPE = QM_VEC + 3
QUICK_QM_DEPTH = QM_WIPE + LATENCY + 2
# (d), (e): the decision's pipeline (fields FIELDS_AHEAD clocks ahead, outputs LATENCY
# later) and two slots after the first
DEC_PIPE = Decision.FIELDS_AHEAD + Decision.LATENCY
QUICK_DEC_DEPTH = DEC_PIPE + 2
# k of the induction that closes for the area form: the reference's field delays fill
DEC_INDUCTION_K = DEC_PIPE + 1


def _fails(result, *checks):
    """The run failed on (at least) one of ``checks``; returns the counterexample's length."""
    assert not result.passed, result.log[-3000:]
    assert set(checks) & set(result.failed), (result.failed, result.log[-3000:])
    return result.counterexample_steps


# ---- (a) the flow count ---------------------------------------------------------------------

def test_flow_count_is_popcount_bmc():
    r = run_formal(FlowCounterHarness(**QUICK_FC), depth=QUICK_FC_DEPTH)
    assert r.passed, r.log[-3000:]


def test_flow_count_late_ram_write_is_caught():
    # a RAM that commits writes a clock late: the three forwarding registers no longer cover
    # the read-to-write distance and a flow is counted twice (or a clear missed)
    r = run_formal(FlowCounterHarness(fault="ram_write_late", **QUICK_FC), depth=QUICK_FC_DEPTH)
    steps = _fails(r, "n_raw_is_popcount")
    assert steps <= QUICK_FC_DEPTH
    n_raw, expect = r.trace["probe_n_raw"][steps - 1], r.trace["probe_expect_n"][steps - 1]
    assert n_raw != expect


@pytest.mark.long
def test_capped_flow_count_bmc_long():
    # n = min(n_cap, popcount) with a cap the 4-bit vector reaches
    r = run_formal(FlowCounterHarness(n_cap=2, **QUICK_FC), depth=QUICK_FC_DEPTH, timeout=3600)
    assert r.passed, r.log[-3000:]


@pytest.mark.long
def test_flow_count_free_seed_bmc_long():
    # any seed and the queue manager's set_delay: 16 clocks (a free seed is the hard part)
    r = run_formal(FlowCounterHarness(vec_bits=4), depth=16, timeout=3600)
    assert r.passed, r.log[-3000:]


@pytest.mark.long
def test_flow_count_late_ram_write_full_config_long():
    # the queue manager's set_delay, an 8-bit vector, a free seed
    r = run_formal(FlowCounterHarness(vec_bits=8, fault="ram_write_late"), depth=30,
                   timeout=3600)
    _fails(r, "n_raw_is_popcount")


# ---- (b), (c) the verdict port ----------------------------------------------------------------

@pytest.mark.parametrize("verdict_fifo", VERDICT_FIFOS)
def test_one_verdict_per_arrival_bmc(verdict_fifo):
    # the block-RAM FIFO (iCE40) adds a clock of latency: one more clock of bound
    r = run_formal(QueueManagerHarness(QM_VEC, verdict_fifo=verdict_fifo),
                   depth=QUICK_QM_DEPTH + (verdict_fifo == "block"))
    assert r.passed, r.log[-3000:]


@pytest.mark.parametrize("fault, checks", [
    ("drop_on_stall", ("offered_verdict_offered_again",)),
    # a duplicate shows as an offer with no verdict waiting or, if the sink takes it, as a
    # wrong sequence number; the solver returns one trace, with either (or both)
    ("dup_after_transfer", ("kth_verdict_is_arrival_k", "valid_iff_verdict_waits")),
])
def test_verdict_port_faults_are_caught(fault, checks):
    r = run_formal(QueueManagerHarness(QM_VEC, fault=fault), depth=QUICK_QM_DEPTH)
    steps = _fails(r, *checks)
    # the first verdict cannot come before the reset wipe and the pipeline
    assert QM_WIPE + LATENCY <= steps <= QUICK_QM_DEPTH


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
    steps = _fails(r, "valid_iff_verdict_waits", "at_most_fifo_depth_wait")
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
    steps = _fails(r, "valid_iff_verdict_waits", "kth_verdict_is_arrival_k",
                   "at_most_fifo_depth_wait")
    assert QM_WIPE + LATENCY < steps <= SHALLOW_DEPTH + (verdict_fifo == "block")


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_bad_fifo_depth_is_rejected():
    with pytest.raises(ValueError,
                       match=rf"fifo_depth: 5 must be an int in \[6, {FIFO_DEPTH}\]"):
        QueueManagerHarness(fifo_depth=5)
    with pytest.raises(ValueError, match=r"verdict_fifo: 'lut' must be one of"):
        QueueManagerHarness(verdict_fifo="lut")


# ---- (d) the queue never exceeds its limits -------------------------------------------------

LIMIT_CHECKS = ("packets_within_limit", "bytes_within_limit")


def test_queue_within_limits_area_proved_by_induction():
    """The area form: the limits hold in every clock from reset, and the occupancy, the
    forced drops and the departure errors are the definition's, for any traffic: proved
    (k-induction closes)."""
    r = run_formal(DecisionLimitHarness("area"), depth=DEC_INDUCTION_K, mode="induction")
    assert r.passed, r.log[-3000:]


def test_queue_within_limits_speed_bmc():
    """The speed form from reset, limit_pkts from 1 (a departure from an empty queue and an
    admission, then an arrival: forced)."""
    r = run_formal(DecisionLimitHarness("speed"), depth=QUICK_DEC_DEPTH)
    assert r.passed, (r.failed, r.counterexample_steps)


@pytest.mark.parametrize("fault, checks", [
    pytest.param("forced_ignores_admission", LIMIT_CHECKS, id="forced_ignores_admission"),
    # its forced drops are right for the flags it selects; the occupancy after them is not
    pytest.param("admission_from_candidate", LIMIT_CHECKS + ("occupancy_is_the_queue",),
                 id="admission_from_candidate"),
    pytest.param("packet_limit_off_by_one", LIMIT_CHECKS, id="packet_limit_off_by_one"),
])
def test_queue_limit_faults_are_caught(fault, checks):
    """Each fault of the form it names makes the queue exceed a limit, or the harness's
    definition of the queue differ from the occupancy."""
    form = DECISION_FAULTS[fault][0]
    harness = DecisionLimitHarness(form, fault=fault)
    r = run_formal(harness, depth=QUICK_DEC_DEPTH)
    steps = _fails(r, *checks, "forced_exactly_over_a_limit")
    # a slot's occupancy shows DEC_PIPE clocks after its fields; the fault needs two slots
    assert DEC_PIPE < steps <= QUICK_DEC_DEPTH


def test_area_limit_fault_breaks_the_induction_too():
    r = run_formal(DecisionLimitHarness("area", fault="packet_limit_off_by_one"),
                   depth=DEC_INDUCTION_K, mode="induction")
    _fails(r, *LIMIT_CHECKS, "forced_exactly_over_a_limit")


# ---- (e) speed == area --------------------------------------------------------------------

def test_speed_and_area_forms_are_equivalent_bmc():
    r = run_formal(DecisionEquivalenceHarness(), depth=QUICK_DEC_DEPTH)
    assert r.passed, r.log[-3000:]


def test_equivalence_fault_is_caught():
    # the byte departure's "short" flag of the speed form taken from the wrong outcome of
    # the previous slot: the occupancy differs from the area form's
    r = run_formal(DecisionEquivalenceHarness(fault="short_from_wrong_outcome"), depth=QUICK_DEC_DEPTH)
    steps = _fails(r, "same_occ_bytes", "same_dep_error", "same_out_dep_valid")
    assert DEC_PIPE < steps <= QUICK_DEC_DEPTH


@pytest.mark.long
def test_queue_within_limits_speed_deeper_bmc_long():
    r = run_formal(DecisionLimitHarness("speed"), depth=QUICK_DEC_DEPTH + 1,
                   timeout=3600)
    assert r.passed, r.log[-3000:]


@pytest.mark.long
def test_speed_and_area_forms_are_equivalent_deeper_bmc_long():
    r = run_formal(DecisionEquivalenceHarness(), depth=QUICK_DEC_DEPTH + 1,
                   timeout=3600)
    assert r.passed, r.log[-3000:]


# ---- the second engine ----------------------------------------------------------------------

@pytest.mark.long
def test_yosys_sat_engine_agrees_long():
    # the same quick proofs with Yosys' own solver: the proof holds, the fault is caught
    r = run_formal(FlowCounterHarness(**QUICK_FC), depth=QUICK_FC_DEPTH, engine="sat",
                   timeout=3600)
    assert r.passed, r.log[-3000:]
    r = run_formal(FlowCounterHarness(fault="ram_write_late", **QUICK_FC),
                   depth=QUICK_FC_DEPTH, engine="sat", timeout=3600)
    _fails(r, "n_raw_is_popcount")
    r = run_formal(DecisionLimitHarness("area"), depth=DEC_INDUCTION_K, mode="induction",
                   engine="sat", timeout=3600)
    assert r.passed, r.log[-3000:]
