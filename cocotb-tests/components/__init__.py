"""cocotb-tests/components: see cocotb-tests/README.md."""
