"""SIGTERM stops like Ctrl-C, so one cleanup path serves both."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def sigterm_as_interrupt(signum, frame) -> None:
    """A SIGTERM (or SIGINT) handler: raise KeyboardInterrupt, and ignore further SIGTERMs while cleaning up.

    Slurm signals every process of a job and a runner then stops its child: the second
    signal must not cut short the summary and state the first one is writing.
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def stop_on_signals() -> dict:
    """Ctrl-C and SIGTERM both raise KeyboardInterrupt, and whichever comes first makes SIGTERM a no-op
    before a line of the cleanup runs: `ppolab tune`, stopped by Ctrl-C, sends its run SIGINT and then
    SIGTERM, and with Python's own SIGINT handler the SIGTERM once landed as the trainer began to clean up,
    cutting its close short. Returns the handlers it replaced, for `restore`."""
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        """A SIGTERM that came with the SIGINT finds SIGTERM ignored by the time Python runs its handler, and
        CPython writes "Signal 15 ignored due to race condition" as an unraisable error: ignored on purpose."""
        exc = unraisable.exc_value
        if not (isinstance(exc, OSError) and str(exc).endswith("ignored due to race condition")):
            previous(unraisable)

    sys.unraisablehook = hook
    handlers = {s: signal.signal(s, sigterm_as_interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    return {"unraisable": previous, **handlers}


def restore(handlers: dict) -> None:
    for s, handler in handlers.items():
        if s == "unraisable":
            sys.unraisablehook = handler
        else:
            signal.signal(s, handler)


@contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold SIGINT/SIGTERM until the block ends, then deliver them.

    For blocks an interrupt must not cut in two: a KeyboardInterrupt raised inside torch.save's
    C++ writer surfaces as a RuntimeError ("unexpected pos"), and one raised inside torch's import
    leaves it half done (CPython then exits by SIGINT, whatever exit code the program returns).
    Held, the block finishes and the program stops cleanly at the next line.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in handlers:
        signal.signal(s, lambda signum, _frame: pending.append(signum))
    try:
        yield
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
        for s in dict.fromkeys(pending):
            signal.raise_signal(s)
