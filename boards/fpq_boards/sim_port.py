"""A serial port whose other end is RTL in Amaranth's simulator, bit by bit.

``SimulatedPort(dut)`` behaves like a pyserial ``Serial`` for ``BusClient`` and the monitor:
``write`` queues bytes that a simulated host UART sends on ``dut.rx`` at ``dut.divisor``
clocks per bit; ``read(n)`` runs the simulation until ``n`` bytes have been decoded from
``dut.tx`` or ``timeout`` bit times have passed (then it returns fewer, as pyserial does).
The host side of the tests and of ``fpq board monitor --simulate`` thus talks to the real
UART bridge, bus and queue manager, with real 8N1 framing in between. ``probes`` are more
background testbenches in the same simulation (a test's recorder of internal ports).
"""

from collections import deque

from amaranth.sim import Simulator

async def _ticks(ctx, n):
    """``n`` clock edges with plain awaits (``tick().repeat()`` runs an async generator that
    cannot be closed cleanly when an unfinished simulation is garbage-collected)."""
    for _ in range(n):
        await ctx.tick()


__all__ = ["SimulatedPort"]

_PERIOD = 1e-6          # simulated clock period; only ratios matter


class SimulatedPort:
    def __init__(self, dut, divisor=None, timeout_bits=400, rx="rx", tx="tx", vcd=None,
                 probes=()):
        self.dut = dut
        self.divisor = divisor or dut.divisor
        self.timeout_bits = timeout_bits
        self._rx, self._tx = getattr(dut, rx), getattr(dut, tx)
        self._out = deque()            # host -> device bytes not yet sent
        self._in = deque()             # device -> host bytes decoded
        self._peeks = deque()          # (signal, result list) for peek()
        self.cycles = 0
        self.sim = Simulator(dut)
        self.sim.add_clock(_PERIOD)
        self.sim.add_testbench(self._sender, background=True)
        self.sim.add_testbench(self._receiver, background=True)
        for probe in probes:
            self.sim.add_testbench(probe, background=True)
        self._vcd = None
        if vcd:
            self._vcd = self.sim.write_vcd(vcd)
            self._vcd.__enter__()
        self.garbage = None            # a test may inject a callable(byte) -> byte

    async def _sender(self, ctx):
        ctx.set(self._rx, 1)
        while True:
            while self._peeks:
                signal, box = self._peeks.popleft()
                box.append(ctx.get(signal))
            if not self._out:
                await _ticks(ctx, self.divisor)    # idle: poll once a bit time
                continue
            byte = self._out.popleft()
            for bit in [0] + [(byte >> i) & 1 for i in range(8)] + [1]:
                ctx.set(self._rx, bit)
                await _ticks(ctx, self.divisor)

    async def _receiver(self, ctx):
        d = self.divisor
        while True:
            if ctx.get(self._tx):
                await ctx.negedge(self._tx)             # the start bit (no polling)
            await _ticks(ctx, d // 2)         # middle of the start bit
            if ctx.get(self._tx):
                continue
            byte = 0
            for i in range(8):
                await _ticks(ctx, d)
                byte |= ctx.get(self._tx) << i
            await _ticks(ctx, d)
            if ctx.get(self._tx):                   # stop bit; else framing error: drop
                self._in.append(byte)

    def _run(self, cycles):
        self.cycles += cycles
        self.sim.run_until(self.cycles * _PERIOD)

    def peek(self, signal):
        """The value of any signal of the design (between two bytes sent)."""
        box = []
        self._peeks.append((signal, box))
        while not box:
            self._run(self.divisor)
        return box[0]

    def run_cycles(self, cycles):
        """Let the design run (e.g. the traffic generator) with no host traffic."""
        self._run(cycles)

    # ---- the pyserial subset ------------------------------------------------------------
    @property
    def in_waiting(self):
        return len(self._in)

    def write(self, data):
        for b in bytes(data):
            self._out.append(self.garbage(b) if self.garbage else b)
        return len(data)

    def read(self, n=1):
        budget = self.timeout_bits * self.divisor
        step = 10 * self.divisor
        spent = 0
        while len(self._in) < n and spent < budget:
            self._run(step)
            spent += step
        return bytes(self._in.popleft() for _ in range(min(n, len(self._in))))

    def reset_input_buffer(self):
        # like a host that waits out the bridge's idle timeout before flushing
        from .protocol import IDLE_TIMEOUT_BITS
        while self._out:
            self._run(10 * self.divisor)
        self._run((IDLE_TIMEOUT_BITS + 20) * self.divisor)
        self._in.clear()

    def close(self):
        if self._vcd:
            self._vcd.__exit__(None, None, None)
            self._vcd = None
