"""``fpq config``'s outputs applied to the RTL register file in Amaranth's simulator: the JSON
steps, the ``$readmemh`` bus writes and the C ``fpq_apply_config_bus`` (compiled with the
system C compiler, called through ctypes with callbacks that drive the simulated bus) leave
exactly the golden model's registers (``Config.registers()``) active and its r(N) table
(``Config.rate_table()``) in the active bank."""

import ctypes
import json
import queue
import shutil
import subprocess
import threading

import pytest
from amaranth.sim import Simulator

from fpq import Build, Config
from fpq.cli import main as fpq_main
from fpq.regmap import registers
from fpq_hdl.registers import RegisterFile

BUILD = Build(vec_bits=64, table_depth=16)
#: Every kind of field changed from its default, ``tick_hz`` low enough that the derived
#: registers differ from the reset values.
CONFIG = Config(build=BUILD, mode="red", ecn=True, tick_hz=1e6, v_max=50, t_clear_s=0.5,
                n_cap=12, avg_tau_s=0.01, red_min_th=3.0, red_max_th=30.5, red_max_p=0.25,
                red_gentle=True, limit_pkts=300, limit_bytes=400_000, p_pkts=3.5,
                hash_key=bytes(range(7, 27)), rekey_hold_t_clear=1.5,
                seed_decide=0x3f8a_51c2_97d0_6e4b, seed_clear=0xa4e1_07b9_5c23_d86f,
                hash_mix_key=bytes.fromhex("5e21c09a7db348f1e6082b4c"), lc_correction=True)
#: A build whose registers ``hash_key`` and ``mode`` are constants.
FIXED_BUILD = Build(vec_bits=64, table_depth=16,
                    fixed={"hash_key": bytes.fromhex("3c7a0d5be2914f68a1c7e03b5d92f4a6087e1bc9"),
                           "mode": "fpq"})
FIXED_CONFIG = Config(build=FIXED_BUILD, tick_hz=1e6, v_max=40, t_clear_s=0.25, p_pkts=2.0,
                      hash_mix_key=CONFIG.hash_mix_key, seed_decide=CONFIG.seed_decide,
                      seed_clear=CONFIG.seed_clear)

#: Clocks without an access after each write of ``SimulatedBus``.
IDLE_CLOCKS = 3
STATUS = next(r for r in registers(BUILD) if r.name == "status").offset
BUSY, REJECTED, BAD_WRITE = 1, 2, 4


class SimulatedBus:
    """``RegisterFile(build)`` in Amaranth's simulator behind a blocking bus: ``run(drive)``
    calls ``drive(self)`` in another thread, whose ``read``/``write`` calls a testbench
    serves one bus access at a time. The table writes the register file sends to the queue
    manager are kept per bank (``banks``); after ``drive`` returns, ``active`` holds the
    active configuration and ``rate_bank`` the active bank. ``tamper(address, value)``
    changes a written value on its way (a faulty bus)."""

    def __init__(self, build, tamper=None):
        self.dut = RegisterFile(build)
        self.tamper = tamper or (lambda address, value: value)
        self.requests, self.replies = queue.Queue(), queue.Queue()
        self.banks = [{}, {}]
        self.writes = []

    def read(self, address):
        self.requests.put(("read", address, 0))
        return self.replies.get(timeout=60)

    def write(self, address, value):
        self.requests.put(("write", address, value))
        self.replies.get(timeout=60)

    def run(self, drive):
        dut, outcome = self.dut, {}

        def worker():
            try:
                outcome["value"] = drive(self)
            except BaseException as exc:          # re-raised in the test's thread
                outcome["error"] = exc
            finally:
                self.requests.put(None)

        async def testbench(ctx):
            ctx.set(dut.idle, 1)
            await ctx.tick().repeat(3)              # out of reset: restart, loads
            threading.Thread(target=worker, daemon=True).start()
            while (request := self.requests.get(timeout=120)) is not None:
                op, address, value = request
                ctx.set(dut.bus.addr, address)
                if op == "write":
                    value = self.tamper(address, value)
                    self.writes.append((address, value))
                    ctx.set(dut.bus.w_data, value)
                    ctx.set(dut.bus.w_en, 1)
                    *_, we, addr, data, bank = await ctx.tick().sample(
                        dut.rate_we, dut.rate_addr, dut.rate_data, dut.rate_bank)
                    ctx.set(dut.bus.w_en, 0)
                    if we:
                        self.banks[1 - bank][addr] = data   # the inactive bank
                    # a bus slower than one access per clock (a CPU's bridge): the register
                    # file applies a commit in the idle clocks after it, so a write that
                    # comes after the commit is too late for it
                    await ctx.tick().repeat(IDLE_CLOCKS)
                    self.replies.put(None)
                else:
                    ctx.set(dut.bus.r_en, 1)
                    await ctx.tick()
                    ctx.set(dut.bus.r_en, 0)
                    self.replies.put(ctx.get(dut.bus.r_data))
            await ctx.tick().repeat(4)
            self.active = {name: ctx.get(dut.config[name])
                           for name in dut.config.shape().members}
            self.rate_bank = ctx.get(dut.rate_bank)

        sim = Simulator(dut)
        sim.add_clock(1e-8)
        sim.add_testbench(testbench)
        sim.run()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    def active_table(self, depth):
        return [self.banks[self.rate_bank].get(i) for i in range(depth)]


