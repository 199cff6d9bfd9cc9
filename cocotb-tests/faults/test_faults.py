"""Proof that the benches can fail: each fault is a faulty part built into the top at its
``parts`` seam (``tb_lib.faults``: a wrapper around the real block, hdl/ untouched), the
faulty design is Verilated, and the very script of the bench that should catch it must FAIL
on it (and passes on the real RTL: ``test_the_catching_scripts_pass_on_the_real_rtl``).

``make test`` runs three faults; ``make test-long`` the others."""

import pytest

from tb_lib.faults import FAULTS, faulty_top
from tb_lib.runner import BenchFailed
from tb_lib.scripts import (BUILDS, STREAMS, same_flow_script, streams_script,
                            hard_limits_script, clear_fraction_script, weight_commits_script,
                            run_plan)

B = BUILDS["small"]

#: fault -> (bench script that must catch it, stream conditions)
CATCHERS = {
    "vector-ram-write-late": (lambda: same_flow_script(B, 3000), "full-rate"),
    "clear-owed-fraction": (lambda: clear_fraction_script(B, 3000), "full-rate"),
    "swap-mark-drop": (lambda: streams_script(B, 800), "gaps+backpressure"),
    "limit-off-by-one": (lambda: hard_limits_script(B, "droptail", 1000), "full-rate"),
    "admission-bit": (lambda: hard_limits_script(B, "droptail", 1000), "full-rate"),
    "sample-weight": (lambda: weight_commits_script(B, 600), "full-rate"),
    "fifo-one-short": (lambda: streams_script(B, 800), "heavy-backpressure"),
}
QUICK = ["vector-ram-write-late", "clear-owed-fraction", "swap-mark-drop"]
assert set(CATCHERS) == set(FAULTS)


def _caught(request, fault):
    script, stream = CATCHERS[fault]
    with pytest.raises(BenchFailed) as exc:
        run_plan(request, B, script(), tag=f"fault-{fault}", component=faulty_top(B, fault),
                 seed=11, expect_failure=True, **STREAMS[stream])
    text = str(exc.value)
    assert "run_plan" in text
    # the failure is a comparison with the model (or the bench stuck), not a crash
    assert "verdict" in text or "counters" in text or "telemetry" in text or "stuck" in text
    return text


@pytest.mark.parametrize("fault", QUICK)
def test_fault_is_caught(request, fault):
    _caught(request, fault)


@pytest.mark.long
@pytest.mark.parametrize("fault", [f for f in FAULTS if f not in QUICK])
def test_fault_is_caught_long(request, fault):
    _caught(request, fault)


def test_the_catching_scripts_pass_on_the_real_rtl(request):
    """Without a fault, the catchers (as configured above) pass: a fault test fails only
    because of its fault."""
    for fault, (script, stream) in CATCHERS.items():
        run_plan(request, B, script(), seed=11, **STREAMS[stream])


def test_a_failing_bench_keeps_a_short_waveform(request):
    """A real failure (not marked as expected) is rerun cut 64 arrivals after the first
    mismatching verdict, with tracing on, and that waveform is kept and named in the error:
    FST when Verilator can write it here (the lz4 headers, installed by .ci/run), else VCD."""
    from pathlib import Path
    from tb_lib.runner import fst_available
    with pytest.raises(BenchFailed) as exc:
        run_plan(request, B, streams_script(B, 800), tag="fault-swap-mark-drop",
                 component=faulty_top(B, "swap-mark-drop"), seed=11,
                 **STREAMS["gaps+backpressure"])
    text = str(exc.value)
    assert "waveform kept: " in text, text[:500]
    wave = Path(text.split("waveform kept: ")[1].split("\n")[0].split(";")[0].strip())
    assert wave.exists() and wave.stat().st_size > 1000
    assert wave.suffix == (".fst" if fst_available() else ".vcd")
