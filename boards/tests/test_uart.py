"""UART receiver and transmitter at bit level: timing, baud error, framing, glitches."""

import random

import pytest

from fpq_boards.uart import UARTRx, UARTTx

from board_sim import run, send_byte, recv_byte


def _collector(dut, got, errors):
    """A process that takes every byte the receiver outputs into ``got`` and notes each
    framing error in ``errors``."""
    async def collect(ctx):
        ctx.set(dut.bytes.ready, 1)
        while True:
            await ctx.tick()
            if ctx.get(dut.bytes.valid):
                got.append(ctx.get(dut.bytes.payload))
            if ctx.get(dut.framing_error):
                errors.append(1)
    return collect


# At small divisors the sampling point has a resolution of a quarter bit or worse, so the
# +-3 % baud error is checked at a realistic divisor only.
@pytest.mark.parametrize("divisor,baud_error", [(4, 0.0), (5, 0.0), (16, 0.0), (16, -0.03),
                                                (16, 0.03), (104, -0.035), (104, 0.035)])
def test_rx_decodes_back_to_back_bytes(divisor, baud_error):
    dut = UARTRx(divisor)
    rnd = random.Random(divisor)
    sent = [0x00, 0xFF, 0x55, 0xAA] + [rnd.randrange(256) for _ in range(12)]
    got, errors = [], []

    async def drive(ctx):
        await ctx.tick().repeat(3)
        for b in sent:
            await send_byte(ctx, dut.rx, b, divisor * (1 + baud_error))
        await ctx.tick().repeat(4 * divisor)

    run(dut, drive, processes=[_collector(dut, got, errors)])
    assert got == sent
    assert not errors


def test_rx_framing_error_and_glitch():
    d = 8
    dut = UARTRx(d)
    got, errors = [], []

    async def drive(ctx):
        await ctx.tick().repeat(3)
        await send_byte(ctx, dut.rx, 0x3C, d, stop=0)      # stop bit low: framing error
        ctx.set(dut.rx, 1)
        await ctx.tick().repeat(3 * d)
        ctx.set(dut.rx, 0)                                  # glitch of a quarter bit
        await ctx.tick().repeat(d // 4)
        ctx.set(dut.rx, 1)
        await ctx.tick().repeat(3 * d)
        await send_byte(ctx, dut.rx, 0xC3, d)
        await ctx.tick().repeat(3 * d)

    run(dut, drive, processes=[_collector(dut, got, errors)])
    assert got == [0xC3]
    assert errors == [1]


@pytest.mark.parametrize("divisor", [4, 7])
def test_tx_frames_and_rate(divisor):
    dut = UARTTx(divisor)
    sent = [0x00, 0xFF, 0x12, 0xA5, 0x80]
    got = []
    accept_times = []

    async def feed(ctx):
        t = 0
        for b in sent:
            ctx.set(dut.bytes.payload, b)
            ctx.set(dut.bytes.valid, 1)
            while True:
                ready = ctx.get(dut.bytes.ready)   # before the edge: the handshake
                await ctx.tick()
                t += 1
                if ready:
                    break
            accept_times.append(t)
        ctx.set(dut.bytes.valid, 0)

    async def listen(ctx):
        for _ in sent:
            got.append(await recv_byte(ctx, dut.tx, divisor))

    run(dut, listen, processes=[feed])
    assert got == sent
    gaps = [b - a for a, b in zip(accept_times, accept_times[1:])]
    assert gaps == [10 * divisor] * (len(sent) - 1)    # back to back, 10 bits each


@pytest.mark.parametrize("bad", [3, 0, 2.5])
def test_divisor_checked(bad):
    with pytest.raises(ValueError, match=r"divisor: .* must be an integer >= 4"):
        UARTRx(bad)
    with pytest.raises(ValueError, match=r"divisor: .* must be an integer >= 4"):
        UARTTx(bad)
