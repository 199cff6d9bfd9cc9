"""Working at power-on: both banks of the r(N) table hold the default configuration's table
(``Config(build=build).rate_table()``) before any host write, in Amaranth's simulation, in
the exported Verilog's ``initial`` block and in the ECP5 tiles' ``INITVAL`` parameters; so a
queue manager out of reset makes FPQ's early drops bit-exact with the golden model without a
table write."""
import re

import pytest
from amaranth import Fragment

from fpq import Build, Config
from fpq.bitfields import pack
from fpq.cli import main
from fpq.formats import RATE
from fpq.queue_manager import DROP_EARLY
from fpq_hdl import block_ram
from fpq_hdl.drop_probability import DropProbability
from fpq_hdl.layouts import config_layout
from fpq_hdl.queue_manager import QueueManager

from .hdl_harness import traffic, run, compare, check_bench
from .test_block_ram import decode_initval

BUILD = Build(vec_bits=1024, table_depth=256)
#: The defaults' registers schedule the average's first sample 692,082 clocks after clock 0,
#: too far for Amaranth's simulator; this configuration differs from the defaults only in
#: fields the r(N) table does not depend on (the clock, the clear and averaging times, the
#: queue limit), so its table is the defaults' (asserted below).
FAST = Config(build=BUILD, tick_hz=1e6, t_clear_s=0.02, avg_tau_s=5e-5, limit_pkts=1000)
#: The first clock an arrival can be accepted: the vector's wipe out of reset.
T0 = BUILD.vec_bits + 10


def test_out_of_reset_without_a_table_write_fpq_drops_as_the_model():
    """The queue manager out of reset with the configuration on its port, the generators and
    time base started, the bank left at 0 and no table write: 4,000 arrivals of 8 flows (and
    their successors) with the queue building up give the model's verdicts field for field,
    early drops among them (a table of zeros gives none)."""
    assert FAST.rate_table() == Config(build=BUILD).rate_table()
    assert FAST.mode == "fpq" and not FAST.ecn
    steps, expected, _ = traffic(FAST, 4000, seed=31, flows=8, jump=0, t0=T0, dep_slow=0.6,
                                 phase=1000)

    async def start_without_tables(bench, config):
        ctx, dut = bench.ctx, bench.dut
        ctx.set(dut.config.as_value(), pack(config_layout(BUILD), config.registers()))
        strobes = (dut.load_rng_decide, dut.load_rng_clear, dut.restart)
        for s in strobes:
            ctx.set(s, 1)
        await bench.tick()
        for s in strobes:
            ctx.set(s, 0)
        bench.base = bench.cycle

    bench = run(FAST, steps, dut=QueueManager(BUILD), script=start_without_tables)
    model = check_bench(FAST, bench)
    compare(bench.verdicts(), expected)
    early = sum(v["action"] == DROP_EARLY for v in bench.verdicts())
    assert early > 80 and model.counters["early_drops"] == early
    assert len({v["n"] for v in bench.verdicts()}) > 20     # many table entries read


def _initial_words(text, memory):
    """``{address: word}`` of the ``initial`` block of ``memory`` in Yosys's Verilog."""
    pattern = re.escape(memory) + r" +\[(\d+)\] = (\d+)'h([0-9a-f]+);"
    return {int(a): int(v, 16) for a, _, v in re.findall(pattern, text)}


def test_exported_verilog_initialises_both_banks_with_the_defaults(tmp_path):
    """``fpq verilog`` (the command ``make verilog`` runs): the r(N) table's ``initial``
    block holds the defaults' table in bank 0 (addresses 0 .. depth-1) and bank 1 (depth ..
    2 depth-1), every word, and a reset-less TABLES_DEFAULT flag per bank starts at 1."""
    out = tmp_path / "core.v"
    assert main(["verilog", "-o", str(out), "--no-package", "--vec-bits",
                 str(BUILD.vec_bits), "--table-depth", str(BUILD.table_depth)]) == 0
    text = out.read_text()
    words = _initial_words(text, r"\queue_manager.probability.table.mem")
    table = Config(build=BUILD).rate_table()
    assert len(set(table)) > 200                  # the words differ: positions matter
    assert words == dict(enumerate(table + table))
    for bank in (0, 1):
        assert re.search(rf"reg \\registers\.rate_bank{bank}_default  = 1'h1;", text)


def test_a_build_s_own_defaults_are_its_init(tmp_path):
    """The table is the build's default configuration's: a build that fixes ``p_pkts``
    (``Build.fixed``) starts with that value's table, not the unfixed defaults'."""
    build = Build(vec_bits=1024, table_depth=64, fixed=(("p_pkts", 8.0),))
    out = tmp_path / "core.v"
    assert main(["verilog", "-o", str(out), "--no-package", "--bus", "none", "--vec-bits",
                 "1024", "--table-depth", "64", "--fix", "p_pkts=8"]) == 0
    table = Config(build=build).rate_table()
    assert table != Config(build=Build(vec_bits=1024, table_depth=64)).rate_table()
    words = _initial_words(out.read_text(), r"\queue_manager.probability.table.mem")
    assert words == dict(enumerate(table + table))


@pytest.mark.parametrize("table_depth", [256, 16384])
def test_ecp5_initval_decodes_to_the_defaults_in_both_banks(monkeypatch, table_depth):
    """``DropProbability(ram_style="ecp5")`` elaborated (no synthesis): the DP16KD tiles of
    the table, one per bit of the RATE word and row of 16384 addresses, decode
    (``test_block_ram.decode_initval``, the layout Yosys writes) to the defaults' table in
    both banks; with 16384 entries the banks fill two rows of tiles."""
    build = Build(vec_bits=1024, table_depth=table_depth)
    tiles = []
    real = block_ram.Instance

    def instance(kind, **ports):
        if kind == "DP16KD":
            tiles.append(ports)
        return real(kind, **ports)
    monkeypatch.setattr(block_ram, "Instance", instance)
    Fragment.get(DropProbability(build, ram_style="ecp5"), None)
    table = Config(build=build).rate_table()
    rows = -(-2 * table_depth // 16384)
    assert len(tiles) == rows * RATE.width
    # each tile's row and bit from the output it drives: bit c of the signal ``row{r}``
    got = [0] * (rows * 16384)
    for ports in tiles:
        out = ports["o_DOB0"]
        r, c = int(out.value.name.removeprefix("row")), out.start
        for a, bit in enumerate(decode_initval(ports)):
            got[r * 16384 + a] |= bit << c
    assert got[:2 * table_depth] == table + table
    assert not any(got[2 * table_depth:])
