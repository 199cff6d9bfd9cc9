"""The Verilated RTL as a Python object (a lean Verilator harness loaded with ctypes).

``VerilatedQueueManager(config)`` has the golden model's interface (``fpq.QueueManager``):
``arrive(desc) -> Verdict``, ``depart(desc)``, ``configure(config)``, ``run(events)``,
``counters``, ``snapshot()``; so the TCP simulator can use the RTL as the bottleneck's queue
manager (``fpq_sim.network.Network(sc, qm=VerilatedQueueManager(cfg))``). ``replay(cfg, events,
expected)`` runs a trace through it and returns a one-paragraph comparison report.

The RTL (``fpq_hdl.queue_manager.QueueManager``) is exported to Verilog, Verilated with plain
``verilator --cc`` and linked with a small C++ wrapper (``harness.cpp.in``) into a shared
library under ``build/fpq_verilator/<tag>-<hash>/``, once per design (the hash covers the
Verilog and the wrapper).

Since a verdict depends only on the event sequence, ``arrive`` presents one arrival and clocks
until its verdict; ``run`` is the batch path (events streamed back to back, one verdict per
clock) for throughput."""

from .harness import VerilatedQueueManager, build_library, replay

__all__ = ["VerilatedQueueManager", "build_library", "replay"]
