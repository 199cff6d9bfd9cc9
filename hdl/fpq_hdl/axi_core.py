"""The queue manager as a core to drop into a design: AXI-Stream ports, the register file
(``fpq_hdl.registers.RegisterFile``) behind AXI4-Lite or Wishbone, exported as one flat
Verilog module whose every name is free of Verilog and SystemVerilog keywords, and a
SystemVerilog package of its payload structs and register addresses (``fpq verilog``)."""

import re

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpq.regmap import (address_constants, ID_VALUE, CONTROL_COMMIT, CONTROL_CLEAR_ERRORS,
                        STATUS_BITS, STATUS_REJECT_INDEX_SHIFT)

from .layouts import arrival_layout, DEPARTURE, VERDICT
from .queue_manager import QueueManager, LATENCY, FIFO_DEPTH
from .registers import RegisterFile, ADDR_BITS, WRITE_SETUPS
from .block_ram import RAM_STYLES

__all__ = ["BUSES", "TARGETS", "FPQCore", "tdata_width", "export_verilog", "sv_package",
           "KEYWORDS", "check_names", "rename_bit_select_names", "core_verilog", "key_macro",
           "keys_include", "keys_file", "substitute_keys"]

#: ``FPQCore(bus=...)`` choices: the register file behind AXI4-Lite (``s_axil_*``) or
#: Wishbone B4 classic (``wb_*``), or no register file (the queue manager's own
#: configuration port ``cfg`` and control ports).
BUSES = ("axi-lite", "wishbone", "none")

#: ``export_verilog(target=...)`` choices: "generic" (memories and multipliers for the
#: vendor tool to infer) or a family whose primitives the export instantiates (a block RAM's
#: output register, which Yosys's inference does not use, takes the RAM's clock-to-out off
#: the fabric's paths).
TARGETS = RAM_STYLES

#: AXI response codes (``bresp``/``rresp``).
_OKAY, _SLVERR = 0b00, 0b10

#: Verilog-2005 and SystemVerilog-2017 keywords: no port, module or package of the export may
#: be named after one (``config`` is one: ``.config(cfg)`` does not parse in Verilator).
KEYWORDS = frozenset("""
accept_on alias always always_comb always_ff always_latch and assert assign assume automatic
before begin bind bins binsof bit break buf bufif0 bufif1 byte case casex casez cell chandle
checker class clocking cmos config const constraint context continue cover covergroup
coverpoint cross deassign default defparam design disable dist do edge else end endcase
endchecker endclass endclocking endconfig endfunction endgenerate endgroup endinterface
endmodule endpackage endprimitive endprogram endproperty endspecify endsequence endtable
endtask enum event eventually expect export extends extern final first_match for force
foreach forever fork forkjoin function generate genvar global highz0 highz1 if iff ifnone
ignore_bins illegal_bins implements implies import incdir include initial inout input inside
instance int integer interconnect interface intersect join join_any join_none large let
liblist library local localparam logic longint macromodule matches medium modport module nand
negedge nettype new nexttime nmos nor noshowcancelled not notif0 notif1 null or output
package packed parameter pmos posedge primitive priority program property protected pull0
pull1 pulldown pullup pulsestyle_ondetect pulsestyle_onevent pure rand randc randcase
randsequence rcmos real realtime ref reg reject_on release repeat restrict return rnmos rpmos
rtran rtranif0 rtranif1 s_always s_eventually s_nexttime s_until s_until_with scalared
sequence shortint shortreal showcancelled signed small soft solve specify specparam static
string strong strong0 strong1 struct super supply0 supply1 sync_accept_on sync_reject_on
table tagged task this throughout time timeprecision timeunit tran tranif0 tranif1 tri tri0
tri1 triand trior trireg type typedef union unique unique0 unsigned until until_with untyped
use uwire var vectored virtual void wait wait_order wand weak weak0 weak1 while wildcard wire
with within wor xnor xor""".split())


def tdata_width(layout):
    """AXI-Stream ``tdata`` bits for a payload ``layout``: its size rounded up to whole bytes
    (the fields from bit 0, the pad bits above them zero on output and ignored on input)."""
    return (layout.size + 7) // 8 * 8


