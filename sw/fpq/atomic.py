"""Output files that are either complete or absent: write to a temporary file in the same
folder, then rename it over the target (``os.replace`` is atomic on one file system). A
failure (an exception, Ctrl-C, SIGTERM) removes the temporary file and leaves any old target
as it was. Any catchable signal that ends a process (``fpq.terminate.ENDING_SIGNALS``:
SIGTERM, SIGHUP, SIGQUIT, SIGXCPU, SIGALRM, SIGUSR1, ...) does the same; SIGXFSZ, the file
size limit, is ignored while writing, so that a write past the limit fails naming the file.

Only regular files are replaced: renaming over a FIFO, a device node or a symbolic link
would put a regular file in its place (as root, writing to ``/dev/full`` replaced the device
node), so such a target is refused before anything is written. A replaced file keeps its
mode (and, where the system allows, its owner and group); a new one gets the mode
``open()`` would give it (0o666 less the umask).

Commands check their output paths with :func:`check_output_path` and
:func:`check_not_an_input` before they start computing, so that a bad path costs no run.
"""

from contextlib import contextmanager
import os
import secrets
import stat

from .terminate import signals_as_exit, signals_held

__all__ = ["atomic_path", "atomic_paths", "write_text", "write_bytes", "OutputPathError",
           "check_output_path", "check_output_folder", "check_not_an_input"]


class OutputPathError(ValueError):
    """An output path that cannot or must not be written; the message names it and why."""


