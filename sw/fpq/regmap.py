"""The register map, derived from the declarations of ``fpq.register_specs``: addresses,
widths, access, ranges, resets.

Every register is declared once (``fpq.register_specs.RegisterSpec``: the configuration
registers in ``fpq.register_specs.CONFIG_REGISTERS``, the others in this module's ``BLOCKS``)
and placed at its
address in a build by :func:`place`. From :func:`registers` come the RTL register file
(``fpq_hdl.registers``), the JSON map, the C header, SystemRDL and ``docs/REGISTERS.md``
(``write_all``; a test fails when the committed copies are stale). The bus is 32-bit words
at byte addresses; a register wider than 32 bits takes consecutive words, least significant
word first.

Behaviour the hardware guarantees (and the model mirrors in :func:`check_registers`):

* Configuration registers are *shadows*: writes land there and change nothing until
  ``CONTROL.COMMIT``. The commit waits until no arrival is in flight (the arrival port is not
  ready meanwhile), checks every shadow value against its range, then applies all of them in
  one clock. If any value is out of range the commit is rejected: nothing changes,
  ``STATUS.COMMIT_REJECTED`` is set and ``STATUS.REJECT_INDEX`` names the first bad register
  (its index in ``REGISTERS``). So no verdict is ever computed from half-old, half-new values.
* A commit applies in one clock, ``ts``: every arrival and departure accepted before ``ts``, and
  every clear and sample of the queue due before it, was handled under the old values,
  everything from ``ts`` on is under the new ones (the golden model's
  ``QueueManager.configure(config, ts)``). The clock-driven engines do not stop: a clear or a
  sample already scheduled keeps its clock, the next ones follow the new periods (one due in
  ``ts`` itself steps to its successor with the old period: the period is read a clock ahead).
* A commit that changes ``v_max`` wipes the flow vector (the arrival port stalls about
  ``vec_bits`` clocks; clears due meanwhile draw their random number and clear nothing); one
  that changes a ``rng_*_state`` reloads that generator.
* Live re-key: a commit that changes ``hash_key`` (or ``hash_mix_key``, in builds with the
  keyed non-linear hash stage) wipes the vector too (bits set under the old
  key mean nothing under the new one) and latches the flow count ``N`` of that moment. The
  first arrival after it starts a hold of ``rekey_hold`` clocks: arrivals accepted before its
  end decide with the held count while the vector
  refills under the new key; the telemetry ``n`` shows the held count and ``n_raw`` the
  rebuilding one. A re-key during a hold keeps the count held by the first (the vector has not
  been rebuilt yet) and restarts the hold; a ``rekey_hold`` of 0 ends any hold at once.
* Table writes (``rate_table``) go to the inactive bank; a commit after a table write swaps
  the banks. Reads of a table return 0 (a host read port would cost a second copy of
  each table RAM; the host keeps what it wrote). The hardware does not track which entries
  were written: a host that rewrites only part of a table before a commit swaps in a bank
  whose other entries are still those of two commits ago, so write the whole table every
  time (the board tool's ``configure`` does).
* Power-on tables. Both banks of every table hold the default configuration's contents
  (``Config(build=build).rate_table()``) when the FPGA is configured: the RAMs' initial
  contents, so out of reset the core runs FPQ with the defaults without a host write.
  ``STATUS.TABLES_DEFAULT`` is 1 while the active bank holds them: a table write clears the
  flag of the bank it goes to (the inactive one), so the bit reads 0 from the commit that
  swaps that bank in. A reset does not restore the contents (a RAM keeps them) but makes
  bank 0 active again: the bit then says whether bank 0 was ever written.
* Out-of-range values. A written value that fits the register's width but lies outside its
  range (the table's "range (raw)" column) is stored in the shadow (reads return it) and the
  next commit is rejected as above. A written value that does not fit (any bit set above the
  width in the register's most significant word) is not stored: the shadow keeps its old
  value, ``STATUS.BAD_WRITE`` is set, and every commit is rejected naming that register until
  a value that fits is written to that word. Either way the active configuration keeps its
  old values.
* Secret registers (access "secret": ``hash_key``, ``hash_mix_key``, the generators' states
  ``rng_decide_state`` and ``rng_clear_state``, and any register computed from a field
  declared ``secret`` in ``fpq.fields.FIELDS``) are write-only: a write lands in the shadow
  and applies at the commit as any configuration register's, but every read returns 0, on
  every bus (the register file answers 0, so the AXI4-Lite and Wishbone cores and the boards'
  UART bridge do too). A host keeps the key it wrote; nothing on the bus can read it back
  (nor a generator's state, from which every later random number follows).
  A build that fixes a secret register (``Build.fixed``) makes it a constant that reads 0
  too, and the generated map leaves its value out. Out of reset a secret register holds the
  build's power-on value (``Build.power_on_keys``; `fpq verilog` and `fpq board build` draw
  keys and seeds from the operating system unless given them; `fpq verilog` puts them in
  ``NAME_keys.vh``, not in the Verilog), not the public default: the reset column says "per
  export (NAME_keys.vh)".
* Writes to read-only registers (``id``, ``build``, ``status``, telemetry) or unmapped
  addresses are ignored and set ``STATUS.BAD_WRITE``; reads of unmapped addresses and of the
  write-only ``control`` return 0. A write to ``control`` with any bit other than COMMIT and
  CLEAR_ERRORS set does nothing and sets ``STATUS.BAD_WRITE``. Address bits 1..0 are ignored.
  Sticky bits (COMMIT_REJECTED, BAD_WRITE, REJECT_INDEX) clear by writing
  ``CONTROL.CLEAR_ERRORS``.
* Fixed registers. A build may fix configuration fields at synthesis (``Build.fixed``); a
  configuration register computed from fixed fields only is then a constant of that
  hardware (kind "fixed", read-only): reads return its value (0 for a secret one), a write
  is ignored and sets ``STATUS.BAD_WRITE``, commits neither check nor change it, and
  synthesis folds it into the logic it feeds. Bit 17 of the ``build`` register is set in such a build.
* Counters are 64 bits (they cannot wrap in 3900 years at 150 M events/s); a write of any
  value to either word of a counter, or to ``max_queue``, clears it.
"""

