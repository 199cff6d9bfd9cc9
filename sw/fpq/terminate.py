"""SIGTERM handled like Ctrl-C, so that clean-ups run.

Python's default action for SIGTERM ends the process on the spot: no ``finally`` block, no
``except BaseException`` clean-up runs, so a temporary file stays behind and tools started in
a process group of their own keep running. Inside :func:`sigterm_as_exit` SIGTERM raises
:class:`Terminated` instead, which unwinds the stack as Ctrl-C's ``KeyboardInterrupt`` does
and ends the process with status 143 (128 + SIGTERM, what a shell reports for it).
"""

from contextlib import contextmanager
import signal
import threading

__all__ = ["Terminated", "sigterm_as_exit"]


class Terminated(SystemExit):
    """Raised by SIGTERM inside :func:`sigterm_as_exit`; its exit status is 128 + SIGTERM."""


def _raise_terminated(signum, frame):
    raise Terminated(128 + signum)


@contextmanager
def sigterm_as_exit():
    """While the block runs, SIGTERM raises :class:`Terminated` in the main thread.

    It does so only where it can and should: Python runs signal handlers in the main thread
    only, and a handler the program installed itself (anything but the default action) is
    left alone. Blocks nest; the outermost one restores the previous handler on leaving.
    """
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
