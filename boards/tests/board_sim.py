"""Shared helpers for the board tests: run a component in Amaranth's simulator, drive and
sample a UART line bit by bit (independently of ``fpq_boards.sim_port``)."""

from amaranth.sim import Simulator

async def _ticks(ctx, n):
    """``n`` clock edges with plain awaits (``tick().repeat()`` runs an async generator that
    cannot be closed cleanly when an unfinished simulation is garbage-collected)."""
    for _ in range(n):
        await ctx.tick()



def run(dut, *testbenches, processes=(), cycles_limit=None, vcd=None):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    for tb in testbenches:
        sim.add_testbench(tb)
    for p in processes:
        sim.add_testbench(p, background=True)
    if vcd:
        with sim.write_vcd(vcd):
            sim.run()
    else:
        sim.run()


async def send_byte(ctx, line, byte, clocks_per_bit, stop=1):
    """Drive one 8N1 character; ``clocks_per_bit`` may be fractional (baud error)."""
    bits = [0] + [(byte >> i) & 1 for i in range(8)] + [stop]
    t = 0.0
    done = 0
    for b in bits:
        ctx.set(line, b)
        t += clocks_per_bit
        n = int(round(t)) - done
        await _ticks(ctx, n)
        done += n
    ctx.set(line, 1)


async def recv_byte(ctx, line, clocks_per_bit, max_wait=100000):
    """Wait for a start bit on ``line`` and decode one character; None if none comes or the
    stop bit is low."""
    waited = 0
    while ctx.get(line):
        await ctx.tick()
        waited += 1
        if waited > max_wait:
            return None
    await _ticks(ctx, clocks_per_bit // 2)
    assert ctx.get(line) == 0, "start bit too short"
    value = 0
    for i in range(8):
        await _ticks(ctx, clocks_per_bit)
        value |= ctx.get(line) << i
    await _ticks(ctx, clocks_per_bit)
    return value if ctx.get(line) else None
