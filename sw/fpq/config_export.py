"""A configuration as bus writes and table contents, for hosts without Python (``fpq config``).

A :class:`fpq.Config` becomes what a host writes to the register file of ``fpq.regmap`` to
apply it, in the order the register file needs:

1. read ``id``, ``build`` and every register the build fixes, and compare (:func:`expected_reads`):
   the writes are for this build only (the table depth, the fixed values); a fixed secret
   register (a key) reads 0 and is not compared;
2. ``CONTROL.CLEAR_ERRORS``, so that the status read at the end is this commit's;
3. every word of every configuration register, least significant word first, in register
   index order (:func:`register_writes`; the registers a build fixes are read-only and left
   out);
4. every word of every table (:func:`table_contents`): they go to the inactive bank;
5. ``CONTROL.COMMIT``, the last write;
6. read ``status`` until ``BUSY`` clears (a commit that changes ``v_max`` or ``hash_key``
   wipes the vector, about ``vec_bits`` clocks); ``COMMIT_REJECTED`` with ``REJECT_INDEX``
   names a register out of range, ``BAD_WRITE`` a write the register file refused.

:func:`bus_writes` is steps 2 to 5 as one list. The formats (``docs/REGISTERS.md``,
"Configuring the core without Python", has the commands):

* :func:`to_json`: the steps as data. Schema (``"format": "fpq-config"``, ``"version": 1``)::

    build       {vec_bits, table_depth, avg_delay, fixed}: what the writes are for
    config      the configuration's fields, as Config.to_dict() (input of fpq config --config)
    registers   {name: "0x..."}: every register's raw value (Config.registers()), hex text
    expect      [{address, value, name}]: step 1, read each word and compare
    writes      [{address, value, name}]: steps 2, 3 and 5 in order; the last is the commit
    tables      [{name, address, depth, width, values}]: step 4, write values[i] to
                address + 4 i before the last write
    status      {address, busy, commit_rejected, bad_write, reject_index_shift,
                reject_index_mask}: step 6

  Addresses are byte addresses, values 32-bit words (a name ``hash_key[2]`` is word 2 of
  ``hash_key``, bits 64..95).
* :func:`to_c`: a ``.c``/``.h`` pair with the same data as constant arrays and
  ``fpq_apply_config(base)`` (memory-mapped bus) and ``fpq_apply_config_bus(bus)`` (read
  and write callbacks), which do the six steps and return ``FPQ_CONFIG_OK`` or an error code.
  It includes ``fpq_regs.h`` of the same build (``fpq regmap``) and refuses to compile with
  another.
* :func:`to_readmemh`: one ``$readmemh`` file per table and ``bus_writes.hex``, steps 2 to 5
  as 64-bit words ``{address, value}`` for a testbench or a start-up sequencer.
"""

from dataclasses import dataclass
import json
import os

from .regmap import (registers, tables, build_word, ID_VALUE, CONTROL_COMMIT,
                     CONTROL_CLEAR_ERRORS, STATUS_BITS, STATUS_REJECT_INDEX_SHIFT)

__all__ = ["BusWrite", "expected_reads", "register_writes", "table_contents", "bus_writes",
           "to_json", "to_c", "to_readmemh", "readmemh_name", "FORMATS", "outputs"]

FORMAT_NAME, FORMAT_VERSION = "fpq-config", 1
#: ``--format`` choices of ``fpq config``.
FORMATS = ("json", "c", "readmemh")
#: The ``$readmemh`` file of the bus writes (steps 2 to 5).
BUS_WRITES_FILE = "bus_writes.hex"


@dataclass(frozen=True)
class BusWrite:
    """One 32-bit word at a byte address: a write, or a read and its expected value."""
    address: int
    value: int
    name: str

    def to_json(self):
        return {"address": self.address, "value": self.value, "name": self.name}


