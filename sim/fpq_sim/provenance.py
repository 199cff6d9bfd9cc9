"""Where the simulator's outputs come from: the package version, the git commit of the checkout
it runs from (and whether the work tree had changes), and digests of the scenarios and of the
code that made the numbers.

Digests. A run's number depends on its validated scenario (every key, its seed included) and
on the simulation code; a table of ``fpq figures`` also on the code that turns the runs into
rows. So:

* :func:`scenario_digest`: SHA-256 of the validated scenario as canonical JSON (keys sorted,
  bytes as hex), without its ``description``, which is prose.
* :func:`code_digest`: SHA-256 of the source of the modules that compute the numbers, found
  by following the imports (also those inside functions) of root modules within the ``fpq``
  and ``fpq_sim`` packages, each module read as its syntax tree with the docstrings removed.
  A change of what the code does changes the digest; a comment, a docstring, a line wrapped
  or a blank line does not (they are not in the tree), nor does a change of a module the
  roots do not reach (the RTL, the boards, the commands' argument parsing), nor of the
  modules in :data:`NOT_MODEL`, which write, draw or word results but do not compute them.
  This errs on the side of "stale": a renamed local variable changes the digest too.
* :func:`run_digest`: a run's scenario, whether it keeps its transfer times, and the digest
  of the simulation code (:data:`SIMULATION_ROOTS`): a saved run with the same run digest
  is the run the current code would make (``fpq figures --resume`` reuses it).
* :func:`figures_digest`: the code that makes the tables (:data:`TABLE_ROOTS`) and the run
  digests of the runs behind them; RESULTS.md records it, and a test compares it with the
  digest of the current code and scenarios.

None of this reads or records a key of the queue manager: provenance holds versions, commits,
digests and seeds only.
"""

import ast
import functools
import hashlib
import importlib.util
import json
import os
import subprocess

__all__ = ["code_state", "git_state", "json_digest", "scenario_digest", "code_digest",
           "run_digest", "run_provenance", "runs_provenance", "provenance_line", "plot_metadata",
           "figures_digest", "model_modules", "normalised_source", "seeds_text",
           "SIMULATION_ROOTS", "TABLE_ROOTS", "NOT_MODEL"]

#: The modules a run's numbers come from: the dumbbell and the parking lot (with all they
#: import: TCP, the routers, the queue managers, the scenario's validation).
SIMULATION_ROOTS = ("fpq_sim.network", "fpq_sim.parkinglot")
#: The modules the tables of ``fpq figures`` come from (with all they import), beside the
#: runs: the experiments' modules are added by :func:`figures_digest`.
TABLE_ROOTS = ("fpq_sim.figures.quantities", "fpq_sim.stats")
#: Modules that write, draw or word the results (files, plots, prose, the command line,
#: running the jobs) without computing them: not part of a code digest, nor what they import.
NOT_MODEL = ("fpq_sim.figures.plots", "fpq_sim.figures.outputs", "fpq_sim.figures.template",
             "fpq_sim.figures.driver", "fpq_sim.figures.runner", "fpq_sim.figures.intro",
             "fpq_sim.figures", "fpq_sim.provenance", "fpq.atomic", "fpq.output_files",
             "fpq.terminate", "fpq.messages", "fpq.marked_section", "fpq.paths", "fpq.cli")
PACKAGES = ("fpq", "fpq_sim")


def json_digest(obj):
    """SHA-256 (hex) of ``obj`` as canonical JSON (keys sorted, bytes as hex)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"),
                      default=lambda v: v.hex() if isinstance(v, (bytes, bytearray)) else repr(v))
    return hashlib.sha256(text.encode()).hexdigest()


def scenario_digest(sc):
    """The digest of a validated scenario (all but its ``description``)."""
    return json_digest({k: v for k, v in sc.items() if k != "description"})


# ---- code digest --------------------------------------------------------------------------------

def _module_file(name):
    """The source file of module ``name`` of :data:`PACKAGES`, or None."""
    if name.split(".")[0] not in PACKAGES:
        return None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec else None
    return origin if origin and origin.endswith(".py") else None


def _imported(name, tree, is_package):
    """The names of the modules the syntax tree ``tree`` of module ``name`` imports (a
    ``from`` import names the module and, for each name, the submodule it may be)."""
    here = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            mod = ".".join(p for p in (base if node.level else "", node.module or "") if p)
            yield mod
            yield from (f"{mod}.{a.name}" for a in node.names)


def _stripped(tree):
    """``tree`` without its docstrings (module, class and function)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and \
                    isinstance(getattr(body[0], "value", None), ast.Constant) and \
                    isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def model_modules(roots):
    """``{module name: normalised source}`` of ``roots`` and every module of
    :data:`PACKAGES` they import, directly or not, except :data:`NOT_MODEL`."""
    found, todo = {}, list(roots)
    while todo:
        name = todo.pop()
        if name in found or name in NOT_MODEL:
            continue
        path = _module_file(name)
        if path is None:
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        found[name] = normalised_source(tree)
        todo += _imported(name, tree, path.endswith("__init__.py"))
    return found


