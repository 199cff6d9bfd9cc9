"""8N1 UART receiver and transmitter, one clock domain, a fixed clocks-per-bit divisor."""

from amaranth import *
from amaranth.lib import wiring, stream
from amaranth.lib.wiring import In, Out

__all__ = ["UARTRx", "UARTTx"]


def _check_divisor(divisor):
    if not isinstance(divisor, int) or divisor < 4:
        raise ValueError(f"divisor: {divisor!r} must be an integer >= 4 (clocks per bit)")


class UARTRx(wiring.Component):
    """UART receiver, 8 data bits, no parity, one stop bit, least significant bit first.

    The line passes a two-flip-flop synchroniser; a falling edge starts a character, which is
    confirmed at the middle of the start bit (a glitch shorter than half a bit is ignored),
    and each data bit is sampled at the middle of its bit time. A character whose stop bit
    is low is a framing error: it is dropped and ``framing_error`` pulses for one clock (a
    break or a wrong baud rate shows up here).

    Latency: the byte is valid 9.5 bit times after the start edge (plus 2 clocks of
    synchroniser). Throughput: back-to-back characters at the nominal rate; the clock may be
    off by about +-4 % against the sender.

    The byte stream has no back-pressure: a byte not taken (``ready`` low) in the clock it is
    offered is lost and ``overrun`` pulses.

    Parameters
    ----------
    divisor : int
        Clocks per bit (clock frequency / baud rate), at least 4.

    Attributes
    ----------
    rx : In(1)
        The serial line (idle high).
    bytes : Out(stream.Signature(8))
    framing_error, overrun : Out(1)
    """

    def __init__(self, divisor):
        _check_divisor(divisor)
        self.divisor = divisor
        super().__init__({"rx": In(1, init=1), "bytes": Out(stream.Signature(8)),
                          "framing_error": Out(1), "overrun": Out(1)})

    def elaborate(self, platform):
        m = Module()
        sync1, line = Signal(init=1), Signal(init=1)
        m.d.sync += [sync1.eq(self.rx), line.eq(sync1)]
        timer = Signal(range(self.divisor))
        # timer == 0, registered beside it (every load is of a value above 0): the state
        # machine's decisions follow a register, not an equality tree
        timer_zero = Signal()
        bit = Signal(range(10))
        shreg = Signal(8)
        m.d.sync += [self.bytes.valid.eq(0), self.framing_error.eq(0), self.overrun.eq(0)]
        with m.If(self.bytes.valid & ~self.bytes.ready):
            m.d.sync += self.overrun.eq(1)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(~line):
                    m.d.sync += [timer.eq(self.divisor // 2 - 1), timer_zero.eq(0)]
                    m.next = "START"
            with m.State("START"):
                with m.If(timer_zero):
                    with m.If(line):             # a glitch, not a start bit
                        m.next = "IDLE"
                    with m.Else():
                        m.d.sync += [timer.eq(self.divisor - 1), timer_zero.eq(0), bit.eq(0)]
                        m.next = "DATA"
                with m.Else():
                    m.d.sync += [timer.eq(timer - 1), timer_zero.eq(timer == 1)]
            with m.State("DATA"):
                with m.If(timer_zero):
                    m.d.sync += [timer.eq(self.divisor - 1), timer_zero.eq(0), bit.eq(bit + 1)]
                    with m.If(bit == 8):         # the stop bit
                        with m.If(line):
                            m.d.sync += [self.bytes.payload.eq(shreg), self.bytes.valid.eq(1)]
                        with m.Else():
                            m.d.sync += self.framing_error.eq(1)
                        m.next = "STOP"
                    with m.Else():
                        m.d.sync += shreg.eq(Cat(shreg[1:], line))
                with m.Else():
                    m.d.sync += [timer.eq(timer - 1), timer_zero.eq(timer == 1)]
            with m.State("STOP"):
                # wait for the line to be high again (a break holds it low)
                with m.If(line):
                    m.next = "IDLE"
        return m


class UARTTx(wiring.Component):
    """UART transmitter, 8N1, least significant bit first.

    Latency: the start bit begins the clock after a byte is accepted. Throughput: one
    character per 10 bit times, back to back (``ready`` is high only while the line is idle
    or in the last clock of a stop bit).

    Parameters
    ----------
    divisor : int
        Clocks per bit, at least 4.

    Attributes
    ----------
    bytes : In(stream.Signature(8))
    tx : Out(1)
        The serial line (idle high).
    """

    def __init__(self, divisor):
        _check_divisor(divisor)
        self.divisor = divisor
        super().__init__({"bytes": In(stream.Signature(8)), "tx": Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self.divisor))
        bits_left = Signal(range(11))
        frame = Signal(10, init=0x3FF)
        # ``ready`` from flags registered beside the counters (timer == 0, bits_left == 0,
        # bits_left == 1), one LUT: the sender's load of its next byte follows it in the
        # same clock (the bridge's reply register)
        timer_zero, idle, last = Signal(init=1), Signal(init=1), Signal()
        m.d.comb += [self.tx.eq(frame[0]),
                     self.bytes.ready.eq(idle | (last & timer_zero))]
        with m.If(self.bytes.valid & self.bytes.ready):
            m.d.sync += [frame.eq(Cat(C(0, 1), self.bytes.payload, C(1, 1))),
                         bits_left.eq(10), timer.eq(self.divisor - 1),
                         timer_zero.eq(0), idle.eq(0), last.eq(0)]
        with m.Elif(~idle):
            with m.If(timer_zero):
                m.d.sync += [frame.eq(Cat(frame[1:], C(1, 1))), bits_left.eq(bits_left - 1),
                             timer.eq(self.divisor - 1), timer_zero.eq(0),
                             idle.eq(bits_left == 1), last.eq(bits_left == 2)]
            with m.Else():
                m.d.sync += [timer.eq(timer - 1), timer_zero.eq(timer == 1)]
        return m