def _register_words(reg, value):
    """``(name, address, word)`` of each 32-bit word of ``value`` in ``reg``, least
    significant first."""
    if reg.words == 1:
        return [(reg.name, reg.offset, value & 0xFFFFFFFF)]
    return [(f"{reg.name}[{w}]", reg.offset + 4 * w, (value >> (32 * w)) & 0xFFFFFFFF)
            for w in range(reg.words)]


def expected_reads(config):
    """Step 1: the words to read and compare before writing (``id``, ``build``, every word of
    every register the build fixes), as :class:`BusWrite` (the value expected)."""
    raw = config.registers()
    regs = {r.name: r for r in registers(config.build)}
    out = [BusWrite(regs["id"].offset, ID_VALUE, "id"),
           BusWrite(regs["build"].offset, build_word(config.build), "build")]
    for r in registers(config.build):
        if r.kind == "fixed" and not r.secret:     # a fixed key reads 0: nothing to compare
            out += [BusWrite(a, v, n) for n, a, v in _register_words(r, raw[r.name])]
    return out


def register_writes(config):
    """Steps 2, 3 and 5: ``CLEAR_ERRORS``, every word of every configuration register in
    index order, ``COMMIT`` last (the tables go before it)."""
    raw = config.registers()
    control = next(r for r in registers(config.build) if r.name == "control")
    out = [BusWrite(control.offset, CONTROL_CLEAR_ERRORS, "control.CLEAR_ERRORS")]
    for r in registers(config.build):
        if r.kind == "config":
            out += [BusWrite(a, v, n) for n, a, v in _register_words(r, raw[r.name])]
    return out + [BusWrite(control.offset, CONTROL_COMMIT, "control.COMMIT")]


def table_contents(config):
    """``{name: [word, ...]}`` of every table of the register map, entry ``i`` at the
    table's address + 4 i."""
    known = {"rate_table": config.rate_table}
    out = {}
    for t in tables(config.build):
        if t.name not in known:
            raise NotImplementedError(f"{t.name}: the register map has a table whose "
                                      f"contents fpq.config_export does not know")
        out[t.name] = known[t.name]()
        assert len(out[t.name]) == t.depth
    return out


def bus_writes(config, contents=None):
    """Steps 2 to 5 as one list of :class:`BusWrite`: the register writes, every table word,
    the commit. ``contents``: :func:`table_contents` if already computed."""
    contents = contents or table_contents(config)
    regs = register_writes(config)
    words = [BusWrite(t.offset + 4 * i, v, f"{t.name}[{i}]")
             for t in tables(config.build) for i, v in enumerate(contents[t.name])]
    return regs[:-1] + words + regs[-1:]


def _status_json(build):
    status = next(r for r in registers(build) if r.name == "status")
    return {"address": status.offset, "busy": 1 << STATUS_BITS["BUSY"],
            "commit_rejected": 1 << STATUS_BITS["COMMIT_REJECTED"],
            "bad_write": 1 << STATUS_BITS["BAD_WRITE"],
            "reject_index_shift": STATUS_REJECT_INDEX_SHIFT, "reject_index_mask": 0xFF}


def to_json(config):
    """The JSON document of the module docstring's schema, as text."""
    contents = table_contents(config)
    doc = {
        "format": FORMAT_NAME, "version": FORMAT_VERSION,
        "build": config.build.to_json(),
        "config": config.to_dict(),
        "registers": {name: f"{value:#x}" for name, value in config.registers().items()},
        "expect": [w.to_json() for w in expected_reads(config)],
        "writes": [w.to_json() for w in register_writes(config)],
        "tables": [{"name": t.name, "address": t.offset, "depth": t.depth, "width": t.width,
                    "values": contents[t.name]} for t in tables(config.build)],
        "status": _status_json(config.build),
    }
    return json.dumps(doc, indent=1) + "\n"


