"""The files ``fpq figures`` writes into its output folder: CSV tables whose estimates take three
columns (mean, lo, hi), and plots saved as PNG and PDF. Every file is written atomically and
listed in :attr:`Outputs.files`."""

import csv
import os

from fpq.atomic import atomic_path

__all__ = ["Outputs", "write_csv", "ci_cols", "ci_header", "DPI"]

#: Resolution of the PNG plots (print quality).
DPI = 200
#: The columns of one estimate in a CSV table, suffixes of the quantity's name.
CI_SUFFIXES = ("mean", "lo", "hi")


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
    files written into it, in order."""

    def __init__(self, folder):
        self.folder = folder
        self.files = []
        os.makedirs(folder, exist_ok=True)

    def csv(self, name, header, rows):
        """Write the CSV table ``name`` (a file name, with its extension)."""
        path = os.path.join(self.folder, name)
        write_csv(path, header, rows)
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
                fig.savefig(tmp, dpi=DPI, format=ext)
            self.files.append(path)
        pyplot().close(fig)
