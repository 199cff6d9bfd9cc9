"""cocotb-tests/faults: see cocotb-tests/README.md."""
