"""One Verilog top for the per-component benches: ``FlowHash``, ``RandomSource`` and
``DropProbability`` side by side, every port brought out as ``<block>__<port>`` and one shared
``config`` port, so a single Verilator build serves all three benches."""

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from fpq_hdl.flow_hash import FlowHash
from fpq_hdl.random_source import RandomSource
from fpq_hdl.drop_probability import DropProbability
from fpq_hdl.layouts import config_layout

BLOCKS = {"hash": FlowHash, "rng": RandomSource, "prob": DropProbability}


def _make(name, cls, build):
    return cls() if cls is RandomSource else cls(build)


class Components(wiring.Component):
    def __init__(self, build):
        self.build = build
        self.blocks = {name: _make(name, cls, build) for name, cls in BLOCKS.items()}
        members = {"config": In(config_layout(build))}
        for name, blk in self.blocks.items():
            for port, member in blk.signature.members.items():
                if port != "config":
                    members[f"{name}__{port}"] = member
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        for name, blk in self.blocks.items():
            m.submodules[name] = blk
            for port, member in blk.signature.members.items():
                inner = getattr(blk, port)
                outer = self.config if port == "config" else getattr(self, f"{name}__{port}")
                if member.flow == In:
                    m.d.comb += inner.eq(outer)
                else:
                    m.d.comb += outer.eq(inner)
        return m
