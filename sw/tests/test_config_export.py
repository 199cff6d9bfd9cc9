"""``fpq config``: a configuration as bus writes and tables (JSON, C, ``$readmemh``). The RTL
register file applying these outputs: ``hdl/tests/test_config_export.py``."""

import ctypes
import json
import re
import os
import shutil
import subprocess

import pytest

from fpq import Build, Config
from fpq.cli import main

from cli_run import run, build_args
from fpq.regmap import registers, tables, ID_VALUE, build_word

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCENARIO = os.path.join(ROOT, "sim", "scenarios", "fpq-fpq.toml")
SMALL = Build(vec_bits=64, table_depth=16)
#: A key that passes ``fpq.keys.check_key`` (the commands refuse weak and public keys).
KEY = bytes.fromhex("3c7a0d5be2914f68a1c7e03b5d92f4a6087e1bc9")
MIX_KEY = bytes.fromhex("5e21c09a7db348f1e6082b4c")
#: Seeds that pass ``fpq.keys.check_key`` (at least 2**32), and the options that give them.
SEEDS = {"seed_decide": 0x3f8a_51c2_97d0_6e4b, "seed_clear": 0xa4e1_07b9_5c23_d86f}
SEED_ARGS = [a for name, v in SEEDS.items() for a in ("--set", f"{name}={v}")]
CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (cc or gcc) on PATH")




def parse_readmemh(text):
    """The words of a ``$readmemh`` file as IEEE 1364 reads it: ``//`` comments to the end
    of the line, words separated by white space, ``_`` ignored inside a number."""
    words = []
    for line in text.splitlines():
        words += [int(w.replace("_", ""), 16) for w in line.split("//")[0].split()]
    return words


# ---- the configuration's sources -----------------------------------------------------------
def test_config_from_dict_takes_to_dict_back():
    c = Config(build=SMALL, mode="red", hash_key=bytes(range(20)), v_max=33, seed_clear=5)
    assert Config.from_dict(json.loads(json.dumps(c.to_dict())), build=SMALL) == c
    assert Config.from_dict({}, build=SMALL) == Config(build=SMALL)


def test_json_of_set_options_and_its_config_member_as_input_agree(tmp_path):
    """``--set`` fields; the output's ``config`` member given back as ``--config`` (with the
    same build) gives the same document; the registers are the model's."""
    code, _, _ = run(["config", "--format", "json", "-o", str(tmp_path / "a.json"),
                      "--set", "mode=red", "--set", "tick_hz=1e6", "--set", "v_max=60",
                      "--set", "hash_key=" + KEY.hex(), "--set", "hash_mix_key=" + MIX_KEY.hex(),
                      *SEED_ARGS, *build_args(SMALL)])
    assert code == 0
    doc = json.loads((tmp_path / "a.json").read_text())
    want = Config(build=SMALL, mode="red", tick_hz=1e6, v_max=60, hash_key=KEY,
                  hash_mix_key=MIX_KEY, **SEEDS)
    assert {k: int(v, 16) for k, v in doc["registers"].items()} == want.registers()
    assert doc["tables"][0]["values"] == want.rate_table()
    (tmp_path / "fields.json").write_text(json.dumps(doc["config"]))
    code, _, _ = run(["config", "--format", "json", "-o", str(tmp_path / "b.json"),
                      "--config", str(tmp_path / "fields.json"), *build_args(SMALL)])
    assert code == 0
    assert (tmp_path / "b.json").read_text() == (tmp_path / "a.json").read_text()


def test_scenario_gives_the_simulated_queue_manager_s_registers(tmp_path):
    from fpq_sim.scenario import load, queue_config
    code, _, _ = run(["config", "--format", "json", "-o", str(tmp_path / "s.json"),
                      "--scenario", SCENARIO, "--key", KEY.hex(),
                      "--set", "hash_mix_key=" + MIX_KEY.hex(), *SEED_ARGS])
    assert code == 0
    doc = json.loads((tmp_path / "s.json").read_text())
    want = queue_config(load(SCENARIO)).replace(hash_key=KEY, hash_mix_key=MIX_KEY, **SEEDS)
    assert {k: int(v, 16) for k, v in doc["registers"].items()} == want.registers()
    assert doc["tables"][0]["values"] == want.rate_table()


