"""The states of a sweep's run, as state.json writes them: the one vocabulary every module uses.

pending (not started, or queued), running (its process lives), done (trained to n_itr),
failed (it ended with an error of its own: a retry is spent on it), interrupted (stopped from
outside, by a signal, a time limit or a lost node: launching again resumes it).
"""

from __future__ import annotations

from enum import StrEnum


class RunState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    INTERRUPTED = "interrupted"

    @property
    def ended(self) -> bool:
        """Over for good, as the sweep's report counts it: done or failed (interrupted runs go on)."""
        return self in (RunState.DONE, RunState.FAILED)
