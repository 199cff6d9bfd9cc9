"""Unsigned multiplier with registered inputs and output (one ECP5 DSP, latency 2)."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Multiplier", "MULT_STYLES"]

MULT_STYLES = ("generic", "ecp5")
_DSP_WIDTH = 18


class Multiplier(wiring.Component):
    """``p = a * b`` (unsigned), ``a`` and ``b`` at clock t, ``p`` at clock t + 2.

    Why registered inside the DSP: an ECP5 ``MULT18X18D`` without its registers is a
    combinational block of about 4 ns in nextpnr's model (speed 6), which with the routing
    into and out of it fills a 150 MHz cycle; Yosys maps ``a * b`` between fabric registers
    to such a DSP and does not move the registers into it. ``style="ecp5"`` instantiates
    ``MULT18X18D`` with its input registers (A, B) and its output register, so the multiply
    runs between two DSP-internal registers and only routing sits on each side.
    ``style="generic"`` is the same registers and product in portable Amaranth (simulation,
    the Verilog export, iCE40), clock for clock identical, except that its registers have no
    reset: Yosys's iCE40 DSP mapping moves registers without a reset into the ``SB_MAC16``
    (on the iCEBreaker design: about 470 logic cells and 4 of the 8 DSPs fewer than with a
    reset), and nothing downstream uses a product that no valid operand produced.

    The registers replace the ones a user would put on the operands and on the product, so
    a multiply stage costs no clock more than with fabric registers.

    Parameters
    ----------
    a_width, b_width : int
        Operand widths, at most 18 each (one ``MULT18X18D``).
    style : "generic" or "ecp5"

    Attributes
    ----------
    a : In(a_width)
    b : In(b_width)
    p : Out(a_width + b_width)
        ``a * b`` of two clocks earlier. Reset: 0 with ``style="ecp5"``; with "generic" the
        registers keep their contents, so ``p`` is undefined for two clocks after a reset.
    """

    LATENCY = 2

    def __init__(self, a_width, b_width, style="generic"):
        if style not in MULT_STYLES:
            raise ValueError(f"style: {style!r} must be one of {', '.join(MULT_STYLES)}")
        for name, w in (("a_width", a_width), ("b_width", b_width)):
            if not 1 <= w <= _DSP_WIDTH:
                raise ValueError(f"{name}: {w} must be in [1, {_DSP_WIDTH}]")
        self.a_width, self.b_width, self.style = a_width, b_width, style
        super().__init__({"a": In(a_width), "b": In(b_width), "p": Out(a_width + b_width)})

    def elaborate(self, platform):
        m = Module()
        if self.style == "generic":
            a_r = Signal.like(self.a, reset_less=True)
            b_r = Signal.like(self.b, reset_less=True)
            p_r = Signal.like(self.p, reset_less=True)
            m.d.sync += [a_r.eq(self.a), b_r.eq(self.b), p_r.eq(a_r * b_r)]
            m.d.comb += self.p.eq(p_r)
            return m
        p = Signal(2 * _DSP_WIDTH)
        ports = dict(
            p_REG_INPUTA_CLK="CLK0", p_REG_INPUTA_CE="CE0", p_REG_INPUTA_RST="RST0",
            p_REG_INPUTB_CLK="CLK0", p_REG_INPUTB_CE="CE0", p_REG_INPUTB_RST="RST0",
            p_REG_INPUTC_CLK="NONE", p_REG_PIPELINE_CLK="NONE",
            p_REG_OUTPUT_CLK="CLK0", p_REG_OUTPUT_CE="CE0", p_REG_OUTPUT_RST="RST0",
            p_CLK0_DIV="ENABLED", p_CLK1_DIV="ENABLED", p_CLK2_DIV="ENABLED",
            p_CLK3_DIV="ENABLED", p_HIGHSPEED_CLK="NONE", p_GSR="DISABLED",
            p_CAS_MATCH_REG="FALSE", p_SOURCEB_MODE="B_SHIFT", p_MULT_BYPASS="DISABLED",
            p_RESETMODE="SYNC",
            i_SIGNEDA=0, i_SIGNEDB=0, i_SOURCEA=0, i_SOURCEB=0,
            i_CLK0=ClockSignal(), i_CE0=1, i_RST0=ResetSignal(),
        )
        # the unused clock, enable, reset and cascade (SRIA, SRIB) inputs stay unconnected:
        # tied to a constant, nextpnr fails to route some of them (as Yosys's own mapping)
        for i in range(_DSP_WIDTH):
            ports[f"i_A{i}"] = self.a[i] if i < self.a_width else 0
            ports[f"i_B{i}"] = self.b[i] if i < self.b_width else 0
            ports[f"i_C{i}"] = 0
        for i in range(2 * _DSP_WIDTH):
            ports[f"o_P{i}"] = p[i]
        m.submodules.dsp = Instance("MULT18X18D", **ports)
        m.d.comb += self.p.eq(p[:len(self.p)])
        return m