def _kind(mode):
    """What a non-regular file is, for messages."""
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _existing_regular(path, what):
    """``os.lstat(path)`` if ``path`` is a regular file, None if it does not exist; raises
    OutputPathError for anything else (``what`` prefixes the message)."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):     # the folder's checks report it
        return None
    if stat.S_ISREG(st.st_mode):
        return st
    kind = _kind(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        kind += f" (to {os.readlink(path)!r}); give the path of the file itself"
    raise OutputPathError(f"{what}{path!r} is {kind}, not a regular file: refusing to "
                          f"replace it")


# the temporary's name keeps the target's extension (writers such as matplotlib's savefig
# choose the format by it) and stays within the usual 255-byte limit of a file name
_SUFFIX_CHARS = 120


def _create_temporary(folder, base):
    """A new empty file in ``folder`` created as ``open()`` would (mode 0o666 less the umask,
    and the folder's default ACL if any); returns ``(fd, path)``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = os.path.join(folder, f".tmp-{secrets.token_hex(6)}-{base[-_SUFFIX_CHARS:]}")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue


def _keep_owner_and_mode(fd, st):
    """Give the new file ``fd`` the owner, group and mode of the old one (``st``)."""
    new = os.fstat(fd)
    if (new.st_uid, new.st_gid) != (st.st_uid, st.st_gid):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except PermissionError:           # only root may give a file away
            pass
    os.fchmod(fd, stat.S_IMODE(st.st_mode))      # after chown, which clears set-ID bits


class _Temporary:
    """The temporary file of one output ``path``: created in its folder (the folder made if
    missing), renamed over the target by :meth:`commit` or removed by :meth:`discard`."""

    def __init__(self, path):
        self.path = os.fspath(path)
        old = _existing_regular(self.path, "")
        folder = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(folder, exist_ok=True)
        fd, self.tmp = _create_temporary(folder, os.path.basename(self.path))
        try:
            if old is not None:
                _keep_owner_and_mode(fd, old)
        except BaseException:             # not yet the caller's to remove
            os.close(fd)
            self.discard()
            raise
        os.close(fd)

    def check(self):
        """Refuse a target that was replaced by something else while the output was made."""
        _existing_regular(self.path, "")

    def commit(self):
        os.replace(self.tmp, self.path)

    def discard(self):
        try:
            os.unlink(self.tmp)
        except FileNotFoundError:
            pass


def _naming(exc, path, tmp):
    """``exc``, or for an OSError that names no file or only the temporary one, the same
    error naming ``path``: what a message about a failed write must say."""
    if isinstance(exc, OSError) and exc.errno is not None and exc.filename in (None, tmp):
        return OSError(exc.errno, exc.strerror, path)
    return exc


@contextmanager
def atomic_paths(paths):
    """``with atomic_paths(["a.json", "b.h"]) as tmp: ...``: a temporary file per target
    (``tmp[path]``, as :func:`atomic_path` makes it); when the block succeeds all are renamed
    over their targets, with the signals that end a process held meanwhile
    (``fpq.terminate.signals_held``: the renames take microseconds), so that a signal leaves
    every target old or every target new. On failure every temporary is removed.

    Parameters
    ----------
    paths : iterable of str or os.PathLike
        The targets (:func:`atomic_path`'s rules for each).
    """
    made = []
    with signals_as_exit():
        try:
            for path in paths:
                # held: a signal between creating the file and noting it would leave it
                with signals_held():
                    made.append(_Temporary(path))
            yield {t.path: t.tmp for t in made}
            with signals_held():
                for t in made:
                    t.check()
                for t in made:
                    t.commit()
        except BaseException as exc:
            for t in made:
                t.discard()
            named = _naming(exc, made[-1].path, made[-1].tmp) if len(made) == 1 else exc
            if named is exc:
                raise
            raise named from None


@contextmanager
def atomic_path(path):
    """``with atomic_path("out/x.png") as tmp: fig.savefig(tmp)``: ``tmp`` is a fresh file in
    the target's folder (same extension); renamed to ``path`` when the block succeeds.

    Parameters
    ----------
    path : str or os.PathLike
        The target. Its folder is created if missing. An existing target must be a regular
        file (``OutputPathError`` otherwise, raised before the block runs); its mode, owner
        and group carry over to the new file. A failed write (``OSError``: a full disk, the
        file size limit) is reported naming ``path``.
    """
    path = os.fspath(path)
    with atomic_paths([path]) as tmp:
        yield tmp[path]


def write_text(path, text):
    """Write ``text`` to ``path`` atomically (:func:`atomic_path`), newlines as given."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", newline="") as f:
            f.write(text)


def write_bytes(path, data):
    """Write ``data`` to ``path`` atomically (:func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)


def check_output_path(path, argument):
    """Check, before a long computation, that ``path`` can be written as an output file:
    it is a regular file or does not exist yet, and its folder exists and is writable.

    Parameters
    ----------
    path : str or os.PathLike
        The output file.
    argument : str
        The argument that gave it (``"--json"``), named in the ``OutputPathError``.
    """
    path = os.fspath(path)
    _existing_regular(path, f"{argument}: ")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        what = "is not a folder" if os.path.exists(folder) else "does not exist"
        raise OutputPathError(f"{argument}: the folder {folder!r} of {path!r} {what}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(f"{argument}: the folder {folder!r} of {path!r} is not writable")


def check_output_folder(path, argument):
    """Check, before a long computation, that files can be written into the folder ``path``:
    it is a writable folder, or it does not exist and its nearest existing parent is one
    (the writers create the rest).

    Parameters
    ----------
    path : str or os.PathLike
        The output folder.
    argument : str
        The argument that gave it (``"--out"``), named in the ``OutputPathError``.
    """
    path = os.path.abspath(os.fspath(path))
    nearest = path
    while not os.path.exists(nearest):
        nearest = os.path.dirname(nearest)
    if not os.path.isdir(nearest):
        where = "" if nearest == path else f" (on the way to {path!r})"
        raise OutputPathError(f"{argument}: {nearest!r}{where} is not a folder")
    if not os.access(nearest, os.W_OK | os.X_OK):
        raise OutputPathError(f"{argument}: the folder {nearest!r} is not writable")


def check_not_an_input(output, output_argument, inputs):
    """Refuse an output file that is also one of the command's inputs (the same file under
    another name or through a link included): writing it would destroy the input.

    Parameters
    ----------
    output : str or os.PathLike
        The output file.
    output_argument : str
        The argument that gave it, for the message.
    inputs : iterable of (str, path)
        The command's input files as ``(argument, path)``.
    """
    output = os.fspath(output)
    for argument, path in inputs:
        path = os.fspath(path)
        try:
            same = os.path.samefile(path, output)
        except OSError:                    # one of them does not exist (yet)
            same = os.path.realpath(path) == os.path.realpath(output)
        if same:
            raise OutputPathError(f"{output_argument} {output!r} is the same file as "
                                  f"{argument} {path!r}: writing it would destroy the "
                                  f"input; give another output path")
