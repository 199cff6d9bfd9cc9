"""cocotb-tests/registers: see cocotb-tests/README.md."""