def test_json_document_follows_its_schema(tmp_path, capsys):
    build = Build(vec_bits=128, table_depth=32, fixed={"red_min_th": 2.0})
    assert main(["config", "--format", "json", "-o", "-", *build_args(build)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["format"], doc["version"]) == ("fpq-config", 1)
    assert doc["build"] == {"vec_bits": 128, "table_depth": 32, "avg_delay": 14,
                            "hash_input": "5-tuple", "hash_mix": True, "flow_key": "ipv4",
                            "fixed": {"red_min_th": 2.0}}
    assert [w["name"] for w in doc["expect"][:2]] == ["id", "build"]
    assert doc["expect"][0]["value"] == 0x46505131
    # the fixed register's two words are read back, never written
    assert [w["name"] for w in doc["expect"][2:]] == [f"red_min_th[{i}]" for i in range(2)]
    assert "red_min_th[0]" not in {w["name"] for w in doc["writes"]}
    assert [w["name"] for w in (doc["writes"][0], doc["writes"][-1])] == \
        ["control.CLEAR_ERRORS", "control.COMMIT"]
    assert all(0 <= w["value"] < 2**32 and w["address"] % 4 == 0 for w in doc["writes"])
    (table,) = doc["tables"]
    assert (table["name"], table["address"], table["depth"], table["width"]) == \
        ("rate_table", 0x40000, 32, 22)
    assert doc["status"] == {"address": 12, "busy": 1, "commit_rejected": 2, "bad_write": 4,
                             "reject_index_shift": 8, "reject_index_mask": 255}


# ---- $readmemh ---------------------------------------------------------------------------
def test_readmemh_tables_parse_back_to_the_model_s_tables(tmp_path):
    config = Config(build=Build(table_depth=64), p_pkts=5.0, lc_correction=True)
    code, _, _ = run(["config", "--format", "readmemh", "-o", str(tmp_path / "mem"),
                      "--set", "p_pkts=5", "--set", "lc_correction=true",
                      "--table-depth", "64"])
    assert code == 0
    assert sorted(os.listdir(tmp_path / "mem")) == ["bus_writes.hex", "rate_table.hex"]
    text = (tmp_path / "mem" / "rate_table.hex").read_text()
    data = [line for line in text.splitlines() if not line.startswith("//")]
    assert len(data) == 64 and all(len(line) == 6 for line in data)   # 22 bits: 6 digits
    assert parse_readmemh(text) == config.rate_table()
    writes = parse_readmemh((tmp_path / "mem" / "bus_writes.hex").read_text())
    rate = {t.name: t for t in tables(config.build)}["rate_table"]
    table_words = [(w >> 32, w & 0xFFFFFFFF) for w in writes
                   if rate.offset <= w >> 32 < rate.offset + 4 * rate.depth]
    assert table_words == [(rate.offset + 4 * i, v) for i, v in enumerate(config.rate_table())]
    assert writes[-1] == (0x8 << 32) | 1                               # COMMIT, last


@pytest.mark.skipif(shutil.which("verilator") is None, reason="verilator not on PATH")
def test_readmemh_files_read_by_verilog_s_readmemh(tmp_path):
    """Verilator's ``$readmemh`` reads the files into memories of the documented width and
    depth (a file with too few or too many entries would be reported)."""
    build = Build(table_depth=16)
    config = Config(build=build, mode="red", p_pkts=3.0)
    assert run(["config", "--format", "readmemh", "-o", str(tmp_path), "--set", "mode=red",
                "--set", "p_pkts=3", "--table-depth", "16"])[0] == 0
    writes = parse_readmemh((tmp_path / "bus_writes.hex").read_text())
    (tmp_path / "t.v").write_text(f"""
module t;
  reg [21:0] rate_table [0:15];
  reg [63:0] writes [0:{len(writes) - 1}];
  integer i;
  initial begin
    $readmemh("rate_table.hex", rate_table);
    $readmemh("bus_writes.hex", writes);
    for (i = 0; i < 16; i = i + 1) $display("T %h", rate_table[i]);
    for (i = 0; i < {len(writes)}; i = i + 1) $display("W %h", writes[i]);
    $finish;
  end
endmodule
""")
    subprocess.run(["verilator", "--binary", "-o", "readmem", "t.v"], cwd=tmp_path,
                   check=True, capture_output=True)
    r = subprocess.run([str(tmp_path / "obj_dir" / "readmem")], cwd=tmp_path, check=True,
                       capture_output=True, text=True)
    assert "Warning" not in r.stdout + r.stderr, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert [int(x[2:], 16) for x in lines if x.startswith("T ")] == config.rate_table()
    assert [int(x[2:], 16) for x in lines if x.startswith("W ")] == writes


# ---- C ---------------------------------------------------------------------------------
def export_c(folder, build, regs_build=None, extra=()):
    """``fpq config --format c`` into ``folder`` and ``fpq regmap``'s header of
    ``regs_build`` (default: the same build) beside it."""
    assert run(["config", "--format", "c", "-o", str(folder / "fpq_config.c"),
                *build_args(build), *extra])[0] == 0
    assert run(["regmap", "--format", "c", "-o", str(folder / "fpq_regs.h"),
                *build_args(regs_build or build)])[0] == 0


def compile_c(folder, *flags):
    return subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", *flags,
                           "fpq_config.c"], cwd=folder, capture_output=True, text=True)


