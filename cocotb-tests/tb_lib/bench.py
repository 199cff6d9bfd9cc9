"""The bench base class, the same for both simulators: Amaranth's (``hdl/tests``, through
:mod:`tb_lib.sim_amaranth`) and cocotb on Verilator (``cocotb-tests``, through
:mod:`tb_lib.sim_cocotb`).

A block bench subclasses :class:`Bench` with its model adapter (the golden model's own
code from ``fpq``, imported, fed what the bench gives the RTL) and the handlers of its
script items. What the simulators share is all here: the clock count, the ports (written
only when their value changes, read as sampled at the last edge), reset, seeded on/off
patterns for idle clocks and back-pressure (:class:`tb_lib.streams.Pattern`), functional
coverage, and the expect-at-latency queue: what the model says a port must show
``LATENCY`` clocks after an input is queued for that clock and compared there.

A simulator adapter (``sim``) has ``set(name, value)``, ``get(name)`` (the value at the
last edge, as an int), ``forget()``, ``async tick()``, ``async skip(n)`` (``n`` clocks with
the inputs as they are, as cheaply as the simulator allows) and ``async reset()``; port
names are the Verilog names (``config``, ``arrivals__valid``).

Port agents (a verdict sink, a bus driver, a monitor: objects with ``drive()``, called
before each edge, ``sample()``, right after it, and ``idle``) join the clock loop through
``agents``, so one ``await`` per clock serves every port."""

from .scoreboard import Coverage
from .streams import Pattern

__all__ = ["Bench", "ExpectQueue", "Pattern"]


class ExpectQueue:
    """Expected port values by the clock they are due in. ``push(clock, where, ports,
    counted)`` adds ``ports`` (name -> value, or a function of no argument giving it when it
    is compared) to that clock's expectation; ``where`` names them in a failure; a clock with
    a ``counted`` push counts as one input checked. ``pop(clock)`` returns ``(ports, counted)``
    with ``ports`` name -> (value, where), or None."""

    def __init__(self):
        self._due = {}

    def push(self, clock, where, ports, counted=True):
        entry = self._due.setdefault(clock, [{}, False])
        entry[0].update((name, (want, where)) for name, want in ports.items())
        entry[1] |= counted

    def pop(self, clock):
        return self._due.pop(clock, None)

    def drop(self):
        """Forget every expectation (a reset); returns how many counted ones there were."""
        n = sum(counted for _, counted in self._due.values())
        self._due.clear()
        return n

    def last(self):
        """The latest clock an expectation is due in (-1: none)."""
        return max(self._due, default=-1)

    def __len__(self):
        return len(self._due)


class Bench:
    """One block under one simulator: ``run()`` plays ``plan["script"]`` (items ``(kind,
    *args)``, each handled by the method ``do_<kind>``) and returns the result the pytest
    side checks: ``{"inputs": clocks checked, "lost_to_reset": expectations a reset
    dropped, "cycles": clocks, "coverage": {bin: hits}}``, ``"rows"`` (the model's values
    the bench keeps with ``record``, when ``plan["record"]``) and what ``extra_result``
    adds.

    ``cycle`` is the clock whose inputs are being set; ``tick()`` ends it and compares the
    expectation due in it. Subclasses set ``INPUTS`` (zeroed at the start and at a reset)
    and ``PREFIX`` (of their coverage bins). ``plan["ports"]``: a prefix of the block's port
    names but ``config`` (a top that holds several blocks names them ``<block>__<port>``)."""

    INPUTS = ()
    PREFIX = ""

    def __init__(self, sim, plan):
        self.sim, self.plan = sim, plan
        self._prefix = plan.get("ports", "")
        self.cycle = 0
        self.checked = 0
        self.lost = 0
        self.cov = Coverage()
        self.expected = ExpectQueue()
        self.rows = [] if plan.get("record") else None
        self.agents = []
        self.step = 0               # the index of the script item being played

    # ---- ports and clock -------------------------------------------------------------------
    def port(self, name):
        return name if name == "config" else self._prefix + name

    def set(self, name, value):
        self.sim.set(self.port(name), value)

    def get(self, name):
        return self.sim.get(self.port(name))

    def expect(self, clocks, where, counted=True, **ports):
        """The model's ``ports`` for the clock ``clocks`` after this one (``counted``: as an
        input checked)."""
        self.expected.push(self.cycle + clocks, where, ports, counted)

    async def tick(self):
        clock = self.cycle
        for agent in self.agents:
            agent.drive()
        await self.sim.tick()
        self.cycle += 1
        for agent in self.agents:
            agent.sample()
        due = self.expected.pop(clock)
        if due is not None:
            self.compare(*due)

    async def ticks(self, n):
        for _ in range(n):
            await self.tick()

    async def skip(self, n):
        """``n`` clocks with the inputs as they are and no agent served (nothing compared:
        the caller knows nothing is due)."""
        await self.sim.skip(n)
        self.cycle += n

    def compare(self, ports, counted):
        for name, (want, where) in ports.items():
            if callable(want):
                want = want()
            got = self.get(name)
            if got != want:
                raise AssertionError(f"{where}: RTL {name} {got} != model {want}")
        self.checked += counted

    async def reset(self):
        """Reset held two clocks, the inputs zeroed; expectations in flight are lost."""
        for name in self.INPUTS:
            self.set(name, 0)
        self.lost += self.expected.drop()
        await self.sim.reset()
        self.cycle += 2
        self.sim.forget()

    def hit(self, name, k=1):
        self.cov.hit(self.PREFIX + name, k)

    def record(self, row):
        """Keep ``row`` (the model's view of an input) when the plan asks for it."""
        if self.rows is not None:
            self.rows.append(row)

    # ---- the script ------------------------------------------------------------------------
    async def run(self):
        for name in self.INPUTS:
            self.set(name, 0)
        for self.step, (kind, *args) in enumerate(self.plan["script"]):
            handler = getattr(self, f"do_{kind}", None)
            if handler is None:
                raise ValueError(f"script item {kind!r}: {type(self).__name__} has no "
                                 f"do_{kind}")
            await handler(*args)
        await self.finish()
        rows = {} if self.rows is None else {"rows": self.rows}
        return {"inputs": self.checked, "lost_to_reset": self.lost, "cycles": self.cycle,
                "coverage": self.cov.bins, **rows, **self.extra_result()}

    async def finish(self):
        """After the script: clock until every expectation has been compared."""
        await self.ticks(self.expected.last() + 1 - self.cycle)
        assert not len(self.expected), "an expectation due before its input"

    def extra_result(self):
        return {}