from dataclasses import dataclass
import json
import os

from .config import Build, Config
from .fields import FIELDS, SECRET_SHOWN
from .flow_hash import HASH_INPUTS
from .formats import QAVG, RATE, QPKTS_BITS, QBYTES_BITS, FLOW_COUNT_BITS, CAPPED_COUNT_BITS
from .queue_manager import COUNTERS
from .register_specs import RegisterSpec, CONFIG_REGISTERS, commit_check, in_placement_order

__all__ = ["Register", "Table", "place", "registers", "tables",
           "check_registers", "write_all", "FORMATS", "to_json", "to_c_header", "to_markdown",
           "to_systemrdl", "BUILD_FIXED_BIT", "BUILD_PLAIN_HASH_BIT",
           "BUILD_HASH_INPUT_SHIFT", "BUILD_IPV6_BIT", "build_word", "address_constants",
           "ID_VALUE", "CONTROL_COMMIT", "CONTROL_CLEAR_ERRORS", "STATUS_BITS"]

ID_VALUE = 0x46505131  # "FPQ1"
CONTROL_COMMIT = 1 << 0
CONTROL_CLEAR_ERRORS = 1 << 1
STATUS_BITS = {"BUSY": 0, "COMMIT_REJECTED": 1, "BAD_WRITE": 2, "TABLES_DEFAULT": 3}
STATUS_REJECT_INDEX_SHIFT = 8
#: Bit of the ``build`` register set when the build fixes configuration fields
#: (``Build.fixed``); which ones is not in the word: a host must know the build it talks to.
BUILD_FIXED_BIT = 17
#: Bit of the ``build`` register set when the build has no keyed non-linear hash stage
#: (``Build.hash_mix`` False), and the shift of its 2-bit field giving ``Build.hash_input``
#: (its index in ``fpq.flow_hash.HASH_INPUTS``): both 0 in the default build.
BUILD_PLAIN_HASH_BIT = 18
BUILD_HASH_INPUT_SHIFT = 19
#: Bit of the ``build`` register set when the flow key is the IPv6 5-tuple
#: (``Build.flow_key`` "ipv6"): 0 in the default build.
BUILD_IPV6_BIT = 21


@dataclass(frozen=True)
class Register:
    """A register of one build at its address (:func:`place` of its ``RegisterSpec``)."""
    name: str
    offset: int        # byte address of the least significant word
    width: int         # bits
    #: "rw" (shadowed config, or a setting), "ro", "wo" (strobe), "rc" (ro, write clears),
    #: "secret" (a shadowed config register, or a fixed one, whose reads return 0: ``secret``)
    access: str
    kind: str          # "control", "config", "fixed", "counter", "telemetry", "setting"
    #: allowed raw range (config registers: checked at commit; settings: at the write)
    lo: int
    hi: int
    reset: int
    fmt: str
    doc: str
    #: Key material (computed from a field declared ``secret`` in ``fpq.fields.FIELDS``):
    #: write-only, every read returns 0; the generated map leaves a fixed value out.
    secret: bool = False

    @property
    def words(self):
        return (self.width + 31) // 32