@needs_cc
@pytest.mark.parametrize("build", [Build(), Build(vec_bits=64, table_depth=16, fixed={
    "hash_key": KEY, "avg_tau_s": 0.5, "tick_hz": 1e6})], ids=["default", "fixed"])
def test_c_compiles_with_warnings_as_errors(tmp_path, build):
    export_c(tmp_path, build)
    r = compile_c(tmp_path, "-c")
    assert r.returncode == 0, r.stderr
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx:                                  # C++ firmware links with the C object
        (tmp_path / "main.cpp").write_text(
            '#include "fpq_config.h"\n'
            "int main() { return fpq_apply_config(0, 0) == 1 ? 1 : 0; }\n")
        r = subprocess.run([cxx, "-Wall", "-Wextra", "-Werror", "main.cpp", "fpq_config.o",
                            "-o", "main"], cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


@needs_cc
def test_c_refuses_the_register_header_of_another_build(tmp_path):
    export_c(tmp_path, SMALL, regs_build=Build())
    r = compile_c(tmp_path, "-c")
    assert r.returncode != 0
    assert "fpq_regs.h is for another build than this configuration" in r.stderr


def load_library(folder, build, *defines, extra=()):
    export_c(folder, build, extra=extra)
    r = compile_c(folder, "-shared", "-fPIC", *[f"-D{d}" for d in defines], "-o", "lib.so")
    assert r.returncode == 0, r.stderr
    lib = ctypes.CDLL(str(folder / "lib.so"))
    lib.fpq_apply_config.restype = lib.fpq_apply_config_bus.restype = ctypes.c_int
    return lib


def word_map(build):
    """Byte address -> (register, word) of every configuration register word."""
    return {r.offset + 4 * w: (r.name, w) for r in registers(build) if r.kind == "config"
            for w in range(r.words)}


@needs_cc
def test_c_memory_mapped_apply_writes_the_model_s_registers_and_table(tmp_path):
    """``fpq_apply_config(base)`` on memory (status reads 0: never busy): every
    configuration register word and table word lands at its address in the register map."""
    lib = load_library(tmp_path, SMALL, extra=["--set", "mode=droptail",
                                               "--set", "limit_pkts=77", "--key", KEY.hex(),
                                               "--set", "hash_mix_key=" + MIX_KEY.hex(),
                                               *SEED_ARGS])
    config = Config(build=SMALL, mode="droptail", limit_pkts=77, hash_key=KEY,
                    hash_mix_key=MIX_KEY, **SEEDS)
    rate = tables(SMALL)[0]
    memory = (ctypes.c_uint32 * ((rate.offset >> 2) + rate.depth))()
    memory[0], memory[1] = ID_VALUE, build_word(SMALL)
    assert lib.fpq_apply_config(memory, None) == 0
    got = {}
    for address, (name, w) in word_map(SMALL).items():
        got[name] = got.get(name, 0) | memory[address >> 2] << (32 * w)
    assert got == config.registers()
    assert list(memory[rate.offset >> 2:]) == config.rate_table()
    assert memory[0x8 >> 2] == 1                   # the last write to control: COMMIT


READ = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32)
WRITE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32)