class FPQCore(wiring.Component):
    """The queue manager with AXI-Stream ports and its register file behind a standard bus.

    Streams (AXI-Stream: a transfer in each clock in which ``tvalid`` and ``tready`` are both
    high; the core's ``tready`` never depends on ``tvalid`` in the same clock): ``s_axis_arrival`` carries the build's
    ``arrival_layout`` (``ARRIVAL``; 320 bits of ``tdata`` in an IPv6 build, whose flow key
    is 296 bits, ``Build.flow_key``) in the low bits of ``tdata``, ``s_axis_departure``
    ``DEPARTURE``, ``m_axis_verdict`` ``VERDICT``
    (``tuser`` repeats the verdict's 2-bit ``action``, for a fabric that routes on ``tuser``).
    The field offsets are those of ``fpq_hdl.layouts`` (and of the SystemVerilog package,
    :func:`sv_package`).

    ``bus="axi-lite"``: an AXI4-Lite target, ``s_axil_*``, 20-bit byte addresses, 32-bit
    data. One access at a time (reads and writes alternate when both wait); a write is taken
    when its address and data are both valid. The access is taken into registers and issued
    to the register file from them (its decode then starts at registers, not at the bus's
    handshake): a write's response comes ``WRITE_RESPONSE_CLOCKS`` (5) clocks after its
    handshake, a read's data ``READ_RESPONSE_CLOCKS`` (6) after its. A write with ``wstrb``
    other than ``4'hf``
    writes nothing and answers SLVERR (every register is written as whole words); every other
    access answers OKAY (errors of the map itself are the sticky bits of ``STATUS``).
    ``bus="wishbone"``: a Wishbone B4 classic target, ``wb_*``, 32-bit port and granularity
    (no ``sel``), ``wb_adr`` the word address (byte address bits 19..2); the access is taken
    into registers as AXI4-Lite's is, and ``ack`` (read data with it) comes as many clocks
    after the strobe's first clock as AXI4-Lite's response after its handshake.
    ``bus="none"``: no register file: the queue manager's configuration and control ports
    (``cfg`` for its ``config``; see its docstring) are ports of the core.

    Parameters
    ----------
    build : fpq.Build
    bus : str
        One of :data:`BUSES`.
    ram_style : str
        The queue manager's ``ram_style``: "generic" (default; the exported Verilog, memories
        for the vendor tool to infer) or "ecp5" (DP16KD and MULT18X18D primitives, for the
        project's own ECP5 synthesis, ``python -m fpq_hdl.synth --component axi_core``).
    """

    #: Clocks from an access's handshake (or Wishbone strobe) to its response: the held
    #: access waits ``write_setup`` clocks before a write, ``read_setup`` plus the read
    #: latency for a read, and the response is a register. A read's address decode takes two
    #: registered stages (``read_setup`` 2), so that no stage is more than two LUT levels.
    WRITE_RESPONSE_CLOCKS = 5
    READ_RESPONSE_CLOCKS = 6

    def __init__(self, build, bus="axi-lite", ram_style="generic"):
        if bus not in BUSES:
            raise ValueError(f"bus: {bus!r} is not one of {', '.join(BUSES)}")
        self.build = build
        self.bus = bus
        self.qm = QueueManager(build, ram_style=ram_style)
        # the register file decodes from registers: the bus adapter holds each access's
        # address and data and issues it clocks later (both buses allow any latency: AXI4-Lite
        # by its handshakes, Wishbone by its ack)
        self.rf = (None if bus == "none" else
                   RegisterFile(build, read_latency=2, write_setup=max(WRITE_SETUPS),
                                read_setup=2))
        assert self.rf is None or (
            self.rf.write_setup + 2 == self.WRITE_RESPONSE_CLOCKS and
            self.rf.read_setup + self.rf.read_latency + 2 == self.READ_RESPONSE_CLOCKS)
        self._arrival = arrival_layout(build)
        members = {
            "s_axis_arrival_tdata": In(tdata_width(self._arrival)), "s_axis_arrival_tvalid": In(1),
            "s_axis_arrival_tready": Out(1),
            "s_axis_departure_tdata": In(tdata_width(DEPARTURE)),
            "s_axis_departure_tvalid": In(1), "s_axis_departure_tready": Out(1),
            "m_axis_verdict_tdata": Out(tdata_width(VERDICT)), "m_axis_verdict_tvalid": Out(1),
            "m_axis_verdict_tready": In(1), "m_axis_verdict_tuser": Out(2),
        }
        if bus == "axi-lite":
            members.update({
                "s_axil_awaddr": In(ADDR_BITS), "s_axil_awvalid": In(1),
                "s_axil_awready": Out(1),
                "s_axil_wdata": In(32), "s_axil_wstrb": In(4), "s_axil_wvalid": In(1),
                "s_axil_wready": Out(1),
                "s_axil_bresp": Out(2), "s_axil_bvalid": Out(1), "s_axil_bready": In(1),
                "s_axil_araddr": In(ADDR_BITS), "s_axil_arvalid": In(1),
                "s_axil_arready": Out(1),
                "s_axil_rdata": Out(32), "s_axil_rresp": Out(2), "s_axil_rvalid": Out(1),
                "s_axil_rready": In(1),
            })
        elif bus == "wishbone":
            members.update({
                "wb_cyc": In(1), "wb_stb": In(1), "wb_we": In(1), "wb_adr": In(ADDR_BITS - 2),
                "wb_dat_w": In(32), "wb_dat_r": Out(32), "wb_ack": Out(1),
            })
        else:
            for name, member in self.qm.signature.members.items():
                if name in ("arrivals", "departures", "verdicts"):
                    continue
                members[self.control_port(name)] = member
        super().__init__(members)

    @staticmethod
    def control_port(name):
        """The core's port for the queue manager's control port ``name`` (``bus="none"``)."""
        return "cfg" if name == "config" else name

    def elaborate(self, platform):
        m = Module()
        m.submodules.queue_manager = qm = self.qm
        self._streams(m, qm)
        controls = [(n, mb) for n, mb in qm.signature.members.items()
                    if n not in ("arrivals", "departures", "verdicts")]
        if self.rf is None:
            for name, member in controls:
                port = getattr(self, self.control_port(name))
                sig = getattr(qm, name)
                m.d.comb += sig.eq(port) if member.flow == In else port.eq(sig)
            return m
        m.submodules.registers = rf = self.rf
        for name, member in controls:
            a, b = getattr(rf, name), getattr(qm, name)
            m.d.comb += b.eq(a) if member.flow == In else a.eq(b)
        access = _HeldAccess(m, rf)
        if self.bus == "wishbone":
            self._wishbone(m, access)
        else:
            self._axi_lite(m, access)
        return m

    def _streams(self, m, qm):
        """The AXI-Stream ports onto the queue manager's streams (wiring only)."""
        m.d.comb += [
            qm.arrivals.payload.eq(self.s_axis_arrival_tdata[:self._arrival.size]),
            qm.arrivals.valid.eq(self.s_axis_arrival_tvalid),
            self.s_axis_arrival_tready.eq(qm.arrivals.ready),
            qm.departures.payload.eq(self.s_axis_departure_tdata[:DEPARTURE.size]),
            qm.departures.valid.eq(self.s_axis_departure_tvalid),
            self.s_axis_departure_tready.eq(qm.departures.ready),
            self.m_axis_verdict_tdata.eq(qm.verdicts.payload.as_value()),
            self.m_axis_verdict_tuser.eq(qm.verdicts.payload.action),
            self.m_axis_verdict_tvalid.eq(qm.verdicts.valid),
            qm.verdicts.ready.eq(self.m_axis_verdict_tready),
        ]

    def _axi_lite(self, m, access):
        """AXI4-Lite onto the held access: a write is taken when its address and data are
        both valid, a read when its address is; one at a time (a waiting read goes after a
        write); the response channels are registers held until their ready."""
        bvalid, bresp = Signal(), Signal(2)
        rvalid, rdata = Signal(), Signal(32)
        prefer_read = Signal()        # the last access was a write: a waiting read goes next
        can_write = self.s_axil_awvalid & self.s_axil_wvalid & ~access.busy & ~bvalid
        can_read = self.s_axil_arvalid & ~access.busy & ~rvalid
        do_write, do_read = Signal(), Signal()
        m.d.comb += [
            do_write.eq(can_write & ~(can_read & prefer_read)),
            do_read.eq(can_read & ~do_write),
            self.s_axil_awready.eq(do_write), self.s_axil_wready.eq(do_write),
            self.s_axil_arready.eq(do_read),
            self.s_axil_bvalid.eq(bvalid), self.s_axil_bresp.eq(bresp),
            self.s_axil_rvalid.eq(rvalid), self.s_axil_rdata.eq(rdata),
            self.s_axil_rresp.eq(_OKAY),
        ]
        access.take(m, write=do_write, read=do_read,
                    addr=Mux(do_write, self.s_axil_awaddr, self.s_axil_araddr),
                    data=self.s_axil_wdata, whole=self.s_axil_wstrb == 0b1111)
        with m.If(do_write | do_read):
            m.d.sync += prefer_read.eq(do_write)
        with m.If(self.s_axil_bready):
            m.d.sync += bvalid.eq(0)
        with m.If(self.s_axil_rready):
            m.d.sync += rvalid.eq(0)
        with m.If(access.write_done):
            m.d.sync += [bvalid.eq(1), bresp.eq(Mux(access.whole, _OKAY, _SLVERR))]
        with m.If(access.read_done):
            m.d.sync += [rvalid.eq(1), rdata.eq(access.r_data)]

    def _wishbone(self, m, access):
        """Wishbone B4 classic onto the held access: a strobe is taken in its clock and
        answered by ``ack`` (a register, with the read data) when the access is done; a
        strobe still high in the clock of its ack is that same cycle, not a new one."""
        ack, dat_r = Signal(), Signal(32)
        start = self.wb_cyc & self.wb_stb & ~access.busy & ~ack
        access.take(m, write=start & self.wb_we, read=start & ~self.wb_we,
                    addr=Cat(C(0, 2), self.wb_adr), data=self.wb_dat_w, whole=C(1, 1))
        m.d.sync += ack.eq(access.write_done | access.read_done)
        with m.If(access.read_done):
            m.d.sync += dat_r.eq(access.r_data)
        m.d.comb += [self.wb_ack.eq(ack), self.wb_dat_r.eq(dat_r)]


