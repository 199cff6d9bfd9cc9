"""UART bridge: the framed protocol of ``fpq_boards.protocol`` to the 32-bit register bus."""

from types import SimpleNamespace

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
        # Requests are rare (one per ~10 bytes on the line) and the bridge shares the queue
        # manager's clock, so it spends clocks rather than logic levels: every decision of the
        # state machine reads registers only (a flag computed in an earlier state), and the
        # reply is loaded from three sources, each in a state of its own.
        # the signals one stage hands to the next, by name
        s = SimpleNamespace()
        self._uart(m, s)
        self._request(m, s)
        self._reply(m, s)
        self._bus(m, s)
        with m.FSM() as fsm:
            self._receive_states(m, s)
            self._check_states(m, s)
            self._access_states(m, s)
            m.d.comb += self.active.eq(~fsm.ongoing("COMMAND"))
        return m

    def _uart(self, m, s):
        """The UART's receiver and transmitter on the serial lines; ``s.byte`` and ``s.got``,
        a received byte."""
        m.submodules.rx = rx = self._rx
        m.submodules.tx = tx = self._tx
        m.d.comb += [rx.rx.eq(self.rx), self.tx.eq(tx.tx), rx.bytes.ready.eq(1)]
        s.rx, s.tx, s.byte, s.got = rx, tx, rx.bytes.payload, rx.bytes.valid

    def _request(self, m, s):
        """The request's registers, written by the receiving states: the command, the bytes
        after it, their count and checksum, the idle time in the middle of a request."""
        is_write = Signal()
        args = Signal(64)                # the bytes after the command, newest at the top
        count = Signal(range(9))         # bytes after the command so far
        final = Signal(range(9))         # count at the request's last byte (its checksum)
        total = Signal(8)                # checksum of the bytes so far
        total_before = Signal(8)         # ... of the bytes before the newest
        timeout = IDLE_TIMEOUT_BITS * self.divisor
        idle = Signal(range(timeout + 2))
        idle_expired = Signal()
        s.is_write, s.args, s.count, s.final, s.total, s.total_before = (
            is_write, args, count, final, total, total_before)
        s.timeout, s.idle, s.idle_expired = timeout, idle, idle_expired

    def _reply(self, m, s):
        """The reply: loaded (one-hot ``s.load``, set by ``_goto``) with an error, a write's
        acknowledgement or a read's data, then shifted out byte by byte with its checksum
        last; the error pulse and the lock."""
        tx = s.tx
        reply = Signal(40)
        reply_len = Signal(range(7))
        reply_sum = Signal(8)
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
        m.d.comb += self.errors.eq(error | s.rx.framing_error)
        s.loads, s.load, s.sending, s.error, s.locked, s.lock_hit, s.err_code = (
            loads, load, sending, error, locked, lock_hit, err_code)

    def _bus(self, m, s):
        """The bus access's address and data, as the request's bytes left them, and the
        flags the checking states read, registered: the address beyond the bus, the lock's
        address; the idle timeout's."""
        args, is_write = s.args, s.is_write
        addr_bad = Signal()              # address bits above the bus's width are set
        # args ends with the checksum byte (args[56:64]): a write's address is args[0:24] and
        # its data args[24:56]; a read's address is args[32:56]. args stays as it is from
        # the request's last byte to the next request, so the bus takes them as they are
        addr = Signal(24)
        m.d.comb += [addr.eq(Mux(is_write, args[0:24], args[32:56])),
                     self.bus.addr.eq(addr[:ADDR_BITS]), self.bus.w_data.eq(args[24:56])]
        m.d.sync += [self.bus.w_en.eq(0), self.bus.r_en.eq(0),
                     addr_bad.eq(addr[ADDR_BITS:] != 0),
                     # the word address against the lock's (the bits above are addr_bad's)
                     s.lock_hit.eq(addr[2:ADDR_BITS] == LOCK_ADDR >> 2),
                     s.idle_expired.eq(s.idle == s.timeout)]
        s.addr_bad = addr_bad

    def _goto(self, m, s, state):
        """The next state is ``state``; entering a state that loads a reply sets its bit of
        ``s.load``."""
        m.next = state
        if state in s.loads:
            m.d.sync += s.load.eq(1 << s.loads[state])

    def _receive_states(self, m, s):
        """COMMAND, ARGS, SUM: a request's bytes, then its checksum checked (ERROR on a bad
        command or checksum; back to COMMAND when the request idles in the middle)."""
        byte, got, args, total, idle = s.byte, s.got, s.args, s.total, s.idle
        with m.State("COMMAND"):
            with m.If(got):
                with m.If((byte == CMD_READ) | (byte == CMD_WRITE)):
                    m.d.sync += [s.is_write.eq(byte == CMD_WRITE), total.eq(byte),
                                 s.count.eq(0), idle.eq(0), s.idle_expired.eq(0),
                                 s.final.eq(Mux(byte == CMD_WRITE, 7, 3))]
                    self._goto(m, s, "ARGS")
                with m.Else():
                    m.d.sync += s.err_code.eq(ERR_COMMAND)
                    self._goto(m, s, "ERROR")
        with m.State("ARGS"):
            with m.If(got):
                m.d.sync += [args.eq(Cat(args[8:], byte)), total.eq(total + byte),
                             s.total_before.eq(total), s.count.eq(s.count + 1), idle.eq(0),
                             s.idle_expired.eq(0)]
                with m.If(s.count == s.final):
                    self._goto(m, s, "SUM")
            with m.Elif(s.idle_expired):
                m.d.comb += s.error.eq(1)
                self._goto(m, s, "COMMAND")
            with m.Else():
                m.d.sync += idle.eq(idle + 1)
        with m.State("SUM"):
            # checksum ok iff the sum of the earlier bytes equals the last
            with m.If(s.total_before != args[56:64]):
                m.d.sync += s.err_code.eq(ERR_CHECKSUM)
                self._goto(m, s, "ERROR")
            with m.Else():
                self._goto(m, s, "DECODE")

    def _check_states(self, m, s):
        """DECODE, CHECK, ERROR: the address and the lock checked (a write to ``LOCK_ADDR``
        sets the lock, no bus write); an error's reply."""
        with m.State("DECODE"):
            self._goto(m, s, "CHECK")     # addr_bad and lock_hit follow args
        with m.State("CHECK"):
            with m.If(s.addr_bad):
                m.d.sync += s.err_code.eq(ERR_ADDRESS)
                self._goto(m, s, "ERROR")
            with m.Elif(s.is_write):
                with m.If(s.locked):
                    m.d.sync += s.err_code.eq(ERR_LOCKED)
                    self._goto(m, s, "ERROR")
                with m.Elif(s.lock_hit):
                    m.d.sync += s.locked.eq(1)       # no bus write: the bridge's own
                    self._goto(m, s, "WRITE_DONE")
                with m.Else():
                    self._goto(m, s, "WRITE")
            with m.Else():
                self._goto(m, s, "READ")
        with m.State("ERROR"):
            m.d.comb += s.error.eq(1)
            self._goto(m, s, "REPLY")

    def _access_states(self, m, s):
        """WRITE .. REPLY: the bus access (``w_en`` or ``r_en`` for one clock; the read data
        ``read_latency`` clocks later), then the reply sent."""
        with m.State("WRITE"):
            m.d.sync += self.bus.w_en.eq(1)
            self._goto(m, s, "WRITE_DONE")
        with m.State("WRITE_DONE"):
            self._goto(m, s, "REPLY")
        wait = Signal(range(self.read_latency + 1))
        with m.State("READ"):
            m.d.sync += [self.bus.r_en.eq(1), wait.eq(self.read_latency - 1)]
            self._goto(m, s, "READ_WAIT")
        with m.State("READ_WAIT"):
            with m.If(wait == 0):
                self._goto(m, s, "READ_DATA")
            with m.Else():
                m.d.sync += wait.eq(wait - 1)
        with m.State("READ_DATA"):
            self._goto(m, s, "REPLY")
        with m.State("REPLY"):
            with m.If(~s.sending):
                self._goto(m, s, "COMMAND")