class CBus(ctypes.Structure):
    """``struct fpq_bus``."""
    _fields_ = [("read", READ), ("write", WRITE), ("ctx", ctypes.c_void_p)]


class FakeBus:
    """Read and write callbacks for ``fpq_apply_config_bus``: ``id``, ``build`` and
    ``status`` read the given values, everything else 0; every access is logged."""

    def __init__(self, build, ident=ID_VALUE, status=0):
        self.words = {0x0: ident, 0x4: build_word(build), 0xC: status}
        self.log = []
        self._read = READ(self.read)
        self._write = WRITE(self.write)

    def read(self, ctx, address):
        self.log.append(("r", address))
        return self.words.get(address, 0)

    def write(self, ctx, address, value):
        self.log.append(("w", address, value))

    def apply(self, lib):
        index = ctypes.c_uint32(0xFFFFFFFF)
        code = lib.fpq_apply_config_bus(ctypes.byref(CBus(self._read, self._write, None)),
                                        ctypes.byref(index))
        return code, index.value


@needs_cc
def test_c_error_codes(tmp_path):
    lib = load_library(tmp_path, SMALL, "FPQ_CONFIG_MAX_POLLS=50u")
    bus = FakeBus(SMALL, ident=0x12345678)
    assert bus.apply(lib)[0] == -1 and bus.log == [("r", 0)]          # ERR_ID, no write
    bus = FakeBus(SMALL, status=1)                                     # BUSY for ever
    assert bus.apply(lib)[0] == -4                                     # ERR_TIMEOUT
    assert bus.log.count(("r", 0xC)) == 50
    bus = FakeBus(SMALL, status=2 | 7 << 8)                            # rejected, index 7
    assert bus.apply(lib) == (-5, 7)
    bus = FakeBus(SMALL, status=4)
    assert bus.apply(lib)[0] == -6                                     # BAD_WRITE
    bus = FakeBus(SMALL)
    assert bus.apply(lib)[0] == 0
    writes = [entry[1:] for entry in bus.log if entry[0] == "w"]
    assert writes[0] == (0x8, 2) and writes[-1] == (0x8, 1)           # CLEAR_ERRORS .. COMMIT
    assert bus.log[-1] == ("r", 0xC)


# ---- bad arguments, atomic outputs ---------------------------------------------------------
@pytest.mark.parametrize("argv, fragment", [
    (["--set", "v_max=9000"], "v_max: 9000 is out of range [1, 8192] bits"),
    (["--set", "v_max=100", "--vec-bits", "64"], "v_max: 100 is out of range [1, 64] bits"),
    (["--vec-bits", "100"], "vec_bits: 100 must be a power of two in [64, 65536]"),
    (["--table-depth", "8"], "table_depth: 8 must be a power of two in [16, 65536]"),
    (["--avg-delay", "0"], "avg_delay: 0 must be an integer in [1, 127] clocks"),
    (["--set", "red_max_p=1.5"], "red_max_p: 1.5 is out of range [0.0, 1.0]"),
    (["--set", "mode=codel"], "mode: 'codel' must be one of droptail, red, fpq"),
    (["--set", "t_clear_s=1e-9"], "t_clear_s: 1e-09 s clears more than one bit per clock"),
    (["--set", "hash_key=00"], "hash_key: must be exactly 20 bytes"),
    (["--set", "v_max=x"], "--set v_max: 'x' is not an integer"),
    (["--set", "nonsense=1"], "--set: 'nonsense=1' must be FIELD=VALUE with FIELD one of"),
    (["--fix", "mode=red", "--set", "mode=fpq"], "mode: 'fpq' is not allowed: this build "
                                                  "fixes it to 'red'"),
    (["--config", "{d}/missing.json"], "--config: cannot read"),
    (["--config", "{d}/bad.json"], "--config: {d}/bad.json: not valid JSON"),
    (["--config", "{d}/list.json"], "must be a JSON object of configuration fields"),
    (["--config", "{d}/unknown.json"], "unknown configuration field(s): speed"),
    (["--config", "{d}/key.json"], "hash_key: 'zz' is not hex bytes"),
    (["--config", "{d}/list.json", "--scenario", SCENARIO], "--scenario: give --config or "
                                                             "--scenario, not both"),
])
def test_bad_configuration_arguments_are_refused_naming_the_field(tmp_path, argv, fragment):
    inputs = {"bad.json": "{", "list.json": "[1]", "unknown.json": '{"speed": 1}',
              "key.json": '{"hash_key": "zz"}'}
    for name, text in inputs.items():
        (tmp_path / name).write_text(text)
    out = tmp_path / "out"
    for fmt, path in (("json", out / "c.json"), ("c", out / "c.c"), ("readmemh", out)):
        code, _, err = run(["config", "--format", fmt, "-o", str(path),
                            *[a.format(d=tmp_path) for a in argv]])
        assert code == 2, err
        assert fragment.format(d=tmp_path) in err.strip().splitlines()[-1], err
        assert not out.exists()


