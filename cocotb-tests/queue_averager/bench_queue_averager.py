"""The cocotb side of the QueueAverager bench:
``tb_lib.blocks.queue_averager.QueueAveragerBench`` on Verilator (the same bench runs in
Amaranth's simulator in hdl/tests/test_queue_averager.py)."""

from tb_lib.blocks.queue_averager import QueueAveragerBench
from tb_lib.sim_cocotb import bench_test

queue_averager = bench_test(QueueAveragerBench)
