"""The files ``fpq figures`` writes into its output folder: CSV tables whose estimates take three
columns (mean, lo, hi), and plots saved as PNG and PDF. Every file is written atomically and
listed in :attr:`Outputs.files`, and records where it comes from (:attr:`Outputs.provenance`,
set for each experiment): the CSV tables in columns of their own at the end of every row
(:data:`PROVENANCE_COLUMNS`, so that CSV readers need no comment syntax), the plots in their
metadata (PNG text chunks; the PDF's Subject and Keywords)."""

import csv
import json
import os

from fpq.atomic import atomic_path

__all__ = ["Outputs", "write_csv", "ci_cols", "ci_header", "DPI", "PROVENANCE_COLUMNS",
           "experiment_provenance"]

#: Resolution of the PNG plots (print quality).
DPI = 200
#: The columns of one estimate in a CSV table, suffixes of the quantity's name.
CI_SUFFIXES = ("mean", "lo", "hi")
#: The provenance columns of every CSV table (``experiment_provenance``), in order.
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


def experiment_provenance(runs):
    """``{column: text}`` (:data:`PROVENANCE_COLUMNS`) of files made from the summaries
    ``runs``: the version, commit and tree state the runs were made with (several, space
    separated, if they differ; ``None`` where unknown), the digest of their scenarios'
    digests (``fpq_sim.provenance``) and their seeds."""
    from ..provenance import seeds_text, json_digest
    provs = [s.get("provenance") or {} for s in runs]

    def each(field):
        return " ".join(sorted({str(p.get(field)) for p in provs}))
    return {"fpq_version": each("version"), "commit": each("commit"),
            "tree_dirty": each("dirty"),
            "scenario_digest": json_digest(sorted(str(p.get("scenario_digest")) for p in provs)),
            "seed_list": seeds_text(s["seed"] for s in runs)}


class Outputs:
    """The output folder of one ``fpq figures`` run (created if missing) and the paths of the
    files written into it, in order; ``provenance`` (``{column: text}``, see
    :func:`experiment_provenance`) goes into each file written."""

    def __init__(self, folder):
        self.folder = folder
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

    def _metadata(self, ext):
        """The plot file's metadata: the provenance as JSON."""
        text = json.dumps(self.provenance, sort_keys=True)
        if ext == "pdf":
            return {"Creator": "fpq figures", "Subject": text,
                    "Keywords": f"fpq-aqm {self.provenance.get('fpq_version', '')}"}
        return {"Software": "fpq figures", "Description": text}

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
                fig.savefig(tmp, dpi=DPI, format=ext, metadata=self._metadata(ext))
            self.files.append(path)
        pyplot().close(fig)