class _HeldAccess:
    """One register access at a time, taken into registers (address, data, kind) in its
    handshake's clock and issued to the register file from them ``write_setup`` clocks later
    for a write, ``read_setup`` for a read (the register file's promise), so that its decode
    starts at registers, not at the bus's handshake. ``write_done`` (the issue's clock) and
    ``read_done`` (the read data's clock, ``r_data``) end it; ``busy`` is high from the clock
    after the take to the clock of its end."""

    def __init__(self, m, rf):
        bus = rf.bus
        # clocks of the address on the bus before the access (at least 1: the address is
        # a register loaded in the handshake's clock)
        assert rf.write_setup >= 1 and rf.read_setup >= 1
        # a read taken after a write is issued at least 2 + read_setup clocks after its w_en:
        # the register file's write has applied by then (its write_latency)
        assert rf.write_latency <= 1 + rf.read_setup
        self._rf = rf
        self.busy = Signal(name="access_busy")
        self.whole = Signal(name="access_whole")
        self._take = Signal()         # an access taken in this clock (``take``)
        self._is_write = Signal()
        self._addr, self._data = Signal.like(bus.addr), Signal(32)
        self._wait = Signal(range(max(rf.write_setup, rf.read_setup) + 1))
        self._issue = Signal()        # the access's clock: wait reached 0
        # the register file's w_en, a register of its own (set with ``issue`` for a whole
        # write) rather than a gate after ``issue``: it fans out to every word's enable
        w_issue = Signal()
        self._w_issue = w_issue
        self._read_wait = Signal(rf.read_latency)   # a read issued: data at the top bit
        self.write_done = self._issue & self._is_write
        self.read_done = self._read_wait[-1]
        self.r_data = bus.r_data
        m.d.comb += [bus.addr.eq(self._addr), bus.w_data.eq(self._data),
                     bus.w_en.eq(w_issue), bus.r_en.eq(self._issue & ~self._is_write)]
        wait = self._wait
        m.d.sync += [self._issue.eq(0), w_issue.eq(0),
                     self._read_wait.eq(self._read_wait << 1)]
        with m.If((wait != 0) & ~self._take):          # 0 in the issue's clock
            m.d.sync += [wait.eq(wait - 1), self._issue.eq(wait == 1),
                         w_issue.eq((wait == 1) & self._is_write & self.whole)]
        with m.If(self.write_done | self.read_done):
            m.d.sync += self.busy.eq(0)
        with m.If(self._issue & ~self._is_write):
            m.d.sync += self._read_wait.eq(1)

    def take(self, m, write, read, addr, data, whole):
        """Take an access in this clock: ``write`` or ``read`` (never both, only while not
        ``busy``), its byte address, write data and whether a write is of the whole word."""
        rf = self._rf
        m.d.comb += self._take.eq(write | read)
        with m.If(write):
            m.d.sync += [self.busy.eq(1), self._is_write.eq(1), self.whole.eq(whole),
                         self._addr.eq(addr), self._data.eq(data),
                         self._wait.eq(rf.write_setup)]
        with m.Elif(read):
            m.d.sync += [self.busy.eq(1), self._is_write.eq(0), self._addr.eq(addr),
                         self._wait.eq(rf.read_setup)]


