"""The cocotb side of the register-file + queue-manager bench (``tb_lib.blocks.system``)."""

from tb_lib.blocks.system import SystemBench
from tb_lib.sim_cocotb import bench_test

run_plan = bench_test(SystemBench, "run_plan")
