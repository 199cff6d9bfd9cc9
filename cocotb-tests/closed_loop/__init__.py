"""cocotb-tests/closed_loop: see cocotb-tests/README.md."""