# ---- export --------------------------------------------------------------------------------
_IDENT = re.compile(r"^\s*(?:module|package)\s+([\\\w$.]+)|^\s*(?:input|output|inout)\b"
                    r"(?:\s*\[[^\]]*\])?\s+([\\\w$.]+)", re.M)


def check_names(text):
    """The module, package and port names of the Verilog ``text`` that are Verilog or
    SystemVerilog keywords (escaped or not); an empty list when there are none."""
    bad = []
    for match in _IDENT.finditer(text):
        name = (match.group(1) or match.group(2)).lstrip("\\")
        if name in KEYWORDS:
            bad.append(name)
    return bad


def _yosys_script(rtlil_text):
    """Yosys commands: the design flattened into one module (no submodule ports, so none
    named ``config``, and one module name: two builds with different names can share a
    design), the processes as Amaranth's own Verilog export writes them."""
    return "\n".join([
        f"read_rtlil <<rtlil\n{rtlil_text}\nrtlil",
        "proc -nomux -norom",
        "flatten",
        "memory_collect",
        "opt_clean",
        "attrmap -remove generator -remove top -remove src -remove amaranth.hierarchy "
        "-remove amaranth.decoding",
        "attrmap -modattr -remove generator -remove top -remove src "
        "-remove amaranth.hierarchy -remove amaranth.decoding",
        # the memories keep theirs: ``no_rw_check`` tells Yosys that a read in the clock of
        # a write to its address may return either word (without it the vendor flow builds
        # a bypass after each block RAM, on its output path), ``ram_style`` where a FIFO
        # must be LUT RAM. ``full_case`` and ``hdlname`` are Yosys's bookkeeping. (``init``
        # stays: it is the registers' power-on values, which write_verilog writes as their
        # initialisers)
        "attrmap -remove hdlname -remove full_case",
        "write_verilog -norename",
    ])


