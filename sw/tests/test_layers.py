"""Imports point down: the golden model (``fpq``, with the ``fpq`` command's dispatcher, which
finds the other packages' subcommands through entry points) imports no other package of the
project; the RTL (``fpq_hdl``) only the model; the simulator (``fpq_sim``) and the boards
(``fpq_boards``) the model and the RTL. No shipped module imports test or benchmark code
(``hdl/tests``, ``hdl/experiments``, ``cocotb-tests``). Within each package no modules import
each other in a circle. Read from the source (``ast``): module-level and function-level
imports (relative ones resolved), and module names given to ``importlib``."""

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


def _imports_within(path, module, modules):
    """The modules of ``modules`` that the file ``path`` (module ``module``; a package's
    ``__init__.py`` is the package) imports, relative imports resolved: ``from x import y``
    imports the module ``x.y`` if there is one, else ``x``."""
    names = set(imported_modules(path))
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            base = node.module
            if node.level:
                parts = module.split(".")
                parts = parts[:len(parts) - node.level + (path.name == "__init__.py")]
                base = ".".join(parts + ([node.module] if node.module else []))
            names |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                      for a in node.names}
    return names & modules


def import_circles(root, package):
    """The circles of imports between the modules of ``package`` (its source under
    ``root``): each a sorted list of module names (the strongly connected components of
    more than one module, and a module that imports itself)."""
    files = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {name: sorted(_imports_within(path, name, set(files)))
             for name, path in files.items()}
    index, low, stack, circles = {}, {}, [], []

    def visit(name):                       # Tarjan's strongly connected components
        index[name] = low[name] = len(index)
        stack.append(name)
        for other in graph[name]:
            if other not in index:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            component = []
            while not component or component[-1] != name:
                component.append(stack.pop())
            if len(component) > 1 or name in graph[name]:
                circles.append(sorted(component))

    for name in graph:
        if name not in index:
            visit(name)
    return circles


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_import_circle_within_a_package(package):
    circles = import_circles(PACKAGES[package], package)
    assert not circles, "\n".join(" <-> ".join(c) for c in circles)


def test_the_check_sees_a_planted_circle(tmp_path):
    """Through a function-level relative import, a ``from . import`` of a module, and the
    package's ``__init__``; a module importing another one-way is no circle."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from .sub.b import g\n\ndef f():\n    return g()\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def g():\n    from .. import c\n    return c\n")
    (pkg / "c.py").write_text("def h():\n    from pkg import f\n")
    (pkg / "d.py").write_text("from .a import f\n")
    assert import_circles(pkg, "pkg") == [["pkg", "pkg.a", "pkg.c", "pkg.sub.b"]]
    (pkg / "c.py").write_text("")
    assert import_circles(pkg, "pkg") == []


def test_the_check_sees_an_upward_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from fpq_sim.network import Network\n"
                   "    import importlib\n    importlib.import_module('fpq_hdl.cli')\n")
    assert {"fpq_sim.network", "fpq_hdl.cli"} <= imported_modules(bad)
