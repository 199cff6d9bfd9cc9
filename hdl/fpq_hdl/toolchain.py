"""The FPGA toolchain the synthesis (``fpq_hdl.synth``) and the board builds
(``fpq_boards.build``) run: YoWASP Yosys and nextpnr from PyPI, no system toolchain. Imports
no optional dependency, so that a command can offer the choices below without them."""

__all__ = ["ROUTERS"]

#: nextpnr's routers: router1 (the default, more timing-driven) and router2 (which routes
#: some designs where router1 stalls on congestion; docs/BENCHMARKS.md).
ROUTERS = ("router1", "router2")
