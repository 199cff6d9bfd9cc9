"""Shared bench library: Verilog generation and the cocotb runner (``verilog``, ``runner``),
valid/ready stream drivers and monitors (``streams``), the queue manager's bench with the
golden-model scoreboard and functional coverage (``qm_bench``, ``scoreboard``), and the traffic
(``traffic``: TCP-simulator traces and adversarial patterns)."""