def _describe(config):
    """Comment lines naming the build and the configuration's fields."""
    b = config.build
    fields = [f"{k}={json.dumps(v)}" for k, v in config.to_dict().items()]
    lines = [f"Build: vec_bits {b.vec_bits}, table_depth {b.table_depth}, avg_delay "
             f"{b.avg_delay}" + (f", fixed {b.fixed_json()}" if b.fixed else "") + ".",
             "Configuration:"]
    line = ""
    for f in fields:
        if line and len(line) + len(f) > 80:
            lines.append(line)
            line = ""
        line += (" " if line else "  ") + f
    return lines + [line]


def _regmap_options(build):
    """The ``fpq regmap`` options of ``build``."""
    opts = f"--vec-bits {build.vec_bits} --table-depth {build.table_depth} " \
           f"--avg-delay {build.avg_delay}"
    return opts + "".join(f" --fix {k}={v}" for k, v in build.fixed_json().items())


def _c_address(reg_name, address, base):
    """``FPQ_REG_X + 4u`` for a word of register ``reg_name`` at ``address``."""
    delta = address - base
    return f"FPQ_REG_{reg_name.upper()}" + (f" + {delta}u" if delta else "")


def to_c(config, header_name="fpq_config.h"):
    """``(c_text, h_text)``: the constant arrays of the six steps and ``fpq_apply_config``.

    Parameters
    ----------
    config : Config
    header_name : str
        The header's file name, which the ``.c`` file includes."""
    b = config.build
    regs = registers(b)
    by_name = {r.name: r for r in regs}
    contents = table_contents(config)
    guard = "".join(c if c.isalnum() else "_" for c in header_name.upper())
    describe = [" * " + line for line in _describe(config)]
    tabs = tables(b)

    h = ["/* Generated by `fpq config` (sw/fpq/config_export.py); do not edit.",
         " * The register writes and tables of one FPQ configuration, and the function that",
         " * applies them (docs/REGISTERS.md, \"Configuring the core without Python\").",
         *describe, " */",
         f"#ifndef {guard}", f"#define {guard}", "", "#include <stdint.h>", "",
         "#ifdef __cplusplus", "extern \"C\" {", "#endif", "",
         "/* Return codes of fpq_apply_config and fpq_apply_config_bus. */",
         "#define FPQ_CONFIG_OK 0",
         "/* the id register does not read FPQ_ID_VALUE: no FPQ register file at this base */",
         "#define FPQ_CONFIG_ERR_ID (-1)",
         "/* the build register is not this configuration's build (sizes, avg_delay, fixed bit)"
         " */",
         "#define FPQ_CONFIG_ERR_BUILD (-2)",
         "/* a register the build fixes reads another value (*index: its index) */",
         "#define FPQ_CONFIG_ERR_FIXED (-3)",
         "/* STATUS.BUSY still set after FPQ_CONFIG_MAX_POLLS reads of status */",
         "#define FPQ_CONFIG_ERR_TIMEOUT (-4)",
         "/* the commit was rejected (*index: STATUS.REJECT_INDEX, the first register out of "
         "range) */",
         "#define FPQ_CONFIG_ERR_REJECTED (-5)",
         "/* STATUS.BAD_WRITE: the register file refused a write */",
         "#define FPQ_CONFIG_ERR_BAD_WRITE (-6)", "",
         "#ifndef FPQ_CONFIG_MAX_POLLS",
         "#define FPQ_CONFIG_MAX_POLLS 1000000u",
         "#endif", "",
         "/* the build register's value for this configuration's build */",
         f"#define FPQ_CONFIG_BUILD_WORD 0x{build_word(b):08x}u", "",
         "/* a word at a byte address: a write, or a read and its expected value; index: the",
         " * register's index (FPQ_REG_*_INDEX) */",
         "struct fpq_word { uint32_t address; uint32_t value; uint32_t index; };",
         "/* a table: depth words, values[i] at byte address address + 4 i */",
         "struct fpq_table { uint32_t address; uint32_t depth; const uint32_t *values; };",
         "/* a 32-bit bus: read and write one word at a byte address; ctx is passed through */",
         "struct fpq_bus {",
         "    uint32_t (*read)(void *ctx, uint32_t address);",
         "    void (*write)(void *ctx, uint32_t address, uint32_t value);",
         "    void *ctx;",
         "};", "",
         "/* step 1: id, build and the registers the build fixes, read and compared */",
         f"#define FPQ_CONFIG_EXPECT_COUNT {len(expected_reads(config))}u",
         "extern const struct fpq_word fpq_config_expect[FPQ_CONFIG_EXPECT_COUNT];",
         "/* steps 2, 3 and 5: CLEAR_ERRORS, every configuration register word, COMMIT last */",
         f"#define FPQ_CONFIG_WRITE_COUNT {len(register_writes(config))}u",
         "extern const struct fpq_word fpq_config_writes[FPQ_CONFIG_WRITE_COUNT];",
         "/* step 4: the tables, written before the commit */",
         f"#define FPQ_CONFIG_TABLE_COUNT {len(tabs)}u",
         "extern const struct fpq_table fpq_config_tables[FPQ_CONFIG_TABLE_COUNT];"]
    for t in tabs:
        h.append(f"extern const uint32_t fpq_config_{t.name}[{t.depth}u];")
    h += ["",
          "/* Apply the configuration over bus: check id, build and the fixed registers,",
          " * write the registers and tables, commit, and wait for the commit (reads of",
          " * status). Returns FPQ_CONFIG_OK or an FPQ_CONFIG_ERR_* code; on ERR_FIXED and",
          " * ERR_REJECTED *index (if index is not NULL) is the register's index. Nothing is",
          " * written unless step 1 passes. */",
          "int fpq_apply_config_bus(const struct fpq_bus *bus, uint32_t *index);",
          "/* The same over a memory-mapped register file: base points at its byte address 0. */",
          "int fpq_apply_config(volatile uint32_t *base, uint32_t *index);", "",
          "#ifdef __cplusplus", "}", "#endif", "",
          f"#endif /* {guard} */", ""]

    def word_line(w, reg_name):
        r = by_name[reg_name]
        return (f"    {{{_c_address(reg_name, w.address, r.offset)}, 0x{w.value:08x}u, "
                f"FPQ_REG_{reg_name.upper()}_INDEX}}, /* {w.name} */")

    c = ["/* Generated by `fpq config` (sw/fpq/config_export.py); do not edit.",
         *describe, " */",
         f'#include "{header_name}"', '#include "fpq_regs.h"', "",
         "/* the register map of this configuration's build (generate it with",
         f" * fpq regmap {_regmap_options(b)} --format c -o fpq_regs.h) */",
         f"#if FPQ_BUILD_VEC_BITS != {b.vec_bits}u || FPQ_BUILD_TABLE_DEPTH != "
         f"{b.table_depth}u || FPQ_BUILD_AVG_DELAY != {b.avg_delay}u",
         "#error \"fpq_regs.h is for another build than this configuration (see above)\"",
         "#endif", ""]
    for t in tabs:
        c.append(f"#if FPQ_{t.name.upper()}_DEPTH != {t.depth}u")
        c.append(f"#error \"fpq_regs.h: {t.name} depth is not this configuration's\"")
        c.append("#endif")
    c += ["", "const struct fpq_word fpq_config_expect[FPQ_CONFIG_EXPECT_COUNT] = {",
          "    {FPQ_REG_ID, FPQ_ID_VALUE, FPQ_REG_ID_INDEX},",
          "    {FPQ_REG_BUILD, FPQ_CONFIG_BUILD_WORD, FPQ_REG_BUILD_INDEX},"]
    for w in expected_reads(config)[2:]:
        c.append(word_line(w, w.name.split("[")[0]))
    c += ["};", "", "const struct fpq_word fpq_config_writes[FPQ_CONFIG_WRITE_COUNT] = {"]
    writes = register_writes(config)
    c.append("    {FPQ_REG_CONTROL, FPQ_CONTROL_CLEAR_ERRORS, FPQ_REG_CONTROL_INDEX},")
    for w in writes[1:-1]:
        c.append(word_line(w, w.name.split("[")[0]))
    c += ["    {FPQ_REG_CONTROL, FPQ_CONTROL_COMMIT, FPQ_REG_CONTROL_INDEX},", "};", ""]
    for t in tabs:
        digits = (t.width + 3) // 4
        c.append(f"/* {t.doc} {t.fmt}, {t.width} bits */")
        c.append(f"const uint32_t fpq_config_{t.name}[{t.depth}u] = {{")
        values = contents[t.name]
        for i in range(0, len(values), 8):
            c.append("    " + " ".join(f"0x{v:0{digits}x}u," for v in values[i:i + 8]))
        c += ["};", ""]
    c.append("const struct fpq_table fpq_config_tables[FPQ_CONFIG_TABLE_COUNT] = {")
    for t in tabs:
        c.append(f"    {{FPQ_{t.name.upper()}, FPQ_{t.name.upper()}_DEPTH, "
                 f"fpq_config_{t.name}}},")
    c += ["};", "", _C_APPLY]
    return "\n".join(c), "\n".join(h)


