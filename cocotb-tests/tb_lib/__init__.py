"""The test kit shared by cocotb-tests (Verilator) and hdl/tests (Amaranth's simulator): the
bench base class and its simulator adapters (``bench``, ``sim_cocotb``, ``sim_amaranth``),
the per-block benches with their model adapters and stimulus (``blocks``: the queue
manager's among them, its model adapter the golden-model scoreboard of ``scoreboard``, with
functional coverage), fault injection at the RTL's construction seams (``faults``); Verilog
generation and the cocotb runner (``verilog``, ``runner``), valid/ready stream drivers and
monitors (``streams``), and the traffic (``traffic``: TCP-simulator traces and adversarial
patterns)."""
