"""Product functions stay short: no function of the shipped packages (``fpq``, ``fpq_hdl``,
``fpq_sim``, ``fpq_boards``) is longer than ``BUDGET`` lines outside
``OVER_BUDGET``, and that list only shrinks: a listed function may not grow past its recorded
length, and one that got shorter is recorded at its new length or, once within the budget,
removed. Tests, cocotb benches and ``hdl/experiments`` are not product code and are not read.

A function's length is its ``def`` line to its last line (decorators not counted); a nested
function counts at its own length as well as inside its parent's."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the shipped packages' folders
PRODUCT = [ROOT / "sw" / "fpq", ROOT / "hdl" / "fpq_hdl", ROOT / "sim" / "fpq_sim",
           ROOT / "boards" / "fpq_boards"]
#: the longest a function may be, in lines
BUDGET = 80
#: the functions longer than ``BUDGET`` today, at their recorded length: to be cut into named
#: parts; an entry goes when its function is within the budget, and none is added
OVER_BUDGET = {
    # the golden model's hot path: the components' common cases inlined for speed (a test
    # checks it against the components verdict by verdict)
    "sw/fpq/queue_manager.py::QueueManager.arrive": 89,
}


def function_lengths(tree, path):
    """``{"path::Class.function": lines}`` of every function in a parsed module, nested ones
    included (as ``outer.inner``); of two functions with one name, the longer."""
    out = {}

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{path}::{prefix}{child.name}"
                out[name] = max(out.get(name, 0), child.end_lineno - child.lineno + 1)
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            else:
                walk(child, prefix)
    walk(tree, "")
    return out


def product_function_lengths():
    out = {}
    for folder in PRODUCT:
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            out.update(function_lengths(ast.parse(path.read_text(), filename=rel), rel))
    return out


def budget_problems(lengths, allowed, budget=BUDGET):
    """What is wrong with ``lengths`` against the ``allowed`` list: one line each, saying
    what to do."""
    problems = []
    for name, n in sorted(lengths.items(), key=lambda kv: -kv[1]):
        if n <= budget:
            if name in allowed:
                problems.append(f"{name} is {n} lines, within the budget of {budget}: remove "
                                f"its entry from OVER_BUDGET")
        elif name not in allowed:
            problems.append(f"{name} is {n} lines, over the budget of {budget}: cut it into "
                            f"named parts of at most {budget} lines (OVER_BUDGET takes no new "
                            f"entry)")
        elif n > allowed[name]:
            problems.append(f"{name} grew to {n} lines, over its recorded {allowed[name]}: cut "
                            f"it back (the list only shrinks)")
        elif n < allowed[name]:
            problems.append(f"{name} is {n} lines, shorter than its recorded {allowed[name]}: "
                            f"record it as {name!r}: {n} in OVER_BUDGET")
    problems += [f"{name} is in OVER_BUDGET but no longer exists (renamed or moved? the "
                 f"function it became is held to the budget like any other): remove its entry"
                 for name in sorted(set(allowed) - set(lengths))]
    return problems


def test_no_product_function_over_the_budget():
    problems = budget_problems(product_function_lengths(), OVER_BUDGET)
    assert not problems, "sw/tests/test_function_length.py:\n  " + "\n  ".join(problems)


def test_the_list_is_of_functions_over_the_budget_only():
    assert all(n > BUDGET for n in OVER_BUDGET.values())


def _lengths_of(source, path="m.py"):
    return function_lengths(ast.parse(source), path)


def test_lengths_count_nested_functions_and_methods_on_their_own():
    body = "\n".join(f"            x{i} = {i}" for i in range(5))
    src = (f"class C:\n    def m(self):\n        def inner():\n{body}\n        return 1\n"
           f"\nasync def f():\n    pass\n")
    assert _lengths_of(src) == {"m.py::C.m": 8, "m.py::C.m.inner": 6, "m.py::f": 2}


def test_the_budget_sees_every_way_a_list_goes_stale():
    lengths = {"a.py::new": 81, "a.py::grown": 90, "a.py::shrunk": 85, "a.py::fits": 80,
               "a.py::kept": 100}
    allowed = {"a.py::grown": 85, "a.py::shrunk": 90, "a.py::fits": 81, "a.py::kept": 100,
               "a.py::gone": 120}
    problems = budget_problems(lengths, allowed)
    assert len(problems) == 5
    for name, says in (("new", "OVER_BUDGET takes no new entry"),
                       ("grown", "over its recorded 85"),
                       ("shrunk", "record it as 'a.py::shrunk': 85"),
                       ("fits", "remove its entry"),
                       ("gone", "no longer exists")):
        assert any(p.startswith(f"a.py::{name} ") and says in p for p in problems), name
