"""Where the packages run from: a source checkout or an installed distribution.

Commands that maintain the checkout's files (``docs/figures``, ``docs/RESULTS.md``,
``sw/generated``, ``docs/benchmarks``) write there by default when they run from a checkout;
installed from the wheel, they write into the current directory instead
(:func:`default_output`). Files the packages read at run time (scenarios, the Verilator
harness's C++ source) are package data, found next to the modules that read them.
"""

import os
import tomllib

__all__ = ["DISTRIBUTION", "checkout_root", "default_output", "version"]

#: The distribution's name on PyPI (the import names stay ``fpq``, ``fpq_sim``, ...):
#: ``fpq`` is taken there by an unrelated project.
DISTRIBUTION = "fpq-aqm"


def checkout_root():
    """The source checkout this package is imported from (the folder with ``pyproject.toml``
    whose ``sw/fpq`` is this package), or None when it is installed."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    if (os.path.isfile(os.path.join(root, "pyproject.toml"))
            and os.path.normcase(here) == os.path.normcase(os.path.join(root, "sw", "fpq"))):
        return root
    return None


def default_output(in_checkout, outside):
    """The default path of an output: ``in_checkout`` (relative to the checkout's root) when
    running from a checkout, else ``outside`` (relative to the current directory)."""
    root = checkout_root()
    return os.path.join(root, in_checkout) if root else outside


def version():
    """The distribution's version: the checkout's ``pyproject.toml`` when running from a
    checkout (installed metadata, if any, may be of another copy), else the installed
    distribution's metadata; ``"unknown"`` if neither is there."""
    root = checkout_root()
    if root:
        with open(os.path.join(root, "pyproject.toml"), "rb") as f:
            return tomllib.load(f)["project"]["version"]
    from importlib import metadata
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"
