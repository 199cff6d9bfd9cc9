"""Board builds of the FPQ queue manager: a portable self-test SoC (queue manager, register
file, on-chip traffic generator, UART bridge), thin ULX3S / iCEBreaker wrappers, the bitstream
build with its timing / utilisation reports, and the host-side ``fpq board monitor``."""
