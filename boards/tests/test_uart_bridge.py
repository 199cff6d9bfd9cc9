"""UART bridge: the host protocol code (``BusClient``) against the RTL bridge, bit by bit
through ``SimulatedPort``; error replies, resynchronisation; host-side reply checking."""

import random

import pytest
from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpq_boards.uart_bridge import UARTBridge
from fpq_boards.sim_port import SimulatedPort
from fpq_boards.protocol import (BusClient, BridgeError, BridgeLocked, BridgeTimeout,
                                 encode_read, encode_write, checksum, CMD_READ,
                                 IDLE_TIMEOUT_BITS, REPLY_ERROR, ERR_ADDRESS, ERR_LOCKED,
                                 LOCK_ADDR)


class BridgeWithMemory(wiring.Component):
    """The bridge in front of a 16-word memory at byte addresses 0..63 that logs every
    access: reads return the word (0 elsewhere), writes store it; every bus write counts.
    ``bridge_reset`` resets the bridge alone (a board's reset, for the lock)."""

    def __init__(self, divisor=4):
        self.divisor = divisor
        super().__init__({"rx": In(1, init=1), "tx": Out(1, init=1), "writes": Out(8),
                          "setup_violations": Out(8), "bridge_reset": In(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.bridge = br = ResetInserter(self.bridge_reset)(UARTBridge(self.divisor))
        m.d.comb += [br.rx.eq(self.rx), self.tx.eq(br.tx)]
        mem = Array(Signal(32, name=f"w{i}", init=0x1000 * i + 7) for i in range(16))
        # the promise a target may rely on: a write's address and data, a read's address, as
        # in each of the SETUP clocks before
        now = Cat(br.bus.addr, br.bus.w_data)
        before, changed = now, []
        for k in range(UARTBridge.SETUP):
            prev = Signal(len(now), name=f"prev{k}")
            m.d.sync += prev.eq(before)
            changed.append(Mux(br.bus.w_en, prev != now,
                               prev[:len(br.bus.addr)] != br.bus.addr))
            before = prev
        with m.If((br.bus.w_en | br.bus.r_en) & Cat(*changed).any()):
            m.d.sync += self.setup_violations.eq(self.setup_violations + 1)
        idx = br.bus.addr[2:6]
        here = br.bus.addr < 64
        with m.If(br.bus.w_en):
            m.d.sync += self.writes.eq(self.writes + 1)
            with m.If(here):
                m.d.sync += mem[idx].eq(br.bus.w_data)
        m.d.sync += br.bus.r_data.eq(Mux(br.bus.r_en & here, mem[idx], 0))
        return m


@pytest.fixture
def link():
    dut = BridgeWithMemory()
    port = SimulatedPort(dut, timeout_bits=200)
    yield dut, port, BusClient(port)
    port.close()



def _peek(port, signal):
    return port.peek(signal)


def test_read_write_round_trip(link):
    dut, port, client = link
    assert client.read(0x0C) == 0x3007          # reset value of word 3
    rnd = random.Random(5)
    model = {i: 0x1000 * i + 7 for i in range(16)}
    for _ in range(6):
        i, v = rnd.randrange(16), rnd.getrandbits(32)
        client.write(4 * i, v)
        model[i] = v
    for i in rnd.sample(range(16), 6):
        assert client.read(4 * i) == model[i]
    # every access's address (and a write's data) was on the bus SETUP clocks before it
    assert _peek(port, dut.writes) == 6 and _peek(port, dut.setup_violations) == 0
    assert _peek(port, dut.writes) == 6


def test_bad_checksum_is_refused_and_nothing_written(link):
    dut, port, client = link
    frame = bytearray(encode_write(0x10, 0xDEADBEEF))
    frame[-1] ^= 0x01
    port.write(frame)
    with pytest.raises(BridgeError, match="bridge error 1: bad checksum"):
        client._reply(ord("w"), 0)
    assert client.read(0x10) == 0x4007
    assert _peek(port, dut.writes) == 0


def test_unknown_command_then_in_step(link):
    dut, port, client = link
    port.write(b"Q")
    with pytest.raises(BridgeError, match="bridge error 2: unknown command"):
        client._reply(ord("r"), 4)
    assert client.read(0x04) == 0x1007


def test_address_above_bus_width(link):
    dut, port, client = link
    body = bytes([CMD_READ]) + (1 << 20 | 8).to_bytes(3, "little")
    port.write(body + bytes([checksum(body)]))
    with pytest.raises(BridgeError, match="bridge error 3: address out of range"):
        client._reply(ord("r"), 4)
    with pytest.raises(ValueError, match=r"address: 1048584 must be a multiple of 4"):
        client.read(1 << 20 | 8)


def test_truncated_request_times_out_then_resync(link):
    dut, port, client = link
    port.write(encode_write(0x20, 0x12345678)[:5])     # host died mid-request
    assert port.read(1) == b""                          # no reply to a partial request
    port.run_cycles((IDLE_TIMEOUT_BITS + 5) * dut.divisor)
    assert client.read(0x20) == 0x8007                  # the bridge started over
    assert _peek(port, dut.writes) == 0


def test_line_noise_recovered_by_client_retry(link):
    """A corrupted byte on the way in: the bridge refuses the request, the client waits out
    the idle timeout, flushes and retries; the write lands exactly once."""
    dut, port, _ = link
    client = BusClient(port, retries=1)
    hits = []

    def corrupt_third_byte(b):
        hits.append(b)
        return b ^ 0x40 if len(hits) == 3 else b
    port.garbage = corrupt_third_byte
    client.write(0x08, 0xCAFEF00D)
    port.garbage = None
    assert len(hits) == 2 * 9                           # the write frame went out twice
    assert client.read(0x08) == 0xCAFEF00D
    assert _peek(port, dut.writes) == 1


# ---- the lock ---------------------------------------------------------------------------------
def test_lock_refuses_every_write_until_reset_and_reads_go_on():
    """Before the lock: writes land, the lock reads 0, and the write that locks reaches no
    register. Locked: every write (to memory, to the lock itself) is answered ``'!'
    ERR_LOCKED``, reaches the bus not at all and changes nothing; reads work and the lock
    reads 1. A reset of the bridge unlocks it."""
    dut = BridgeWithMemory()
    pulses = []

    async def board_reset(ctx):
        while True:
            if pulses:
                pulses.clear()
                ctx.set(dut.bridge_reset, 1)
                await ctx.tick()
                ctx.set(dut.bridge_reset, 0)
            await ctx.tick()
    port = SimulatedPort(dut, timeout_bits=200, probes=[board_reset])
    client = BusClient(port, retries=1)
    client.write(0x10, 0x11111111)
    assert not client.locked()
    assert _peek(port, dut.writes) == 1
    client.lock()
    assert _peek(port, dut.writes) == 1                 # the lock is the bridge's own
    assert client.locked()
    for addr, value in ((0x10, 0x22222222), (0x24, 5), (LOCK_ADDR, 0)):
        with pytest.raises(BridgeLocked, match="bridge error 4: writes are locked until the "
                                               "board is reset"):
            client.write(addr, value)
    # the refusal on the line: '!' ERR_LOCKED and its checksum, once per request (no retry)
    port.write(encode_write(0x10, 0x33333333))
    assert port.read(3) == bytes([REPLY_ERROR, ERR_LOCKED, REPLY_ERROR + ERR_LOCKED])
    assert _peek(port, dut.writes) == 1
    assert client.read(0x10) == 0x11111111 and client.read(0x24) == 0x9007
    assert client.locked()
    pulses.append(1)
    port.run_cycles(20)
    assert not client.locked()
    client.write(0x10, 0x44444444)
    assert client.read(0x10) == 0x44444444 and _peek(port, dut.writes) == 2
    port.close()


# ---- host side alone: malformed replies from a scripted port ----------------------------
class ScriptedPort:
    def __init__(self, reply):
        self.reply = bytearray(reply)
        self.sent = bytearray()
        self.flushed = 0

    def write(self, data):
        self.sent += data

    def read(self, n):
        out, self.reply = bytes(self.reply[:n]), self.reply[n:]
        return out

    def reset_input_buffer(self):
        self.flushed += 1
        self.reply.clear()


def _framed(*parts):
    body = bytes(parts)
    return body + bytes([checksum(body)])


@pytest.mark.parametrize("reply,error,message", [
    (b"", BridgeTimeout, "no reply from the board"),
    (b"r\x01\x02", BridgeTimeout, "reply cut short: got 3 of 6 bytes"),
    (_framed(ord("w")), BridgeError, "expected 'r', got byte 0x77"),
    (bytes([ord("r"), 1, 2, 3, 4, 0]), BridgeError, "bad checksum in 720102030400"),
    (bytes([REPLY_ERROR, ERR_ADDRESS, 0]), BridgeError, "malformed error reply"),
    (_framed(REPLY_ERROR, 9), BridgeError, "bridge error 9: unknown error code"),
])
def test_client_rejects_malformed_replies(reply, error, message):
    port = ScriptedPort(reply)
    with pytest.raises(error, match=message):
        BusClient(port).read(0x40)
    assert port.sent == encode_read(0x40)
    assert port.flushed == 1


def test_client_decodes_good_reply():
    port = ScriptedPort(_framed(ord("r"), 0x78, 0x56, 0x34, 0x12))
    assert BusClient(port).read(0x40) == 0x12345678


@pytest.mark.parametrize("call,message", [
    (lambda c: c.read(2), "address: 2 must be a multiple of 4"),
    (lambda c: c.read(-4), "address: -4 must be a multiple of 4"),
    (lambda c: c.write(0, 1 << 32), r"value: 4294967296 is out of range \[0, 0xffffffff\]"),
])
def test_client_checks_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call(BusClient(ScriptedPort(b"")))


def test_wide_read_rereads_on_carry():
    """A 64-bit counter that carries between the word reads is read again."""
    values = iter([0x1, 0xFFFFFFFF, 0x2,    # hi, lo, hi: changed -> again
                   0x2, 0x00000005, 0x2])
    class Counter:
        def read(self, addr):
            return next(values)
    c = BusClient(None)
    c.read = Counter().read
    assert c.read_wide(0x200, 64) == (0x2 << 32) | 5
