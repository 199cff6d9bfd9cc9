"""Several outputs written as one, and standard output written in full.

* :func:`write_files`: several files, every one complete or none of them changed;
* :func:`staged_outputs`: the output folders of a command that writes many files (``fpq
  demo``, ``fpq figures``), written into staging folders that take the folders' places at the
  end, so that a reader sees the old set or the new one, never a mix;
* :func:`write_stdout`: standard output written in full, or an error naming it (a closed
  pipe, a full disk), never a short write taken for success;
* :func:`whole_stdout`: ``sys.stdout`` for a whole command (``print`` included) written that
  way.
"""

from contextlib import ExitStack, contextmanager
import ctypes
import io
import os
import shutil
import sys

from .atomic import atomic_paths, _create_temporary, OutputPathError
from .terminate import signals_as_exit, signals_held

__all__ = ["write_files", "keys_text", "staged_outputs", "write_stdout", "whole_stdout",
           "STDOUT_NAME"]

#: How messages name standard output.
STDOUT_NAME = "standard output"


def write_files(files, private=()):
    """Write ``{path: text}``; the path ``-`` is standard output, written last. Each file goes
    to a temporary file in its folder first (``fpq.atomic``); they are renamed over their
    targets only once all are written, together (``fpq.atomic.atomic_paths``), and a failure
    or a signal removes every temporary file. The paths in ``private`` (a key's files) get
    mode 0600 before their text is written. A failed write names its file."""
    paths = [path for path in files if path != "-"]
    with atomic_paths(paths) as tmp:
        for path in paths:
            if path in private:
                os.chmod(tmp[path], 0o600)
            try:
                with open(tmp[path], "w", newline="") as f:
                    f.write(files[path])
            except OSError as exc:
                raise OSError(exc.errno, exc.strerror, path) from None
    if "-" in files:
        write_stdout(files["-"])
    return paths


def keys_text(keys):
    """The text of a file that records a build's keys (``fpq.Build.secret_values``): one
    ``name=value`` line per key, in ``keys``' order: a key as hex, a seed as its decimal
    integer. Write it with ``private``."""
    return "".join(f"{name}={value if isinstance(value, int) else bytes(value).hex()}\n"
                   for name, value in keys.items())


# ---- standard output ------------------------------------------------------------------------