#: An escaped identifier that ends like a bit select, ``\\counters[0] `` (Amaranth names the
#: elements of an array port so).
_BIT_SELECT_NAME = re.compile(r"\\(\S+?)\[(\d+)\](?=\s)")


def rename_bit_select_names(text):
    """``text`` (Verilog) with every escaped identifier that ends in ``[N]`` renamed to end
    in ``__N``. The pinned Yosys's ABC9 (``synth_ecp5``, ``abc9``) fails with ``Assert
    `count_id(wire->name) == 0'`` while merging its result back when a wire is named like a
    bit of another (``\\c[0] `` beside a register ``c``): the name of the wire and of the
    bit collide. Raises ``ValueError`` if a new name is taken already."""
    taken = set(re.findall(r"\\(\S+)", text)) | set(re.findall(r"\b[A-Za-z_]\w*", text))
    renamed = {}
    for match in _BIT_SELECT_NAME.finditer(text):
        new = f"{match[1]}__{match[2]}"
        if new in taken and renamed.get(match[0]) != new:
            raise ValueError(f"renaming \\{match[1]}[{match[2]}]: {new} is taken")
        renamed[match[0]] = new
    return _BIT_SELECT_NAME.sub(lambda m: f"\\{m[1]}__{m[2]}", text)


def core_verilog(build, bus="axi-lite", name="fpq_core", target="generic"):
    """``(verilog text, core)``: :class:`FPQCore` as one flat Verilog module ``name``, its
    memories and multipliers for ``target`` (one of ``TARGETS``)."""
    from amaranth.back import rtlil
    from amaranth._toolchain.yosys import find_yosys
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name in KEYWORDS:
        raise ValueError(f"name: {name!r} must be a Verilog identifier (letters, digits, _; "
                         f"not starting with a digit) and not a Verilog/SystemVerilog keyword")
    core = FPQCore(build, bus, ram_style=target)
    text = rtlil.convert(core, name=name, emit_src=False)
    yosys = find_yosys(lambda ver: ver >= (0, 40))
    verilog = rename_bit_select_names(
        yosys.run(["-q", "-"], _yosys_script(text), ignore_warnings=True))
    bad = check_names(verilog)
    if bad:
        raise ValueError(f"the export names a module or port after a keyword: {bad}")
    return verilog, core


def _port_lines(core):
    lines = [f"  input  [  0:0] {name}" for name in ("clk", "rst")]
    for path, member, value in core.signature.flatten(core):
        pname = "__".join(str(p) for p in path)
        direction = "input " if member.flow == In else "output"
        width = len(Value.cast(value))
        lines.append(f"  {direction} [{width - 1:3}:0] {pname}")
    return lines


def _fixed_lines(build):
    """Header lines naming the registers the build fixes (their ``config`` fields are
    ignored) and the fields they come from."""
    if not build.fixed:
        return []
    from fpq.fields import SECRET_SHOWN
    from fpq.regmap import registers
    fields = ", ".join(f"{k}={v}" for k, v in build.fixed_json().items())
    # a fixed key is in the netlist, but not in a header line that logs and diffs copy
    regs = [f"{r.name}={SECRET_SHOWN if r.secret else f'{r.reset:#x}'}"
            for r in registers(build) if r.kind == "fixed"]
    return [f"// Fixed at build time (Build.fixed): {fields}.",
            "// Constants (read-only registers; the raw cfg port's field is ignored): "
            f"{', '.join(regs) if regs else '(no register: only host fields fixed)'}."]


#: What a literal of the netlist that holds a power-on key becomes: the key's macro
#: (``NAME_REG``, upper case, defined in ``NAME_keys.vh``) in a concatenation with the
#: literal's other bits.
_LITERAL = re.compile(r"(\d+)'([hb])([0-9a-fA-F_]+)")
#: Bits of a placeholder key that may not remain anywhere in the exported text (a shorter
#: run can occur by chance among the netlist's constants).
_PLACEHOLDER_RUN_BITS = 48


def key_macro(name, register):
    """The Verilog macro of the power-on value of key register ``register`` in the core
    ``name`` (one name per core: two cores of a design do not share keys)."""
    return f"{name}_{register}".upper()


