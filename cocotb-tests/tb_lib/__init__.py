"""The test kit shared by cocotb-tests (Verilator) and hdl/tests (Amaranth's simulator): the
bench base class and its simulator adapters (``bench``, ``sim_cocotb``, ``sim_amaranth``),
the per-block benches with their model adapters and stimulus (``blocks``), fault injection
at the RTL's construction seams (``faults``); Verilog generation and the cocotb runner
(``verilog``, ``runner``), valid/ready stream drivers and monitors (``streams``), the queue
manager's bench with the golden-model scoreboard and functional coverage (``qm_bench``,
``scoreboard``), and the traffic (``traffic``: TCP-simulator traces and adversarial
patterns)."""