_C_APPLY = r"""int fpq_apply_config_bus(const struct fpq_bus *bus, uint32_t *index)
{
    uint32_t i, j, status = 0;
    /* step 1: the writes below are for this build only */
    for (i = 0; i < FPQ_CONFIG_EXPECT_COUNT; i++) {
        const struct fpq_word *w = &fpq_config_expect[i];
        if (bus->read(bus->ctx, w->address) != w->value) {
            if (w->index == FPQ_REG_ID_INDEX)
                return FPQ_CONFIG_ERR_ID;
            if (w->index == FPQ_REG_BUILD_INDEX)
                return FPQ_CONFIG_ERR_BUILD;
            if (index)
                *index = w->index;
            return FPQ_CONFIG_ERR_FIXED;
        }
    }
    /* steps 2 and 3: clear the sticky errors, the registers' shadows */
    for (i = 0; i + 1 < FPQ_CONFIG_WRITE_COUNT; i++)
        bus->write(bus->ctx, fpq_config_writes[i].address, fpq_config_writes[i].value);
    /* step 4: the tables, into the inactive bank */
    for (i = 0; i < FPQ_CONFIG_TABLE_COUNT; i++) {
        const struct fpq_table *t = &fpq_config_tables[i];
        for (j = 0; j < t->depth; j++)
            bus->write(bus->ctx, t->address + 4u * j, t->values[j]);
    }
    /* step 5: the commit */
    i = FPQ_CONFIG_WRITE_COUNT - 1u;
    bus->write(bus->ctx, fpq_config_writes[i].address, fpq_config_writes[i].value);
    /* step 6: the commit waits for an empty pipeline and a wipe of the vector */
    for (i = 0; i < FPQ_CONFIG_MAX_POLLS; i++) {
        status = bus->read(bus->ctx, FPQ_REG_STATUS);
        if (!(status & FPQ_STATUS_BUSY))
            break;
    }
    if (i == FPQ_CONFIG_MAX_POLLS)
        return FPQ_CONFIG_ERR_TIMEOUT;
    if (status & FPQ_STATUS_COMMIT_REJECTED) {
        if (index)
            *index = (status >> FPQ_STATUS_REJECT_INDEX_SHIFT) & 0xffu;
        return FPQ_CONFIG_ERR_REJECTED;
    }
    if (status & FPQ_STATUS_BAD_WRITE)
        return FPQ_CONFIG_ERR_BAD_WRITE;
    return FPQ_CONFIG_OK;
}

struct fpq_mmio { volatile uint32_t *base; };

static uint32_t fpq_mmio_read(void *ctx, uint32_t address)
{
    return ((struct fpq_mmio *)ctx)->base[address >> 2];
}

static void fpq_mmio_write(void *ctx, uint32_t address, uint32_t value)
{
    ((struct fpq_mmio *)ctx)->base[address >> 2] = value;
}

int fpq_apply_config(volatile uint32_t *base, uint32_t *index)
{
    struct fpq_mmio mmio;
    struct fpq_bus bus;
    mmio.base = base;
    bus.read = fpq_mmio_read;
    bus.write = fpq_mmio_write;
    bus.ctx = &mmio;
    return fpq_apply_config_bus(&bus, index);
}
"""