@pytest.mark.parametrize("fmt, path, fragment", [
    ("c", "-", "-o: --format c writes several files: give the .c file's path"),
    ("c", "x.txt", "-o: 'x.txt' must be a .c file's path"),
    ("readmemh", "-", "-o: --format readmemh writes several files: give a folder"),
    ("readmemh", "file", "-o: 'file' is a file; --format readmemh writes a folder"),
])
def test_bad_output_paths_are_refused(tmp_path, monkeypatch, fmt, path, fragment):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("keep")
    code, _, err = run(["config", "--format", fmt, "-o", path])
    assert code == 2 and fragment in err, err
    assert sorted(os.listdir(tmp_path)) == ["file"]


def test_a_failed_output_leaves_every_old_file_as_it_was(tmp_path):
    """The .h cannot be written (a folder is in its place): the .c keeps its old contents
    and no temporary file is left; the same for a readmemh folder."""
    (tmp_path / "fpq_config.c").write_text("old")
    (tmp_path / "fpq_config.h").mkdir()
    code, _, err = run(["config", "--format", "c", "-o", str(tmp_path / "fpq_config.c")])
    assert code == 2 and "fpq_config.h" in err
    assert (tmp_path / "fpq_config.c").read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["fpq_config.c", "fpq_config.h"]
    mem = tmp_path / "mem"
    (mem / "bus_writes.hex").mkdir(parents=True)
    code, _, err = run(["config", "--format", "readmemh", "-o", str(mem)])
    assert code == 2 and "bus_writes.hex" in err
    assert os.listdir(mem) == ["bus_writes.hex"]


@pytest.mark.parametrize("fmt, out, private, public", [
    ("json", "c.json", ["c.json"], []),
    ("c", "c.c", ["c.c"], ["c.h"]),
    ("readmemh", "m", ["m/bus_writes.hex"], ["m/rate_table.hex"]),
], ids=["json", "c", "readmemh"])
def test_outputs_that_hold_a_key_are_private_and_said_so(tmp_path, capsys, fmt, out, private,
                                                         public):
    """The files that hold the keys and seeds (drawn here) are written mode 0600 and named
    on standard error; the others (the C header, the tables) are 0644 and hold none of
    them (their comment lines show the secret fields as "(secret)")."""
    from fpq.fields import SECRET_SHOWN
    assert main(["config", "--format", fmt, "-o", str(tmp_path / out),
                 *build_args(SMALL)]) == 0
    err = capsys.readouterr().err
    for name in ("hash_key", "hash_mix_key", "seed_decide", "seed_clear"):
        assert f"{name}: drawn from the operating system" in err
    texts = {}
    for name in private:
        path = tmp_path / name
        assert os.stat(path).st_mode & 0o777 == 0o600, name
        assert f"{path}: holds the keys and seeds (mode 0600)" in err
        texts[name] = path.read_text()
    # the key's words as each private file has them: hex text in the JSON document's
    # fields, 32-bit words on the lines of the key's writes in the others
    words = []
    for name, text in texts.items():
        if fmt == "json":
            key = json.loads(text)["config"]["hash_key"]
            words += [key[i:i + 8] for i in range(0, len(key), 8)]
        else:
            words += [w for line in text.splitlines() if "hash_key[" in line
                      for w in re.findall(r"(?:0x|_)([0-9a-f]{8})", line)]
    assert len(words) >= 5, texts
    for name in public:
        path = tmp_path / name
        assert os.stat(path).st_mode & 0o777 == 0o644, name
        text = path.read_text()
        assert f'hash_key="{SECRET_SHOWN}"' in text and "seed_decide=" in text
        assert not any(w in text for w in words)
