"""The lean Verilator harness (``fpq_hdl.verilated``) built for fault-finding rather than speed.

Differences from ``fpq_hdl.verilated.build_library``:

* Power-up values stripped from the Verilog (:func:`strip_initial_values`) and Verilated
  with ``--x-assign unique --x-initial unique``: every register and memory word starts with a
  random value, and every X the design assigns is a random value, both drawn
  from a seed set per instance (``VerilatedContext::randReset(2)``, ``randSeed(seed)``). A
  state element that reset does not define, and that reaches a verdict, then makes runs with
  different seeds differ.
* One more C entry point, ``fpqv_new_seeded(seed)``; and the Python class can present events
  for exactly a number of clocks and leave the pipeline as it is (``feed``), so a reset can
  land on any clock of a stream, and reset without waiting for the wipe (``raw_reset``).

The C++ wrapper is fpq_hdl.verilated's ``harness.cpp.in`` with that function added; the Python
class reuses ``VerilatedQueueManager`` (the golden model's interface)."""

import ctypes
import re

import numpy as np

from fpq_hdl.verilated import harness as lean

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
    // inputs start random too: drive the ones fpq_hdl.verilated's functions leave alone
    Vfpq* t = h->top;
    t->hold = 0;
    t->counter_clear = 0;
    t->clear_max_queue = 0;
    t->load_rng_decide = t->load_rng_clear = t->restart = t->wipe = t->rekey = 0;
    t->rate_we = 0;
    t->arrivals___05Fvalid = t->departures___05Fvalid = 0;
    t->verdicts___05Fready = 1;
    t->clk = 0;
    t->eval();
    return h;
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


def build_xprop_library(build):
    """Verilate the queue manager with ``FLAGS``; returns the shared library's path (cached
    under ``build/verilated/xprop-...``)."""
    from amaranth.back import verilog
    from fpq_hdl.queue_manager import QueueManager
    text = strip_initial_values(verilog.convert(QueueManager(build), name=lean._TOP,
                                                emit_src=False))
    return lean.build_library(build, tag=f"xprop-{lean.build_tag(build)}", verilog_text=text,
                              flags=FLAGS, cpp=lean._cpp() + _EXTRA, prefix="libfpqx")


class XVerilatedQueueManager(lean.VerilatedQueueManager):
    """``VerilatedQueueManager`` on the X-propagation build, its initial state drawn from
    ``seed``. Not reset: ``reset(config)`` first (``raw_telemetry`` shows the initial
    state)."""

    def __init__(self, config, seed):
        from fpq_hdl.queue_manager import (LATENCY, N_RAW_DELAY, N_TELEMETRY_DELAY,
                                           AVG_TELEMETRY_DELAY, COUNTER_DELAY)
        self.config = config
        self.build = config.build
        self.latency = LATENCY
        self._delays = (N_RAW_DELAY, N_TELEMETRY_DELAY, AVG_TELEMETRY_DELAY,
                        LATENCY - 1 + COUNTER_DELAY)
        self.telemetry_delay = self._delays[3]
        so = lean._load(build_xprop_library(self.build))
        so.fpqv_new_seeded.restype = ctypes.c_void_p
        so.fpqv_new_seeded.argtypes = [ctypes.c_int]
        self._so = so
        self._h = so.fpqv_new_seeded(seed)
        self._rec = (ctypes.c_uint64 * 8)()
        self._vbuf = np.zeros((16, 3), dtype=np.uint64)
        self._cbuf = (ctypes.c_uint64 * 7)()
        self._tbuf = (ctypes.c_uint64 * 8)()
        self._pending = None
        self._clock = 0
        self._sent = 0
        self._taken = 0

    def raw_telemetry(self):
        """Counters and telemetry as they are now (no clocks), e.g. before any reset."""
        c = (ctypes.c_uint64 * 7)()
        t = (ctypes.c_uint64 * 8)()
        self._so.fpqv_raw_telemetry(self._h, c, t)
        return list(c), list(t)

    def feed(self, events, clocks):
        """Present ``events`` each in its clock for exactly ``clocks`` clocks (verdicts are not
        waited for; the pipeline is left as it is). Returns the number of events taken."""
        rec = events if isinstance(events, np.ndarray) else lean.encode_events(events)
        rec = np.ascontiguousarray(rec)
        return self._check(self._so.fpqv_run(self._h, rec.ctypes.data_as(lean._U64P),
                                             len(rec), 0, clocks), rec)

    def raw_reset(self, clocks):
        """Reset, then ``clocks`` idle clocks (the reset's vector wipe under way)."""
        self._so.fpqv_reset(self._h, 0)
        self._so.fpqv_idle_to(self._h, self._so.fpqv_now(self._h) + clocks)
