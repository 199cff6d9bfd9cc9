"""UART bridge: the framed protocol of ``fpq_boards.protocol`` to the 32-bit register bus."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpq_hdl.registers import BusSignature, ADDR_BITS

from .uart import UARTRx, UARTTx
from .protocol import (CMD_READ, CMD_WRITE, REPLY_READ, REPLY_WRITE, REPLY_ERROR,
                       ERR_CHECKSUM, ERR_COMMAND, ERR_ADDRESS, ERR_LOCKED, IDLE_TIMEOUT_BITS,
                       LOCK_ADDR)

__all__ = ["UARTBridge"]


class UARTBridge(wiring.Component):
    """Bus initiator driven by the UART protocol in ``fpq_boards.protocol``.

    A request is collected byte by byte with a running checksum. When its last byte arrives
    the bridge checks the checksum and the address, does one bus access (``r_en`` or
    ``w_en`` for one clock; read data is taken the next clock) and sends the reply. Bytes
    that arrive while a reply is being sent are dropped (the host waits for each reply). A
    request idle for ``IDLE_TIMEOUT_BITS`` bit times in the middle is dropped, which brings
    bridge and host back in step after noise or a host that gave up.

    A privileged interface: whoever reaches the UART pins (the board's USB serial port, so
    anyone logged in to the host it is plugged into, or with access to that device node)
    reads and writes every register, reconfigures the queue manager, clears its counters
    and stops the generator; only the hash key stays unreadable (the register file answers 0
    for it). It has no authentication. A deployment that wants the configuration to stay as
    loaded locks the bridge once configured: a write to ``LOCK_ADDR`` (``protocol``) sets the
    lock, which only a reset clears; while it is set every write request is answered
    ``'!' ERR_LOCKED`` and no bus write happens, reads go on (``fpq board monitor
    --configure --lock``).

    Latency: the bus access starts 4 clocks after the stop bit of the request's last byte
    (every decision reads flags registered a clock earlier, so the bridge keeps up with a
    150 MHz queue manager); the reply starts 2 clocks later. Throughput: one access per
    request (10 bytes on the line for a read round trip of 5 + 6 bytes: about 10 k reads/s
    at 115200 baud). ``addr`` (and ``w_data``) are set ``SETUP`` (4) clocks before ``w_en``
    or ``r_en`` and held to the next request, which a target may rely on
    (``RegisterFile(write_setup=, read_setup=)``).

    Parameters
    ----------
    divisor : int
        Clocks per bit of the UART (clock frequency / baud rate), at least 4.
    read_latency : int
        Clocks from ``r_en`` to valid ``r_data``: 1 for ``BusSignature``'s targets, more when
        the bus is registered on the way (the SoC registers it once for timing).

    Attributes
    ----------
    rx : In(1), tx : Out(1)
        Serial lines.
    bus : Out(BusSignature())
    active : Out(1)
        A request or reply is in progress (for an activity LED).
    errors : Out(1)
        Pulses on a protocol error (checksum, command, address, framing, timeout).
    """

    #: clocks ``addr`` (and ``w_data``) are stable before ``w_en`` or ``r_en`` (the bridge's
    #: promise)
    SETUP = 4

    def __init__(self, divisor, read_latency=1):
        if not isinstance(read_latency, int) or read_latency < 1:
            raise ValueError(f"read_latency: {read_latency!r} must be an integer >= 1")
        self.divisor = divisor
        self.read_latency = read_latency
        self._rx = UARTRx(divisor)
        self._tx = UARTTx(divisor)
        super().__init__({"rx": In(1, init=1), "tx": Out(1, init=1),
                          "bus": Out(BusSignature()), "active": Out(1), "errors": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.rx = rx = self._rx
        m.submodules.tx = tx = self._tx
        m.d.comb += [rx.rx.eq(self.rx), self.tx.eq(tx.tx), rx.bytes.ready.eq(1)]

        # Requests are rare (one per ~10 bytes on the line) and the bridge shares the queue
        # manager's clock, so it spends clocks rather than logic levels: every decision of the
        # state machine reads registers only (a flag computed in an earlier state), and the
        # reply is loaded from three sources, each in a state of its own.
        is_write = Signal()
        args = Signal(64)                # the bytes after the command, newest at the top
        count = Signal(range(9))         # bytes after the command so far
        final = Signal(range(9))         # count at the request's last byte (its checksum)
        total = Signal(8)                # checksum of the bytes so far
        total_before = Signal(8)         # ... of the bytes before the newest
        timeout = IDLE_TIMEOUT_BITS * self.divisor
        idle = Signal(range(timeout + 2))
        idle_expired = Signal()
        addr_bad = Signal()              # address bits above the bus's width are set
        reply = Signal(40)
        reply_len = Signal(range(7))
        reply_sum = Signal(8)
        byte = rx.bytes.payload
        got = rx.bytes.valid

        # The checksum is summed as the reply's bytes go out and sent as its last byte: an
        # 8-bit accumulator, not a tree of adders after the bus's read data. The reply's
        # registers (about 60) are enabled by a load or a byte taken: both from registers
        # (which reply the state entered in this clock loads, set on the transition into it;
        # bytes left and the last one), so the enable is one LUT.
        sending, last_byte = Signal(), Signal()      # reply_len != 0, reply_len == 1
        m.d.comb += [tx.bytes.payload.eq(Mux(last_byte, reply_sum, reply[:8])),
                     tx.bytes.valid.eq(sending)]
        loads = {"ERROR": 0, "WRITE_DONE": 1, "READ_DATA": 2}
        load = Signal(len(loads))                    # one-hot: the reply loaded this clock
        m.d.sync += load.eq(0)

        def goto(state):
            m.next = state
            if state in loads:
                m.d.sync += load.eq(1 << loads[state])

        def reply_of(code, data=None, data_bytes=0):
            """A reply: its code byte, ``data_bytes`` bytes of ``data``; the checksum follows."""
            return (Cat(Const(code, 8), data if data is not None else C(0, 32)),
                    1 + data_bytes + 1)

        error = Signal()
        # set by a write to LOCK_ADDR, cleared only by reset: refuses every later write
        locked = Signal()
        lock_hit = Signal()              # the word address is LOCK_ADDR's
        err_code = Signal(8)
        replies = [reply_of(REPLY_ERROR, err_code, 1), reply_of(REPLY_WRITE),
                   # LOCK_ADDR is unmapped on the bus (reads 0 there): the lock bit ORed in
                   reply_of(REPLY_READ, self.bus.r_data | (lock_hit & locked), 4)]
        with m.If(load.any()):
            for k, (value, length) in enumerate(replies):
                with m.If(load[k]):
                    m.d.sync += [reply.eq(value), reply_len.eq(length)]
            m.d.sync += [reply_sum.eq(0), sending.eq(1), last_byte.eq(0)]
        with m.Elif(sending & tx.bytes.ready):
            m.d.sync += [reply.eq(reply[8:]), reply_len.eq(reply_len - 1),
                         reply_sum.eq(reply_sum + reply[:8]),
                         sending.eq(~last_byte), last_byte.eq(reply_len == 2)]

        m.d.comb += self.errors.eq(error | rx.framing_error)
        # args ends with the checksum byte (args[56:64]): a write's address is args[0:24] and
        # its data args[24:56]; a read's address is args[32:56]. args stays as it is from
        # the request's last byte to the next request, so the bus takes them as they are
        addr = Signal(24)
        m.d.comb += [addr.eq(Mux(is_write, args[0:24], args[32:56])),
                     self.bus.addr.eq(addr[:ADDR_BITS]), self.bus.w_data.eq(args[24:56])]
        m.d.sync += [self.bus.w_en.eq(0), self.bus.r_en.eq(0),
                     addr_bad.eq(addr[ADDR_BITS:] != 0),
                     # the word address against the lock's (the bits above are addr_bad's)
                     lock_hit.eq(addr[2:ADDR_BITS] == LOCK_ADDR >> 2),
                     idle_expired.eq(idle == timeout)]

        with m.FSM() as fsm:
            with m.State("COMMAND"):
                with m.If(got):
                    with m.If((byte == CMD_READ) | (byte == CMD_WRITE)):
                        m.d.sync += [is_write.eq(byte == CMD_WRITE), total.eq(byte),
                                     count.eq(0), idle.eq(0), idle_expired.eq(0),
                                     final.eq(Mux(byte == CMD_WRITE, 7, 3))]
                        goto("ARGS")
                    with m.Else():
                        m.d.sync += err_code.eq(ERR_COMMAND)
                        goto("ERROR")
            with m.State("ARGS"):
                with m.If(got):
                    m.d.sync += [args.eq(Cat(args[8:], byte)), total.eq(total + byte),
                                 total_before.eq(total), count.eq(count + 1), idle.eq(0),
                                 idle_expired.eq(0)]
                    with m.If(count == final):
                        goto("SUM")
                with m.Elif(idle_expired):
                    m.d.comb += error.eq(1)
                    goto("COMMAND")
                with m.Else():
                    m.d.sync += idle.eq(idle + 1)
            with m.State("SUM"):
                # checksum ok iff the sum of the earlier bytes equals the last
                with m.If(total_before != args[56:64]):
                    m.d.sync += err_code.eq(ERR_CHECKSUM)
                    goto("ERROR")
                with m.Else():
                    goto("DECODE")
            with m.State("DECODE"):
                goto("CHECK")             # addr_bad and lock_hit follow args
            with m.State("CHECK"):
                with m.If(addr_bad):
                    m.d.sync += err_code.eq(ERR_ADDRESS)
                    goto("ERROR")
                with m.Elif(is_write):
                    with m.If(locked):
                        m.d.sync += err_code.eq(ERR_LOCKED)
                        goto("ERROR")
                    with m.Elif(lock_hit):
                        m.d.sync += locked.eq(1)       # no bus write: the bridge's own
                        goto("WRITE_DONE")
                    with m.Else():
                        goto("WRITE")
                with m.Else():
                    goto("READ")
            with m.State("ERROR"):
                m.d.comb += error.eq(1)
                goto("REPLY")
            with m.State("WRITE"):
                m.d.sync += self.bus.w_en.eq(1)
                goto("WRITE_DONE")
            with m.State("WRITE_DONE"):
                goto("REPLY")
            wait = Signal(range(self.read_latency + 1))
            with m.State("READ"):
                m.d.sync += [self.bus.r_en.eq(1), wait.eq(self.read_latency - 1)]
                goto("READ_WAIT")
            with m.State("READ_WAIT"):
                with m.If(wait == 0):
                    goto("READ_DATA")
                with m.Else():
                    m.d.sync += wait.eq(wait - 1)
            with m.State("READ_DATA"):
                goto("REPLY")
            with m.State("REPLY"):
                with m.If(~sending):
                    goto("COMMAND")
            m.d.comb += self.active.eq(~fsm.ongoing("COMMAND"))
        return m