@dataclass(frozen=True)
class Table:
    name: str
    offset: int
    depth: int
    width: int
    fmt: str
    doc: str


def _reading(name, width, fmt, doc, kind, access="ro", reset=0):
    """The declaration of a register the queue manager or the register file drives."""
    return RegisterSpec(name, width, 0, 0, fmt, doc, kind=kind, access=access, reset=reset)


#: The control registers, from 0x000.
CONTROL_REGISTERS = [
    _reading("id", 32, "const", "'FPQ1'.", "control", reset=ID_VALUE),
    _reading("build", 32, "fields",
             "[4:0] log2 vec_bits, [9:5] log2 table_depth, [16:10] avg_delay, [17] some "
             "configuration fixed at build time, [18] no keyed non-linear hash stage, "
             "[20:19] hash input (0 5-tuple, 1 rss, 2 descriptor), [21] IPv6 flow keys.",
             "control",
             reset=lambda b: build_word(b)),
    _reading("control", 2, "strobes", "bit 0 COMMIT, bit 1 CLEAR_ERRORS.", "control",
             access="wo"),
    # the power-on value: the r(N) table's banks hold the defaults (TABLES_DEFAULT)
    _reading("status", 16, "flags",
             "bit 0 BUSY (commit or wipe under way), bit 1 COMMIT_REJECTED, bit 2 BAD_WRITE "
             "(sticky); bit 3 TABLES_DEFAULT (the active r(N) table bank holds the "
             "power-on defaults, no host data); [15:8] REJECT_INDEX.", "control",
             reset=1 << STATUS_BITS["TABLES_DEFAULT"]),
]
#: What a counter's name does not say.
_COUNTER_NOTES = {"enqueued": " (every packet accepted into the queue, the marked ones "
                              "included: arrivals = enqueued + early drops + forced drops)"}
#: The statistics counters (``fpq.queue_manager.COUNTERS``), from 0x200.
COUNTER_REGISTERS = [_reading(name, 64, "count",
                              f"Counter: {name.replace('_', ' ')}"
                              f"{_COUNTER_NOTES.get(name, '')}; write clears.", "counter",
                              access="rc") for name in COUNTERS]
#: The telemetry, from 0x280.
TELEMETRY = [
    _reading("n_raw", FLOW_COUNT_BITS, "", "Flow-vector popcount N.", "telemetry"),
    _reading("n", CAPPED_COUNT_BITS, "", "min(N, n_cap): the count decisions use.", "telemetry"),
    _reading("avg", QAVG.width, "", "Average queue (QAVG): the latest published, which "
             "arrivals decide with.", "telemetry"),
    _reading("occ_pkts", QPKTS_BITS, "", "Queue occupancy, packets.", "telemetry"),
    _reading("occ_bytes", QBYTES_BITS, "", "Queue occupancy, bytes.", "telemetry"),
    _reading("max_queue", QPKTS_BITS, "", "Largest occupancy seen (packets); write clears.",
             "telemetry", access="rc"),
]
#: The configuration registers' declarations by name.
_CONFIG_SPECS = {s.name: s for s in CONFIG_REGISTERS}
#: The register map's blocks: (first byte address, end, declarations).
BLOCKS = [(0x000, 0x040, CONTROL_REGISTERS), (0x040, 0x200, CONFIG_REGISTERS),
          (0x200, 0x280, COUNTER_REGISTERS), (0x280, 0x300, TELEMETRY)]


