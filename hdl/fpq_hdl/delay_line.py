"""Delay line in RAM: a wide word, a fixed number of clocks later, without a flip-flop per bit
per clock."""

from amaranth import *
from amaranth.lib import wiring, memory
from amaranth.lib.wiring import In, Out

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
        # The read is written as an asynchronous read and a register, which Yosys merges into
        # a synchronous read port (memory_dff); only then does it honour ``no_rw_check`` (no
        # address is read in the clock it is written, so what the RAM returns then does not
        # matter). A synchronous read port written as such gets Yosys's read-first emulation
        # on the iCE40 instead: a register and a multiplexer per bit (129-bit delay line
        # alone: 270 flip-flops and 143 LUTs, against 5 and 3 this way).
        m.submodules.ram = ram = memory.Memory(shape=self.width, depth=self.delay, init=[],
                                               attrs={"no_rw_check": 1})
        wp, rp = ram.write_port(), ram.read_port(domain="comb")
        ptr = Signal(range(self.delay))
        ahead = Mux(ptr == self.delay - 1, 0, ptr + 1)
        # the read register has no reset (the RAM's own output register has none)
        o = Signal(self.width, reset_less=True)
        m.d.sync += [ptr.eq(ahead), o.eq(rp.data)]
        m.d.comb += [wp.en.eq(1), wp.addr.eq(ptr), wp.data.eq(self.i), rp.addr.eq(ahead),
                     self.o.eq(o)]
        return m
