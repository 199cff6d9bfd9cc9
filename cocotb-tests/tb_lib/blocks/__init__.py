"""Per-block benches shared by ``hdl/tests`` (Amaranth's simulator) and ``cocotb-tests``
(Verilator): for each block its model adapter, its :class:`tb_lib.bench.Bench` and its
stimulus generators, in one module named after the block."""
