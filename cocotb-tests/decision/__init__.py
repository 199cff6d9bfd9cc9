"""cocotb-tests/decision: see cocotb-tests/README.md."""
