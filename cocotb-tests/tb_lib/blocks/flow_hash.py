"""``fpq_hdl.flow_hash.FlowHash`` against ``fpq.flow_hash.FlowHash`` and ``reduce_index``
(imported): a flow key per clock; its hash is expected ``HASH_LATENCY`` clocks later, its
index ``(hash * v_max) >> 32`` ``LATENCY`` clocks later.

Script items: ``("case", Config, flows)``: the configuration (its key taken by the key
copies in one clock), then one flow per clock. Plan option ``record``: keep the model's
``(hash, index)`` of every flow in ``rows``."""

import random

from fpq import Config
from fpq.flow_hash import FlowHash as Model, reduce_index, pack_flow, pack_flow6, FLOW_KEY_BITS

from fpq_hdl.flow_hash import FlowHash

from ..bench import Bench
from .decision import pack_config

__all__ = ["FlowHashBench", "OUTPUTS", "flows", "cases"]

OUTPUTS = ("hash", "index")


class FlowHashBench(Bench):
    INPUTS = ("flow",)
    PREFIX = "flow hash: "

    async def do_case(self, config, keys):
        self.set("config", pack_config(config.build, config))
        await self.tick()          # the key copies take it (a flow in this clock: the old key)
        model, v_max = Model.of(config), config.registers()["v_max"]
        for i, f in enumerate(keys):
            self.set("flow", f)
            h = model(f)
            index = reduce_index(h, v_max)
            where = f"flow {i} {f:#x} (v_max {v_max})"
            self.expect(FlowHash.HASH_LATENCY, where, False, hash=h)
            self.expect(FlowHash.LATENCY, where, index=index)
            self.record((h, index))
            await self.tick()
        await self.ticks(FlowHash.LATENCY)


# ---- stimulus --------------------------------------------------------------------------------
def flows(rnd, hash_input, flow_key="ipv4"):
    """Flow keys of a build's hash input: descriptor hashes; or 5-tuples of TCP, UDP, ICMP
    (ICMPv6) and random protocols (so that the RSS input takes both forms), random keys and
    the edges."""
    if hash_input == "descriptor":
        return [rnd.getrandbits(32) for _ in range(300)] + [0, (1 << 32) - 1, 1, 1 << 31]
    ip_bits, pack_ = (32, pack_flow) if flow_key == "ipv4" else (128, pack_flow6)
    out = [pack_(rnd.getrandbits(ip_bits), rnd.getrandbits(ip_bits), rnd.getrandbits(16),
                 rnd.getrandbits(16), rnd.choice((6, 17, 1, 58, rnd.getrandbits(8))))
           for _ in range(300)]
    n = FLOW_KEY_BITS[flow_key]
    return out + [rnd.getrandbits(n) for _ in range(100)] + \
        [0, (1 << n) - 1, 1, 1 << (n - 1), 6, 17, 0xFF]


def cases(build, key_cases, n, seed):
    """The components bench's script: per ``(hash_key, v_max)`` the all-zero and all-one
    flows and ``n`` random 104-bit flows."""
    rnd = random.Random(seed)
    return [("case", Config(build=build, hash_key=key, v_max=v_max),
             [0, (1 << 104) - 1] + [rnd.getrandbits(104) for _ in range(n)])
            for key, v_max in key_cases]
