"""The verdict port's faults that its formal checks (``test_formal_verdict_port.py``) must
catch within the same bound, so that a passing check is not a vacuous one: a verdict lost
on a stall, a verdict repeated after a transfer."""

import pytest

from .formal_harness import QueueManagerHarness, run_formal
from .formal_bounds import QM_VEC, QM_WIPE, QUICK_QM_DEPTH, fails
from fpq_hdl.queue_manager import LATENCY


@pytest.mark.parametrize("fault, checks", [
    ("drop_on_stall", ("offered_verdict_offered_again",)),
    # a duplicate shows as an offer with no verdict waiting or, if the sink takes it, as a
    # wrong sequence number; the solver returns one trace, with either (or both)
    ("dup_after_transfer", ("kth_verdict_is_arrival_k", "valid_iff_verdict_waits")),
])
def test_verdict_port_faults_are_caught(fault, checks):
    r = run_formal(QueueManagerHarness(QM_VEC, fault=fault), depth=QUICK_QM_DEPTH)
    steps = fails(r, *checks)
    # the first verdict cannot come before the reset wipe and the pipeline
    assert QM_WIPE + LATENCY <= steps <= QUICK_QM_DEPTH
