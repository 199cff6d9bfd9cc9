"""Output files that are either complete or absent: write to a temporary file in the same
folder, then rename it over the target (``os.replace`` is atomic on one file system). A
failure (an exception, Ctrl-C) removes the temporary file and leaves any old target as it was."""

from contextlib import contextmanager
import os
import tempfile

__all__ = ["atomic_path", "write_text", "write_bytes"]


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path):
    """``with atomic_path("out/x.png") as tmp: fig.savefig(tmp)``: ``tmp`` is a fresh file in
    the target's folder (same extension); renamed to ``path`` when the block succeeds."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix="-" + os.path.basename(path))
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_umask())          # as open() would have created it
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_text(path, text):
    with atomic_path(path) as tmp:
        with open(tmp, "w", newline="") as f:
            f.write(text)


def write_bytes(path, data):
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