def _placeholders(build):
    """``build`` with fixed placeholder power-on keys for those it has
    (``Build.power_on_keys``): the netlist is generated from them, so that it does not
    depend on the real keys, and their literals become the keys' macros. Each placeholder
    is derived from its field's name (SHA-256, drawn again until not weak: the build checks
    power-on keys), the same in every export."""
    import dataclasses
    import hashlib
    from fpq.fields import FIELD_BY_NAME
    from fpq.keys import key_weakness
    values = {}
    for field, real in build.power_on_keys:
        f, i = FIELD_BY_NAME[field], 0
        while True:
            digest = hashlib.sha256(f"fpq placeholder {field} {i}".encode()).digest() * 2
            value = (int.from_bytes(digest[:8], "big") if f.type == "int"
                     else digest[:len(real)])
            if key_weakness(value, field) is None:
                break
            i += 1
        values[field] = value
    return dataclasses.replace(build, power_on_keys=values)


def _key_registers(build, placeholder_build):
    """``[(register, width, real raw value, placeholder raw value)]`` of the configuration
    registers computed from a power-on key of ``build``."""
    from fpq.config import Config
    from fpq.regmap import registers
    keys = dict(build.power_on_keys)
    real = Config(build=build).registers()
    fake = Config(build=placeholder_build).registers()
    from fpq.register_specs import CONFIG_REGISTERS
    sources = {s.name: s.sources for s in CONFIG_REGISTERS}
    return [(r.name, r.width, real[r.name], fake[r.name]) for r in registers(build)
            if r.kind == "config" and any(f in keys for f in sources.get(r.name, ()))]


def _literal_bits(digits, base, width):
    """The bits of a Verilog literal's digits, most significant first, ``width`` of them."""
    value = int(digits.replace("_", ""), 16 if base == "h" else 2)
    return format(value, f"0{width}b")[-width:] if width else ""


def substitute_keys(verilog, name, keys):
    """``verilog`` with every literal bit run of a placeholder key replaced by its macro
    (:func:`key_macro`); ``keys`` as :func:`_key_registers` gives them. Raises
    ``ValueError`` if a key is never found (its reset would be lost) or if any run of
    ``_PLACEHOLDER_RUN_BITS`` bits of a placeholder remains (a literal the substitution
    did not recognise, which would hold the placeholder instead of the key)."""
    patterns = [(reg, width, format(fake, f"0{width}b")) for reg, width, _, fake in keys]
    found = {reg: 0 for reg, _, _ in patterns}

    def replace(match):
        width = int(match[1])
        if width < min((w for _, w, _ in patterns), default=width + 1):
            return match[0]
        bits = _literal_bits(match[3], match[2], width)
        spans = []                                 # (start, end, register): MSB-first
        for reg, w, pattern in patterns:
            at = bits.find(pattern)
            while at >= 0:
                spans.append((at, at + w, reg))
                found[reg] += 1
                at = bits.find(pattern, at + w)
        if not spans:
            return match[0]
        parts, pos = [], 0
        for start, end, reg in sorted(spans):
            if start < pos:
                raise ValueError(f"{reg}: overlapping placeholder keys in a literal")
            if start > pos:
                parts.append(f"{start - pos}'h{int(bits[pos:start], 2):x}")
            parts.append(f"`{key_macro(name, reg)}")
            pos = end
        if pos < width:
            parts.append(f"{width - pos}'h{int(bits[pos:], 2):x}")
        return parts[0] if len(parts) == 1 else "{" + ", ".join(parts) + "}"

    out = _LITERAL.sub(replace, verilog)
    missing = [reg for reg, n in found.items() if n == 0]
    if missing:
        raise ValueError(f"the export holds no power-on value of {', '.join(missing)}")
    left = "|".join(_literal_bits(m[3], m[2], int(m[1])) for m in _LITERAL.finditer(out)
                    if int(m[1]) >= _PLACEHOLDER_RUN_BITS)
    for reg, width, pattern in patterns:
        for i in range(width - _PLACEHOLDER_RUN_BITS + 1):
            if pattern[i:i + _PLACEHOLDER_RUN_BITS] in left:
                raise ValueError(f"{reg}: part of its placeholder power-on value is left in "
                                 f"the export")
    return out


def keys_include(name, build, keys):
    """The text of ``NAME_keys.vh``: the build's power-on keys as the macros the core's
    reset values use (``keys`` as :func:`_key_registers` gives them), after comment lines
    that record each key field's value (``fpq.output_files.keys_text``: for the golden
    model, ``Build(power_on_keys=...)``)."""
    from fpq.output_files import keys_text
    guard = key_macro(name, "keys_vh")
    return "\n".join(
        [f"// {name}_keys.vh: the power-on keys and seeds of the core {name} (`fpq verilog`).",
         "// SECRET (mode 0600): whoever has them computes colliding flows and predicts the",
         f"// random decisions. {name}.v includes this file: give your tools its folder as",
         "// an include directory (Verilator -I, Yosys read_verilog -I, FuseSoC",
         "// is_include_file). Its fields, for the golden model (Build.power_on_keys):"]
        + [f"//   {line}" for line in keys_text(build.secret_values()).splitlines()]
        + [f"`ifndef {guard}", f"`define {guard}"]
        + [f"`define {key_macro(name, reg)} {width}'h{real:0{(width + 3) // 4}x}"
           for reg, width, real, _ in keys]
        + ["`endif", ""])


