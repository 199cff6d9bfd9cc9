"""The atomic writer (``fpq.atomic``): only regular files are replaced, modes and owners
carry over, nothing is left behind on an exception or SIGTERM; the output-path checks the
commands run before they compute."""

import os
import signal
import stat
import subprocess
import sys

import pytest

from fpq.atomic import (atomic_path, write_text, OutputPathError, check_output_path,
                        check_not_an_input)

ROOT_USER = os.geteuid() == 0


def _names(folder):
    return sorted(os.listdir(folder))


@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    yield
    os.umask(old)


def test_a_fifo_target_is_refused_and_left_as_it_is(tmp_path):
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    with pytest.raises(OutputPathError, match=r"out.csv' is a FIFO, not a regular file: "
                                              r"refusing to replace it"):
        write_text(fifo, "data")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _names(tmp_path) == ["out.csv"]


def test_a_symbolic_link_is_refused_and_neither_it_nor_its_file_changes(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(OutputPathError, match=r"link.json' is a symbolic link \(to '.*real"
                                              r".json'\); give the path of the file itself"):
        write_text(link, "new")
    assert os.path.islink(link) and real.read_text() == "old"
    assert _names(tmp_path) == ["link.json", "real.json"]


def test_a_device_node_is_refused_without_touching_it(tmp_path):
    """As root, a character device like /dev/null made in the test folder (renaming over
    /dev/null itself would replace the system's if the check failed); otherwise /dev/null,
    which the writer must refuse before trying to create anything in /dev."""
    if ROOT_USER:
        dev = tmp_path / "null"
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    else:
        dev = "/dev/null"
    before = os.lstat(dev)
    with pytest.raises(OutputPathError, match="is a character device, not a regular file"):
        write_text(dev, "data")
    after = os.lstat(dev)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert after.st_ino == before.st_ino
    if ROOT_USER:
        assert _names(tmp_path) == ["null"]


def test_a_folder_is_refused(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(OutputPathError, match="out' is a folder, not a regular file"):
        write_text(tmp_path / "out", "data")
    assert _names(tmp_path / "out") == []


def test_a_target_that_becomes_a_fifo_while_writing_is_not_replaced(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(OutputPathError, match="is a FIFO"):
        with atomic_path(target) as tmp:
            with open(tmp, "w") as f:
                f.write("new")
            os.mkfifo(target)
    assert stat.S_ISFIFO(os.lstat(target).st_mode)
    assert _names(tmp_path) == ["out.txt"]


def test_a_replaced_file_keeps_its_mode(tmp_path, umask_027):
    for mode in (0o600, 0o640, 0o755, 0o604):
        target = tmp_path / f"out{mode:o}"
        target.write_text("old")
        os.chmod(target, mode)
        write_text(target, "new")
        assert target.read_text() == "new"
        assert stat.S_IMODE(os.stat(target).st_mode) == mode, oct(mode)


def test_a_new_file_gets_the_mode_open_gives(tmp_path, umask_027):
    write_text(tmp_path / "new.txt", "x")
    with open(tmp_path / "by_open.txt", "w") as f:
        f.write("x")
    mode = stat.S_IMODE(os.stat(tmp_path / "new.txt").st_mode)
    assert mode == stat.S_IMODE(os.stat(tmp_path / "by_open.txt").st_mode) == 0o640
    os.umask(0o002)
    write_text(tmp_path / "new2.txt", "x")
    assert stat.S_IMODE(os.stat(tmp_path / "new2.txt").st_mode) == 0o664


@pytest.mark.skipif(not ROOT_USER, reason="only root can make a file owned by another user")
def test_a_replaced_file_keeps_its_owner_and_group(tmp_path):
    target = tmp_path / "theirs.txt"
    target.write_text("old")
    os.chown(target, 65534, 65534)
    os.chmod(target, 0o2640)              # set-group-ID: chown would clear it, kept after
    write_text(target, "new")
    st = os.stat(target)
    assert (st.st_uid, st.st_gid) == (65534, 65534)
    assert stat.S_IMODE(st.st_mode) == 0o2640


@pytest.mark.parametrize("exists", [True, False])
@pytest.mark.parametrize("failure", [ValueError, KeyboardInterrupt])
def test_a_failure_inside_the_writer_leaves_the_old_file_its_mode_and_no_temporary(
        tmp_path, exists, failure):
    target = tmp_path / "out.json"
    if exists:
        target.write_text("old")
        os.chmod(target, 0o600)
    seen = []
    with pytest.raises(failure):
        with atomic_path(target) as tmp:
            seen.append(tmp)
            with open(tmp, "w") as f:
                f.write("half")
            assert _names(tmp_path) == sorted(["out.json"] * exists +
                                              [os.path.basename(tmp)])
            raise failure("stopped")
    assert os.path.basename(seen[0]).endswith("-out.json")       # the extension is kept
    assert _names(tmp_path) == (["out.json"] if exists else [])
    if exists:
        assert target.read_text() == "old"
        assert stat.S_IMODE(os.stat(target).st_mode) == 0o600


def test_sigterm_removes_the_temporary_and_keeps_the_old_file(tmp_path):
    """A writer stopped by SIGTERM (as by ``kill`` or a job's time limit) cleans up as on
    Ctrl-C, and the process ends with status 143 (128 + SIGTERM)."""
    target = tmp_path / "out.txt"
    target.write_text("old")
    code = ("import sys, time\n"
            "from fpq.atomic import atomic_path\n"
            f"with atomic_path({str(target)!r}) as tmp:\n"
            "    open(tmp, 'w').write('half')\n"
            "    print(tmp, flush=True)\n"
            "    time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        tmp = proc.stdout.readline().strip()
        assert os.path.exists(tmp)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 143
    finally:
        proc.kill()
        proc.wait()
    assert _names(tmp_path) == ["out.txt"] and target.read_text() == "old"


def test_the_sigterm_handler_is_only_in_place_while_writing(tmp_path):
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    with atomic_path(tmp_path / "x") as tmp:
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        open(tmp, "w").close()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    # a handler of the program's own is left alone
    mine = lambda signum, frame: None    # noqa: E731
    signal.signal(signal.SIGTERM, mine)
    try:
        with atomic_path(tmp_path / "y") as tmp:
            assert signal.getsignal(signal.SIGTERM) is mine
            open(tmp, "w").close()
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


# ---- checks the commands run before they compute ------------------------------------------

def test_check_output_path_accepts_new_and_regular_files(tmp_path):
    check_output_path(tmp_path / "new.json", "--json")
    (tmp_path / "old.json").write_text("{}")
    check_output_path(tmp_path / "old.json", "--json")
    assert _names(tmp_path) == ["old.json"]


@pytest.mark.parametrize("case, message", [
    ("folder", r"--json: '.*/out' is a folder, not a regular file"),
    ("fifo", r"--json: '.*/out' is a FIFO, not a regular file"),
    ("missing folder", r"--json: the folder '.*/nowhere' of '.*/nowhere/out' does not exist"),
    ("file as folder", r"--json: the folder '.*/plain' of '.*/plain/out' is not a folder"),
])
def test_check_output_path_names_the_argument_and_the_problem(tmp_path, case, message):
    path = tmp_path / "out"
    if case == "folder":
        path.mkdir()
    elif case == "fifo":
        os.mkfifo(path)
    elif case == "missing folder":
        path = tmp_path / "nowhere" / "out"
    else:
        (tmp_path / "plain").write_text("x")
        path = tmp_path / "plain" / "out"
    with pytest.raises(OutputPathError, match=message):
        check_output_path(path, "--json")


def test_check_output_path_refuses_a_folder_it_cannot_write(tmp_path):
    """Root may write anywhere, so the check runs in a child process that drops to
    ``nobody`` when the tests run as root (in a folder of /tmp that ``nobody`` can reach:
    pytest's are private to their user)."""
    import tempfile
    top = tempfile.mkdtemp()
    os.chmod(top, 0o755)
    folder = type(tmp_path)(top) / "read-only"
    folder.mkdir()
    os.chmod(folder, 0o555)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                                   # the child: report the message, exit
        try:
            os.close(read)
            if ROOT_USER:
                os.setgid(65534)
                os.setuid(65534)
            try:
                check_output_path(folder / "out.json", "--record")
                text = "accepted"
            except OutputPathError as exc:
                text = str(exc)
            os.write(write, text.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        text = f.read()
    os.waitpid(pid, 0)
    os.rmdir(folder)
    os.rmdir(top)
    assert text == (f"--record: the folder {str(folder)!r} of "
                    f"{str(folder / 'out.json')!r} is not writable")


def test_an_output_that_is_an_input_is_refused_naming_both(tmp_path, monkeypatch):
    inp = tmp_path / "in.fpqtrace"
    inp.write_bytes(b"trace")
    os.link(inp, tmp_path / "hard-link")
    (tmp_path / "sym-link").symlink_to(inp)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    for same in (inp, tmp_path / "hard-link", tmp_path / "sym-link", "../in.fpqtrace",
                 str(tmp_path) + "//sub/../in.fpqtrace"):
        with pytest.raises(OutputPathError, match=r"^output '.*' is the same file as input "
                                                  r"'.*in.fpqtrace': writing it would "
                                                  r"destroy the input"):
            check_not_an_input(same, "output", [("scenario", tmp_path / "x.toml"),
                                                ("input", inp)])
    check_not_an_input(tmp_path / "out.csv", "output", [("input", inp)])
