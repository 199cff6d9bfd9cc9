"""The Verilated RTL as a Python object (a lean Verilator harness loaded with ctypes)."""