def keys_file(out, name):
    """The include file of the power-on keys of ``fpq verilog -o OUT --name NAME``:
    ``NAME_keys.vh`` next to OUT."""
    import os
    return os.path.join(os.path.dirname(out), f"{name}_keys.vh")


def export_verilog(path, build, bus="axi-lite", name="fpq_core", package=True,
                   target="generic", embed_keys=False):
    """Write :class:`FPQCore` as Verilog to ``path`` and, with ``package``, its
    SystemVerilog package next to it (``<name>_pkg.sv``): all complete, or none changed.
    Returns ``(paths written, paths that hold a key)``.

    The power-on keys (``Build.power_on_keys``) are not in the Verilog: it is generated from
    fixed placeholders and its reset values of the key registers are macros
    (``key_macro``), defined in ``NAME_keys.vh`` next to ``path`` (:func:`keys_include`,
    mode 0600), which the Verilog includes; so the Verilog is the same for every key and
    the export reproducible byte for byte. ``embed_keys``: the definitions in the Verilog
    itself instead (no include file), which then holds the keys and is written mode 0600.
    A key the build fixes (``Build.fixed``) is part of the netlist's logic: such a Verilog
    holds it and is written mode 0600 too.

    Parameters
    ----------
    path : str
    build : fpq.Build
    bus : str
        One of :data:`BUSES`.
    name : str
        The module's name (the package's is ``<name>_pkg``).
    package : bool
    target : str
        One of ``TARGETS``: "generic" (memories and multipliers for the vendor tool to
        infer) or an FPGA family whose primitives the core instantiates.
    embed_keys : bool
        The power-on keys in the Verilog (mode 0600), no include file.
    """
    import os
    from fpq.fields import SECRET_FIELDS
    from fpq.output_files import write_files
    netlist_build = _placeholders(build)
    verilog, core = core_verilog(netlist_build, bus, name, target)
    keys = _key_registers(build, netlist_build)
    include = keys_include(name, build, keys) if keys else None
    if keys:
        verilog = substitute_keys(verilog, name, keys)
    header = _header_lines(build, bus, name, core, keys, embed_keys)
    if include is not None:
        header.append(include.rstrip("\n") if embed_keys else f'`include "{name}_keys.vh"')
    files = {path: "\n".join(header) + "\n" + verilog}
    if package:
        files[os.path.join(os.path.dirname(path), f"{name}_pkg.sv")] = sv_package(build, name)
    private = set()
    if include is not None and not embed_keys:
        files[keys_file(path, name)] = include
        private.add(keys_file(path, name))
    if (include is not None and embed_keys) or \
            any(f in build.fixed_fields for f in SECRET_FIELDS):
        private.add(path)
    paths = write_files(files, private=private)     # every file complete, or none changed
    return paths, sorted(private)


def _header_lines(build, bus, name, core, keys, embed_keys):
    """The exported Verilog's header comment, lines without their newline: what the core
    is, its bus, streams, registers, where its power-on keys are, its fixed registers, its
    ports and its streams' fields."""
    bus_text = {"axi-lite": "AXI4-Lite target s_axil_* (20-bit byte addresses, 32-bit data; "
                            "a write with wstrb != 4'hf answers SLVERR and writes nothing)",
                "wishbone": "Wishbone B4 classic target wb_* (32-bit granularity, wb_adr the "
                            f"word address; ack {FPQCore.WRITE_RESPONSE_CLOCKS} clocks after a write's "
                            f"strobe, {FPQCore.READ_RESPONSE_CLOCKS} after a read's)",
                "none": "no register bus: the queue manager's configuration port cfg and its "
                        "control ports (fpq_hdl.queue_manager.QueueManager)"}[bus]
    header = [
        f"// {name}: FPQ / RED / drop-tail queue manager, one verdict per clock.",
        "// Generated by `fpq verilog` (hdl/fpq_hdl/axi_core.py) from the Amaranth source; "
        "do not edit.",
        f"// Build: vec_bits {build.vec_bits}, table_depth {build.table_depth}, avg_delay "
        f"{build.avg_delay}. Latency {LATENCY} clocks, verdict FIFO {FIFO_DEPTH}.",
        "// One flat module (no submodules). One clock `clk`, synchronous active-high reset "
        "`rst`.",
        f"// Register bus: {bus_text}.",
        "// Streams are AXI-Stream (tdata/tvalid/tready; tready never depends on tvalid): the",
        "// payload fields from bit 0 of tdata, offsets in the package (<name>_pkg.sv) and",
        "// below; m_axis_verdict_tuser is the verdict's action.",
    ]
    if bus != "none":
        header += [
            "// Registers: docs/REGISTERS.md / sw/generated/regmap.json at the bus's byte",
            "// addresses. Out of reset the register file loads the map's defaults and",
            "// restarts the time base: clock 0 of the queue manager is the third clock with",
            "// rst low (the first is the register file's, the second its restart's). A",
            "// configuration applies at CONTROL.COMMIT (`fpq config` writes the words).",
        ]
    if keys and embed_keys:
        header += ["// Power-on keys and seeds (Build.power_on_keys): defined below, in this "
                   "file (--embed-keys): SECRET."]
    elif keys:
        header += [f"// Power-on keys and seeds (Build.power_on_keys): the macros "
                   f"{', '.join(key_macro(name, reg) for reg, *_ in keys)},",
                   f"// defined in {name}_keys.vh (secret, mode 0600; give your tools its "
                   "folder as an include directory)."]
    header += _fixed_lines(build)
    header += ["// Ports:"] + ["//" + line for line in _port_lines(core)]
    for title, layout in (("s_axis_arrival_tdata", arrival_layout(build)),
                          ("s_axis_departure_tdata", DEPARTURE),
                          ("m_axis_verdict_tdata", VERDICT)):
        header.append(f"//   {title} fields:")
        for fname, field in layout:
            header.append(f"//      [{field.offset + field.width - 1:3}:{field.offset:3}] "
                          f"{fname}")
    return header


