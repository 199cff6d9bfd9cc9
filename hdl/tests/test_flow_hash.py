"""FlowHash against fpq.flow_hash (Toeplitz with a runtime key, multiply-shift index)."""
import random

import pytest
from amaranth.sim import Simulator

from fpq import Build, Config
from fpq.config import RSS_KEY
from fpq.flow_hash import ToeplitzHash, reduce_index
from fpq_hdl.flow_hash import FlowHash
from .hdl_harness import pack
from fpq_hdl.layouts import config_layout


@pytest.mark.parametrize("v_max,vec_bits", [(1, 64), (5000, 8192), (8192, 8192),
                                            (65536, 65536), (37, 64)])
def test_hash_and_index_match_model(v_max, vec_bits):
    rnd = random.Random(v_max)
    build = Build(vec_bits=vec_bits)
    key = bytes(rnd.getrandbits(8) for _ in range(20)) if v_max != 5000 else RSS_KEY
    regs = Config(build=build, v_max=v_max, hash_key=key, t_clear_s=1.0).registers()
    dut = FlowHash(build)
    flows = [rnd.getrandbits(104) for _ in range(400)] + [0, (1 << 104) - 1, 1, 1 << 103]
    model = ToeplitzHash(key)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    got_h, got_i = [], []

    async def bench(ctx):
        ctx.set(dut.config.as_value(), pack(config_layout(build), regs))
        for i in range(len(flows) + FlowHash.LATENCY):
            if i < len(flows):
                ctx.set(dut.flow, flows[i])
            _, _, h, idx = await ctx.tick().sample(dut.hash, dut.index)
            if i >= FlowHash.HASH_LATENCY and len(got_h) < len(flows):
                got_h.append(h)
            if i >= FlowHash.LATENCY:
                got_i.append(idx)
    sim.add_testbench(bench)
    sim.run()
    assert got_h == [model(f) for f in flows]
    assert got_i == [reduce_index(model(f), v_max) for f in flows]
    assert all(i < v_max for i in got_i)
