"""The register file and the queue manager together (``tb_lib.system_top.System``), driven
through the memory-mapped bus: configuration, commits while arrivals stream (shadows and table
writes must change nothing until COMMIT; the COMMIT itself holds the arrival port until the
pipeline is empty and applies in one clock, which the model replays), rejected commits, bad
writes, counters and telemetry read over the bus, all against the golden model and
``fpq.regmap``."""

from fpq import Build, Config, Departure

from tb_lib import runner
from tb_lib.coverage_report import record
from tb_lib.scripts import STREAMS, cfg, shrink_plan
from tb_lib.system_top import System
from tb_lib.traffic import synthetic, end_clock
from tb_lib.verilog import generate, BUILD_ROOT

TOP = "fpq_system"
#: the full vector (the map's default v_max, 5000) with a small table (quick to write over
#: the bus)
B = Build(vec_bits=8192, table_depth=256)
#: Out of reset the register file restarts the time base with the map's defaults, so the
#: first clear and the first sample of the queue come at the defaults' periods (at their
#: 150 MHz: a clear after 120,000 clocks, a sample after 692,082), whatever the first
#: commit sets: the clock-driven engines keep the event already scheduled. The scripts skip
#: past them before their traffic (the bench skips idle clocks with a timer).
_DEFAULTS = Config(build=B).registers()
FIRST = max(-(-_DEFAULTS["clear_period"] >> 16), _DEFAULTS["avg_sample_period"]) + 100


def run_system(request, script, expect_failure=False, **stream):
    folder, verilog = generate(System(B), TOP, "system-v8192-t256")
    plan = {"build": B, "script": script, "seed": 3, "bus_gap": 0.3, **stream}
    name = request.node.name.replace("[", "-").replace("]", "")
    res = runner.run(folder, verilog, TOP, "registers.bench_registers", plan,
                     BUILD_ROOT / "runs" / name,
                     shrink=None if expect_failure else shrink_plan)
    record(res)
    return res


def test_commits_over_the_bus_while_streaming(request):
    """Six commits over the bus (mode, P and ECN, the clear seed and the average's weight,
    v_max: a wipe, the hash key: a live re-key with a hold, drop-tail), each written while
    the previous segment's arrivals stream; two rejected commits and two bad writes between.
    A clear in every clock and a sample every 7 clocks: the clear of a commit's clock draws
    from the new seed, so the clock the bench reads off the monitor ports must be the one
    the register file applied in."""
    base = cfg(B, mode="fpq", t_clear_s=5000e-6, limit_pkts=80, v_max=5000)
    changes = [dict(mode="red", red_min_th=2, red_max_th=12, red_max_p=0.3),
               dict(mode="fpq", p_pkts=5.0, ecn=False), dict(seed_clear=42),
               dict(v_max=150, t_clear_s=150e-6),
               dict(hash_key=bytes(range(40, 60)), rekey_hold_t_clear=0.2),
               dict(mode="droptail")]
    script = [("config", base), ("idle", FIRST)]
    c, t = base, 300
    for i, ch in enumerate(changes):
        ev = synthetic(c, 1200, seed=200 + i, p_dep=0.75, t0=t)
        script.append(("events", ev))
        t = end_clock(ev) + 1
        if i == 1:
            ev = synthetic(c, 300, seed=300, p_dep=0.75, t0=t)
            script.append(("bad_commit", {"v_max": 0}))
            script.append(("events", ev))
            script.append(("bad_commit", {"red_max_th": 1 << 16, "red_min_th": 1 << 16}))
            script.append(("bad_write", 0x000))         # ID is read-only
            script.append(("bad_write", 0x3F0))         # unmapped
            t = end_clock(ev) + 1
        new = c.replace(**ch)
        if i == 2:
            new = new.override(wq_shift=2, avg_sample_period=11)
        script.append(("commit", new))
        c = new
    last = synthetic(c, 1200, seed=250, p_dep=0.75, t0=t)
    # 30 departures at the end: the occupancy falls below max_queue, whose clear-on-write
    # the bench checks last (max_queue restarts from the occupancy)
    last += [Departure(last[-1].ts + 1 + i, 576) for i in range(30)]
    script.append(("events", last))
    res = run_system(request, script, **STREAMS["gaps+backpressure"])
    cov = res["coverage"]
    assert cov["commits over the bus"] == 1 + len(changes)
    assert cov["commits rejected (checked range)"] == 2
    # the COMMITs written while arrivals streamed held some of them back
    assert cov["arrival refused: hold"] > 0 and cov["arrival during a re-key hold"] > 0
    assert cov["clear in the clock of an arrival (one slot)"] > 5000 and cov["average > 0"]


def test_reset_mid_stream_through_the_register_file(request):
    """Reset mid-stream, then the configuration written again over the bus: the register
    file restarts the time base out of reset, the queue manager wipes the vector, and the
    state is the documented reset state."""
    c = cfg(B, mode="fpq", t_clear_s=0.05, limit_pkts=60)
    script = [("config", c), ("idle", FIRST),
              ("events", synthetic(c, 2000, seed=400, p_dep=0.6, t0=300)),
              ("reset", c), ("idle", FIRST),
              ("events", synthetic(c, 2000, seed=401, p_dep=0.6, t0=300))]
    res = run_system(request, script, **STREAMS["heavy-backpressure"])
    assert res["lost_to_reset"] > 0 and res["arrivals"] + res["lost_to_reset"] == 4000
