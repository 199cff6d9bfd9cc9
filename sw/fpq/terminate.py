"""Signals that end a process handled like Ctrl-C, so that clean-ups run; worker processes that
end with the command that started them.

Python's default action for SIGTERM, SIGHUP, SIGQUIT, SIGXCPU, SIGALRM, SIGUSR1 and the other
signals that end a process (:data:`ENDING_SIGNALS`) ends it on the spot: no ``finally``
block, no ``except BaseException`` clean-up runs, so a temporary file stays behind and worker
processes keep running. Inside :func:`signals_as_exit` each of them raises
:class:`Terminated` instead, which unwinds the stack as Ctrl-C's ``KeyboardInterrupt`` does
and ends the process with status 128 + the signal's number (143 for SIGTERM, what a shell
reports for it). SIGXFSZ (the file size limit) is ignored there instead, so that a write
past the limit fails with an error (``EFBIG``) that names the file, rather than ending the
process with the file half written.

:func:`worker_pool` starts worker processes that end with the command: on any signal above
(or an exception) the command ends them before it exits, and each worker exits by itself
when the command is gone (killed with SIGKILL, say), so that none holds the caller's pipes.
"""

from contextlib import contextmanager
import os
import signal
import sys
import threading

__all__ = ["Terminated", "signals_as_exit", "sigterm_as_exit", "signals_held",
           "worker_pool", "ending_with_this_process", "ENDING_SIGNALS"]

#: The signals whose default action ends the process and which come from outside the
#: program (``kill``, a terminal, a job's time limit, a timer): Linux's "Term" and "Core"
#: actions less SIGKILL and SIGSTOP (no handler is possible), SIGPIPE (Python ignores it: a
#: write to a closed pipe fails instead), SIGINT (Python raises KeyboardInterrupt already),
#: SIGXFSZ (ignored instead, see above) and the faults of the program itself (SIGSEGV,
#: SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS), after which no Python code can run.
ENDING_SIGNALS = tuple(getattr(signal, name) for name in (
    "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM", "SIGPROF",
    "SIGXCPU", "SIGIO", "SIGPWR", "SIGSTKFLT") if hasattr(signal, name)) + (
    tuple(range(signal.SIGRTMIN, signal.SIGRTMAX + 1)) if hasattr(signal, "SIGRTMIN") else ())
#: Ignored inside :func:`signals_as_exit`: a write past the file size limit then fails.
_IGNORED = tuple(getattr(signal, name) for name in ("SIGXFSZ",) if hasattr(signal, name))


class Terminated(SystemExit):
    """Raised by a signal of :data:`ENDING_SIGNALS` inside :func:`signals_as_exit`; its exit
    status is 128 + the signal's number."""


def _raise_terminated(signum, frame):
    raise Terminated(128 + signum)


