"""Synchronous FIFO in block RAM with a registered output, as Yosys maps it to an iCE40."""

from amaranth import *

from .block_ram import ram_without_rw_check, read_register

__all__ = ["BlockFIFO"]


class BlockFIFO(Elaboratable):
    """``amaranth.lib.fifo.SyncFIFOBuffered``'s ports and behaviour, clock for clock, with its
    storage read written so that Yosys maps it to iCE40 block RAM as is.

    ``SyncFIFOBuffered`` reads its storage through a synchronous read port, which Yosys maps
    to an iCE40 block RAM with read-first and transparency emulation: flip-flops and a
    multiplexer per bit, although a FIFO never reads the word it writes in the same clock
    (the read side reads only words written at least a clock earlier, and a full FIFO takes
    no write). Here the memory is ``ram_without_rw_check`` and the head register its
    ``read_register``, which Yosys maps to a block RAM without that logic. On the
    iCEBreaker's verdict FIFO (32 x 119 bits) alone that is 17 flip-flops instead of 261
    (the LUTs about the same); in the whole design 29 logic cells fewer.

    Structure (as ``SyncFIFOBuffered``): ``depth - 1`` words of RAM and the read register,
    which holds the word at the head (``r_rdy``). Latency: a word written in clock t can be
    read (``r_rdy``) in clock t + 2. Throughput: one write and one read per clock.

    Parameters
    ----------
    width : int
    depth : int
        At least 2.

    Attributes
    ----------
    w_data, w_en : in; w_rdy : out
    r_data : out; r_en : in; r_rdy : out
    level : out
        Words in the FIFO (RAM and read register).
    """

    def __init__(self, *, width, depth):
        if depth < 2:
            raise ValueError(f"depth: {depth} is out of the allowed range [2, ...)")
        self.width, self.depth = width, depth
        self.w_data, self.w_en, self.w_rdy = Signal(width), Signal(), Signal()
        self.r_data, self.r_en, self.r_rdy = Signal(width), Signal(), Signal()
        self.level = Signal(range(depth + 1))

    def elaborate(self, platform):
        m = Module()
        inner = self.depth - 1
        level = Signal(range(inner + 1))              # words in the RAM
        do_write = self.w_en & self.w_rdy
        # the RAM's head moves into the read register when that is empty or being read
        do_read = (level != 0) & (~self.r_rdy | self.r_en)
        m.d.comb += [self.w_rdy.eq(level != inner), self.level.eq(level + self.r_rdy)]

        m.submodules.storage = storage = ram_without_rw_check(self.width, inner)
        wp = storage.write_port()
        produce, consume = Signal(range(inner)), Signal(range(inner))
        m.d.comb += [wp.addr.eq(produce), wp.data.eq(self.w_data), wp.en.eq(do_write),
                     self.r_data.eq(read_register(m, storage, consume, en=do_read))]
        with m.If(do_write):
            m.d.sync += produce.eq(Mux(produce == inner - 1, 0, produce + 1))
        with m.If(do_read):
            m.d.sync += consume.eq(Mux(consume == inner - 1, 0, consume + 1))
        with m.If(do_write & ~do_read):
            m.d.sync += level.eq(level + 1)
        with m.If(do_read & ~do_write):
            m.d.sync += level.eq(level - 1)
        with m.If(do_read):
            m.d.sync += self.r_rdy.eq(1)
        with m.Elif(self.r_en):
            m.d.sync += self.r_rdy.eq(0)
        return m
