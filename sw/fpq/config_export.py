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
import string

from .fields import FIELD_BY_NAME, SECRET_SHOWN
from .regmap import (registers, tables, build_word, ID_VALUE, CONTROL_COMMIT,
                     CONTROL_CLEAR_ERRORS, STATUS_BITS, STATUS_REJECT_INDEX_SHIFT)

__all__ = ["BusWrite", "expected_reads", "register_writes", "table_contents", "bus_writes",
           "to_json", "to_c", "to_readmemh", "readmemh_name", "FORMATS", "outputs",
           "key_outputs"]

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
    """Comment lines naming the build and the configuration's fields, the secret ones
    (``fpq.fields.Field.secret``: keys and seeds) as ``SECRET_SHOWN``: the files that hold
    the key registers' writes are private (:func:`key_outputs`), the others need not be."""
    b = config.build
    fields = [f"{k}={json.dumps(SECRET_SHOWN if FIELD_BY_NAME[k].secret else v)}"
              for k, v in config.to_dict().items()]
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


def _template(name):
    """The text of ``templates/NAME`` (package data), a :class:`string.Template`."""
    from importlib.resources import files
    return string.Template(files("fpq").joinpath("templates", name).read_text(encoding="utf-8"))


def _lines(lines):
    """Lines as a block of a template: each ended by a newline."""
    return "".join(line + "\n" for line in lines)


def to_c(config, header_name="fpq_config.h"):
    """``(c_text, h_text)``: the constant arrays of the six steps and ``fpq_apply_config``,
    from the templates ``templates/fpq_config.c.in`` and ``fpq_config.h.in``.

    Parameters
    ----------
    config : Config
    header_name : str
        The header's file name, which the ``.c`` file includes."""
    b = config.build
    by_name = {r.name: r for r in registers(b)}
    tabs = tables(b)
    describe = "\n".join(" * " + line for line in _describe(config))

    def word_line(w):
        reg_name = w.name.split("[")[0]
        return (f"    {{{_c_address(reg_name, w.address, by_name[reg_name].offset)}, "
                f"0x{w.value:08x}u, FPQ_REG_{reg_name.upper()}_INDEX}}, /* {w.name} */")

    h = _template("fpq_config.h.in").substitute(
        describe=describe, guard="".join(c if c.isalnum() else "_" for c in header_name.upper()),
        build_word=f"0x{build_word(b):08x}", expect_count=len(expected_reads(config)),
        write_count=len(register_writes(config)), table_count=len(tabs),
        table_externs=_lines(f"extern const uint32_t fpq_config_{t.name}[{t.depth}u];"
                             for t in tabs))
    c = _template("fpq_config.c.in").substitute(
        describe=describe, header_name=header_name, regmap_options=_regmap_options(b),
        vec_bits=b.vec_bits, table_depth=b.table_depth, avg_delay=b.avg_delay,
        depth_checks=_lines(line for t in tabs for line in (
            f"#if FPQ_{t.name.upper()}_DEPTH != {t.depth}u",
            f"#error \"fpq_regs.h: {t.name} depth is not this configuration's\"", "#endif")),
        expect_rows=_lines(word_line(w) for w in expected_reads(config)[2:]),
        write_rows=_lines(word_line(w) for w in register_writes(config)[1:-1]),
        table_arrays=_table_arrays(tabs, table_contents(config)),
        table_rows=_lines(f"    {{FPQ_{t.name.upper()}, FPQ_{t.name.upper()}_DEPTH, "
                          f"fpq_config_{t.name}}}," for t in tabs))
    return c, h


def _table_arrays(tabs, contents):
    """The C arrays of the tables' words, eight to a line."""
    out = []
    for t in tabs:
        digits = (t.width + 3) // 4
        values = contents[t.name]
        out += [f"/* {t.doc} {t.fmt}, {t.width} bits */",
                f"const uint32_t fpq_config_{t.name}[{t.depth}u] = {{",
                *("    " + " ".join(f"0x{v:0{digits}x}u," for v in values[i:i + 8])
                  for i in range(0, len(values), 8)), "};", ""]
    return _lines(out)




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


def key_outputs(config, fmt, path):
    """The paths of :func:`outputs` (``fmt``, ``path``) that hold key material (a key's or a
    seed's value: ``fpq.fields.Field.secret``), which ``fpq config`` writes with mode 0600:
    the JSON document (its ``config`` member has every field), and the ``.c`` file and
    ``bus_writes.hex`` when a secret register of the build is written (one the build does
    not fix). The ``.h`` file and the tables' files show secret fields as ``SECRET_SHOWN``.
    Standard output (``-``) is not a path."""
    if fmt == "json":
        return {path} - {"-"}
    if not any(r.secret and r.kind == "config" for r in registers(config.build)):
        return set()
    if fmt == "c":
        return {path}
    return {os.path.join(path, BUS_WRITES_FILE)}
