"""cocotb-tests/queue_manager: see cocotb-tests/README.md."""
