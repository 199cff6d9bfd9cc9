"""The Verilated RTL as a Python object (a lean Verilator harness loaded with ctypes).

``VerilatedQueueManager(config)`` has the golden model's interface (``fpq.QueueManager``):
``arrive(desc) -> Verdict``, ``depart(desc)``, ``configure(config, ts)``, ``run(events)``,
``counters``, ``snapshot()``, ``advance(ts)``; so the TCP simulator can use the RTL as the
bottleneck's queue manager (``fpq_sim.network.Network(sc, qm=VerilatedQueueManager(cfg))``,
or ``queue.model = "rtl"``). ``replay(cfg, events, expected)`` runs a trace through it and
returns a one-paragraph comparison report.

The queue manager keeps its own time (clock 0 is the clock after ``restart``) and decides
from the clock each event is accepted in, its ``ts``: the harness presents every event in
that clock, idling the clocks between in C, and raises ``RuntimeError`` naming the event and
the clocks when the RTL cannot take it there. ``arrive`` clocks until the verdict is out
(``latency`` = ``fpq_hdl.queue_manager.LATENCY`` clocks), so a source that waits for each
verdict stamps its events with ``fpq.accept_clock.AcceptClock(verdict_wait >= latency)``
(the TCP simulator: ``queue.verdict_wait``).

The RTL (``fpq_hdl.queue_manager.QueueManager``) is exported to Verilog, Verilated with plain
``verilator --cc`` and linked with a small C++ wrapper (``harness.cpp.in``) into a shared
library under ``build/verilated/<tag>-<hash>/`` of the checkout (installed: the user's
cache folder, ``harness.BUILD_ROOT``), once per design (the hash covers the
Verilog and the wrapper)."""

from .harness import VerilatedQueueManager, build_library, replay, encode_events

__all__ = ["VerilatedQueueManager", "build_library", "replay", "encode_events"]
