"""cocotb entry of the queue manager bench: runs the plan pytest wrote (``tb_lib.runner``)."""

import cocotb

from tb_lib.runner import load_plan, save_result
from tb_lib.qm_bench import QueueManagerTB


@cocotb.test()
async def run_plan(dut):
    plan = load_plan()
    tb = QueueManagerTB(dut, plan)
    result = await tb.run_script()
    save_result(result)
