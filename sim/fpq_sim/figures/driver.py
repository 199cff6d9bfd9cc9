"""From the runs' summaries to the files: every registered experiment's CSV tables and plots, and
the fpq-figures section of RESULTS.md (between :data:`BEGIN` and :data:`END`; the rest of the
file is left alone)."""

from fpq.marked_section import markers, write_section

from .intro import intro
from .outputs import Outputs
from .registry import REGISTRY
from .runner import group, save_raw

__all__ = ["write_outputs", "results_markdown", "update_results_md", "BEGIN", "END",
           "SECTION_ORDER"]

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
        experiment.write(G, outputs)
    return outputs.files


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
    L.append(where)
    return "\n".join(L) + "\n"


def update_results_md(path, body):
    """Replace what lies between the fpq-figures markers (appended if missing); atomic."""
    write_section(path, body, BEGIN, END)
