"""From the runs' summaries to the files: every registered experiment's CSV tables and plots, and
the fpq-figures section of RESULTS.md (between :data:`BEGIN` and :data:`END`; the rest of the
file is left alone)."""

import re

from fpq.marked_section import markers, write_section

from .intro import intro
from .outputs import Outputs, experiment_provenance
from .registry import REGISTRY
from .runner import group, save_raw

__all__ = ["write_outputs", "results_markdown", "update_results_md", "BEGIN", "END",
           "SECTION_ORDER", "experiment_runs", "digest_line", "results_digest", "DIGEST_TEXT"]

BEGIN, END = markers("figures")
#: The experiments' order in RESULTS.md: the FPQ paper's main result (Figs. 10-13) first.
SECTION_ORDER = ("sweep", "loss", "many", "validation", "phase", "baselines", "parking",
                 "modern")


def write_outputs(res, out, raw, quick):
    """Write every run's summary ``res`` (``{key: summary}``) to the folder ``raw`` and every
    experiment's CSV tables and plots to the folder ``out``; returns the paths of the files
    in ``out``. ``quick`` (a ``--quick`` run) changes nothing here."""
    outputs = Outputs(out)
    save_raw(res, raw)
    G = group(res)
    for experiment in REGISTRY.values():
        outputs.provenance = experiment_provenance(experiment_runs(res, experiment))
        experiment.write(G, outputs)
    return outputs.files


def experiment_runs(res, experiment):
    """The summaries of ``res`` (``{key: summary}``) that are runs of ``experiment``: their
    key starts with one of its kinds of run, its name, or its name and an underscore
    (``many_fpq``)."""
    name = experiment.name
    return [s for key, s in res.items() if key[0] in experiment.durations or key[0] == name
            or key[0].startswith(name + "_")]


def digest_line(res, quick):
    """The line of the section that records what its rows were made from
    (``fpq_sim.provenance.figures_digest`` of the runs ``res`` and the experiments they
    belong to), which ``results_digest`` reads back."""
    from ..provenance import code_state, figures_digest
    names = [name for name, e in REGISTRY.items() if experiment_runs(res, e)]
    modules = [REGISTRY[name].write.__module__ for name in names]
    runs = [(s.get("provenance") or {}).get("run_digest") for s in res.values()]
    digest = figures_digest(runs, modules) if all(runs) else "unknown (runs without digests)"
    state = code_state()
    tree = {True: ", with uncommitted changes", False: ""}.get(state["dirty"], "")
    return (f"_{DIGEST_TEXT} {digest} (experiments: {', '.join(names)}; "
            f"{'quick' if quick else 'full'} runs; written by fpq-aqm {state['version']}, "
            f"commit {state['commit'] or 'unknown'}{tree})._")


#: The words before the digest in :func:`digest_line`.
DIGEST_TEXT = "Digest of the code and scenarios behind these rows:"


def results_digest(text):
    """``(digest, experiments, quick)`` recorded in the fpq-figures section of the Markdown
    ``text`` (:func:`digest_line`), or None if it records none."""
    m = re.search(re.escape(DIGEST_TEXT) + r" (\S+) \(experiments: ([a-z, ]+); (quick|full) runs",
                  text)
    return (m.group(1), tuple(m.group(2).split(", ")), m.group(3) == "quick") if m else None


def results_markdown(res, quick, wall, where, seeds):
    """The fpq-figures section of RESULTS.md for the summaries ``res`` (``{key: summary}``):
    the opening, then a subsection per experiment present, its prose from the template.
    ``quick`` marks a ``--quick`` run; ``where`` is the closing line (what ran, where);
    ``seeds`` the seeds of each point; ``wall``, the run's wall time, is not used (``where``
    carries it)."""
    G = group(res)
    L = intro(res, quick, seeds)
    for name in SECTION_ORDER:
        L += REGISTRY[name].markdown(G)
    L += [where, "", digest_line(res, quick)]
    return "\n".join(L) + "\n"


def update_results_md(path, body):
    """Replace what lies between the fpq-figures markers (appended if missing); atomic."""
    write_section(path, body, BEGIN, END)
