"""Verilog for a bench: elaborate an Amaranth component and write it into a per-configuration
folder under ``build/cocotb/`` (git-ignored), named after a hash of the Verilog text, so the
same design is generated once and Verilated once per run (and across runs)."""

import hashlib
import os
from pathlib import Path

from amaranth.back import verilog

__all__ = ["ROOT", "BUILD_ROOT", "generate"]

ROOT = Path(__file__).resolve().parents[2]
BUILD_ROOT = ROOT / "build" / "cocotb"


def ports_of(component):
    """The component's ports as Verilog port names (``arrivals__payload`` ...)."""
    return list(component.signature.members)


def generate(component, name, tag):
    """Write ``component`` as module ``name`` into ``build/cocotb/<tag>-<hash12>/<name>.v``.

    Returns ``(folder, verilog_path)``. The hash covers the Verilog text, so any change of the
    RTL, of the build parameters or an injected fault gets its own folder (and Verilator
    build); an unchanged design reuses the folder."""
    text = verilog.convert(component, name=name, emit_src=False)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    folder = BUILD_ROOT / f"{tag}-{digest}"
    path = folder / f"{name}.v"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".v.tmp{os.getpid()}")
        tmp.write_text(text)
        os.replace(tmp, path)
    return folder, path
