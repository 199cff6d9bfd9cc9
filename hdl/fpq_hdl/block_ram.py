"""Block RAM with one write port, one read port and a registered output (read latency 2)."""

from amaranth import *
from amaranth.lib import wiring, memory
from amaranth.lib.wiring import In, Out

__all__ = ["BlockRAM", "RAM_STYLES", "ECP5_TILE_DEPTH", "ram_without_rw_check",
           "read_register", "dp16kd_initval"]

RAM_STYLES = ("generic", "ecp5")
#: The words of one of the "ecp5" style's tiles: a DP16KD used as 16384 x 1.
ECP5_TILE_DEPTH = 16384
_INITVAL_ROWS = 64           # INITVAL_00 .. INITVAL_3F, 320 bits each


def ram_without_rw_check(shape, depth, init=()):
    """A memory none of whose reads uses the word written in the same clock (or whose users
    accept either value then), marked ``no_rw_check`` for Yosys; read it with
    ``read_register``. ``init``: its contents at power-on (the first words; the rest 0)."""
    return memory.Memory(shape=shape, depth=depth, init=list(init),
                         attrs={"no_rw_check": 1})


def dp16kd_initval(bits):
    """The ``INITVAL_00`` .. ``INITVAL_3F`` parameters of a DP16KD used as 16384 x 1 whose
    address ``a`` holds ``bits[a]`` (at most 16384 bits; the rest 0), as a dict of
    parameter name to 320-bit integer.

    Why this layout: the 18 Kbit array is 1024 words of 18 bits (two 9-bit halves, bit 8 of
    each the parity bit that the x1 mode does not use), 16 words per INITVAL, each word in
    a 20-bit field with 2 bits of padding. So address ``a`` is bit ``a % 8`` of half
    ``(a >> 3) % 2`` of word ``a >> 4``. It is the layout Yosys's ECP5 memory mapping writes
    (``techlibs/lattice/brams_map_16kd.v`` over ``memory_libmap``'s 9-bit units), and the
    one nextpnr reads back into the bitstream."""
    if len(bits) > ECP5_TILE_DEPTH:
        raise ValueError(f"bits: {len(bits)} values do not fit a DP16KD's {ECP5_TILE_DEPTH}")
    rows = [0] * _INITVAL_ROWS
    for a, bit in enumerate(bits):
        if bit:
            word, half, pos = a >> 4, (a >> 3) & 1, a & 7
            rows[word >> 4] |= 1 << (20 * (word & 15) + 9 * half + pos)
    return {f"INITVAL_{i:02X}": v for i, v in enumerate(rows)}


def read_register(m, mem, addr, en=None):
    """A read of ``mem`` at ``addr`` into a register (loaded when ``en``; every clock if
    None), returned; it has no reset, as a RAM's own output register has none.

    Why an asynchronous read and a register, not a synchronous read port: Yosys merges the
    register into a synchronous read port (``memory_dff``), and only then honours
    ``no_rw_check`` (``ram_without_rw_check``). A synchronous read port as written gets its
    read-first emulation on the iCE40 instead, a register and a multiplexer per bit: a
    129-bit ``DelayLine`` alone took 270 flip-flops and 143 LUTs that way, 6 and 135 this
    way (the LUTs emulate the register's initial value)."""
    rp = mem.read_port(domain="comb")
    reg = Signal(rp.data.shape(), reset_less=True)
    m.d.comb += rp.addr.eq(addr)
    if en is None:
        m.d.sync += reg.eq(rp.data)
    else:
        with m.If(en):
            m.d.sync += reg.eq(rp.data)
    return reg


