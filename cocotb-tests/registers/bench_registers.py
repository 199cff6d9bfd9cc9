"""cocotb entry of the register-file + queue-manager bench (``tb_lib.system_bench``)."""

import cocotb

from tb_lib.runner import load_plan, save_result
from tb_lib.system_bench import SystemTB


@cocotb.test()
async def run_plan(dut):
    tb = SystemTB(dut, load_plan())
    save_result(await tb.run_script())