def place(specs, base, build=None):
    """The registers of declarations ``specs`` (``fpq.register_specs.RegisterSpec``) that
    ``build`` has, at consecutive byte addresses from ``base``, in placement order
    (``fpq.register_specs.in_placement_order``: first those every build has, in declaration
    order, then those some builds lack, so that the addresses of the others do not depend on
    the build). A register of ``n`` > 1 words starts at a multiple of ``4 n`` bytes.

    A configuration register (kind "config") is a shadow, access "rw" ("secret" when
    ``RegisterSpec.secret``), reset the build's default configuration's value
    (``Config(build=build)``: its power-on keys, ``Build.power_on_keys``); one that ``build``
    fixes (``RegisterSpec.fixed_in``) is a constant instead: kind "fixed", read-only (a
    secret one reads 0). Any other register is as declared.

    Parameters
    ----------
    specs : list of RegisterSpec
    base : int
    build : Build
        Default ``Build()``.

    Returns a list of :class:`Register`."""
    build = build or Build()
    specs = in_placement_order(specs, build)
    defaults = Config(build=build).registers() if any(s.kind == "config" for s in specs) \
        else {}
    out, offset = [], base
    for s in specs:
        words, width, fmt = s.words_in(build), s.width_in(build), s.fmt_in(build)
        offset = (offset + 4 * words - 1) // (4 * words) * (4 * words) if words > 1 else offset
        lo, hi = s.bounds(build)
        secret = s.secret
        if s.kind != "config":
            out.append(Register(s.name, offset, width, s.access, s.kind, lo, hi,
                                s.reset_in(build), fmt, s.doc, secret))
        elif s.fixed_in(build):
            out.append(Register(s.name, offset, width, "secret" if secret else "ro", "fixed",
                                lo, hi, defaults[s.name], fmt,
                                s.doc + (" Fixed in this build (Build.fixed): a write is "
                                         "ignored, reads return 0." if secret else
                                         " Fixed in this build (Build.fixed): read-only."),
                                secret))
        else:
            out.append(Register(s.name, offset, width, "secret" if secret else "rw", "config",
                                lo, hi, defaults[s.name], fmt, s.doc, secret))
        offset += 4 * words
    return out


def registers(build=None):
    """All registers for ``build`` (a :class:`fpq.config.Build`), in index order."""
    build = build or Build()
    regs = []
    for base, end, specs in BLOCKS:
        block = place(specs, base, build)
        assert block[-1].offset + 4 * block[-1].words <= end
        regs += block
    return regs


def tables(build=None):
    build = build or Build()
    return [
        Table("rate_table", 0x40000, build.table_depth, RATE.width, "RATE m16 s6",
              "FPQ r(n) = l_t(n) / q_t(n) for n = 0 .. table_depth-1."),
    ]


def build_word(build):
    """The ``build`` register's value for ``build`` (sizes, ``avg_delay``, the fixed bit)."""
    return ((build.vec_bits.bit_length() - 1) | ((build.table_depth.bit_length() - 1) << 5)
            | (build.avg_delay << 10) | (bool(build.fixed) << BUILD_FIXED_BIT)
            | ((not build.hash_mix) << BUILD_PLAIN_HASH_BIT)
            | (HASH_INPUTS.index(build.hash_input) << BUILD_HASH_INPUT_SHIFT)
            | ((build.flow_key == "ipv6") << BUILD_IPV6_BIT))


def check_registers(values, build=None):
    """The commit check the hardware does (``fpq.register_specs.commit_check``): the index
    (in ``registers()``, the ``STATUS.REJECT_INDEX`` the hardware reports) of the first
    configuration register whose value in ``values`` is out of range, or None if the commit
    is accepted."""
    bad = commit_check(values, build or Build())
    return None if bad is None else [r.name for r in registers(build)].index(bad)


# ---- generators -------------------------------------------------------------------------
#: What the generated map shows as the reset value of a secret configuration register
#: whose value the build does not set: an exported core resets it to the power-on value
#: drawn for that export (``fpq verilog``), not to ``Config``'s public default.
PER_EXPORT_SHOWN = "per export (NAME_keys.vh)"


def _reset_is_secret(r, build):
    """Whether the reset value of ``r`` is secret: a key or seed ``build`` sets (a fixed
    one, or a power-on one: ``Build.secret_values``), or one each export draws (a secret
    configuration register, :data:`PER_EXPORT_SHOWN`). The generated map does not give
    either away."""
    spec = _CONFIG_SPECS.get(r.name)
    return r.secret and spec is not None


def _shown_reset(r, build):
    """The reset value the generated map shows for ``r`` in ``build``: ``SECRET_SHOWN``
    (``fpq.fields``) for a key the build sets, :data:`PER_EXPORT_SHOWN` for one each
    export draws (:func:`_reset_is_secret`)."""
    if not _reset_is_secret(r, build):
        return r.reset
    spec = _CONFIG_SPECS[r.name]
    return SECRET_SHOWN if any(f in build.secret_values() for f in spec.sources) \
        else PER_EXPORT_SHOWN


