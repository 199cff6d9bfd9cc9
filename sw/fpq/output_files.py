"""Several output files written as one: every file complete, or none of them changed."""

from contextlib import ExitStack
import sys

from .atomic import atomic_path

__all__ = ["write_files"]


def write_files(files):
    """Write ``{path: text}``; the path ``-`` is standard output, written last. Each file goes
    to a temporary file in its folder first (``fpq.atomic``); they are renamed over their
    targets only once all are written, and a failure removes every temporary file."""
    with ExitStack() as stack:
        for path, text in files.items():
            if path == "-":
                continue
            tmp = stack.enter_context(atomic_path(path))
            with open(tmp, "w", newline="") as f:
                f.write(text)
    if "-" in files:
        sys.stdout.write(files["-"])
        sys.stdout.flush()
    return [path for path in files if path != "-"]
