"""Decision alone on Verilator against the golden model's own arrive()/depart() (bench:
``tb_lib.blocks.decision``, which injects Decision's inputs p and u into an unmodified
``fpq.QueueManager``): FPQ, RED and drop-tail, ECN on and off, hard limits in packets (1, 25)
and bytes (hit exactly, with and without a departure in the same slot), departures
interleaved (from an empty queue, more bytes than queued, emptying the queue), p = 0, p = 1
and u at p - 1 / p / p + 1, empty slots between; a run of mid-stream rewrites on the default
build, with two resets. Plus the faults this bench must catch."""

import pytest

from fpq import Build, Config, Arrival, Departure

from fpq_hdl.decision import Decision

from tb_lib.blocks.decision import PHASES, HUGE_SLOTS, RESET_PHASES, mode_script, rewrite_script
from tb_lib.component_bench import component_runner
from tb_lib.faults import COMPONENT_FAULTS
from tb_lib.runner import BenchFailed

BUILDS = {"v256-t16": Build(vec_bits=256, table_depth=16), "default": Build()}
run = component_runner("decision", Decision, "fpq_decision", "decision.bench_decision", BUILDS)
N = 500        # slots per phase


def missing(res, bins):
    cov = res["coverage"]
    return [b for b in bins if not cov.get("decision: " + b)]


@pytest.mark.parametrize("ecn", [False, True], ids=["ecn-off", "ecn-on"])
@pytest.mark.parametrize("mode", ["fpq", "red", "droptail"])
def test_decision(request, mode, ecn):
    res = run(request, "v256-t16", mode_script(BUILDS["v256-t16"], mode, ecn, N))
    assert res["inputs"] == len(PHASES) * N
    actions = ["enqueue", "drop forced"] + ([] if mode == "droptail" else
                                            ["mark", "drop early"] if ecn else ["drop early"])
    want = [f"{mode} {a}" for a in actions] + [
        "forced drop by the packet limit", "forced drop by the byte limit",
        "byte limit exactly reached", "byte limit decided with a departure in the slot",
        "departure and arrival in one slot", "departure from an empty queue (error)",
        "departure of more bytes than queued (error)", "departure empties the queue",
        "empty slot", "p = 1 (saturated)", "p = 0", "u = p (boundary)",
        "u = p - 1 (boundary)", "configuration rewritten mid-stream"]
    assert not missing(res, want), f"bins not hit: {missing(res, want)}"
    if mode == "fpq" and not ecn:
        assert not res["coverage"].get("decision: fpq mark")


def test_decision_rewrites(request):
    res = run(request, "default", rewrite_script(BUILDS["default"], N // 2), seed=5)
    assert res["inputs"] + res["lost_to_reset"] == ((13 + len(RESET_PHASES)) * (N // 2)
                                                    + 6 * len(RESET_PHASES) + HUGE_SLOTS)
    assert res["lost_to_reset"] == len(RESET_PHASES) * Decision.LATENCY
    assert not missing(res, ["empty slot", "configuration rewritten mid-stream",
                             "reset mid-stream (slots in flight)",
                             "red mark", "fpq mark", "droptail drop forced",
                             "byte occupancy >= 2^31", "forced drop by the byte limit",
                             "max_queue cleared with packets queued",
                             "max_queue clear lowers it"])


@pytest.mark.long
@pytest.mark.parametrize("mode", ["fpq", "red", "droptail"])
def test_decision_long(request, mode):
    for ecn in (False, True):
        run(request, "default", mode_script(BUILDS["default"], mode, ecn, 20 * N), seed=9)
    run(request, "v256-t16", rewrite_script(BUILDS["v256-t16"], 10 * N), seed=10)


#: fault -> (mode, ECN) of the mode_script that must catch it
FAULTS = {"dc-limit-off-by-one": ("droptail", False),
          "dc-byte-limit-exact": ("droptail", False),
          "dc-admission-bit": ("droptail", False)}


@pytest.mark.parametrize("fault", FAULTS)
def test_fault_is_caught(request, fault):
    build = BUILDS["v256-t16"]
    comp = COMPONENT_FAULTS[fault][2](build)
    with pytest.raises(BenchFailed) as exc:
        run(request, "v256-t16", mode_script(build, *FAULTS[fault], N), component=comp,
            expect_failure=True)
    assert "RTL" in str(exc.value) and "model" in str(exc.value)


# Found by this bench: with ``optimise="speed"`` the packet limit of the next slot was
# decided as if a departure from an empty queue had taken a packet off, so with limit_pkts = 1
# the queue grew to 2 (fixed; hdl/tests/test_formal.py proves the limits from 1).
def test_packet_limit_of_one_after_a_departure_from_an_empty_queue():
    """limit_pkts = 1, the queue empty; clock 100: a departure (an error) and an arrival
    (enqueued); clock 101: an arrival, a forced drop (1 + 1 > 1). Lean harness, the top."""
    from fpq import QueueManager as Model
    from fpq_hdl.verilated import VerilatedQueueManager
    c = Config(build=Build(vec_bits=256, table_depth=64), mode="droptail", tick_hz=1e6,
               t_clear_s=0.01, v_max=200, n_cap=63, limit_pkts=1)
    ev = [Departure(100, 40), Arrival(100, 1, 1500, False), Arrival(101, 2, 1500, False)]
    rtl, model = VerilatedQueueManager(c), Model(c)
    want = model.run(ev)
    assert [v.action for v in want] == [0, 3]
    assert rtl.run(ev) == want and rtl.snapshot()["occ_pkts"] == 1