def _silence_stdout(fd):
    """After a failed write: standard output goes to the null device, so that the flush at
    the interpreter's exit does not fail a second time ("Exception ignored ... Broken
    pipe")."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except OSError:
        pass


def write_stdout(data):
    """Put all of ``data`` (str or bytes) on standard output, or raise ``OSError`` naming
    :data:`STDOUT_NAME` (a reader that closed the pipe, a full disk): a short write is never
    taken for success. Writes loop until every byte is out (a pipe takes 64 KiB at a time,
    and Python's buffered ``write`` can return early without an error). Where standard
    output is not a file descriptor (a test's ``io.StringIO``), the data goes to
    ``sys.stdout`` as it is."""
    stream = sys.stdout
    if isinstance(data, str):
        data = data.encode(getattr(stream, "encoding", None) or "utf-8")
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):        # not a file descriptor
        if hasattr(stream, "buffer"):
            stream.flush()
            stream.buffer.write(data)
            stream.buffer.flush()
        else:
            stream.write(data.decode(getattr(stream, "encoding", None) or "utf-8"))
        return
    _flush(stream, fd)
    _write_fd(fd, data)


def _flush(stream, fd):
    """Flush ``stream`` (standard output, on descriptor ``fd``), or OSError naming it."""
    try:
        stream.flush()
    except OSError as exc:
        _silence_stdout(fd)
        raise OSError(exc.errno, exc.strerror, STDOUT_NAME) from None


def _write_fd(fd, data):
    """All of the bytes ``data`` to standard output's descriptor ``fd``, or OSError naming
    it."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        _silence_stdout(fd)
        raise OSError(exc.errno, exc.strerror, STDOUT_NAME) from None


class _WholeStdout(io.TextIOBase):
    """Text for standard output, written straight to its file descriptor and whole
    (:func:`_write_fd`). Python's own ``sys.stdout`` is not enough: past the file size
    limit its flush writes what the limit allows and reports success, and a failure at the
    interpreter's exit is only a warning."""

    def __init__(self, stream, fd):
        super().__init__()
        self._stream, self._fd = stream, fd
        self.buffer = _WholeStdoutBytes(fd)

    @property
    def encoding(self):
        return getattr(self._stream, "encoding", None) or "utf-8"

    @property
    def errors(self):
        return getattr(self._stream, "errors", None) or "strict"

    def fileno(self):
        return self._fd

    def isatty(self):
        return os.isatty(self._fd)

    def writable(self):
        return True

    def write(self, text):
        _write_fd(self._fd, text.encode(self.encoding, self.errors))
        return len(text)

    def flush(self):
        pass


class _WholeStdoutBytes(io.RawIOBase):
    """``sys.stdout.buffer`` of :class:`_WholeStdout`: bytes written whole."""

    def __init__(self, fd):
        super().__init__()
        self._fd = fd

    def fileno(self):
        return self._fd

    def writable(self):
        return True

    def write(self, data):
        _write_fd(self._fd, data)
        return len(data)


@contextmanager
def whole_stdout():
    """``with whole_stdout(): ...``: inside, ``sys.stdout`` (``print``, argparse's help)
    writes every byte or raises OSError naming :data:`STDOUT_NAME`: a closed pipe, a full
    disk or the file size limit ends a command with an error, never with a part of its
    output and exit status 0. Where standard output is not a file descriptor (a test's
    ``io.StringIO``), it stays as it is."""
    stream = sys.stdout
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    _flush(stream, fd)
    sys.stdout = _WholeStdout(stream, fd)
    try:
        yield
    finally:
        if isinstance(sys.stdout, _WholeStdout):
            sys.stdout = stream


# ---- staged output folders ------------------------------------------------------------------

def _exchange(a, b):
    """Swap the folders ``a`` and ``b`` in one step (Linux's ``renameat2`` with
    ``RENAME_EXCHANGE``); False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    return False


def _link_or_copy(src, dst):
    """A hard link ``dst`` to ``src`` (no data copied), or a copy where linking is refused."""
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        shutil.copy2(src, dst, follow_symlinks=False)


def _unique_name(folder, base):
    """A path in ``folder`` for a new folder, named as the writers' temporaries are."""
    fd, path = _create_temporary(folder, base)
    os.close(fd)
    os.unlink(path)
    return path


def _movable(path):
    """Whether the folder ``path`` can be swapped for another: it is not a mount point, not
    this process's working folder (or one above it) and its parent is writable."""
    cwd = os.path.abspath(os.getcwd())
    return not (os.path.ismount(path) or cwd == path or _within(cwd, path) or
                not os.access(os.path.dirname(path), os.W_OK | os.X_OK))


class _Stage:
    """A staging folder for the output folder ``path``: it starts as a copy of ``path`` made
    of hard links (so that files the command does not write stay), takes its place with
    :meth:`commit` and is removed by :meth:`discard`. It lies beside ``path`` and replaces
    it whole; where ``path`` cannot be swapped (:func:`_movable`) it lies inside ``path``
    and :meth:`commit` moves its files over the old ones one by one."""

    def __init__(self, path):
        self.path = os.path.abspath(os.fspath(path))
        if os.path.islink(self.path) or (os.path.exists(self.path) and
                                         not os.path.isdir(self.path)):
            what = "a symbolic link" if os.path.islink(self.path) else "not a folder"
            raise OutputPathError(f"{path!r} is {what}: give the output folder itself")
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.inside = os.path.isdir(self.path) and not _movable(self.path)
        self.stage = _unique_name(self.path if self.inside else os.path.dirname(self.path),
                                  os.path.basename(self.path))
        os.mkdir(self.stage)
        try:
            if os.path.isdir(self.path):
                shutil.copytree(self.path, self.stage, symlinks=True, dirs_exist_ok=True,
                                copy_function=_link_or_copy,
                                ignore=lambda folder, names: [os.path.basename(self.stage)])
                shutil.copymode(self.path, self.stage)
        except BaseException:             # an unreadable old file, a full disk: not yet
            self.discard()                # the caller's to remove
            raise

    def commit(self):
        """The stage takes the output folder's place; the old folder is removed."""
        if self.inside:
            self._move_files()
        elif not os.path.exists(self.path):
            os.rename(self.stage, self.path)
            return
        elif not _exchange(self.stage, self.path):
            # without an exchange, the folder is absent between the two renames
            old = _unique_name(os.path.dirname(self.path), "old")
            os.rename(self.path, old)
            os.rename(self.stage, self.path)
            self.stage = old
        shutil.rmtree(self.stage, ignore_errors=True)

    def _move_files(self):
        """Each file of the stage over its counterpart in the output folder."""
        for folder, _, names in os.walk(self.stage):
            target = os.path.join(self.path, os.path.relpath(folder, self.stage))
            os.makedirs(target, exist_ok=True)
            for name in names:
                os.replace(os.path.join(folder, name), os.path.join(target, name))

    def discard(self):
        shutil.rmtree(self.stage, ignore_errors=True)


def _within(path, folder):
    """Whether ``path`` lies inside ``folder`` (both absolute)."""
    return os.path.commonpath([path, folder]) == folder and path != folder


@contextmanager
def staged_outputs(folders, files=()):
    """``with staged_outputs(["build/demo"]) as (stage, tmp): ...``: write the outputs of a
    command that makes many files into staging folders, ``stage[folder]``, and single files
    into ``tmp[path]``; when the block succeeds, each staging folder takes its folder's place
    and each file its target's, all at once with the signals that end a process held; on a
    failure or such a signal, nothing changes.

    A staging folder is a hidden sibling (``.tmp-...-NAME``) that starts as a copy of the
    folder made of hard links, so files the command does not write stay; write into it with
    ``fpq.atomic`` (which replaces a file, never changes it in place: a linked file is the
    old folder's too). A file's temporary starts with the target's content (an update of a
    part of it, such as a marked section, reads the old text there). A folder or file
    inside another of the folders is written inside that one's stage. Meanwhile a reader
    sees the old outputs, whole; on Linux a stage and its folder are exchanged in one step
    (``renameat2``), elsewhere the folder is absent for the instant between two renames. A
    folder that cannot be swapped (a mount point, the working folder, a read-only parent)
    gets its stage inside it, and the commit moves the files in one by one: a reader may
    then see some new files beside old ones for that instant. A process killed outright
    (SIGKILL) leaves the hidden staging folder and the old outputs.

    Parameters
    ----------
    folders : iterable of str or os.PathLike
        The output folders (created if missing; an existing one must be a folder).
    files : iterable of str or os.PathLike
        Single output files.

    Yields
    ------
    ``({folder: its stage}, {file: where to write it})``, keyed by the paths as given.
    """
    folders, files = list(folders), list(files)          # as given: the yielded keys
    full = {f: os.path.abspath(f) for f in folders + files}
    top = [f for f in folders if not any(_within(full[f], full[g]) for g in folders)]
    outside = [f for f in files if not any(_within(full[f], full[g]) for g in top)]
    stages = []
    with signals_as_exit(), ExitStack() as stack:
        try:
            for folder in top:
                with signals_held():
                    stages.append(_Stage(folder))
            staged = dict(zip(top, (s.stage for s in stages)))
            made = stack.enter_context(atomic_paths(outside)) if outside else {}
            tmp = {f: made[os.fspath(f)] for f in outside}
            for path in outside:
                if os.path.isfile(path):
                    shutil.copyfile(path, tmp[path])
            yield _placed(folders, files, staged, full), \
                {**_placed(files, files, staged, full), **tmp}
            with signals_held():
                for s in stages:
                    s.commit()
                stack.close()               # the files' renames (atomic_paths)
        except BaseException:
            for s in stages:
                s.discard()
            raise


def _placed(paths, files, staged, full):
    """``{path: where to write it}`` for the ``paths`` inside a staged folder: the same path
    in its stage (a folder made there, unless it is one of the ``files``)."""
    out = {}
    for path in paths:
        for folder, stage in staged.items():
            if path == folder or _within(full[path], full[folder]):
                out[path] = os.path.normpath(os.path.join(
                    stage, os.path.relpath(full[path], full[folder])))
                if path not in files:
                    os.makedirs(out[path], exist_ok=True)
                break
    return out
