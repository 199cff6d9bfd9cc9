"""The pytest side of the single-component benches (``flow_counter/``, ``queue_averager/``,
``decision/``): ``run_component`` generates the Verilog of one component, Verilates it once,
runs the cocotb side (a :class:`tb_lib.bench.Bench` of ``tb_lib.blocks`` under
:func:`tb_lib.sim_cocotb.bench_test`) and records its coverage.

Every component bench follows the same rules:

* the golden model is the component's own code in ``fpq`` (imported, never re-implemented);
* outputs are compared at the clock the component's documented ``LATENCY`` gives (read from
  the class, never a number in the bench), so a re-pipelined RTL needs no bench change;
* idle clocks and back-pressure come from seeded generators;
* the bench returns ``{"inputs": <inputs checked>, "cycles": ..., "coverage": {bin: hits}}``,
  summed over the session by :mod:`tb_lib.coverage_report` (``inputs`` as component inputs,
  not as queue-manager arrivals)."""

__all__ = ["run_component", "component_runner"]


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