def normalised_source(source):
    """What a code digest reads of a module's ``source`` (text or a parsed tree): its
    syntax tree without docstrings, comments, line numbers or layout, as text."""
    tree = ast.parse(source) if isinstance(source, str) else source
    return ast.dump(_stripped(tree), annotate_fields=False)


@functools.cache
def code_digest(roots=SIMULATION_ROOTS):
    """The digest of the code of :func:`model_modules` of ``roots`` (a tuple)."""
    return json_digest(model_modules(roots))


def run_digest(sc, times=False):
    """The digest of one run: its scenario, whether it keeps its transfer times, and the
    simulation code."""
    return json_digest({"scenario": scenario_digest(sc), "transfer_times": bool(times),
                    "code": code_digest()})


def figures_digest(run_digests, experiments):
    """The digest of tables made from the runs of ``run_digests`` by the code of the
    experiments' modules ``experiments`` (module names) and :data:`TABLE_ROOTS`."""
    return json_digest({"tables": code_digest(tuple(TABLE_ROOTS) + tuple(sorted(experiments))),
                    "runs": sorted(run_digests)})


# ---- version and commit -------------------------------------------------------------------------

def git_state(root):
    """``{"commit": hex or None, "dirty": bool or None}`` of the git checkout ``root``
    (None: not a checkout, or no git): dirty when a tracked file differs from the commit
    (files git does not track, such as outputs, do not count)."""
    def git(*args):
        return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True,
                              timeout=30, check=True).stdout
    try:
        commit = git("rev-parse", "HEAD").strip()
        dirty = bool(git("status", "--porcelain", "--untracked-files=no").strip())
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


@functools.cache
def code_state():
    """``{"version", "commit", "dirty"}`` of the code running: the distribution's version
    (``fpq.paths.version``) and, from a checkout, its commit and whether its tracked files
    had changes (None outside a checkout). Read once per process."""
    from fpq.paths import checkout_root, version
    root = checkout_root()
    in_git = root is not None and os.path.exists(os.path.join(root, ".git"))
    state = git_state(root) if in_git else {"commit": None, "dirty": None}
    return {"version": version(), **state}


def run_provenance(sc, times=False):
    """What a run's summary records of where it comes from: the code's version, commit and
    whether its tree had changes (:func:`code_state`), the seed, the digest of the scenario
    and the run's digest (:func:`run_digest`, which ``fpq figures --resume`` compares)."""
    return dict(code_state(), seed=sc["run"]["seed"], scenario_digest=scenario_digest(sc),
                run_digest=run_digest(sc, times))


def runs_provenance(runs):
    """``{field: text}`` of outputs made from the run summaries ``runs``: ``fpq_version``,
    ``commit`` and ``tree_dirty`` the runs were made with (several, space separated, if
    they differ; ``None`` where unknown), ``scenario_digest`` (the digest of the runs'
    scenario digests) and ``seed_list`` (:func:`seeds_text`)."""
    provs = [s.get("provenance") or {} for s in runs]

    def each(field):
        return " ".join(sorted({str(p.get(field)) for p in provs}))
    return {"fpq_version": each("version"), "commit": each("commit"),
            "tree_dirty": each("dirty"),
            "scenario_digest": json_digest(sorted(str(p.get("scenario_digest"))
                                                  for p in provs)),
            "seed_list": seeds_text(s["seed"] for s in runs)}


def provenance_line(prov):
    """A Markdown line (italic) that gives :func:`runs_provenance`'s ``prov``."""
    dirty = {"True": ", with uncommitted changes", "False": ""}.get(prov["tree_dirty"], "")
    return (f"_Made by fpq-aqm {prov['fpq_version']}, commit {prov['commit']}{dirty}; "
            f"scenarios' digest {prov['scenario_digest']}; seeds {prov['seed_list']}._")


def plot_metadata(prov, fmt, creator):
    """The metadata ``matplotlib``'s ``savefig`` writes into a plot of format ``fmt`` (png,
    pdf, svg) made by ``creator``: the provenance ``prov`` as JSON, in the PNG's
    Description text, the PDF's Subject, the SVG's Description."""
    text = json.dumps(prov, sort_keys=True)
    if fmt == "pdf":
        return {"Creator": creator, "Subject": text,
                "Keywords": f"fpq-aqm {prov.get('fpq_version', '')}"}
    if fmt == "svg":
        return {"Creator": creator, "Description": text}
    return {"Software": creator, "Description": text}


def seeds_text(seeds):
    """Seeds as short text: ``1-10``, ``1 2 5``."""
    s = sorted(set(int(x) for x in seeds))
    if len(s) > 2 and s == list(range(s[0], s[-1] + 1)):
        return f"{s[0]}-{s[-1]}"
    return " ".join(map(str, s))