def to_json(build=None):
    build = build or Build()
    return json.dumps({
        "build": build.to_json(),
        "bus": {"data_bits": 32, "address": "byte", "word_order": "least significant first"},
        "registers": [dict(r.__dict__, words=r.words, index=i, reset=_shown_reset(r, build))
                      for i, r in enumerate(registers(build))],
        "tables": [dict(t.__dict__) for t in tables(build)],
        "control": {"COMMIT": CONTROL_COMMIT, "CLEAR_ERRORS": CONTROL_CLEAR_ERRORS},
        "status": STATUS_BITS | {"REJECT_INDEX_SHIFT": STATUS_REJECT_INDEX_SHIFT},
    }, indent=1, default=str) + "\n"


def address_constants(build):
    """The map's addresses and sizes for the generated headers (C, SystemVerilog), one group
    per register or table: ``(comment, [(NAME, value, is_address), ...])``."""
    groups = []
    for i, r in enumerate(registers(build)):
        n = r.name.upper()
        groups.append((f"{r.doc} [{r.access}, {r.width} bits, {r.fmt}]",
                       [(f"REG_{n}", r.offset, True), (f"REG_{n}_WIDTH", r.width, False),
                        (f"REG_{n}_INDEX", i, False)]))
    for t in tables(build):
        n = t.name.upper()
        groups.append((t.doc, [(n, t.offset, True), (f"{n}_DEPTH", t.depth, False),
                               (f"{n}_WIDTH", t.width, False)]))
    return groups


def to_c_header(build=None):
    build = build or Build()
    lines = ["/* Generated by `fpq regmap` from sw/fpq/fields.py, sw/fpq/register_specs.py and",
             " * sw/fpq/regmap.py. Do not edit. Byte addresses of 32-bit words; wide registers",
             " * take consecutive words, least significant first. */",
             "#ifndef FPQ_REGS_H", "#define FPQ_REGS_H", "",
             f"#define FPQ_BUILD_VEC_BITS {build.vec_bits}u",
             f"#define FPQ_BUILD_TABLE_DEPTH {build.table_depth}u",
             f"#define FPQ_BUILD_AVG_DELAY {build.avg_delay}u",
             f"#define FPQ_ID_VALUE 0x{ID_VALUE:08x}u",
             f"#define FPQ_CONTROL_COMMIT 0x{CONTROL_COMMIT:x}u",
             f"#define FPQ_CONTROL_CLEAR_ERRORS 0x{CONTROL_CLEAR_ERRORS:x}u"]
    for name, bit in STATUS_BITS.items():
        lines.append(f"#define FPQ_STATUS_{name} (1u << {bit})")
    lines.append(f"#define FPQ_STATUS_REJECT_INDEX_SHIFT {STATUS_REJECT_INDEX_SHIFT}")
    lines.append("")
    for comment, constants in address_constants(build):
        lines.append(f"/* {comment} */")
        for name, value, is_address in constants:
            lines.append(f"#define FPQ_{name} 0x{value:05x}u" if is_address else
                         f"#define FPQ_{name} {value}u")
    lines += ["", "#endif /* FPQ_REGS_H */", ""]
    return "\n".join(lines)


