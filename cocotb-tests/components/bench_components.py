"""The cocotb side of the benches of FlowHash, RandomSource and DropProbability on one
Verilated top (``components_top.Components``, ports ``<block>__<port>``): the benches of
``tb_lib.blocks`` (the same run in Amaranth's simulator in hdl/tests), one cocotb test each."""

from tb_lib.blocks.drop_probability import DropProbabilityBench
from tb_lib.blocks.flow_hash import FlowHashBench
from tb_lib.blocks.random_source import RandomSourceBench
from tb_lib.sim_cocotb import bench_test

flow_hash = bench_test(FlowHashBench, "flow_hash")
random_source = bench_test(RandomSourceBench, "random_source")
drop_probability = bench_test(DropProbabilityBench, "drop_probability")
