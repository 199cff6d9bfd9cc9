"""Imports point down: the golden model (``fpq``, with the ``fpq`` command's dispatcher, which
finds the other packages' subcommands through entry points) imports no other package of the
project; the RTL (``fpq_hdl``) only the model; the simulator (``fpq_sim``) and the boards
(``fpq_boards``) the model and the RTL. No shipped module imports test or benchmark code
(``hdl/tests``, ``hdl/experiments``, ``cocotb-tests``). Read from the source (``ast``):
module-level and function-level imports, and module names given to ``importlib``."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"fpq": ROOT / "sw" / "fpq",
            "fpq_hdl": ROOT / "hdl" / "fpq_hdl", "fpq_sim": ROOT / "sim" / "fpq_sim",
            "fpq_boards": ROOT / "boards" / "fpq_boards"}
#: what each package may import of the project's packages (besides itself)
ALLOWED = {"fpq": set(), "fpq_hdl": {"fpq"}, "fpq_sim": {"fpq", "fpq_hdl"},
           "fpq_boards": {"fpq", "fpq_hdl"}}
#: test and benchmark code: never imported by a shipped module
NOT_SHIPPED = {"tests", "formal_harness", "loop_bounds", "experiments", "tb_lib", "cocotb",
               "conftest", "hdl_harness"}


def imported_modules(path):
    """The absolute module names a source file imports (``import x``, ``from x import``,
    ``importlib.import_module("x")``, ``importlib.util.find_spec("x")``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("import_module", "find_spec") and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names.add(node.args[0].value)
    return names


def _sources(package):
    return sorted(PACKAGES[package].rglob("*.py"))


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_imports_point_down(package):
    wrong = []
    for path in _sources(package):
        for name in imported_modules(path):
            top = name.split(".")[0]
            if top in PACKAGES and top != package and top not in ALLOWED[package]:
                wrong.append(f"{path.relative_to(ROOT)} imports {name}")
            if top in NOT_SHIPPED or name.split(".")[-1] in NOT_SHIPPED:
                wrong.append(f"{path.relative_to(ROOT)} imports test code {name}")
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_an_upward_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from fpq_sim.network import Network\n"
                   "    import importlib\n    importlib.import_module('fpq_hdl.cli')\n")
    assert {"fpq_sim.network", "fpq_hdl.cli"} <= imported_modules(bad)
