"""Formal checks of the flow counter and the decision's hard limits (``formal_harness.py``;
the verdict port's: ``test_formal_verdict_port*.py``).

Bounded model checking from reset, and k-induction where it closes, with yosys-smtbmc +
Yices on small builds; every property is paired with an injected fault that the solver must
catch (so a passing proof is not a vacuous one: the same environment reaches the failing
state within the same bound). Deeper bounds, induction that takes minutes and the
cross-check with Yosys' own ``sat`` are ``long`` tests. Results and run times:
docs/RELIABILITY.md ("Formal checks").
"""

import pytest

from .formal_harness import (FlowCounterHarness, DecisionLimitHarness,
                            DecisionEquivalenceHarness, DECISION_FAULTS, run_formal)
from .formal_bounds import (QUICK_FC, QUICK_FC_DEPTH, DEC_PIPE, QUICK_DEC_DEPTH,
                            DEC_INDUCTION_K, fails)

# ---- (a) the flow count ---------------------------------------------------------------------

def test_flow_count_is_popcount_bmc():
    r = run_formal(FlowCounterHarness(**QUICK_FC), depth=QUICK_FC_DEPTH)
    assert r.passed, r.log[-3000:]


def test_flow_count_late_ram_write_is_caught():
    # a RAM that commits writes a clock late: the three forwarding registers no longer cover
    # the read-to-write distance and a flow is counted twice (or a clear missed)
    r = run_formal(FlowCounterHarness(fault="ram_write_late", **QUICK_FC), depth=QUICK_FC_DEPTH)
    steps = fails(r, "n_raw_is_popcount")
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
    fails(r, "n_raw_is_popcount")


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
    steps = fails(r, *checks, "forced_exactly_over_a_limit")
    # a slot's occupancy shows DEC_PIPE clocks after its fields; the fault needs two slots
    assert DEC_PIPE < steps <= QUICK_DEC_DEPTH


def test_area_limit_fault_breaks_the_induction_too():
    r = run_formal(DecisionLimitHarness("area", fault="packet_limit_off_by_one"),
                   depth=DEC_INDUCTION_K, mode="induction")
    fails(r, *LIMIT_CHECKS, "forced_exactly_over_a_limit")


# ---- (e) speed == area --------------------------------------------------------------------

def test_speed_and_area_forms_are_equivalent_bmc():
    r = run_formal(DecisionEquivalenceHarness(), depth=QUICK_DEC_DEPTH)
    assert r.passed, r.log[-3000:]


def test_equivalence_fault_is_caught():
    # the byte departure's "short" flag of the speed form taken from the wrong outcome of
    # the previous slot: the occupancy differs from the area form's
    r = run_formal(DecisionEquivalenceHarness(fault="short_from_wrong_outcome"), depth=QUICK_DEC_DEPTH)
    steps = fails(r, "same_occ_bytes", "same_dep_error", "same_out_dep_valid")
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
    fails(r, "n_raw_is_popcount")
    r = run_formal(DecisionLimitHarness("area"), depth=DEC_INDUCTION_K, mode="induction",
                   engine="sat", timeout=3600)
    assert r.passed, r.log[-3000:]
