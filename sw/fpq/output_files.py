"""Several output files written as one: every file complete, or none of them changed."""

from contextlib import ExitStack
import os
import sys

from .atomic import atomic_path

__all__ = ["write_files", "keys_text"]


def write_files(files, private=()):
    """Write ``{path: text}``; the path ``-`` is standard output, written last. Each file goes
    to a temporary file in its folder first (``fpq.atomic``); they are renamed over their
    targets only once all are written, and a failure removes every temporary file. The
    paths in ``private`` (a key's files) get mode 0600 before their text is written."""
    with ExitStack() as stack:
        for path, text in files.items():
            if path == "-":
                continue
            tmp = stack.enter_context(atomic_path(path))
            if path in private:
                os.chmod(tmp, 0o600)
            with open(tmp, "w", newline="") as f:
                f.write(text)
    if "-" in files:
        sys.stdout.write(files["-"])
        sys.stdout.flush()
    return [path for path in files if path != "-"]


def keys_text(keys):
    """The text of a file that records a build's keys (``fpq.Build.secret_values``): one
    ``name=hex`` line per key, in ``keys``' order. Write it with ``private``."""
    return "".join(f"{name}={bytes(value).hex()}\n" for name, value in keys.items())
