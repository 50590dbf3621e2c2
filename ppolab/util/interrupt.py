"""SIGTERM stops like Ctrl-C, so one cleanup path serves both."""

from __future__ import annotations

import signal


def sigterm_as_interrupt(signum, frame) -> None:
    """A SIGTERM handler: raise KeyboardInterrupt, and ignore further SIGTERMs while cleaning up.

    Slurm signals every process of a job and a runner then stops its child: the second
    signal must not cut short the summary and state the first one is writing.
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt
