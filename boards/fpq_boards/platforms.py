"""Thin board wrappers: clock (PLL), reset, UART pins, LEDs around ``SelfTestSoC``.

Each board has a ``BoardSpec``: the amaranth-boards platform, the build-time configuration
that fits its FPGA, the PLL clock, and the timing goal from issue 7 (ULX3S: 150 MHz, 100 GbE
minimum frames at one verdict per clock; iCEBreaker: 14.88 MHz, 10 GbE minimum frames).

The PLL clock is one the routed design meets, so that a board owner's bitstream works: the
ULX3S runs at 150 MHz, above its goal, and its build places and routes with further seeds
while timing is missed (``BoardSpec.retry_seeds``); ``--clk-mhz`` sets any clock."""

import dataclasses
from dataclasses import dataclass, field
import functools

from amaranth import *
from amaranth.lib.cdc import ResetSynchronizer

from fpq.config import Build, Config
from fpq.register_specs import register_fields
from fpq.formats import COUNTER_BITS

from .soc import SelfTestSoC

__all__ = ["BoardSpec", "BOARDS", "ICEBREAKER_SIZES", "ICEBREAKER_FIXED", "ICEBREAKER_RUNTIME",
           "ICEBREAKER_MHZ", "ICE40_COUNTER_BITS", "at_clock",
           "ice40_pll", "ecp5_pll", "OSCILLATOR_MHZ", "board_pll", "clock_range_mhz",
           "BoardTop"]


@dataclass(frozen=True)
class BoardSpec:
    name: str
    platform: str             # class name in amaranth_boards.<module>
    module: str
    family: str               # "ecp5" or "ice40"
    build: Build
    clk_mhz: float            # PLL output, the design clock
    goal_mhz: float           # the minimum
    goal_text: str
    capacity: dict = field(default_factory=dict)   # nextpnr cell name -> (label, available)
    # nextpnr seeds tried in turn after the build's seed while timing is missed (the netlist kept)
    retry_seeds: tuple = ()

    def make_platform(self):
        import importlib
        return getattr(importlib.import_module(self.module), self.platform)()


#: The iCEBreaker's sizes: the vector and the r(N) table the UP5K's block RAM holds; the flow
#: hash without its keyed non-linear stage (``Build.hash_mix``), which the UP5K has no room
#: for (5664 logic cells of 5280 with it, docs/BENCHMARKS.md "Boards"): plain Toeplitz under
#: the build's secret key (docs/RELIABILITY.md, "Colliding flows under secret keys").
ICEBREAKER_SIZES = Build(vec_bits=1024, table_depth=256, hash_mix=False)
#: The iCEBreaker's clock: above the 14.88 Mpkt/s of 10 GbE minimum frames and below what
#: the UP5K design routes at (docs/BENCHMARKS.md, "Boards"; the area-style decision's
#: occupancy, carry chains in series, is its path).
ICEBREAKER_MHZ = 15.0
#: Fields that stay runtime on the iCEBreaker: the r(N) table's host fields (they only say
#: what the host writes into the table, which stays runtime).
ICEBREAKER_RUNTIME = ("p_pkts", "lt_plus_one", "lc_correction")
#: The iCEBreaker's build fixes every other field a configuration register of its build is
#: computed from (``fpq.register_specs.register_fields``: not the float model's own fields, nor
#: ``hash_mix_key``, whose register the build lacks), so that every configuration register
#: is a constant (``fpq.register_specs.RegisterSpec.fixed_in``): ``avg_tau_s`` and ``tick_hz``
#: together fix ``wq_shift`` and ``avg_sample_period``, ``t_clear_s`` with them
#: ``clear_period`` and ``rekey_hold``. Without fixing them the design does not fit the UP5K
#: (docs/history/design-log.md). A board owner picks other values at build time (``fpq board
#: build icebreaker --fix mode=red --fix ...``, repeating the others, or a BoardSpec of its own);
#: the bus still reads them all but the key (write-only, reads 0).
#: The key here is ``Config``'s public default, a placeholder only: ``build_board`` fixes
#: the key of the build command (``fpq board build icebreaker --key HEX``) or one drawn from
#: the operating system in its place, never this one.
#: ``tick_hz`` is the board clock (the queue manager's time base): ``BoardTop`` replaces it
#: with the PLL's clock when the build runs at another one (``at_clock``).
ICEBREAKER_FIXED = {name: Config(build=ICEBREAKER_SIZES,
                                 tick_hz=ICEBREAKER_MHZ * 1e6).values[name]
                    for name in register_fields(ICEBREAKER_SIZES)
                    if name not in ICEBREAKER_RUNTIME}

#: The iCE40 builds' statistics counters: 44 bits (``QueueManager``'s ``counter_bits``), 2**44
#: events are 13.6 days at one per clock at 15 MHz (the self-test generator's default, an
#: arrival every 4 clocks: 54 days); each bit less saves about 10 logic cells on the UP5K
#: (the counters' and the bus read multiplexer's). At 48 bits the design took 5263 and 5279
#: of the 5280 cells with two random keys (a fixed key's set bits are the Toeplitz's XOR
#: inputs, so the count moves with the key): too close to fit every key.
ICE40_COUNTER_BITS = 44

#: The ULX3S's seeds after seed 1: at 150 MHz the routed design's Fmax moves by about 10 %
#: from seed to seed (docs/BENCHMARKS.md, "Boards"), so a build places and routes again until
#: one meets the clock.
ULX3S_RETRY_SEEDS = (2, 3, 4, 5, 6, 7)

BOARDS = {
    "ulx3s": BoardSpec("ulx3s", "ULX3S_85F_Platform", "amaranth_boards.ulx3s", "ecp5",
                       Build(vec_bits=8192, table_depth=8192), 150.0, 148.8,
                       "100 GbE minimum frames: 148.8 Mpkt/s at one verdict per clock",
                       retry_seeds=ULX3S_RETRY_SEEDS),
    "icebreaker": BoardSpec("icebreaker", "ICEBreakerPlatform", "amaranth_boards.icebreaker",
                            "ice40",
                            dataclasses.replace(ICEBREAKER_SIZES, fixed=ICEBREAKER_FIXED),
                            ICEBREAKER_MHZ, 14.88,
                            "10 GbE minimum frames: 14.88 Mpkt/s at one verdict per clock"),
}


def at_clock(build, clk_hz):
    """``build`` for a self-test design clocked at ``clk_hz``: the queue manager's time base
    is its clock, so a fixed ``tick_hz`` becomes ``clk_hz`` (and the registers derived from
    it, ``clear_period``, ``wq_shift``, ``avg_sample_period``, ``rekey_hold``, follow)."""
    fixed = build.fixed_fields
    if "tick_hz" not in fixed or fixed["tick_hz"] == clk_hz:
        return build
    return dataclasses.replace(build, fixed=dict(fixed, tick_hz=clk_hz))


def _ice40_settings(f_in_mhz):
    """Every SB_PLL40 setting within the iCE40 limits (PFD 10-133 MHz, VCO 533-1066 MHz):
    (DIVR, DIVF, DIVQ, FILTER_RANGE, output MHz), in icepll's search order."""
    for divr in range(16):
        pfd = f_in_mhz / (divr + 1)
        if not 10 <= pfd <= 133:
            continue
        filt = 1 + next(i for i, hi in enumerate((17, 26, 44, 66, 101, 1e9)) if pfd < hi)
        for divf in range(128):
            vco = pfd * (divf + 1)
            if not 533 <= vco <= 1066:
                continue
            for divq in range(1, 7):
                yield divr, divf, divq, filt, vco / (1 << divq)


def _ecp5_settings(f_in_mhz):
    """EHXPLLL settings (PFD >= 3.125 MHz, VCO 400-800 MHz, feedback from CLKOP), the
    smallest CLKOP_DIV for each input and feedback divider, as ecppll: (CLKI_DIV,
    CLKFB_DIV, CLKOP_DIV, output MHz)."""
    for clki in range(1, 129):
        pfd = f_in_mhz / clki
        if pfd < 3.125:
            break
        for fb in range(1, 81):
            f = pfd * fb
            for op in range(1, 129):
                if 400 <= f * op <= 800:
                    yield clki, fb, op, f
                    break


def _closest(settings, f_out_mhz):
    """The first of ``settings`` whose output (the last item) is closest to ``f_out_mhz``."""
    best = None
    for s in settings:
        if best is None or abs(s[-1] - f_out_mhz) < abs(best[-1] - f_out_mhz):
            best = s
    return best


def ice40_pll(f_in_mhz, f_out_mhz):
    """SB_PLL40 settings (DIVR, DIVF, DIVQ, FILTER_RANGE, achieved MHz) closest to
    ``f_out_mhz``, within the iCE40 limits (PFD 10-133 MHz, VCO 533-1066 MHz), as icepll."""
    best = _closest(_ice40_settings(f_in_mhz), f_out_mhz)
    if best is None:
        raise ValueError(f"clk_mhz: no iCE40 PLL setting for {f_out_mhz} MHz "
                         f"from {f_in_mhz} MHz")
    return best


def ecp5_pll(f_in_mhz, f_out_mhz):
    """EHXPLLL settings (CLKI_DIV, CLKFB_DIV, CLKOP_DIV, achieved MHz) closest to
    ``f_out_mhz`` (PFD >= 3.125 MHz, VCO 400-800 MHz), feedback from CLKOP, as ecppll."""
    best = _closest(_ecp5_settings(f_in_mhz), f_out_mhz)
    if best is None:
        raise ValueError(f"clk_mhz: no ECP5 PLL setting for {f_out_mhz} MHz")
    return best


#: The boards' oscillators (MHz), the PLLs' inputs: iCEBreaker 12 MHz, ULX3S 25 MHz.
OSCILLATOR_MHZ = {"ice40": 12.0, "ecp5": 25.0}


def board_pll(spec, clk_mhz):
    """The PLL setting of ``spec``'s board closest to ``clk_mhz``; its last item is the
    clock it gives (MHz)."""
    pll = ice40_pll if spec.family == "ice40" else ecp5_pll
    return pll(OSCILLATOR_MHZ[spec.family], clk_mhz)


@functools.cache
def clock_range_mhz(family):
    """The lowest and the highest clock (MHz) the board PLL of ``family`` ("ice40" or
    "ecp5") makes from its board's oscillator within the PLL's limits: the range of
    ``fpq board build --clk-mhz``."""
    settings = _ice40_settings if family == "ice40" else _ecp5_settings
    outputs = [s[-1] for s in settings(OSCILLATOR_MHZ[family])]
    return min(outputs), max(outputs)


class BoardTop(Elaboratable):
    """The board: PLL from the board oscillator, reset held until the PLL locks, the SoC
    in domain ``sync``, UART and LEDs on the board's pins (as many LEDs as it has)."""

    def __init__(self, spec, build=None, clk_mhz=None, baud=115200):
        self.spec = spec
        self.build = build or spec.build
        self.clk_mhz = spec.clk_mhz if clk_mhz is None else clk_mhz
        self.pll = board_pll(spec, self.clk_mhz)
        self.f_mhz = self.pll[-1]
        self.build = at_clock(self.build, self.f_mhz * 1e6)
        self.baud = baud
        # the iCE40 has no LUT RAM: its verdict FIFO goes to block RAM (a clock more latency);
        # the UP5K is small and its clock low: area before speed, and 44-bit statistics
        # counters (ICE40_COUNTER_BITS)
        ecp5 = spec.family == "ecp5"
        self.soc = SelfTestSoC(self.build, clk_freq=self.f_mhz * 1e6, baud=baud,
                               ram_style="ecp5" if ecp5 else "generic",
                               verdict_fifo="distributed" if ecp5 else "block",
                               arrival_fifo=ecp5, optimise="speed" if ecp5 else "area",
                               counter_bits=COUNTER_BITS if ecp5 else ICE40_COUNTER_BITS)

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = cd_sync = ClockDomain("sync")
        clk = Signal(name="pll_clk")
        locked = Signal(name="pll_locked")
        if self.spec.family == "ice40":
            divr, divf, divq, filt, _ = self.pll
            clk_pin = platform.request("clk12", dir="-")
            m.submodules.pll = Instance(
                "SB_PLL40_PAD",
                p_FEEDBACK_PATH="SIMPLE", p_DIVR=divr, p_DIVF=divf, p_DIVQ=divq,
                p_FILTER_RANGE=filt,
                i_PACKAGEPIN=clk_pin.io, i_RESETB=1, i_BYPASS=0,
                o_PLLOUTGLOBAL=clk, o_LOCK=locked)
        else:
            clki, fb, op, f = self.pll
            clk25 = platform.request("clk25", dir="i").i
            m.submodules.pll = Instance(
                "EHXPLLL",
                a_FREQUENCY_PIN_CLKI="25", a_FREQUENCY_PIN_CLKOP=f"{f:g}",
                a_ICP_CURRENT="12", a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1",
                a_MFG_GMCREF_SEL="2",
                p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
                p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA",
                p_OUTDIVIDER_MUXB="DIVB", p_OUTDIVIDER_MUXC="DIVC", p_OUTDIVIDER_MUXD="DIVD",
                p_CLKI_DIV=clki, p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=op,
                p_CLKOP_CPHASE=op - 1, p_CLKOP_FPHASE=0, p_FEEDBK_PATH="CLKOP",
                p_CLKFB_DIV=fb,
                i_RST=0, i_STDBY=0, i_CLKI=clk25, o_CLKOP=clk, i_CLKFB=clk,
                i_PHASESEL0=0, i_PHASESEL1=0, i_PHASEDIR=1, i_PHASESTEP=1,
                i_PHASELOADREG=1, i_PLLWAKESYNC=0, i_ENCLKOP=0, o_LOCK=locked)
        m.d.comb += cd_sync.clk.eq(clk)
        if self.spec.family == "ice40":
            # nextpnr-ecp5 derives the PLL output's constraint from the EHXPLLL attributes
            # and the 25 MHz input; the name pll_clk does not survive ECP5 synthesis
            platform.add_clock_constraint(clk, self.f_mhz * 1e6)
        m.submodules.reset_sync = ResetSynchronizer(~locked, domain="sync")

        m.submodules.soc = soc = self.soc
        uart = platform.request("uart", 0)
        m.d.comb += [soc.rx.eq(uart.rx.i), uart.tx.o.eq(soc.tx)]
        if self.spec.family == "ecp5":
            m.d.comb += platform.request("uart_tx_enable", 0).o.eq(1)
        leds = []
        for i in range(8):
            try:
                leds.append(platform.request("led", i).o)
            except Exception:
                break
        for i, led in enumerate(leds):
            m.d.comb += led.eq(soc.leds[i])
        return m
