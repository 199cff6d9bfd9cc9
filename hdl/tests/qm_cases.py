"""The cases the queue manager's Amaranth benches share (``test_queue_manager*.py``): the
configurations of each mode, and a run of traffic through the RTL checked against the golden
model."""

from fpq import Config, Build

from tb_lib.stimulus import t_clear_s

from .hdl_harness import traffic, run, compare, check_bench

#: The bit-exact runs use a small r(N) table so that loading it takes few simulated clocks.
BUILD = Build(table_depth=1024)
#: Clears about every 1.25 clocks (a clear in most clocks), 1000 ticks... t_clear 5 ms.
COMMON = dict(build=BUILD, tick_hz=1e6, t_clear_s=t_clear_s(1.25, 4000), v_max=4000, ecn=True,
              n_cap=1023)
MODES = {
    "fpq": Config(mode="fpq", limit_pkts=300, lc_correction=True, **COMMON)
    .override(wq_shift=3, avg_sample_period=4),
    # the packet limit below max_th: the queue reaches it while RED's probability is
    # moderate, so forced drops come along with early ones
    "red": Config(mode="red", red_min_th=5, red_max_th=45, red_max_p=0.1, red_gentle=True,
                  limit_pkts=40, **COMMON).override(wq_shift=2, avg_sample_period=17),
    "droptail": Config(mode="droptail", limit_pkts=60, limit_bytes=50_000, **COMMON)
    .override(wq_shift=5, avg_sample_period=64),
}
SEEDS = {"fpq": 101, "red": 102, "droptail": 103}
#: The first clock at which an arrival can be accepted after the reset's wipe (vec_bits + 3
#: clocks; the configuration load takes table_depth of them before clock 0).
T0 = BUILD.vec_bits


def check(config, n, seed, ready_pattern=None, dut=None, exact_clocks=None, **kw):
    """Traffic of ``n`` arrivals, the RTL's record replayed by the model and compared (every
    verdict field, counters, telemetry). With the sink always ready the port takes every event
    at its asked clock, so the generator's own verdicts must be the replay's too."""
    steps, expected, _ = traffic(config, n, seed, t0=T0, **kw)
    bench = run(config, steps, ready_pattern=ready_pattern, dut=dut)
    model = check_bench(config, bench)
    if exact_clocks if exact_clocks is not None else ready_pattern is None:
        compare(bench.verdicts(), expected)
    return bench, model