class BlockRAM(wiring.Component):
    """Simple dual-port RAM, read latency 2: ``r_addr`` at clock t, ``r_data`` at t + 2.

    Why latency 2: an ECP5 block RAM (DP16KD) without its output register has a clock-to-out
    of about 5.8 ns (nextpnr's model, speed 6), which alone nearly fills a 150 MHz cycle; with
    the output register (``REGMODE = OUTREG``) the data leaves a flip-flop. Yosys does not
    infer that register, so ``style="ecp5"`` instantiates DP16KD primitives (16384 x 1 tiles,
    port A writes, port B reads) and ``style="generic"`` is a portable Amaranth memory read
    into two registers, with the same timing (used in simulation, the Verilog export and
    iCE40, where the first is the block RAM's own).

    Reads are not transparent: a read in the same clock as a write to the same address may
    return either value, so users forward writes of the two previous clocks (FlowCounter).

    Power-on contents: ``init`` (0 where it stops), as the memory's initial contents in the
    generic style (the exported Verilog's ``initial`` block, the iCE40's ``SB_RAM40_4K``
    INIT through Yosys) and as the DP16KD tiles' ``INITVAL_xx`` parameters in the "ecp5"
    style (``dp16kd_initval``). A reset does not reload them: they are the contents of the
    configured FPGA, as a RAM keeps its contents across a reset.

    Parameters
    ----------
    width, depth : int
    style : "generic" or "ecp5"
    init : sequence of int
        Words for addresses 0, 1, ..., each in ``[0, 2**width)``, at most ``depth`` of them
        (default none: all 0).

    Attributes
    ----------
    w_en, w_addr, w_data : In
    r_addr : In
    r_data : Out(width)
    """

    def __init__(self, width, depth, style="generic", init=()):
        if style not in RAM_STYLES:
            raise ValueError(f"style: {style!r} must be one of {', '.join(RAM_STYLES)}")
        init = list(init)
        if len(init) > depth:
            raise ValueError(f"init: {len(init)} words do not fit depth {depth}")
        for a, word in enumerate(init):
            if isinstance(word, bool) or not isinstance(word, int) or \
                    not 0 <= word < (1 << width):
                raise ValueError(f"init: word {a} is {word!r}, outside the allowed range "
                                 f"[0, {(1 << width) - 1}] of width {width}")
        self.width, self.depth, self.style = width, depth, style
        self.init = init
        abits = max(1, (depth - 1).bit_length())
        super().__init__({"w_en": In(1), "w_addr": In(abits), "w_data": In(width),
                          "r_addr": In(abits), "r_data": Out(width)})

    def elaborate(self, platform):
        m = Module()
        if self.style == "generic":
            # the "either value" rule above is what ``ram_without_rw_check`` asks
            m.submodules.mem = mem = ram_without_rw_check(self.width, self.depth, self.init)
            wp = mem.write_port()
            m.d.comb += [wp.en.eq(self.w_en), wp.addr.eq(self.w_addr),
                         wp.data.eq(self.w_data)]
            m.d.sync += self.r_data.eq(read_register(m, mem, self.r_addr))
            return m
        rows = (self.depth + ECP5_TILE_DEPTH - 1) // ECP5_TILE_DEPTH
        row_sel = self.r_addr[14:] if rows > 1 else C(0, 1)
        row_d1, row_d2 = Signal.like(row_sel), Signal.like(row_sel)
        m.d.sync += [row_d1.eq(row_sel), row_d2.eq(row_d1)]
        outs = []
        for r in range(rows):
            w_row = (self.w_addr[14:] == r) if rows > 1 else C(1, 1)
            col = Signal(self.width, name=f"row{r}")
            outs.append(col)
            for c in range(self.width):
                ports = dict(
                    p_DATA_WIDTH_A=1, p_DATA_WIDTH_B=1, p_REGMODE_A="NOREG",
                    p_REGMODE_B="OUTREG", p_RESETMODE="SYNC", p_CSDECODE_A="0b000",
                    p_CSDECODE_B="0b000", p_WRITEMODE_A="NORMAL", p_WRITEMODE_B="NORMAL",
                    p_GSR="DISABLED",
                    i_CLKA=ClockSignal(), i_CLKB=ClockSignal(), i_CEA=1, i_CEB=1,
                    i_OCEA=1, i_OCEB=1, i_RSTA=0, i_RSTB=0, i_WEA=self.w_en & w_row, i_WEB=0,
                    i_CSA0=0, i_CSA1=0, i_CSA2=0, i_CSB0=0, i_CSB1=0, i_CSB2=0,
                    i_DIA0=self.w_data[c], o_DOB0=col[c])
                # the tile's power-on contents: bit c of the words of this row's addresses
                words = self.init[r * ECP5_TILE_DEPTH:(r + 1) * ECP5_TILE_DEPTH]
                if any(words):
                    ports.update({f"p_{k}": Const(v, 320) for k, v in
                                  dp16kd_initval([w >> c & 1 for w in words]).items()})
                for i in range(14):
                    ports[f"i_ADA{i}"] = self.w_addr[i] if i < len(self.w_addr) else 0
                    ports[f"i_ADB{i}"] = self.r_addr[i] if i < len(self.r_addr) else 0
                m.submodules[f"bram_{r}_{c}"] = Instance("DP16KD", **ports)
        m.d.comb += self.r_data.eq(Array(outs)[row_d2] if rows > 1 else outs[0])
        return m
