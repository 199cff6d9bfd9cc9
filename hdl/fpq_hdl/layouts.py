"""Payload layouts of the queue manager's streams and its configuration port.

Every width comes from ``fpq.formats`` or ``fpq.regmap`` (the one source of truth)."""

from amaranth.hdl import Const
from amaranth.lib import data

from fpq.flow_hash import flow_bits
from fpq.formats import FLOW_BITS, LENGTH_BITS, SEQ_BITS, QAVG, PROB, CAPPED_COUNT_BITS
from fpq.regmap import registers

__all__ = ["ARRIVAL", "arrival_layout", "DEPARTURE", "VERDICT", "config_layout",
           "fixed_registers", "n_bits", "OPTIMISE", "check_optimise"]

#: Speed or area, where a block has the choice of structure (the ``optimise`` parameter of
#: ``QueueManager``, ``Decision`` and ``DropProbability``): the same outputs clock for clock
#: either way.
OPTIMISE = ("speed", "area")


def check_optimise(optimise):
    """``optimise`` if it is one of ``OPTIMISE``; else ``ValueError`` naming the choices."""
    if optimise not in OPTIMISE:
        raise ValueError(f"optimise: {optimise!r} is not one of {', '.join(OPTIMISE)}")
    return optimise

#: Arrival descriptor (``fpq.Arrival`` without its ``ts``: the clock of the accept is the
#: queue manager's own): 104-bit flow key (``fpq.flow_hash.pack_flow``), length in bytes,
#: ECN-capable transport.
ARRIVAL = data.StructLayout({"flow": FLOW_BITS, "length": LENGTH_BITS, "ecn": 1})


def arrival_layout(build):
    """The arrival descriptor of ``build``: ``ARRIVAL``, its ``flow`` the build's flow key
    (``Build.flow_key``: 104 bits, or 296 for IPv6, ``fpq.flow_hash.pack_flow6``)."""
    if flow_bits(build) == FLOW_BITS:
        return ARRIVAL
    return data.StructLayout({"flow": flow_bits(build), "length": LENGTH_BITS, "ecn": 1})

#: Departure descriptor (``fpq.Departure`` without its ``ts``).
DEPARTURE = data.StructLayout({"length": LENGTH_BITS})


def n_bits(build):
    """Width of the capped flow count ``n`` (an index of the r(N) table)."""
    return (build.table_depth - 1).bit_length()


#: Verdict (``fpq.Verdict``): action 0 enqueue, 1 mark, 2 drop_early, 3 drop_forced.
VERDICT = data.StructLayout({"seq": SEQ_BITS, "action": 2, "n": CAPPED_COUNT_BITS,
                             "avg": QAVG.width, "prob": PROB.width})


def config_layout(build):
    """One field per configuration register of ``fpq.regmap.registers(build)``, same width:
    the raw values of ``fpq.Config.registers()``. Registers the build fixes (kind "fixed")
    have their field too, so the layout and the port list do not depend on ``Build.fixed``."""
    return data.StructLayout({r.name: r.width for r in registers(build)
                              if r.kind in ("config", "fixed")})


def fixed_registers(build):
    """The registers ``build`` fixes (``Build.fixed``; kind "fixed" in ``fpq.regmap``), as
    constants by name: what the register file drives and the queue manager decides with."""
    return {r.name: Const(r.reset, r.width) for r in registers(build) if r.kind == "fixed"}