def _sv_struct(type_name, layout, pad_to):
    """A packed struct of ``layout``'s fields, most significant first, padded to
    ``pad_to`` bits."""
    fields = sorted(((f.offset, fname, f.width) for fname, f in layout), reverse=True)
    lines = ["  typedef struct packed {"]
    if pad_to > layout.size:
        lines.append(f"    logic [{pad_to - layout.size - 1}:0] pad;  // zero / ignored")
    for offset, fname, width in fields:
        lines.append(f"    logic [{width - 1}:0] {fname};  // tdata[{offset + width - 1}:"
                     f"{offset}]")
    lines.append(f"  }} {type_name};")
    return lines


def sv_package(build, name="fpq_core"):
    """The SystemVerilog package ``<name>_pkg``: the stream payload structs (as ``tdata``
    carries them), the field offsets and widths, and the register map's addresses, widths
    and constants (``fpq.regmap.registers(build)``), as text."""
    pkg = f"{name}_pkg"
    out = [f"// {pkg}: payload structs and register map of {name} (vec_bits {build.vec_bits},",
           f"// table_depth {build.table_depth}). Generated by `fpq verilog` from "
           "fpq_hdl.layouts and fpq.regmap; do not edit.",
           f"package {pkg};"]
    arrival = arrival_layout(build)
    for prefix, layout in (("ARRIVAL", arrival), ("DEPARTURE", DEPARTURE),
                           ("VERDICT", VERDICT)):
        out.append(f"  localparam int {prefix}_BITS = {layout.size};")
        out.append(f"  localparam int {prefix}_TDATA_BITS = {tdata_width(layout)};")
        for fname, f in layout:
            out.append(f"  localparam int {prefix}_{fname.upper()}_OFFSET = {f.offset};")
            out.append(f"  localparam int {prefix}_{fname.upper()}_WIDTH = {f.width};")
    out += _sv_struct("arrival_t", arrival, tdata_width(arrival))
    out += _sv_struct("departure_t", DEPARTURE, tdata_width(DEPARTURE))
    out += _sv_struct("verdict_t", VERDICT, tdata_width(VERDICT))
    out += ["  // verdict action",
            "  localparam logic [1:0] ACTION_ENQUEUE = 2'd0, ACTION_MARK = 2'd1,",
            "                         ACTION_DROP_EARLY = 2'd2, ACTION_DROP_FORCED = 2'd3;",
            f"  localparam int ADDR_BITS = {ADDR_BITS};",
            f"  localparam logic [31:0] ID_VALUE = 32'h{ID_VALUE:08x};",
            f"  localparam logic [31:0] CONTROL_COMMIT = 32'h{CONTROL_COMMIT:x};",
            f"  localparam logic [31:0] CONTROL_CLEAR_ERRORS = 32'h{CONTROL_CLEAR_ERRORS:x};"]
    for sname, bit in STATUS_BITS.items():
        out.append(f"  localparam int STATUS_{sname}_BIT = {bit};")
    out.append(f"  localparam int STATUS_REJECT_INDEX_SHIFT = {STATUS_REJECT_INDEX_SHIFT};")
    for comment, constants in address_constants(build):
        out.append(f"  // {comment}")
        for name, value, is_address in constants:
            out.append(f"  localparam logic [{ADDR_BITS - 1}:0] {name} = {ADDR_BITS}'h"
                       f"{value:05x};" if is_address else f"  localparam int {name} = {value};")
    out += [f"endpackage : {pkg}", ""]
    return "\n".join(out)
