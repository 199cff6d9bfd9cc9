"""A :class:`tb_lib.bench.Bench` in Amaranth's simulator (``hdl/tests``): the adapter and
``run_bench``, which simulates a component under a bench until its script ends."""

from amaranth import Elaboratable, Module, ResetInserter, Signal
from amaranth.hdl import ValueCastable
from amaranth.sim import Simulator

__all__ = ["AmaranthSim", "UnderReset", "run_bench"]


class UnderReset(Elaboratable):
    """``dut`` under a reset the bench drives (``rst``), as a board's reset."""

    def __init__(self, dut):
        self.dut, self.rst = dut, Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = ResetInserter(self.rst)(self.dut)
        return m


def _port(dut, name):
    """The signal of the Verilog port ``name`` (``a__b`` is ``dut.a.b``; a view as its
    value)."""
    obj = dut
    for part in name.split("__"):
        obj = getattr(obj, part)
    return obj.as_value() if isinstance(obj, ValueCastable) else obj


class AmaranthSim:
    """The simulator adapter of :mod:`tb_lib.bench` in an Amaranth testbench: inputs
    written only when their value changes, ``outputs`` sampled at every edge (their values
    in the clock that the edge ends, as cocotb reads them right after an edge)."""

    def __init__(self, ctx, dut, rst, outputs):
        self.ctx, self.dut, self.rst = ctx, dut, rst
        self._out = [(name, _port(dut, name)) for name in outputs]
        self._ports = {}
        self._now = {}
        self.sampled = {}

    def set(self, name, value):
        if self._now.get(name) != value:
            port = self._ports.get(name)
            if port is None:
                port = self._ports[name] = _port(self.dut, name)
            self.ctx.set(port, value)
            self._now[name] = value

    def get(self, name):
        return self.sampled[name]

    def preset(self, name, value):
        """Write a register (an output) of the DUT before the first clock."""
        self.ctx.set(_port(self.dut, name), value)

    def forget(self):
        self._now.clear()

    async def tick(self):
        values = await self.ctx.tick().sample(*(sig for _, sig in self._out))
        self.sampled = {name: int(v) for (name, _), v in zip(self._out, values[2:])}

    async def skip(self, n):
        for _ in range(n):
            await self.tick()

    async def reset(self):
        self.ctx.set(self.rst, 1)
        await self.tick()
        await self.tick()
        self.ctx.set(self.rst, 0)


def run_bench(dut, make_bench, outputs):
    """Simulate ``dut`` (100 MHz) under ``make_bench(sim)`` until its ``run()`` returns;
    returns ``(bench, result)``. ``outputs``: the port names the bench reads."""
    top = UnderReset(dut)
    sim = Simulator(top)
    sim.add_clock(1e-8)
    done = {}

    async def testbench(ctx):
        bench = done["bench"] = make_bench(AmaranthSim(ctx, dut, top.rst, outputs))
        done["result"] = await bench.run()
    sim.add_testbench(testbench)
    sim.run()
    return done["bench"], done["result"]
