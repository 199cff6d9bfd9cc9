"""The cocotb side of the Decision bench: ``tb_lib.blocks.decision.DecisionBench`` on
Verilator (the same bench runs in Amaranth's simulator in hdl/tests/test_decision.py)."""

from tb_lib.blocks.decision import DecisionBench
from tb_lib.sim_cocotb import bench_test

decision = bench_test(DecisionBench)
