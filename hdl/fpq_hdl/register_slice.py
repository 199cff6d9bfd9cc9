"""Stream register slice: a valid/ready stream through registers, with a skid register."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RegisterSlice"]


class RegisterSlice(wiring.Component):
    """One register stage on a ``amaranth.lib.stream`` stream, at full throughput, that cuts
    every combinational path between its two sides: ``i.ready``, ``o.valid`` and
    ``o.payload`` come from flip-flops, and ``o.ready`` reaches one LUT level before the
    registers it enables (the AXI-Stream register slice with a skid buffer).

    The output register holds the word offered on ``o``; a word taken from ``i`` while the
    output stalls goes to the skid register, and ``i`` is not ready while that holds one. The
    consumer's ``ready`` is then a late signal with a short path, which a FIFO's pointers and
    level (several LUT levels after ``r_en``) are not.

    Latency: a word taken from ``i`` in clock t is offered on ``o`` from clock t + 1.
    Throughput: one word per clock while ``o.ready`` is high. Two words of storage.

    Parameters
    ----------
    shape : shape-like
        The payload's shape (e.g. an ``amaranth.lib.data`` layout).

    Attributes
    ----------
    i : In(stream.Signature(shape))
    o : Out(stream.Signature(shape))
    """

    def __init__(self, shape):
        self.shape = shape
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        out_valid, skid_valid = Signal(), Signal()
        out_data = Signal(self.shape)
        skid_data = Signal(self.shape)
        m.d.comb += [self.o.valid.eq(out_valid), self.o.payload.eq(out_data),
                     self.i.ready.eq(~skid_valid)]
        take = self.i.valid & ~skid_valid
        with m.If(self.o.ready | ~out_valid):
            # the output register is free in the next clock: it takes the skid's word if
            # there is one (the input is not ready then), else the input's
            m.d.sync += [out_valid.eq(skid_valid | take),
                         out_data.eq(Mux(skid_valid, skid_data, self.i.payload)),
                         skid_valid.eq(0)]
        with m.Elif(take):
            m.d.sync += [skid_valid.eq(1), skid_data.eq(self.i.payload)]
        return m
