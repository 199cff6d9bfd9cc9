"""cocotb-tests/flow_counter: see cocotb-tests/README.md."""
