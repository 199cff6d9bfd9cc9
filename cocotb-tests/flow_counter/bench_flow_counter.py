"""The cocotb side of the FlowCounter bench: ``tb_lib.blocks.flow_counter.FlowCounterBench``
on Verilator (the same bench runs in Amaranth's simulator in hdl/tests/test_flow_counter.py)."""

from tb_lib.blocks.flow_counter import FlowCounterBench
from tb_lib.sim_cocotb import bench_test

flow_counter = bench_test(FlowCounterBench)
