"""The bounds of the formal checks (``formal_harness.py``), shared by the test files that
run them (one file per group of solver runs, so that the workers of ``make test`` share the
long runs out), and the check that a run failed where it should."""

from fpq_hdl.decision import Decision
from fpq_hdl.queue_manager import LATENCY

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


def fails(result, *checks):
    """The run failed on (at least) one of ``checks``; returns the counterexample's length."""
    assert not result.passed, result.log[-3000:]
    assert set(checks) & set(result.failed), (result.failed, result.log[-3000:])
    return result.counterexample_steps