def readmemh_name(table_name):
    """The ``$readmemh`` file of a table."""
    return f"{table_name}.hex"


def to_readmemh(config):
    """``{file name: text}``: one ``$readmemh`` file per table (one entry per line, ``depth``
    lines of ``ceil(width / 4)`` hex digits, entry ``i`` on the ``i``-th data line) and
    ``bus_writes.hex`` (steps 2 to 5, one 64-bit word ``{address[31:0], value[31:0]}`` per
    line, in order)."""
    contents = table_contents(config)
    describe = ["// " + line for line in _describe(config)]
    out = {}
    for t in tables(config.build):
        digits = (t.width + 3) // 4
        head = [f"// {t.name}: {t.doc}",
                f"// {t.depth} entries of {t.width} bits ({t.fmt}), entry i at bus address "
                f"0x{t.offset:05x} + 4 i.",
                f"// reg [{t.width - 1}:0] {t.name} [0:{t.depth - 1}]; "
                f"$readmemh(\"{readmemh_name(t.name)}\", {t.name});",
                "// Generated by `fpq config --format readmemh`; do not edit.", *describe]
        out[readmemh_name(t.name)] = "\n".join(
            head + [f"{v:0{digits}x}" for v in contents[t.name]]) + "\n"
    writes = bus_writes(config, contents)
    head = ["// Bus writes that apply one FPQ configuration, in order (docs/REGISTERS.md,",
            "// \"Configuring the core without Python\"): CLEAR_ERRORS, the registers, the "
            "tables, COMMIT.",
            f"// {len(writes)} words of 64 bits: address[63:32] (byte address), value[31:0].",
            f"// reg [63:0] writes [0:{len(writes) - 1}]; "
            f"$readmemh(\"{BUS_WRITES_FILE}\", writes);",
            "// Then poll status until BUSY clears and check COMMIT_REJECTED and BAD_WRITE.",
            "// Generated by `fpq config --format readmemh`; do not edit.", *describe]
    out[BUS_WRITES_FILE] = "\n".join(
        head + [f"{w.address:08x}_{w.value:08x} // {w.name}" for w in writes]) + "\n"
    return out


def outputs(config, fmt, path):
    """``{path: text}`` of format ``fmt`` written to ``path`` (``-``: stdout, json only).

    json: the file ``path``; c: ``path`` (ending in ``.c``) and the header beside it
    (``.h``); readmemh: the folder ``path``, one file per table and ``bus_writes.hex``."""
    if fmt not in FORMATS:
        raise ValueError(f"--format: {fmt!r} must be one of {', '.join(FORMATS)}")
    if fmt != "json" and path == "-":
        raise ValueError(f"-o: --format {fmt} writes several files: give "
                         + ("the .c file's path (the .h goes beside it)" if fmt == "c"
                            else "a folder"))
    if fmt == "json":
        return {path: to_json(config)}
    if fmt == "c":
        if not path.endswith(".c") or os.path.basename(path) == ".c":
            raise ValueError(f"-o: {path!r} must be a .c file's path (the .h goes beside it)")
        header = path[:-2] + ".h"
        c_text, h_text = to_c(config, os.path.basename(header))
        return {path: c_text, header: h_text}
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"-o: {path!r} is a file; --format readmemh writes a folder")
    return {os.path.join(path, name): text for name, text in to_readmemh(config).items()}
