"""The UART bridge's framed protocol, host side: encode requests, decode replies, and a
``BusClient`` that reads and writes 32-bit words of the board's register bus over any
serial-port-like object (pyserial's ``Serial``, or a simulated port in the tests).

Frames (all multi-byte fields least significant byte first; ``chk`` is the sum of the
frame's preceding bytes modulo 256):

=========  ==========================================  =====================================
request    bytes                                       reply
=========  ==========================================  =====================================
read       ``'R'`` addr[3] chk                         ``'r'`` data[4] chk
write      ``'W'`` addr[3] data[4] chk                 ``'w'`` chk (after the write is done)
=========  ==========================================  =====================================

Errors: the bridge answers ``'!'`` code chk, with code ``ERR_CHECKSUM`` (the request's
checksum was wrong; nothing was done), ``ERR_COMMAND`` (the first byte is not a command; it
is answered at once and discarded), ``ERR_ADDRESS`` (address bits 23..20 not zero; nothing
was done), ``ERR_LOCKED`` (a write while the bridge is locked; nothing was written).

The lock: a write of any value to ``LOCK_ADDR`` (answered ``'w'``) locks the bridge until
the board is reset. While locked, every write request, to any address (``LOCK_ADDR``
included), is answered ``'!' ERR_LOCKED chk`` and reaches no register; reads work as before,
and a read of ``LOCK_ADDR`` returns 1 (0 while unlocked). The bridge handles ``LOCK_ADDR``
itself: no write to it reaches the bus (the address is unmapped there, so a read's bus
access returns 0 and the bridge ORs its lock bit in). A request that stops in the middle for longer than ``IDLE_TIMEOUT_BITS`` bit
times is dropped without a reply, so a host that times out only has to wait that long
before it starts over in step with the bridge.
"""

__all__ = ["CMD_READ", "CMD_WRITE", "REPLY_READ", "REPLY_WRITE", "REPLY_ERROR",
           "ERR_CHECKSUM", "ERR_COMMAND", "ERR_ADDRESS", "ERR_LOCKED", "ERROR_NAMES",
           "IDLE_TIMEOUT_BITS", "ADDR_LIMIT", "LOCK_ADDR", "BridgeLocked", "checksum", "encode_read", "encode_write", "BridgeError",
           "BridgeTimeout", "BusClient"]

CMD_READ, CMD_WRITE = ord("R"), ord("W")
REPLY_READ, REPLY_WRITE, REPLY_ERROR = ord("r"), ord("w"), ord("!")
ERR_CHECKSUM, ERR_COMMAND, ERR_ADDRESS, ERR_LOCKED = 1, 2, 3, 4
ERROR_NAMES = {ERR_CHECKSUM: "bad checksum", ERR_COMMAND: "unknown command",
               ERR_ADDRESS: "address out of range",
               ERR_LOCKED: "writes are locked until the board is reset"}
#: A request idle for this many bit times in the middle is dropped by the bridge.
IDLE_TIMEOUT_BITS = 64
#: Byte addresses the bus decodes (20 bits).
ADDR_LIMIT = 1 << 20
#: The bridge's lock register: its last word, unmapped on the bus (``fpq.regmap``'s tables
#: end below 0x80000, the traffic generator's registers at 0x800-0x8FF).
LOCK_ADDR = ADDR_LIMIT - 4


class BridgeError(IOError):
    """The bridge answered with an error, or the reply was malformed."""


class BridgeTimeout(BridgeError):
    """No complete reply within the port's timeout."""


class BridgeLocked(BridgeError):
    """The bridge refused a write: it is locked (``LOCK_ADDR``) until the board is reset."""


def checksum(data):
    return sum(data) & 0xFF


def _check_addr(addr):
    if not isinstance(addr, int) or not 0 <= addr < ADDR_LIMIT or addr & 3:
        raise ValueError(f"address: {addr!r} must be a multiple of 4 in [0, {ADDR_LIMIT - 4:#x}]")


