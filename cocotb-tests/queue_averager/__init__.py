"""cocotb-tests/queue_averager: see cocotb-tests/README.md."""
