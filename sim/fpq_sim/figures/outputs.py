"""The files ``fpq figures`` writes into its output folder: CSV tables whose estimates take three
columns (mean, lo, hi), and plots saved as PNG and PDF. Every file is written atomically and
listed in :attr:`Outputs.files`, and records where it comes from (:attr:`Outputs.provenance`,
set for each experiment): the CSV tables in columns of their own at the end of every row
(:data:`PROVENANCE_COLUMNS`, so that CSV readers need no comment syntax), the plots in their
metadata (PNG text chunks; the PDF's Subject and Keywords)."""

import csv
import os

from fpq.atomic import atomic_path

from ..provenance import runs_provenance as experiment_provenance, plot_metadata

__all__ = ["Outputs", "write_csv", "ci_cols", "ci_header", "DPI", "PROVENANCE_COLUMNS",
           "experiment_provenance"]

#: Resolution of the PNG plots (print quality).
DPI = 200
#: The columns of one estimate in a CSV table, suffixes of the quantity's name.
CI_SUFFIXES = ("mean", "lo", "hi")
#: The provenance columns of every CSV table (``fpq_sim.provenance.runs_provenance``), in
#: order.
PROVENANCE_COLUMNS = ("fpq_version", "commit", "tree_dirty", "scenario_digest", "seed_list")


def ci_cols(e):
    """The CSV columns of the estimate ``e``: mean, lo, hi."""
    return [e.mean, e.lo, e.hi]


def ci_header(names):
    """The CSV header of estimates of the quantities ``names``: three columns each."""
    return [f"{m}_{x}" for m in names for x in CI_SUFFIXES]


def write_csv(path, header, rows):
    """Write a CSV table atomically; floats with 6 significant digits."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            for r in rows:
                w.writerow([f"{x:.6g}" if isinstance(x, float) else x for x in r])


class Outputs:
    """The output folder of one ``fpq figures`` run (created if missing) and the paths of the
    files written into it, in order; ``provenance`` (``{column: text}``, see
    ``fpq_sim.provenance.runs_provenance``) goes into each file written; ``creator``, the
    command, into the plots' metadata."""

    def __init__(self, folder, creator="fpq figures"):
        self.folder, self.creator = folder, creator
        self.files = []
        self.provenance = {}
        os.makedirs(folder, exist_ok=True)

    def csv(self, name, header, rows):
        """Write the CSV table ``name`` (a file name, with its extension), with the
        provenance columns."""
        path = os.path.join(self.folder, name)
        extra = [self.provenance.get(c, "") for c in PROVENANCE_COLUMNS]
        write_csv(path, list(header) + list(PROVENANCE_COLUMNS),
                  [list(r) + extra for r in rows])
        self.files.append(path)


    def subplots(self, *args, **kwargs):
        """A new figure and its axes: ``matplotlib.pyplot.subplots``."""
        from .plots import pyplot
        return pyplot().subplots(*args, **kwargs)

    def save(self, fig, name):
        """Save ``fig`` as ``name``.png and ``name``.pdf, then close it."""
        from .plots import pyplot
        fig.tight_layout()
        for ext in ("png", "pdf"):
            path = os.path.join(self.folder, f"{name}.{ext}")
            with atomic_path(path) as tmp:
                fig.savefig(tmp, dpi=DPI, format=ext,
                            metadata=plot_metadata(self.provenance, ext, self.creator))
            self.files.append(path)
        pyplot().close(fig)
