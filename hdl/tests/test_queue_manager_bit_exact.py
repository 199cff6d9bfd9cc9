"""The queue manager against the golden model on long runs: every field of every verdict of
20k arrivals in phases (100k and 1M in the long suite), a build that fixes registers, each
hash option."""
import random

import pytest

from fpq import Config, Build
from fpq.flow_hash import flow_bits
from fpq.queue_manager import QueueManager as Model

from .hdl_harness import traffic, run, compare
from .qm_cases import COMMON, MODES, SEEDS, T0, check


@pytest.mark.parametrize("arrivals", [20_000, pytest.param(100_000, marks=pytest.mark.long)])
@pytest.mark.parametrize("mode", MODES)
def test_bit_exact_in_phases(mode, arrivals):
    """Arrivals in phases of 2500: the queue near its limits with departures in almost every
    clock, then draining; one flow for stretches of many clocks; a clear in most clocks and
    samples every 4, 17 or 64 clocks; the sink stalls at random and for stretches (so the
    credit closes the port, accept clocks shift and the model replays the clocks the port
    took). 20k arrivals (eight phases) in the quick suite, 100k in the long one (Amaranth's
    simulator takes about 1.6 ms per arrival)."""
    rnd = random.Random(SEEDS[mode])
    # mostly 85 % ready, one 64-clock stretch in sixteen 10 % ready: the FIFO fills, the credit
    # closes the port
    pattern = [rnd.random() < (0.1 if (i >> 6) % 16 == 0 else 0.85) for i in range(1 << 16)]
    bench, model = check(MODES[mode], arrivals, seed=SEEDS[mode], same_flow=0.5,
                         dep_fast=1.0, dep_slow=0.9, phase=2500,
                         ready_pattern=lambda c: pattern[c & 0xFFFF])
    c = model.counters
    # the traffic exercised what the mode can do (the bounds scale with the run)
    per_100k = arrivals / 100_000
    assert c["forced_drops"] > 1000 * per_100k and c["departures"] > 50_000 * per_100k
    assert c["dep_errors"] > 10 * per_100k
    if mode != "droptail":
        assert c["early_drops"] > 100 * per_100k and c["marked"] > 100 * per_100k
    assert model.fc.clears > arrivals and model.avg.samples > 2000 * per_100k
    assert len(bench.refused_cycles) > 1000 * per_100k    # the credit held arrivals back


@pytest.mark.long
@pytest.mark.parametrize("mode", MODES)
def test_bit_exact_long(mode):
    check(MODES[mode], 1_000_000, seed=7)


def test_fixed_registers_are_the_build_s_constants_whatever_the_port_carries():
    """A build that fixes fields (``Build.fixed``) decides with them, bit-exact with the model
    of that build, while the port carries other values for the fixed registers: values that
    change the verdicts when they are used (another mode, weight, clear period, key, seed)."""
    from fpq.regmap import registers as regmap
    from fpq.bitfields import pack
    from .hdl_harness import config_layout
    ref = Config(mode="fpq", limit_pkts=300, lc_correction=True, avg_tau_s=1e-4, **COMMON)
    names = ("mode", "avg_tau_s", "tick_hz", "t_clear_s", "v_max", "hash_key",
             "seed_decide", "seed_clear", "red_gentle")
    build = Build(table_depth=1024, fixed={f: getattr(ref, f) for f in names})
    cfg = Config(build=build, ecn=True, n_cap=1023, limit_pkts=300, lc_correction=True)
    fixed = {r.name for r in regmap(build) if r.kind == "fixed"}
    assert {"mode", "wq_shift", "avg_sample_period", "clear_period", "hash_key",
            "rng_decide_state"} <= fixed
    other = ref.replace(mode="red", red_max_p=0.5, avg_tau_s=1e-5, t_clear_s=0.03,
                        hash_key=bytes(range(20)), seed_decide=77, seed_clear=78)
    port = dict(cfg.registers(), **{n: other.registers()[n] for n in fixed})
    assert all(port[n] != cfg.registers()[n] for n in fixed - {"red_gentle", "v_max"})

    async def configure_other(bench, config):
        await bench.configure(config)
        bench.ctx.set(bench.dut.config.as_value(), pack(config_layout(build), port))

    steps, expected, _ = traffic(cfg, 20_000, seed=11, t0=T0)
    bench = run(cfg, steps, script=configure_other)
    compare(bench.verdicts(), expected)
    # and the values on the port do change the verdicts of a build that does not fix them
    other_cfg = Config(build=Build(table_depth=1024), **dict(cfg.values, **{
        f: getattr(other, f) for f in names}))
    assert traffic(other_cfg, 2000, seed=11, t0=T0)[1] != expected[:2000]


