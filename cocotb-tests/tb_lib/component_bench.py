"""Shared pieces of the single-component benches (``flow_counter/``, ``queue_averager/``,
``decision/``): the pytest side (``run_component``: Verilog of one component, Verilated once,
the cocotb bench run, its coverage recorded) and the cocotb side (``start``: clock and reset;
``Ports``: write a DUT input only when its value changes, which is most of the speed of a
Python clock loop).

Every component bench follows the same rules:

* the golden model is the component's own class in ``fpq`` (imported, never re-implemented);
* outputs are compared at the clock the component's documented ``LATENCY`` gives (read from
  the class, never a number in the bench), so a re-pipelined RTL needs no bench change;
* valid gaps and back-pressure come from seeded :class:`tb_lib.streams.Pattern` objects;
* the bench returns ``{"inputs": <inputs checked>, "cycles": ..., "coverage": {bin: hits}}``,
  summed over the session by :mod:`tb_lib.coverage_report` (``inputs`` as component inputs,
  not as queue-manager arrivals)."""

from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

__all__ = ["run_component", "component_runner", "start", "Ports", "config_word"]


def run_component(request, component, top, bench_module, plan, tag, expect_failure=False,
                  seed=1):
    """Generate ``component`` as Verilog module ``top`` (cached by its text, in a folder
    named ``tag``, ``tag-fault`` with ``expect_failure``), Verilate it (cached), run the
    cocotb tests of ``bench_module`` with ``plan`` and record the coverage (not of a bench
    expected to fail). Returns the bench's result; a failing bench raises
    ``runner.BenchFailed``."""
    from . import runner
    from .verilog import generate, BUILD_ROOT
    from .coverage_report import record
    folder, verilog = generate(component, top, tag + ("-fault" if expect_failure else ""))
    name = request.node.name.replace("/", "_").replace("[", "-").replace("]", "")
    result = runner.run(folder, verilog, top, bench_module, plan, BUILD_ROOT / "runs" / name,
                        seed=seed)
    if not expect_failure:
        record(result)
    return result


def component_runner(name, make, top, bench_module, builds):
    """The ``run(request, build_name, script, seed=3, component=None, expect_failure=False)``
    of a component's benches: ``make(builds[build_name])`` (or ``component``, e.g. a faulty
    variant) run through ``bench_module`` with the plan ``{"build", "script", "seed"}``, in
    the folder ``NAME-BUILD_NAME``."""
    def run(request, build_name, script, seed=3, component=None, expect_failure=False):
        build = builds[build_name]
        comp = component if component is not None else make(build)
        plan = {"build": build, "script": script, "seed": seed}
        return run_component(request, comp, top, bench_module, plan, f"{name}-{build_name}",
                             expect_failure=expect_failure)
    return run


def config_word(build, regs):
    """The ``config`` port's value for raw registers ``regs`` (``Config.registers()``,
    possibly with raw overrides)."""
    from fpq_hdl.layouts import config_layout
    from fpq.bitfields import pack
    return pack(config_layout(build), regs)


async def start(dut, inputs=()):
    """Start the clock, zero ``inputs``, hold reset for two clocks; returns the edge trigger."""
    Clock(dut.clk, 10, unit="ns", impl="gpi").start()
    for name in inputs:
        getattr(dut, name).value = 0
    edge = RisingEdge(dut.clk)
    await reset(dut, edge)
    return edge


async def reset(dut, edge):
    dut.rst.value = 1
    await edge
    await edge
    dut.rst.value = 0


class Ports:
    """``ports.set(name, value)`` writes the DUT input only when the value changed (a cocotb
    write costs far more than a dict lookup); the names are the Verilog port names."""

    def __init__(self, dut, names):
        self.handles = {n: getattr(dut, n) for n in names}
        self.now = {n: None for n in names}

    def set(self, name, value):
        if self.now[name] != value:
            self.handles[name].value = value
            self.now[name] = value

    def forget(self):
        """After a write outside ``set`` (e.g. reset), write every port again next time."""
        for n in self.now:
            self.now[n] = None
