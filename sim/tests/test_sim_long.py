"""Full-length reproductions of the papers' claims (``make test-long``; a few minutes)."""

import os

import numpy as np
import pytest

from fpq_sim.network import run_scenario
from fpq_sim.scenario import load

SCEN = os.path.join(os.path.dirname(__file__), "..", "scenarios")
pytestmark = pytest.mark.long


def run(name, *sets):
    return run_scenario(load(os.path.join(SCEN, name + ".toml"), list(sets)), True)


def test_fig12_fpq_is_fairer_at_the_same_median():
    """FPQ paper Fig. 12, N = 75, 500 s: both medians near the fair 3.46 s; the traditional
    router spreads transfers over a wide range, FPQ keeps almost all near the fair time."""
    trad, fpq = run("fpq-traditional"), run("fpq-fpq")
    tt, tf = np.array(trad["transfer_times"]), np.array(fpq["transfer_times"])
    for t in (tt, tf):
        assert 2.5 < np.median(t) < 4.5
    assert (tt < 1.75).mean() > 0.2 and (tt > 7).mean() > 0.05
    assert ((tf > 1.75) & (tf < 7)).mean() > 0.95
    assert trad["transfers"]["p95"] / trad["transfers"]["p5"] > 5
    assert fpq["transfers"]["p95"] / fpq["transfers"]["p5"] < 2.5
    assert fpq["loss_rate"] < 0.015 < 0.05 < trad["loss_rate"]


def test_figs10_11_queue_and_loss_trends():
    """Figs. 10-11: traditional loss rises with N while its queue stays short; FPQ's queue
    grows (under 6 packets per connection) and its loss stays low."""
    res = {(d, n): run(f"fpq-{d}", f"flows.0.count={n}") for d in ("traditional", "fpq")
           for n in (45, 150)}
    assert res[("traditional", 150)]["loss_rate"] > 2 * res[("traditional", 45)]["loss_rate"]
    assert res[("traditional", 150)]["avg_queue_pkts"] < 45
    assert res[("fpq", 150)]["avg_queue_pkts"] > 3 * res[("fpq", 45)]["avg_queue_pkts"]
    assert res[("fpq", 150)]["avg_queue_pkts"] < 6 * 150
    assert res[("fpq", 150)]["loss_rate"] < 0.02


def test_fig2_uniform_loss_ten_percent():
    """Fig. 2 at 10 % loss: about 40 % of 20-packet transfers finish within 1 s, and a few
    per cent take more than 10 s."""
    s = run("fpq-fig2-uniform-loss")
    t = np.array(s["transfer_times"])
    assert 0.33 < (t < 1).mean() < 0.47
    assert 0.02 < (t > 10).mean() < 0.12


def test_morris97_1500_flows_loss():
    """1997 paper: 1500 flows through 217 buffers lose about 17 % of packets."""
    s = run("morris97-1500-flows")
    assert 0.13 < s["loss_rate"] < 0.22
    assert s["goodput_fraction"] > 0.95


def test_rtl_as_the_queue_discipline_matches_the_golden_model():
    """``queue.model = "rtl"``: the Verilated RTL decides (built on first use, about half a
    minute); same seed, so the whole run must equal the bit-exact model's."""
    pytest.importorskip("fpq_hdl.verilated")
    from fpq_hdl.queue_manager import LATENCY
    # the router waits out the RTL's latency for each verdict, in both runs, so that both
    # see the same events; a 100 kHz queue-manager clock keeps the RTL's idle clocks cheap
    # (the Verilated model pays per clock), as in the demo
    sets = ["run.duration_s=20", "run.warmup_s=5", "flows.0.count=40",
            "queue.tick_hz=1e5", f"queue.verdict_wait={LATENCY}"]
    a = run_scenario(load(os.path.join(SCEN, "fpq-fpq.toml"), sets + ["queue.model=exact"]))
    b = run_scenario(load(os.path.join(SCEN, "fpq-fpq.toml"), sets + ["queue.model=rtl"]))
    skip = {"model", "wall_seconds", "events_per_second", "transfer_times"}
    assert {k: v for k, v in a.items() if k not in skip} == \
        {k: v for k, v in b.items() if k not in skip}
    assert a["drops"] > 0