def _check_applied(bus, config):
    """The register file's active configuration and table are the golden model's."""
    assert bus.active == config.registers()
    assert bus.rate_bank == 1                      # one swap, into the bank written
    assert bus.active_table(config.build.table_depth) == config.rate_table()


def _export(tmp_path, config, fmt, out):
    """``fpq config`` on the command line for ``config`` (its fields as a JSON file)."""
    b = config.build
    src = tmp_path / "fields.json"
    src.write_text(json.dumps(config.to_dict()))
    argv = ["config", "--format", fmt, "-o", str(out), "--config", str(src),
            "--vec-bits", str(b.vec_bits), "--table-depth", str(b.table_depth)]
    for name, value in b.fixed_json(reveal_secrets=True).items():
        argv += ["--fix", f"{name}={value}"]
    assert fpq_main(argv) == 0


def _apply_json(doc):
    """The steps of the JSON document (``fpq.config_export``'s schema), as a host does."""
    def drive(bus):
        for w in doc["expect"]:
            assert bus.read(w["address"]) == w["value"], w["name"]
        for w in doc["writes"][:-1]:
            bus.write(w["address"], w["value"])
        for t in doc["tables"]:
            for i, v in enumerate(t["values"]):
                bus.write(t["address"] + 4 * i, v)
        bus.write(doc["writes"][-1]["address"], doc["writes"][-1]["value"])
        s = doc["status"]
        for _ in range(100):
            status = bus.read(s["address"])
            if not status & s["busy"]:
                return status
        raise AssertionError("BUSY stays set")
    return drive


@pytest.mark.parametrize("config", [CONFIG, FIXED_CONFIG], ids=["all-fields", "fixed-build"])
def test_json_steps_give_the_model_s_registers_and_table(tmp_path, config):
    _export(tmp_path, config, "json", tmp_path / "c.json")
    doc = json.loads((tmp_path / "c.json").read_text())
    bus = SimulatedBus(config.build)
    status = bus.run(_apply_json(doc))
    assert status == 0
    _check_applied(bus, config)
    # the fixed registers are constants: never written (a write would set BAD_WRITE)
    fixed = {r.offset for r in registers(config.build) if r.kind == "fixed"}
    assert not fixed & {a for a, _ in bus.writes}


def _parse_readmemh(text):
    """The words of a ``$readmemh`` file as IEEE 1364 reads it: ``//`` comments to the end
    of the line, words separated by white space, ``_`` ignored inside a number."""
    words = []
    for line in text.splitlines():
        words += [int(w.replace("_", ""), 16) for w in line.split("//")[0].split()]
    return words