def _row(*cells):
    """A Markdown table row; a ``|`` inside a cell (``x|y|z|w``) is escaped, so that it does
    not end the cell."""
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def to_markdown(build=None):
    build = build or Build()
    out = ["# Register map", "",
           "Generated by `make regmap` from the one configuration source (`sw/fpq/fields.py`, "
           "`sw/fpq/register_specs.py`) and `sw/fpq/regmap.py`; do not edit by hand. Build: "
           f"vec_bits {build.vec_bits}, table_depth {build.table_depth}, avg_delay "
           f"{build.avg_delay}. Byte addresses; 32-bit words; wide registers take consecutive "
           "words, least significant first.", "",
           "## Behaviour", ""]
    doc = __doc__.split("Behaviour the hardware guarantees (and the model mirrors in "
                        ":func:`check_registers`):")[1]
    out += [line[0:] for line in doc.strip("\n").splitlines()]
    out += ["", "## Registers", "",
            "| index | address | name | access | bits | format | range (raw) | reset | description |",
            "|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(registers(build)):
        rng = f"{r.lo:#x} .. {r.hi:#x}" if r.kind == "config" else \
            "fixed" if r.kind == "fixed" else ""
        out.append(_row(i, f"0x{r.offset:05x}", f"`{r.name}`", r.access, r.width, r.fmt, rng,
                        _hex(_shown_reset(r, build)), r.doc))
    out += ["", "## Tables", "", "| address | name | depth | bits | format | description |",
            "|---|---|---|---|---|---|"]
    for t in tables(build):
        out.append(_row(f"0x{t.offset:05x}", f"`{t.name}`", t.depth, t.width, t.fmt, t.doc))
    out += ["", "## Configuration fields", "",
            "User-level fields (`fpq.Config`). `host` fields are folded by the driver into "
            "derived registers or the r(N) table; `float` fields are parameters of the paper's "
            "float model only (`fpq.float_model`).", "",
            "| field | kind | type | unit | hardware format | range | default | description |",
            "|---|---|---|---|---|---|---|---|"]
    for f in FIELDS:
        lo, hi = f.bounds(build)
        default = f.default(build) if callable(f.default) else f.default
        if isinstance(default, bytes):
            lo = hi = f"{lo} bytes"
        if f.name in build.secret_values():
            default = SECRET_SHOWN
        elif isinstance(default, bytes):
            default = default.hex()
        fmt = f.fmt(build) if callable(f.fmt) else f.fmt
        out.append(_row(f"`{f.name}`", f.kind, f.type, f.unit, fmt, f"[{lo}, {hi}]", default,
                        f.doc))
    return "\n".join(out) + "\n" + _WITHOUT_PYTHON


#: The last section of docs/REGISTERS.md.
_WITHOUT_PYTHON = """
## Configuring the core without Python

`fpq config` turns a configuration (the fields above, for one build) into what a host writes
to apply it: a file made once, used at run time by firmware, a testbench or a script in any
language. The derived registers count clocks of the queue manager, so give its clock
(`tick_hz`). The build options are those of `fpq verilog`; a bitstream built with `--fix`
needs the same `--fix` here.

```sh
# the register map of the build (C header) and the configuration for it (C)
fpq regmap --vec-bits 8192 --table-depth 8192 --format c -o fw/fpq_regs.h
fpq config --vec-bits 8192 --table-depth 8192 --set tick_hz=150e6 --set mode=fpq \\
    --set v_max=5000 --set t_clear_s=4 --set limit_pkts=1000 --format c -o fw/fpq_config.c
# the same as data, from a JSON object of fields (as Config.to_dict() writes them)
fpq config --config fields.json --format json -o config.json
# the configuration a simulator scenario runs, for a Verilog testbench
fpq config --scenario sim/scenarios/fpq-fpq.toml --format readmemh -o mem/
# the register map as SystemRDL 2.0 (reset values of the build, ranges in the descriptions)
fpq regmap --format systemrdl -o fpq.rdl
```

Bad values are refused naming the field and its range, and nothing is written. Every output
is complete or absent. The outputs hold the hash key: keep them as secret as the key. The
sequence a host follows (`fpq.config_export`):

1. Read `id`, `build` and every register the build fixes, and compare: the writes are for
   that build only. A fixed key reads 0 and is not compared.
2. Write `CONTROL.CLEAR_ERRORS`.
3. Write every word of every configuration register, least significant word first.
4. Write every word of every table (into the inactive bank).
5. Write `CONTROL.COMMIT`.
6. Read `status` until `BUSY` clears (a commit that changes `v_max` or `hash_key` wipes
   the vector, about `vec_bits` clocks); `COMMIT_REJECTED` and `REJECT_INDEX` name a
   register out of range, `BAD_WRITE` a refused write.

Formats (`--format`, output `-o`):

- `c`: `fpq_config.c` and `fpq_config.h` (`-o` names the `.c`) with the writes and tables
  as constant arrays and `int fpq_apply_config(volatile uint32_t *base, uint32_t *index)`
  (a memory-mapped register file at `base`) and `fpq_apply_config_bus(&bus, &index)`
  (read and write callbacks), which do the six steps and return `FPQ_CONFIG_OK` (0) or
  `FPQ_CONFIG_ERR_ID`, `_BUILD`, `_FIXED`, `_TIMEOUT` (after `FPQ_CONFIG_MAX_POLLS` status
  reads; define it to change it), `_REJECTED`, `_BAD_WRITE`; `*index` names the register of
  `_FIXED` and `_REJECTED`. C99; the `.c` includes `fpq_regs.h` and does not compile with
  the header of another build.
- `json`: one file (`-` for standard output). `build`; `config` (the fields, input of
  `--config`); `registers` (every raw value, hex text); `expect` (step 1: `{address, value,
  name}` to read and compare); `writes` (steps 2, 3 and 5 in order: `{address, value,
  name}`, the last is the commit; `hash_key[2]` is word 2 of `hash_key`); `tables` (step 4:
  `{name, address, depth, width, values}`, `values[i]` at `address + 4 i`, before the last
  write); `status` (step 6: its address and bit masks).
- `readmemh`: a folder with one `$readmemh` file per table, `rate_table.hex` (`table_depth`
  lines of 6 hex digits: 22-bit RATE words, entry n on line n), and `bus_writes.hex` (steps
  2 to 5 as 64-bit words, `address[63:32]` and `value[31:0]`, one per line); the headers
  give the Verilog declarations that read them.
"""


def _hex(value):
    return f"{value:#x}" if isinstance(value, int) else value


def _rdl_string(text):
    """``text`` as a SystemRDL string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _rdl_number(value, width):
    return f"{width}'h{value:x}"


#: SystemRDL field properties of each access of the map: what software and the queue
#: manager may do with a register (``rc``: a write of any value clears it).
_RDL_ACCESS = {
    "rw": "sw = rw; hw = r;",
    "ro": "sw = r; hw = w;",
    "rc": "sw = rw; hw = w; onwrite = wclr;",
    "secret": "sw = w; hw = r;",
}
#: The named bits of ``control`` and ``status``: (name, msb, lsb, description).
_RDL_BITS = {
    "control": [("COMMIT", 0, 0, "Check the shadows and apply them all in one clock, or "
                 "reject the commit (STATUS.COMMIT_REJECTED)."),
                ("CLEAR_ERRORS", 1, 1, "Clear COMMIT_REJECTED, BAD_WRITE and REJECT_INDEX.")],
    "status": [("BUSY", STATUS_BITS["BUSY"], STATUS_BITS["BUSY"],
                "A commit or a wipe of the flow vector is under way."),
               ("COMMIT_REJECTED", STATUS_BITS["COMMIT_REJECTED"],
                STATUS_BITS["COMMIT_REJECTED"], "Sticky: a commit was rejected."),
               ("BAD_WRITE", STATUS_BITS["BAD_WRITE"], STATUS_BITS["BAD_WRITE"],
                "Sticky: a write was refused (read-only or unmapped address, a value wider "
                "than its register, undefined control bits)."),
               ("TABLES_DEFAULT", STATUS_BITS["TABLES_DEFAULT"],
                STATUS_BITS["TABLES_DEFAULT"],
                "The active bank of the r(N) table holds its power-on contents, the "
                "defaults' table: 1 until a commit swaps in a bank the host wrote."),
               ("REJECT_INDEX", STATUS_REJECT_INDEX_SHIFT + 7, STATUS_REJECT_INDEX_SHIFT,
                "Sticky: index of the first register out of range of the rejected commit.")],
}


def _rdl_register(r, index, build):
    """SystemRDL lines of register ``r``: one register of 32, 64 or 128 bits (accessed in
    32-bit words, least significant first) where its words allow, else one register per
    32-bit word, ``name_0``, ``name_1``, ..."""
    if r.kind == "fixed":
        access = "sw = r; hw = na;"             # a secret one reads as the constant 0
    elif r.kind == "control" and r.access == "ro" and r.name not in _RDL_BITS:
        access = "sw = r; hw = na;"             # id and build: constants of the build
    else:
        access = _RDL_ACCESS.get(r.access)
    doc = r.doc + (f" Format: {r.fmt}." if r.fmt else "")
    if r.secret:
        doc += " Secret: write-only, every read returns 0."
    if r.kind == "config":
        doc += (f" Range (raw, checked at CONTROL.COMMIT): {r.lo:#x} .. {r.hi:#x}; index "
                f"{index} (STATUS.REJECT_INDEX). A shadow: a write applies at the next commit.")
    if r.words == 1 or (r.words in (2, 4) and r.offset % (4 * r.words) == 0):
        parts = [(r.name, r.offset, 32 * r.words, 0, r.width, doc)]
    else:
        parts = [(f"{r.name}_{w}", r.offset + 4 * w, 32, 32 * w,
                  min(32, r.width - 32 * w),
                  f"Word {w} (bits {min(r.width, 32 * w + 32) - 1}..{32 * w}) of {r.name}. "
                  + doc) for w in range(r.words)]
    out = []
    for name, offset, regwidth, lsb, width, text in parts:
        out += ["    reg {", f"        name = {_rdl_string(name)};",
                f"        desc = {_rdl_string(text)};", f"        regwidth = {regwidth};"]
        if r.name in _RDL_BITS:
            field_access = ("sw = w; hw = r; singlepulse = true;" if r.name == "control"
                            else "sw = r; hw = w;")
            for bit_name, msb, lsb_, bit_doc in _RDL_BITS[r.name]:
                value = (r.reset >> lsb_) & ((1 << (msb - lsb_ + 1)) - 1)
                out.append(f"        field {{ {field_access} desc = {_rdl_string(bit_doc)}; "
                           f"}} {bit_name}[{msb}:{lsb_}] = {value};")
        else:
            # a key the build sets is left out (0), as the other maps leave it out
            reset = 0 if _reset_is_secret(r, build) else (r.reset >> lsb) & ((1 << width) - 1)
            out.append(f"        field {{ {access} }} {name}[{width - 1}:0] = "
                       f"{_rdl_number(reset, width)};")
        out.append(f"    }} {name} @ 0x{offset:05x};")
    return out


def to_systemrdl(build=None):
    """The register map as a SystemRDL 2.0 ``addrmap fpq``: every register (reset values of
    ``build``, ranges in the descriptions) and every table (an external ``mem``)."""
    build = build or Build()
    out = ["// Generated by `fpq regmap --format systemrdl` from sw/fpq/fields.py,",
           "// sw/fpq/register_specs.py and sw/fpq/regmap.py; do not edit. The behaviour",
           "// (shadows, commit, re-key, errors) is in docs/REGISTERS.md.",
           f"// Build: vec_bits {build.vec_bits}, table_depth {build.table_depth}, avg_delay "
           f"{build.avg_delay}" + (f", fixed {build.fixed_json()}" if build.fixed else "") + ".",
           "addrmap fpq {",
           '    name = "FPQ queue manager";',
           "    desc = " + _rdl_string(
               "Flow-Proportional Queuing / RED / drop-tail queue manager. A 32-bit bus at byte "
               "addresses; a register wider than 32 bits takes consecutive words, least "
               "significant first. Configuration registers are shadows applied together by "
               "CONTROL.COMMIT, which checks their ranges first.") + ";",
           "    default accesswidth = 32;", ""]
    for i, r in enumerate(registers(build)):
        out += _rdl_register(r, i, build)
    for t in tables(build):
        out += ["", "    external mem {", f"        name = {_rdl_string(t.name)};",
                "        desc = " + _rdl_string(
                    f"{t.doc} Entries of {t.width} bits ({t.fmt}) in the low bits of each "
                    f"word. Write-only (reads return 0); writes go to the inactive bank, the "
                    f"next CONTROL.COMMIT swaps the banks: write the whole table.") + ";",
                f"        mementries = {t.depth};", "        memwidth = 32;", "        sw = w;",
                f"    }} {t.name} @ 0x{t.offset:05x};"]
    out += ["};", ""]
    return "\n".join(out)


#: ``fpq regmap --format`` choices and their generators (each takes a ``Build``).
FORMATS = {"json": to_json, "c": to_c_header, "markdown": to_markdown,
           "systemrdl": to_systemrdl}

GENERATED = {
    "sw/generated/regmap.json": to_json,
    "sw/generated/fpq_regs.h": to_c_header,
    "docs/REGISTERS.md": to_markdown,
}


def write_all(out=None, docs=None, root=None, build=None):
    """Write the generated files of ``GENERATED`` for ``build`` (default ``Build()``), every
    one complete or none changed (``fpq.output_files``). Returns their paths.

    Parameters
    ----------
    out : str
        Folder for ``regmap.json``, ``fpq_regs.h`` and, without ``docs``, ``REGISTERS.md``.
        Default: the checkout's ``sw/generated`` (and ``docs/REGISTERS.md``).
    docs : str
        The Markdown file.
    root : str
        The checkout (default: the one this package is in; an installed package has none,
        and then ``out`` is required).
    Relative paths are relative to the current directory."""
    from .output_files import write_files
    from .paths import checkout_root
    root = root or checkout_root()
    if root is None and out is None:
        raise ValueError("out: required when the package is installed (there is no "
                         "checkout's sw/generated to write)")
    files = {}
    for rel, gen in GENERATED.items():
        if rel.endswith(".md"):
            path = docs or (os.path.join(out, os.path.basename(rel)) if out else
                            os.path.join(root, rel))
        else:
            path = os.path.join(out, os.path.basename(rel)) if out else os.path.join(root, rel)
        files[path] = gen(build)
    return write_files(files)
