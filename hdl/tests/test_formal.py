"""Formal checks of the flow counter and the verdict port (``fpq_hdl.formal``).

Bounded model checking from reset with yosys-smtbmc + Yices on small builds; every property
is paired with an injected fault that the solver must catch (so a passing proof is not a
vacuous one: the same environment reaches the failing state within the same bound).
Deeper bounds, induction and the cross-check with Yosys' own ``sat`` are ``long`` tests.
Results and run times: docs/RELIABILITY.md ("Formal checks").
"""

import pytest

from fpq_hdl.formal import FlowCounterHarness, QueueManagerHarness, run_formal
from fpq_hdl.queue_manager import LATENCY, VERDICT_FIFOS

# (a) quick configuration: a 4-bit vector (reset wipe 7 clocks), the smallest set_delay,
# a 12-bit timestamp, the configuration's seed
QUICK_FC = dict(vec_bits=4, set_delay=3, ts_bits=12, free_seed=False)
# 18 clocks: the shortest counterexample of the late-write fault; the proof of 20 clocks
# takes about 4 minutes (a long test)
QUICK_FC_DEPTH = 18
# (b), (c): a 16-bit vector (the smallest with avg_lag >= MIN_AVG_LAG): the reset wipe
# (vec_bits + 3 clocks), then LATENCY clocks to the first verdict
QM_WIPE = QueueManagerHarness().build.vec_bits + 3
QUICK_QM_DEPTH = QM_WIPE + LATENCY + 6


def _fails(result, *checks):
    """The run failed on (at least) one of ``checks``; returns the counterexample's length."""
    assert not result.passed, result.log[-3000:]
    assert set(checks) & set(result.failed), (result.failed, result.log[-3000:])
    return result.counterexample_steps


def test_flow_count_is_popcount_bmc():
    r = run_formal(FlowCounterHarness(**QUICK_FC), depth=QUICK_FC_DEPTH)
    assert r.passed, r.log[-3000:]


def test_flow_count_late_ram_write_is_caught():
    # a RAM that commits writes a clock late: the two forwarding registers no longer cover
    # the read-to-write distance and a flow is counted twice
    r = run_formal(FlowCounterHarness(fault="ram_write_late", **QUICK_FC), depth=QUICK_FC_DEPTH)
    steps = _fails(r, "n_raw_is_popcount")
    assert steps <= QUICK_FC_DEPTH
    n_raw, expect = r.trace["probe_n_raw"][steps - 1], r.trace["probe_expect_n"][steps - 1]
    assert n_raw != expect


@pytest.mark.long
def test_capped_flow_count_bmc_long():
    # n = min(n_cap, popcount) with a cap the 4-bit vector reaches
    r = run_formal(FlowCounterHarness(n_cap=2, **QUICK_FC), depth=QUICK_FC_DEPTH)
    assert r.passed, r.log[-3000:]


@pytest.mark.parametrize("verdict_fifo", VERDICT_FIFOS)
def test_one_verdict_per_arrival_bmc(verdict_fifo):
    # the block-RAM FIFO (iCE40) adds a clock of latency: one more clock of bound
    r = run_formal(QueueManagerHarness(verdict_fifo=verdict_fifo),
                   depth=QUICK_QM_DEPTH + (verdict_fifo == "block"))
    assert r.passed, r.log[-3000:]


@pytest.mark.parametrize("fault, checks", [
    ("drop_on_stall", ("offered_verdict_offered_again",)),
    # a duplicate shows as an offer with no verdict waiting or, if the sink takes it, as a
    # wrong sequence number; the solver returns one trace, with either (or both)
    ("dup_after_transfer", ("kth_verdict_is_arrival_k", "valid_iff_verdict_waits")),
])
def test_verdict_port_faults_are_caught(fault, checks):
    r = run_formal(QueueManagerHarness(fault=fault), depth=QUICK_QM_DEPTH)
    steps = _fails(r, *checks)
    # the first verdict cannot come before the reset wipe and the pipeline
    assert QM_WIPE + LATENCY <= steps <= QUICK_QM_DEPTH


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_bad_fault_name_is_rejected():
    with pytest.raises(ValueError, match="fault"):
        FlowCounterHarness(fault="nonsense")
    with pytest.raises(ValueError, match="fault"):
        QueueManagerHarness(fault="nonsense")