@pytest.mark.long
def test_long_idle_gaps_and_a_vector_cleared_empty():
    """Idle gaps of 50,000 clocks: the clear engine empties the vector (every bit cleared,
    the rest of the gap's clears finding it empty) and the samples settle the average; after
    each gap the arrivals' N and average are the model's, which skips the gap in a few
    steps. (The quick suite's run of such gaps is the Verilated one, cocotb-tests'
    ``test_long_idle_gaps``: gaps of up to 150,000 clocks at two clear periods, under
    back-pressure.)"""
    build = Build(vec_bits=256, table_depth=256)
    cfg = Config(build=build, mode="fpq", v_max=200, tick_hz=1e6, t_clear_s=2e-3,
                 n_cap=255, limit_pkts=100).override(wq_shift=4, avg_sample_period=9)
    bench, model = check(cfg, 4000, seed=5, gap_every=700, gap=(30_000, 50_000), flows=150)
    assert model.fc.clears > 20_000                # gaps of 3,000 to 5,000 clears
    ns = [v["n"] for v in bench.verdicts()]
    assert ns.count(1) >= 4                        # the first arrival after a gap: N = 1


#: The hash options other than the default (Toeplitz of the IPv4 5-tuple, mixed; every
#: other test): ``(hash_input, hash_mix, flow_key)``.
HASH_OPTIONS = [("5-tuple", False, "ipv4"), ("rss", False, "ipv4"), ("rss", True, "ipv4"),
                ("descriptor", False, "ipv4"), ("descriptor", True, "ipv4"),
                ("5-tuple", True, "ipv6"), ("5-tuple", False, "ipv6"), ("rss", False, "ipv6")]


@pytest.mark.parametrize("hash_input, hash_mix, flow_key", HASH_OPTIONS)
def test_bit_exact_with_each_hash_option(hash_input, hash_mix, flow_key):
    """Every verdict of each build's queue manager equals the model's for that build, with
    random flow keys of the build's width (IPv4 or IPv6, ``Build.flow_key``), or 32-bit
    hashes in the descriptor; the flow counts differ from the default build's, so the
    hash the RTL used is the option's."""
    build = Build(table_depth=1024, hash_input=hash_input, hash_mix=hash_mix,
                  flow_key=flow_key)
    # the build's default hash_key (its length is the build's: 41 bytes for IPv6)
    values = {k: v for k, v in MODES["fpq"].values.items() if k != "hash_key"}
    config = Config(**{**values, "build": build}).override(wq_shift=3, avg_sample_period=4)
    kw = dict(flow_bits=32 if hash_input == "descriptor" else flow_bits(build))
    seed = 200 + HASH_OPTIONS.index((hash_input, hash_mix, flow_key))
    bench, model = check(config, 4000, seed=seed, flows=600, **kw)
    assert model.fc.n_raw > 100
    # the default build's hash on the same arrivals counts other flows
    steps, _, _ = traffic(config, 4000, seed=seed, t0=T0, flows=600, **kw)
    other = Model(MODES["fpq"])
    others = []
    for _, dep, arr in steps:
        if dep is not None:
            other.depart(dep)
        if arr is not None:
            others.append(other.arrive(arr).n)
    assert [v["n"] for v in bench.verdicts()] != others
