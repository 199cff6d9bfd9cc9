"""The portable self-test SoC: queue manager, register file, traffic generator, UART bridge."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out


from fpq.config import Build
from fpq.formats import COUNTER_BITS
from fpq_hdl.queue_manager import QueueManager
from fpq_hdl.register_slice import RegisterSlice
from fpq_hdl.registers import RegisterFile, WRITE_SETUPS, READ_SETUPS

from .traffic_generator import TrafficGenerator, TG_BASE, TG_SIZE
from .uart_bridge import UARTBridge
from .leds import ActivityLEDs

__all__ = ["SelfTestSoC", "LED_NAMES"]

#: What each LED shows, in order (boards with fewer LEDs show the first ones).
LED_NAMES = ["arrivals", "drops", "uart", "heartbeat", "marks", "backlog", "generator on",
             "busy"]


class SelfTestSoC(wiring.Component):
    """Everything a board needs except pins and clocks.

    The UART bridge is the only bus initiator; its bus is registered once on the way to the
    targets and the register file reads in two stages (the bridge waits 3 clocks for read
    data; the generator reads in two stages as well), unless ``optimise="area"``. Bus
    addresses ``TG_BASE`` .. ``TG_BASE + TG_SIZE`` go to the traffic generator, all others to the queue manager's register file
    (``fpq.regmap``); the targets return 0 when not read, so read data is their OR. The
    generator feeds the queue manager's arrival port (through a register slice, for timing,
    unless ``arrival_fifo`` is off) and its departure port, and takes its
    verdicts. The queue manager's time base is this clock: the register file starts it out
    of reset (``restart`` in its second clock), the descriptors carry no time, and a
    configuration for this design is derived with ``tick_hz = clk_freq`` (``monitor.configure``;
    the reset values are ``fpq.Config``'s defaults, for 150 MHz, unless the build fixes
    ``tick_hz``).

    LEDs (``LED_NAMES``): activity is stretched to ``clk_freq / 16`` clocks so a single event is
    visible; the heartbeat blinks at about 1 Hz.

    Parameters
    ----------
    build : fpq.Build
    clk_freq : float
        Clock frequency in Hz (LED timing, UART divisor).
    baud : int
        UART bit rate; ``clk_freq / baud`` must be at least 4.
    ram_style : str
        Passed to ``QueueManager`` ("generic" or "ecp5").
    verdict_fifo : str
        Passed to ``QueueManager`` ("distributed", or "block" for FPGAs without LUT RAM).
    arrival_fifo : bool
        The register slice between the generator and the arrival port (default on,
        ``fpq_hdl.register_slice``): it keeps the queue manager's ``ready`` out of the
        generator, a path that limits an ECP5 at 80 MHz; on an iCE40 at 15 MHz it would only
        cost logic cells (2 x 113 flip-flops and a multiplexer per bit), so the iCEBreaker
        goes without.
    optimise : str
        Passed to ``QueueManager`` ("speed", or "area" for a small FPGA at a low clock);
        "area" also leaves out the bus register between the bridge and the targets, reads
        the register file in one stage, its constant words from a ROM (``RegisterFile``'s
        ``const_rom``), and builds the traffic generator's range checks without carry
        chains.
    counter_bits : int
        Passed to ``QueueManager``: the bits its statistics counters count (default
        ``COUNTER_BITS``, 64).

    Attributes
    ----------
    rx : In(1), tx : Out(1)
        UART lines.
    leds : Out(8)
    """

    def __init__(self, build=None, clk_freq=12e6, baud=115200, ram_style="generic",
                 verdict_fifo="distributed", arrival_fifo=True, optimise="speed",
                 counter_bits=COUNTER_BITS):
        self.build = build or Build()
        self.clk_freq = clk_freq
        self.baud = baud
        self.divisor = int(round(clk_freq / baud))
        if self.divisor < 4:
            raise ValueError(f"baud: {baud} is too fast for a {clk_freq / 1e6:g} MHz clock; "
                             f"allowed range [1, {int(clk_freq // 4)}]")
        self.ram_style = ram_style
        self.arrival_fifo = arrival_fifo
        self.qm = QueueManager(self.build, ram_style=ram_style, verdict_fifo=verdict_fifo,
                               optimise=optimise, counter_bits=counter_bits)
        # optimise="speed": the bus is registered once between the bridge and the targets
        # (decode and fan-out out of the queue manager's clock-critical paths), and the
        # register file's read multiplexer is two registered stages (on the ULX3S its one
        # stage was the critical path at 75 MHz): reads take 3
        # clocks. "area" (a small FPGA at a low clock): neither, reads take 1
        speed = optimise == "speed"
        # the bridge sets a write's address and data clocks before it writes (UARTBridge):
        # (SETUP): with "speed" the register file decodes them as many clocks ahead as it
        # can (write_setup, read_setup; the bus register delays w_en and r_en with them)
        self.regs = RegisterFile(
            self.build, const_rom=not speed, read_latency=2 if speed else 1,
            write_setup=min(UARTBridge.SETUP, max(WRITE_SETUPS)) if speed else 0,
            read_setup=min(UARTBridge.SETUP, max(READ_SETUPS)) if speed else 0)
        self.tg = TrafficGenerator(optimise, read_latency=self.regs.read_latency)
        self.bus_register = speed
        self.bridge = UARTBridge(self.divisor, read_latency=int(self.bus_register)
                                 + self.regs.read_latency)
        super().__init__({"rx": In(1, init=1), "tx": Out(1, init=1), "leds": Out(8)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.qm = self.qm
        m.submodules.regs = self.regs
        m.submodules.tg = self.tg
        m.submodules.bridge = self.bridge
        self._core(m)
        self._bus_decode(m)
        self._leds(m)
        return m

    def _core(self, m):
        """The register file and the generator on the queue manager's ports."""
        qm, regs, tg = self.qm, self.regs, self.tg
        # register file <-> queue manager: ports of the same names
        for name, member in regs.signature.members.items():
            if name == "bus":
                continue
            a, b = getattr(regs, name), getattr(qm, name)
            m.d.comb += (b.eq(a) if member.flow == wiring.Out else a.eq(b))

        # A register slice keeps the queue manager's arrival ready (credit, wipe, the
        # register file's hold) out of the generator, and puts one LUT level between it and
        # the flip-flops it enables (a FIFO's pointers and level take several); the
        # descriptor comes from flip-flops into the queue manager's first stage.
        if self.arrival_fifo:
            m.submodules.arrival_slice = af = RegisterSlice(qm.arrivals.payload.shape())
            wiring.connect(m, tg.arrivals, af.i)
            wiring.connect(m, af.o, qm.arrivals)
        else:
            wiring.connect(m, tg.arrivals, qm.arrivals)
        wiring.connect(m, tg.departures, qm.departures)
        wiring.connect(m, qm.verdicts, tg.verdicts)

    def _bus_decode(self, m):
        """The UART bridge on the serial lines, and its bus to its two targets: the
        generator's range to the generator, every other address to the register file
        (registered once with ``optimise="speed"``); the read data their OR."""
        regs, tg, br = self.regs, self.tg, self.bridge
        m.d.comb += [br.rx.eq(self.rx), self.tx.eq(br.tx)]
        bus = br.bus
        # the generator's range, a power of two aligned on its size: an equality of the
        # address's high bits (no compare chains)
        assert TG_SIZE & (TG_SIZE - 1) == 0 and TG_BASE % TG_SIZE == 0
        to_tg = bus.addr[TG_SIZE.bit_length() - 1:] == TG_BASE // TG_SIZE
        domain = m.d.sync if self.bus_register else m.d.comb
        if self.bus_register:
            # decided from the address a clock ahead (the bridge sets it ``SETUP`` clocks
            # before an access), so the targets' enables are one gate after registers
            to_tg_r = Signal(name="to_tg")
            m.d.sync += to_tg_r.eq(to_tg)
            to_tg = to_tg_r
        for target, sel in ((tg.bus, to_tg), (regs.bus, ~to_tg)):
            domain += [target.w_en.eq(bus.w_en & sel), target.r_en.eq(bus.r_en & sel)]
        # the generator's copy of the address and data taken only for its own range: a copy
        # loaded every clock, as the register file's is, would be merged with it by Yosys
        # into one set of flip-flops, and the two targets' decodes shared across the chip
        with m.If(to_tg if self.bus_register else C(1, 1)):
            domain += [tg.bus.addr.eq(bus.addr), tg.bus.w_data.eq(bus.w_data)]
        domain += [regs.bus.addr.eq(bus.addr), regs.bus.w_data.eq(bus.w_data)]
        # the generator reads with the register file's latency, so that both answer in the
        # same clock (each gives 0 when it is not read)
        m.d.comb += bus.r_data.eq(tg.bus.r_data | regs.bus.r_data)

    def _leds(self, m):
        """The LEDs of ``LED_NAMES``: activity stretched, the heartbeat, levels."""
        tg, br, qm = self.tg, self.bridge, self.qm
        m.submodules.leds = leds = ActivityLEDs(4, stretch=max(int(self.clk_freq) // 16, 2),
                                                beat=max(int(self.clk_freq) // 2, 2))
        m.d.comb += leds.events.eq(Cat(tg.arrival_pulse, tg.drop_pulse, br.active,
                                       tg.mark_pulse))
        m.d.sync += self.leds.eq(Cat(
            leds.leds[0], leds.leds[1], leds.leds[2], leds.heartbeat, leds.leds[3],
            tg.backlog_nonzero, tg.enabled, qm.busy))