def encode_read(addr):
    _check_addr(addr)
    body = bytes([CMD_READ]) + addr.to_bytes(3, "little")
    return body + bytes([checksum(body)])


def encode_write(addr, value):
    _check_addr(addr)
    if not isinstance(value, int) or not 0 <= value < (1 << 32):
        raise ValueError(f"value: {value!r} is out of range [0, 0xffffffff]")
    body = bytes([CMD_WRITE]) + addr.to_bytes(3, "little") + value.to_bytes(4, "little")
    return body + bytes([checksum(body)])


class BusClient:
    """Register reads and writes through the UART bridge.

    ``port`` needs ``write(bytes)``, ``read(n)`` (returns up to ``n`` bytes, fewer on timeout,
    like pyserial) and optionally ``reset_input_buffer()``. Every reply is checked (kind,
    length, checksum); a failure raises ``BridgeError`` / ``BridgeTimeout`` with what was
    received, after which the client waits out the bridge's idle timeout and flushes, so the
    next request starts in step.
    """

    def __init__(self, port, retries=0):
        self.port = port
        self.retries = retries

    def _transact(self, request, kind, length):
        for attempt in range(self.retries + 1):
            try:
                self.port.write(request)
                return self._reply(kind, length)
            except BridgeLocked:
                raise                   # an answer, not a transmission error: no retry
            except BridgeError:
                self._resync()
                if attempt == self.retries:
                    raise

    def _resync(self):
        flush = getattr(self.port, "reset_input_buffer", None)
        if flush:
            flush()

    def _reply(self, kind, length):
        head = self.port.read(1)
        if len(head) != 1:
            raise BridgeTimeout("no reply from the board (timeout): check the port, the baud "
                                "rate and that the bitstream is loaded")
        if head[0] == REPLY_ERROR:
            rest = self.port.read(2)
            if len(rest) != 2 or checksum(head + rest[:1]) != rest[1]:
                raise BridgeError(f"malformed error reply {bytes(head + rest).hex()}")
            kind = BridgeLocked if rest[0] == ERR_LOCKED else BridgeError
            raise kind(f"bridge error {rest[0]}: "
                       f"{ERROR_NAMES.get(rest[0], 'unknown error code')}")
        if head[0] != kind:
            raise BridgeError(f"malformed reply: expected {chr(kind)!r}, got byte "
                              f"{head[0]:#04x}")
        rest = self.port.read(length + 1)
        if len(rest) != length + 1:
            raise BridgeTimeout(f"reply cut short: got {len(rest) + 1} of {length + 2} bytes")
        frame = head + rest
        if checksum(frame[:-1]) != frame[-1]:
            raise BridgeError(f"malformed reply: bad checksum in {bytes(frame).hex()}")
        return bytes(frame[1:-1])

    def read(self, addr):
        """The 32-bit word at byte address ``addr``."""
        return int.from_bytes(self._transact(encode_read(addr), REPLY_READ, 4), "little")

    def write(self, addr, value):
        self._transact(encode_write(addr, value), REPLY_WRITE, 0)

    def lock(self):
        """Lock the bridge: every later write through it is refused (``BridgeLocked``)
        until the board is reset."""
        self.write(LOCK_ADDR, 1)

    def locked(self):
        """Whether the bridge is locked."""
        return bool(self.read(LOCK_ADDR) & 1)

    def read_wide(self, addr, width):
        """A register of ``width`` bits (consecutive words, least significant first). For a
        counter that may carry between the words, the high word is read before and after
        the low word and the read repeats until both agree."""
        words = (width + 31) // 32
        if words == 1:
            return self.read(addr) & ((1 << width) - 1)
        for _ in range(4):
            hi = [self.read(addr + 4 * i) for i in range(1, words)]
            lo = self.read(addr)
            if [self.read(addr + 4 * i) for i in range(1, words)] == hi:
                break
        value = lo
        for i, w in enumerate(hi):
            value |= w << (32 * (i + 1))
        return value & ((1 << width) - 1)
