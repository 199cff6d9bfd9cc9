"""The cocotb side of the queue manager's bench (``tb_lib.blocks.queue_manager``): runs the
plan pytest wrote (``tb_lib.runner``)."""

from tb_lib.blocks.queue_manager import QueueManagerBench
from tb_lib.sim_cocotb import bench_test

run_plan = bench_test(QueueManagerBench, "run_plan")
