"""FlowHash against fpq.flow_hash.FlowHash (Toeplitz with a runtime key, the RSS input or a
hash from the descriptor, the keyed non-linear stage, multiply-shift index), each build. The
bench is ``tb_lib.blocks.flow_hash`` (cocotb-tests/components/ runs it on Verilator)."""
import random

import pytest

from fpq import Build, Config
from fpq.fields import RSS_KEY
from fpq.flow_hash import FlowHash as Model, reduce_index, pack_flow6, HASH_KEY_BYTES
from fpq_hdl.flow_hash import FlowHash

from tb_lib.blocks.flow_hash import FlowHashBench, OUTPUTS, flows as _flows
from tb_lib.sim_amaranth import run_bench


def _run(config, flows):
    """FlowHash under the bench (``tb_lib.blocks.flow_hash``: the hash and the index of every
    flow compared with the model's at their latencies); returns the model's hashes and
    indices (the RTL's, which the bench found equal)."""
    plan = {"build": config.build, "script": [("case", config, flows)], "record": True}
    bench, _ = run_bench(FlowHash(config.build), lambda sim: FlowHashBench(sim, plan), OUTPUTS)
    return [h for h, _ in bench.rows], [i for _, i in bench.rows]


@pytest.mark.parametrize("v_max,vec_bits", [(1, 64), (5000, 8192), (8192, 8192),
                                            (65536, 65536), (37, 64)])
def test_hash_and_index_match_model(v_max, vec_bits):
    rnd = random.Random(v_max)
    build = Build(vec_bits=vec_bits)
    key = bytes(rnd.getrandbits(8) for _ in range(20)) if v_max != 5000 else RSS_KEY
    mix_key = bytes(rnd.getrandbits(8) for _ in range(12))
    config = Config(build=build, v_max=v_max, hash_key=key, hash_mix_key=mix_key,
                    t_clear_s=1.0)
    flows = _flows(rnd, "5-tuple")
    got_h, got_i = _run(config, flows)
    model = Model.of(config)
    assert got_h == [model(f) for f in flows]
    assert got_i == [reduce_index(model(f), v_max) for f in flows]
    assert all(i < v_max for i in got_i)


@pytest.mark.parametrize("hash_input, flow_key", [
    ("5-tuple", "ipv4"), ("rss", "ipv4"), ("descriptor", "ipv4"), ("5-tuple", "ipv6"),
    ("rss", "ipv6")])
@pytest.mark.parametrize("hash_mix", [False, True])
def test_every_hash_option_matches_model(hash_input, flow_key, hash_mix):
    rnd = random.Random(hash_input + str(hash_mix) + ("" if flow_key == "ipv4" else flow_key))
    build = Build(vec_bits=8192, hash_input=hash_input, hash_mix=hash_mix, flow_key=flow_key)
    config = Config(build=build, v_max=5000, t_clear_s=1.0,
                    hash_key=bytes(rnd.getrandbits(8) for _ in range(HASH_KEY_BYTES[flow_key])),
                    hash_mix_key=bytes(rnd.getrandbits(8) for _ in range(12)))
    flows = _flows(rnd, hash_input, flow_key)
    got_h, got_i = _run(config, flows)
    model = Model.of(config)
    assert got_h == [model(f) for f in flows]
    assert got_i == [reduce_index(model(f), 5000) for f in flows]
    # the options differ: the same flows under another option's hash give other values
    other = Model.of(Config(build=Build(vec_bits=8192, hash_input=hash_input,
                                        hash_mix=not hash_mix, flow_key=flow_key), **{
        k: config.values[k] for k in ("v_max", "t_clear_s", "hash_key", "hash_mix_key")}))
    assert sum(got_h[i] != other(f) for i, f in enumerate(flows)) > 0.99 * len(flows)


def test_synth_components_of_each_hash_elaborate_without_synthesis():
    """The synthesis script's components for the hash (``python -m fpq_hdl.synth
    --component NAME``): the default (mixed) hash, the plain Toeplitz and the RSS one, as
    RTLIL (what the script gives Yosys; no tool runs). Only the first has the non-linear
    stage's round registers."""
    from amaranth.back import rtlil
    from fpq_hdl.synth import SynthHarness
    text = {name: rtlil.convert(SynthHarness(Build(), name), name="top")
            for name in ("flow_hash", "flow_hash_toeplitz", "flow_hash_rss")}
    assert "mix_round2" in text["flow_hash"]
    assert "mix_round" not in text["flow_hash_toeplitz"] + text["flow_hash_rss"]
    assert "plain4" in text["flow_hash_toeplitz"] and "plain4" in text["flow_hash_rss"]


def test_bad_hash_options_are_refused_before_any_rtl():
    from fpq.fields import ConfigError
    with pytest.raises(ConfigError, match=r"hash_input: 'ipv4' is not one of 5-tuple, rss, "
                                          r"descriptor"):
        FlowHash(Build(hash_input="ipv4"))


def test_ipv6_rss_build_gives_the_published_rss_ipv6_hashes():
    """The IPv6 RTL in the NIC-compatible mode, plain, with the default (RSS) key: the
    spec's IPv6 vectors (``MS_VECTORS6`` of the model's tests), TCP, UDP and ICMPv6."""
    import ipaddress
    build = Build(hash_input="rss", hash_mix=False, flow_key="ipv6")
    config = Config(build=build, t_clear_s=1.0)
    vectors = [("3ffe:2501:200:3::1", 1766, "3ffe:2501:200:1fff::7", 2794, 0x40207d3d,
                0x2cc18cd5),
               ("ff02::1", 4739, "3ffe:501:8::260:97ff:fe40:efab", 14230, 0xdde51bbf,
                0x0f0c461c),
               ("fe80::200:f8ff:fe21:67cf", 38024, "3ffe:1900:4545:3:200:f8ff:fe21:67cf",
                44251, 0x02d1feef, 0x4b61e985)]
    flows, want = [], []
    for dst, dport, src, sport, h_tcp, h_ip in vectors:
        s, d = int(ipaddress.IPv6Address(src)), int(ipaddress.IPv6Address(dst))
        flows += [pack_flow6(s, d, sport, dport, p) for p in (6, 17, 58)]
        want += [h_tcp, h_tcp, h_ip]
    got_h, _ = _run(config, flows)
    assert got_h == want