def test_readmemh_bus_writes_replayed_give_the_model_s_registers_and_table(tmp_path):
    _export(tmp_path, CONFIG, "readmemh", tmp_path / "mem")
    words = _parse_readmemh((tmp_path / "mem" / "bus_writes.hex").read_text())

    def drive(bus):
        for word in words:
            bus.write(word >> 32, word & 0xFFFFFFFF)
        while (status := bus.read(STATUS)) & BUSY:
            pass
        return status
    bus = SimulatedBus(BUILD)
    assert bus.run(drive) == 0
    _check_applied(bus, CONFIG)


def _compile_library(tmp_path, config, defines=()):
    """The C pair of ``fpq config --format c`` and the ``fpq regmap`` header of its build,
    compiled with warnings as errors into a shared library, loaded with ctypes."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc or gcc) on PATH")
    out = tmp_path / "c"
    _export(tmp_path, config, "c", out / "fpq_config.c")
    b = config.build
    argv = ["regmap", "--format", "c", "-o", str(out / "fpq_regs.h"),
            "--vec-bits", str(b.vec_bits), "--table-depth", str(b.table_depth)]
    for name, value in b.fixed_json(reveal_secrets=True).items():
        argv += ["--fix", f"{name}={value}"]
    assert fpq_main(argv) == 0
    lib = out / "libfpqconfig.so"
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-shared",
                    "-fPIC", *[f"-D{d}" for d in defines], "-o", str(lib),
                    str(out / "fpq_config.c")], check=True, cwd=out)
    return ctypes.CDLL(str(lib))


READ = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32)
WRITE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32)


class CBus(ctypes.Structure):
    _fields_ = [("read", READ), ("write", WRITE), ("ctx", ctypes.c_void_p)]


def _apply_c(lib):
    """``drive`` calling the C ``fpq_apply_config_bus``; returns (code, index)."""
    def drive(bus):
        read = READ(lambda ctx, address: bus.read(address))
        write = WRITE(lambda ctx, address, value: bus.write(address, value))
        index = ctypes.c_uint32(0xFFFFFFFF)
        lib.fpq_apply_config_bus.restype = ctypes.c_int
        code = lib.fpq_apply_config_bus(ctypes.byref(CBus(read, write, None)),
                                        ctypes.byref(index))
        return code, index.value
    return drive


@pytest.mark.parametrize("config", [CONFIG, FIXED_CONFIG], ids=["all-fields", "fixed-build"])
def test_c_apply_config_over_the_simulated_register_file(tmp_path, config):
    lib = _compile_library(tmp_path, config)
    bus = SimulatedBus(config.build)
    code, _ = bus.run(_apply_c(lib))
    assert code == 0                              # FPQ_CONFIG_OK
    _check_applied(bus, config)


def test_c_apply_config_reports_the_register_of_a_rejected_commit(tmp_path):
    """A bus that corrupts the ``red_max_th`` write to below ``red_min_th + 1``: the register
    file rejects the commit, the function returns FPQ_CONFIG_ERR_REJECTED with that
    register's index, and the active configuration stays the reset one."""
    lib = _compile_library(tmp_path, CONFIG)
    regs = {r.name: (i, r) for i, r in enumerate(registers(BUILD))}
    index, max_th = regs["red_max_th"]
    bus = SimulatedBus(BUILD, tamper=lambda a, v: 3 << 16 if a == max_th.offset else v)
    assert bus.run(_apply_c(lib)) == (-5, index)
    assert bus.active == Config(build=BUILD).registers()


@pytest.mark.parametrize("hardware, error", [
    (Build(vec_bits=64, table_depth=32), -2),                      # another build
    (Build(vec_bits=64, table_depth=16,
           fixed={**FIXED_BUILD.fixed_fields, "mode": "red"}), -3),   # another fixed mode
])
def test_c_apply_config_writes_nothing_to_other_hardware(tmp_path, hardware, error):
    """A fixed key reads 0 and cannot tell two bitstreams apart; their other fixed
    registers can."""
    config = FIXED_CONFIG if error == -3 else CONFIG
    lib = _compile_library(tmp_path, config)
    bus = SimulatedBus(hardware)
    code, index = bus.run(_apply_c(lib))
    assert code == error
    if error == -3:
        assert index == [r.name for r in registers(hardware)].index("mode")
    assert bus.writes == []
