"""A :class:`tb_lib.bench.Bench` under cocotb on Verilator: the adapter and
``bench_test``, the cocotb side of a block bench (the plan in, the result out)."""

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer

from .runner import load_plan, save_result

__all__ = ["CocotbSim", "bench_test", "PERIOD_NS"]

#: the clock period of the benches (any: the RTL counts clocks)
PERIOD_NS = 10


class CocotbSim:
    """The simulator adapter of :mod:`tb_lib.bench` for a cocotb ``dut`` with ``clk`` and
    ``rst``: a port is written only when its value changes (a cocotb write costs far more
    than a dict lookup); ``get`` reads an output right after the edge, which gives its
    value in the clock that the edge ended."""

    def __init__(self, dut):
        self.dut = dut
        self._handles = {}
        self._now = {}
        self.edge = RisingEdge(dut.clk)

    def handle(self, name):
        """The simulator's handle of port ``name`` (for a port agent)."""
        h = self._handles.get(name)
        if h is None:
            h = self._handles[name] = getattr(self.dut, name)
        return h

    def set(self, name, value):
        if self._now.get(name) != value:
            self.handle(name).value = value
            self._now[name] = value

    def get(self, name):
        value = self.handle(name).value
        # a one-bit port reads as a Logic, a wider one as a LogicArray
        return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)

    def forget(self):
        self._now.clear()

    async def tick(self):
        await self.edge

    async def skip(self, n):
        """``n`` clocks in one timer: the simulator toggles the clock on its own meanwhile."""
        await Timer(n * PERIOD_NS - PERIOD_NS // 2, unit="ns")
        await self.edge

    async def reset(self):
        self.dut.rst.value = 1
        await self.edge
        await self.edge
        self.dut.rst.value = 0

    async def start(self):
        """The clock started and reset held two clocks (the bench's clock 0 follows)."""
        Clock(self.dut.clk, PERIOD_NS, unit="ns", impl="gpi").start()
        await self.reset()


def bench_test(bench_class, name=None):
    """The cocotb test ``name`` (default the class's name) of a block bench:
    ``bench_class(CocotbSim(dut), plan)`` run on the plan the pytest side wrote, its result
    handed back. Assign it to a module-level name of the bench module."""
    async def test(dut):
        sim = CocotbSim(dut)
        bench = bench_class(sim, load_plan())
        for port in bench.INPUTS:
            bench.set(port, 0)
        await sim.start()
        save_result(await bench.run())
    test.__name__ = test.__qualname__ = name or bench_class.__name__.lower()
    return cocotb.test()(test)
