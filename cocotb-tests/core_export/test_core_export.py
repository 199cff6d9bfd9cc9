"""The exported core without Amaranth: `fpq verilog` writes the Verilog (the same command as
`make verilog`), Verilator simulates that file alone, and cocotbext-axi drives it: the
configuration over AXI4-Lite from ``fpq config``'s bus writes, arrivals and departures from
AXI-Stream sources with idle clocks, verdicts into a sink with back-pressure, every verdict
against the golden model (``core_export.bench_core_export``)."""

import hashlib

from fpq import Build, Config
from fpq.cli import main

from tb_lib import runner
from tb_lib.coverage_report import record
from tb_lib.scripts import cfg
from tb_lib.traffic import synthetic
from tb_lib.verilog import BUILD_ROOT

NAME = "fpq_core_tb"
#: The bench's power-on keys and seeds, given to `fpq verilog` (``--key``, ``--mix-key``,
#: ``--seed-decide``, ``--seed-clear``) so that its include file is the same every run (one
#: Verilator build) and the model starts with the core's keys (``Config(build=B)``); typed
#: once, they pass ``fpq.keys.check_key``.
KEYS = {"hash_key": bytes.fromhex("3c7a0d5be2914f68a1c7e03b5d92f4a6087e1bc9"),
        "hash_mix_key": bytes.fromhex("5e0c93a1d27b48f6a9e3b170"),
        "seed_decide": 0x3f8a_51c2_97d0_6e4b, "seed_clear": 0xa4e1_07b9_5c23_d86f}
B = Build(vec_bits=1024, table_depth=256, power_on_keys=KEYS)
#: Out of reset the queue manager runs on the map's defaults, which schedule the first clear
#: and the first sample of the queue (at their 150 MHz) 120,000 and 692,082 clocks after
#: clock 0; an engine keeps an event already scheduled whatever a commit sets. The traffic
#: starts after both, so it meets the committed configuration's clears and samples.
_DEFAULTS = Config(build=B).registers()
START = max(-(-_DEFAULTS["clear_period"] >> 16), _DEFAULTS["avg_sample_period"]) + 100


def export(tmp_path):
    """`fpq verilog` for the bench's build into a folder named by the Verilog's hash (one
    Verilator build while the export is unchanged); returns ``(folder, verilog path)``."""
    out = tmp_path / f"{NAME}.v"
    assert main(["verilog", "-o", str(out), "--bus", "axi-lite", "--name", NAME,
                 "--vec-bits", str(B.vec_bits), "--table-depth", str(B.table_depth),
                 "--key", KEYS["hash_key"].hex(), "--mix-key", KEYS["hash_mix_key"].hex(),
                 "--seed-decide", str(KEYS["seed_decide"]),
                 "--seed-clear", str(KEYS["seed_clear"])]) == 0
    # the Verilog and the keys it includes: a Verilator build per pair
    texts = {out.name: out.read_text(), f"{NAME}_keys.vh": (tmp_path / f"{NAME}_keys.vh")
             .read_text()}
    digest = hashlib.sha256("".join(texts.values()).encode()).hexdigest()[:12]
    folder = BUILD_ROOT / f"core-export-{digest}"
    path = folder / out.name
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        for name in sorted(texts, key=lambda n: n == out.name):     # the Verilog last
            tmp = folder / f"{name}.tmp"
            tmp.write_text(texts[name])
            tmp.replace(folder / name)
    return folder, path


def run_core(tmp_path, request, plan):
    """The exported core (Verilated) through the bench with ``plan``; its coverage
    recorded. Only the ports are public: the core is one flat module, its wires stay
    optimisable."""
    folder, verilog = export(tmp_path)
    res = runner.run(folder, verilog, NAME, "core_export.bench_core_export", plan,
                     BUILD_ROOT / "runs" / request.node.name,
                     public=("s_axis_*", "m_axis_*", "s_axil_*", "clk", "rst"))
    record({"arrivals": res["verdicts"], "cycles": res["clocks"]})
    return res

def test_exported_core_over_axi_against_the_model(tmp_path, request):
    """FPQ with a clear every 20 clocks and a sample every 7, 8 flows: 3,000 arrivals,
    arrivals idle in 30 % of the clocks, departures in 40 %, verdicts refused in 30 %; every
    verdict and every counter equal to the model's."""
    import random
    config = cfg(B, mode="fpq", t_clear_s=0.02, v_max=1000, limit_pkts=120, p_pkts=4.0)
    rnd = random.Random(12)
    events = synthetic(config, 3000, seed=11, p_dep=0.8, t0=0,
                       flows=[rnd.getrandbits(104) for _ in range(8)])
    plan = {"build": B, "script": [
        ("reset",), ("identity",), ("configure", config),
        ("stream", events, START, 5, 0.3, 0.4, 0.3),          # seed, gaps, back-pressure
        ("counters",)]}
    res = run_core(tmp_path, request, plan)
    assert res["verdicts"] == 3000
    cov = res["coverage"]
    # the traffic reached the decisions worth checking: marks or early drops, forced drops
    assert cov.get("mark", 0) + cov.get("drop early", 0) > 50, cov
    assert cov.get("drop forced", 0) > 0 and cov.get("average > 0", 0) > 1000, cov


def test_exported_core_out_of_reset_runs_fpq_on_the_defaults(tmp_path, request):
    """No bus write at all: STATUS reads TABLES_DEFAULT; eight bursts of 1,500 back-to-back
    arrivals of 4 flows, each half a sample period after a sample of the average (the
    defaults' 692,082 clocks), build the queue and the average up, and FPQ's early drops
    come from the power-on r(N) table. Every verdict and counter equals the golden model's
    of ``Config(build)`` (the defaults the core starts with)."""
    import random
    from fpq.regmap import STATUS_BITS
    period = _DEFAULTS["avg_sample_period"]
    rnd = random.Random(3)
    flows = [rnd.getrandbits(104) for _ in range(4)]
    bursts = [(k * period + period // 2,
               [(rnd.choice(flows), rnd.choice((64, 576, 1500)), False) for _ in range(1500)])
              for k in range(8)]
    plan = {"build": B, "script": [("reset",), ("wipe_done",), ("bursts", bursts), ("status",),
                                   ("counters",)]}
    res = run_core(tmp_path, request, plan)
    assert res["verdicts"] == 12000
    tables_default = 1 << STATUS_BITS["TABLES_DEFAULT"]
    # after the wipe out of reset and at the end: the defaults, nothing else flagged
    assert res["status"] == (tables_default, tables_default)
    assert res["counters"]["early_drops"] > 50, res["counters"]