@contextmanager
def signals_as_exit():
    """While the block runs, each signal of :data:`ENDING_SIGNALS` raises
    :class:`Terminated` in the main thread, and SIGXFSZ is ignored.

    It does so only where it can and should: Python runs signal handlers in the main thread
    only, and a handler the program installed itself (anything but the default action,
    including "ignore", as ``nohup`` sets for SIGHUP) is left alone. Blocks nest; the
    outermost one restores the previous handlers on leaving.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    try:
        for signum, handler in [(s, _raise_terminated) for s in ENDING_SIGNALS] + \
                [(s, signal.SIG_IGN) for s in _IGNORED]:
            if signal.getsignal(signum) is signal.SIG_DFL:
                previous[signum] = signal.signal(signum, handler)
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


#: The name this module's one handler had when it handled SIGTERM alone.
sigterm_as_exit = signals_as_exit


@contextmanager
def signals_held():
    """Hold every signal of :data:`ENDING_SIGNALS` and SIGINT while the block runs (they
    take effect when it ends): for a few steps that must all happen or none, such as
    creating a temporary file and noting it, or renaming a set of files into place.

    Blocking the signals (``pthread_sigmask``) alone is not enough: it blocks them in the
    calling thread only, and the system delivers a signal sent to the process to any thread
    that does not block it -- numpy's OpenBLAS starts such threads -- whose C handler then
    has the main thread run the Python handler inside the block. So in the main thread each
    handler is also replaced by one that notes the signal, and the noted signals are raised
    again once the previous handlers are back; a signal with the default action is held the
    same way and then ends the process as it would have."""
    held = tuple(ENDING_SIGNALS) + (signal.SIGINT,)
    if threading.current_thread() is not threading.main_thread():
        if hasattr(signal, "pthread_sigmask"):
            previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
            try:
                yield
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        else:
            yield
        return
    noted = []
    previous = {}
    try:
        for signum in held:
            handler = signal.getsignal(signum)
            if handler not in (signal.SIG_IGN, None):     # None: a handler set outside Python
                previous[signum] = signal.signal(signum, lambda s, frame: noted.append(s))
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(noted):               # each once, in order of arrival
            signal.raise_signal(signum)


#: Seconds a worker waits between checks that the command which started it still runs
#: (where the system cannot signal its death, :func:`_end_with_parent`).
_PARENT_CHECK_S = 1.0


def _killed_with_parent():
    """Ask Linux to send this process SIGKILL when the one that started it dies
    (``PR_SET_PDEATHSIG``, kept across ``exec``); False where the system cannot."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        return libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def ending_with_this_process():
    """``subprocess.run(..., preexec_fn=ending_with_this_process())``: the child program is
    killed when this process dies, even by SIGKILL (Linux; elsewhere nothing is asked).
    Together with :func:`signals_as_exit` around the call (``subprocess.run`` kills its
    child on any exception) no child outlives the command or holds its pipes."""
    parent = os.getpid()

    def in_child():
        if _killed_with_parent() and os.getppid() != parent:     # gone already
            os._exit(1)
    return in_child


def _end_with_parent(parent):
    """In a worker: the default action for every signal that ends a process (the worker
    inherited the command's handlers, which would turn SIGTERM into an exception its job
    loop reports instead of exiting), and an exit as soon as the command ``parent`` (a pid)
    is gone: Linux sends SIGKILL when the process that started the worker dies
    (``PR_SET_PDEATHSIG``); elsewhere a thread checks every second."""
    for signum in ENDING_SIGNALS + (signal.SIGINT,):
        signal.signal(signum, signal.SIG_DFL)
    watched = _killed_with_parent()
    if os.getppid() != parent:            # gone before the worker could ask to follow it
        os._exit(1)
    if not watched:
        def watch():
            while os.getppid() == parent:
                threading.Event().wait(_PARENT_CHECK_S)
            os._exit(1)
        threading.Thread(target=watch, daemon=True).start()


#: Seconds the workers have to exit after SIGTERM before they are killed.
_END_WAIT_S = 5.0


def _end_workers(processes):
    """SIGTERM to every live worker of ``processes``, then SIGKILL to those still there after
    :data:`_END_WAIT_S`; waits for all of them."""
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(_END_WAIT_S)
        if p.is_alive():
            p.kill()
            p.join()


@contextmanager
def worker_pool(n_workers):
    """``with worker_pool(4) as pool:``: a ``concurrent.futures.ProcessPoolExecutor`` of
    ``n_workers`` processes that end with the command.

    The workers are forked children of the command, in its process group (a terminal's
    Ctrl-C reaches them too). While the block runs, the signals of :data:`ENDING_SIGNALS`
    end the command as :func:`signals_as_exit` does; when the block ends by an exception
    (such a signal, Ctrl-C, a failed job) the workers get SIGTERM, then SIGKILL after
    :data:`_END_WAIT_S` seconds, and are waited for before the exception goes on, so that
    none outlives the command or holds its standard output. A worker whose command died
    without that (SIGKILL) exits by itself (:func:`_end_with_parent`). On a normal end the
    pool shuts down as usual, waiting for its jobs.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    # fork on Linux (the workers' parent is the command; a fork server's workers would be
    # its children instead), spawn elsewhere
    context = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    with signals_as_exit():
        pool = ProcessPoolExecutor(n_workers, mp_context=context, initializer=_end_with_parent,
                                   initargs=(os.getpid(),))
        try:
            yield pool
        except BaseException:
            # the pool's own processes: public API only from Python 3.14 (terminate_workers)
            processes = list((getattr(pool, "_processes", None) or {}).values())
            _end_workers(processes)
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