# ---- long ---------------------------------------------------------------------------------

@pytest.mark.long
def test_flow_count_is_popcount_deeper_bmc_long():
    # depth 20 took 231 s; depth 22 did not finish in 32 minutes (2026-11-23): the solver's
    # time grows about tenfold per two clocks here
    r = run_formal(FlowCounterHarness(**QUICK_FC), depth=20, timeout=3600)
    assert r.passed, r.log[-3000:]


@pytest.mark.long
def test_flow_count_literal_schedule_bmc_long():
    r = run_formal(FlowCounterHarness(clear_literal=True, **QUICK_FC), depth=QUICK_FC_DEPTH,
                   timeout=3600)
    assert r.passed, r.log[-3000:]


@pytest.mark.long
def test_flow_count_late_ram_write_full_config_long():
    # the queue manager's set_delay, an 8-bit vector, 48-bit timestamps, a free seed
    r = run_formal(FlowCounterHarness(vec_bits=8, fault="ram_write_late"), depth=30,
                   timeout=3600)
    _fails(r, "n_raw_is_popcount")


# A full verdict FIFO: the design's 32 entries need a bound of about 80 clocks, which Yices
# had not finished after 13 minutes (2026-11-23); a 6-entry FIFO (the credit logic is written
# for any depth) fills under a stalled sink within wipe + pipeline + 8 clocks
SMALL_FIFO = 6
FULL_FIFO_DEPTH = QM_WIPE + LATENCY + SMALL_FIFO + 2


@pytest.mark.long
@pytest.mark.parametrize("verdict_fifo", VERDICT_FIFOS)
def test_one_verdict_per_arrival_full_fifo_bmc_long(verdict_fifo):
    r = run_formal(QueueManagerHarness(fifo_depth=SMALL_FIFO, verdict_fifo=verdict_fifo),
                   depth=FULL_FIFO_DEPTH + (verdict_fifo == "block"), timeout=3600)
    assert r.passed, r.log[-3000:]


@pytest.mark.long
def test_shallow_verdict_fifo_is_caught_long():
    # a FIFO 4 entries shallower than the credit count: with a third verdict due, none is
    # offered although verdicts wait (43 clocks, 2026-11-23)
    r = run_formal(QueueManagerHarness(fault="shallow_fifo", fifo_depth=SMALL_FIFO),
                   depth=FULL_FIFO_DEPTH, timeout=3600)
    steps = _fails(r, "valid_iff_verdict_waits")
    assert QM_WIPE + LATENCY < steps <= FULL_FIFO_DEPTH


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_bad_fifo_depth_is_rejected():
    with pytest.raises(ValueError, match=r"fifo_depth: 5 must be an int in \[6, 32\]"):
        QueueManagerHarness(fifo_depth=5)
    with pytest.raises(ValueError, match=r"verdict_fifo: 'lut' must be one of"):
        QueueManagerHarness(verdict_fifo="lut")


@pytest.mark.long
def test_yosys_sat_engine_agrees_long():
    # the same quick proofs with Yosys' own solver: the proof holds, the fault is caught
    r = run_formal(FlowCounterHarness(**QUICK_FC), depth=QUICK_FC_DEPTH, engine="sat",
                   timeout=3600)
    assert r.passed, r.log[-3000:]
    r = run_formal(FlowCounterHarness(fault="ram_write_late", **QUICK_FC),
                   depth=QUICK_FC_DEPTH, engine="sat", timeout=3600)
    _fails(r, "n_raw_is_popcount")
