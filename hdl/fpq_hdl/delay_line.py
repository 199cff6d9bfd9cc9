"""Delay line in RAM: a wide word, a fixed number of clocks later, without a flip-flop per bit
per clock."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .block_ram import ram_without_rw_check, read_register

__all__ = ["DelayLine"]


class DelayLine(wiring.Component):
    """``o`` at clock t + ``delay`` is ``i`` at clock t, for every clock (no enable, no
    handshake): a circular buffer of ``delay`` words written every clock at a pointer and read,
    with a synchronous read port, one place ahead of it (the word written ``delay - 1`` clocks
    ago; the read register adds the last clock). Reading one place ahead means no address is
    read and written in the same clock, so no read-during-write rule of the RAM matters.

    Why: a pipeline that carries a W-bit field for ``delay`` stages costs ``W * delay``
    flip-flops; here it costs ``W`` bits of RAM per word and ``W`` output flip-flops. Yosys
    maps the memory to LUT RAM on ECP5 (TRELLIS_DPR16X4, 16 x 4 bits each) and to block RAM on
    iCE40 (SB_RAM40_4K, 256 x 16 bits each), which has no LUT RAM.

    Reset: the pointer is reset; the contents are not (a RAM), so for ``delay`` clocks after a
    reset ``o`` shows words from before it. Users qualify ``o`` with a valid bit carried in
    flip-flops (which reset clears), as the queue manager does.

    Latency: ``delay`` clocks. Throughput: one word per clock.

    Parameters
    ----------
    width : int
    delay : int
        2 to 4096.

    Attributes
    ----------
    i : In(width)
    o : Out(width)
    """

    def __init__(self, width, delay):
        if not 2 <= delay <= 4096:
            raise ValueError(f"delay: {delay} is out of the allowed range [2, 4096]")
        self.width, self.delay = width, delay
        super().__init__({"i": In(width), "o": Out(width)})

    def elaborate(self, platform):
        m = Module()
        # no address is read in the clock it is written (see ``ram_without_rw_check``)
        m.submodules.ram = ram = ram_without_rw_check(self.width, self.delay)
        wp = ram.write_port()
        # the write pointer, and the read pointer one place ahead of it as a register of its
        # own: the RAM's read address leaves a flip-flop with no logic in front of its
        # fan-out (one LUT RAM per 4 bits of the word)
        ptr = Signal(range(self.delay))
        ahead = Signal(range(self.delay), init=1)

        def step(p):
            return Mux(p == self.delay - 1, 0, p + 1)
        m.d.sync += [ptr.eq(step(ptr)), ahead.eq(step(ahead))]
        m.d.comb += [wp.en.eq(1), wp.addr.eq(ptr), wp.data.eq(self.i),
                     self.o.eq(read_register(m, ram, ahead))]
        return m
