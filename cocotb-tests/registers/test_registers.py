"""The register file and the queue manager together (``tb_lib.system_top.System``), driven
through the memory-mapped bus: configuration, commits while arrivals stream (shadows and table
writes must change nothing until COMMIT), rejected commits, bad writes, counters and telemetry
read over the bus, all against the golden model and ``fpq.regmap``."""

import pytest

from fpq import Departure

from tb_lib import runner
from tb_lib.coverage_report import record
from tb_lib.scripts import BUILDS, STREAMS, cfg, shrink_plan
from tb_lib.system_top import System
from tb_lib.traffic import synthetic
from tb_lib.verilog import generate, BUILD_ROOT

TOP = "fpq_system"
B = BUILDS["small"]


def run_system(request, script, expect_failure=False, **stream):
    folder, verilog = generate(System(B), TOP, "system-v256-t256")
    plan = {"build": B, "script": script, "seed": 3, "bus_gap": 0.3, **stream}
    name = request.node.name.replace("[", "-").replace("]", "")
    res = runner.run(folder, verilog, TOP, "registers.bench_registers", plan,
                     BUILD_ROOT / "runs" / name,
                     shrink=None if expect_failure else shrink_plan)
    record(res)
    return res


def test_commits_over_the_bus_while_streaming(request):
    base = cfg(B, mode="fpq", t_clear_s=0.05, limit_pkts=80)
    changes = [dict(mode="red", red_min_th=2, red_max_th=12, red_max_p=0.3),
               dict(mode="fpq", p_pkts=5.0, ecn=False), dict(seed_decide=42, wq_shift=2),
               dict(v_max=150, t_clear_s=0.05 * 150 / 256), dict(mode="droptail")]
    script = [("config", base)]
    c = base
    for i, ch in enumerate(changes):
        script.append(("events", synthetic(c, 1200, seed=200 + i, p_dep=0.75)))
        if i == 1:
            script.append(("bad_commit", {"v_max": 0}))
            script.append(("events", synthetic(c, 300, seed=300, p_dep=0.75)))
            script.append(("bad_commit", {"red_max_th": 1 << 16, "red_min_th": 1 << 16}))
            script.append(("bad_write", 0x000))         # ID is read-only
            script.append(("bad_write", 0x3F0))         # unmapped
        c = c.replace(**ch)
        script.append(("commit", c))
    last = synthetic(c, 1200, seed=250, p_dep=0.75)
    # 30 departures at the end: the occupancy falls below max_queue, whose clear-on-write
    # the bench checks last (max_queue restarts from the occupancy)
    last += [Departure(last[-1].ts + 1 + i, 576) for i in range(30)]
    script.append(("events", last))
    res = run_system(request, script, **STREAMS["gaps+backpressure"])
    cov = res["coverage"]
    assert cov["commits over the bus"] == 1 + len(changes)
    assert cov["commits rejected (checked range)"] == 2


def test_reset_mid_stream_through_the_register_file(request):
    """Reset mid-stream, then the configuration written again over the bus: the documented
    reset state (the RTL wipes the vector and zeroes the lag line out of reset since 2a7a716,
    a bug these benches found)."""
    c = cfg(B, mode="fpq", t_clear_s=1.0, limit_pkts=60)
    script = [("config", c), ("events", synthetic(c, 2000, seed=400, p_dep=0.6)),
              ("reset", c), ("events", synthetic(c, 2000, seed=401, p_dep=0.6))]
    res = run_system(request, script, **STREAMS["heavy-backpressure"])
    assert res["lost_to_reset"] >= 0 and res["arrivals"] + res["lost_to_reset"] == 4000
