"""One attempt at a sweep's run, written once: prepare its folder, start its job, supervise it, decide how it
ended, record it. The local runner, a Slurm or Ray task and a tuning trial all run their runs through it.

How an attempt ended is one function (`decide`) of its exit code and of why its runner stopped it, if it
did; so a retry means the same everywhere: a failure of the run itself (an error, a timeout), never an
interruption (Ctrl-C, a signal from outside, a lost node, a full disk), which resumes without spending one.
"""

from __future__ import annotations

import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ppolab.errors import NO_SPACE_EXIT, one_line
from ppolab.experiments.executors.job import Job, prepare_run_dir, summary_of
from ppolab.experiments.plan import TrainCall
from ppolab.experiments.state import now
from ppolab.util.run_state import RunState

Record = Callable[..., None]  # writes fields into the run's state entry (state.json, under its lock)


@dataclass(frozen=True)
class Stop:
    """Why a runner stopped an attempt, and whether that is a failure of the run itself (a timeout is)."""

    reason: str
    failure: bool = False
    then: RunState = RunState.INTERRUPTED  # the state it ends in (Slurm's requeue: pending)


@dataclass(frozen=True)
class Outcome:
    state: RunState
    reason: str | None
    exit_code: int | None
    failure: bool  # a failure of the run itself: what --max-retries counts

    @property
    def stops_the_sweep(self) -> bool:
        """The run was stopped by a signal meant for the whole sweep (its Ctrl-C), or the disk is full."""
        return self.exit_code in (130, NO_SPACE_EXIT) and self.state == RunState.INTERRUPTED


def decide(code: int, stop: Stop | None, log: Path) -> Outcome:
    """How an attempt ended, from its exit code and, if its runner stopped it, why."""
    if stop is not None:
        return Outcome(RunState.FAILED if stop.failure else stop.then, stop.reason, code, stop.failure)
    if code == 0:
        return Outcome(RunState.DONE, None, code, False)
    if code == NO_SPACE_EXIT:
        return Outcome(RunState.INTERRUPTED, "no space left on disk", code, False)
    if code == 130:  # the run itself was stopped (SIGINT/SIGTERM to its process group)
        return Outcome(RunState.INTERRUPTED, "run stopped", code, False)
    if code < 0:  # a signal neither the run nor its runner sent: kill -9, the OOM killer
        return Outcome(RunState.INTERRUPTED, _killed(code), code, False)
    return Outcome(RunState.FAILED, failure_reason(code, log), code, True)


def _killed(code: int) -> str:
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"killed by {name} from outside the sweep; launch again to resume from its checkpoint"


def failure_reason(code: int, log: Path) -> str:
    """Why a run failed, in one line: its exit code and, for a refused input (exit 2), the error the run
    printed last (its log has it; the sweep's console would otherwise say only the code)."""
    if code == 2:
        try:
            lines = [ln for ln in log.read_text(errors="replace").splitlines() if "error:" in ln]
        except OSError:
            lines = []
        if lines:
            return f"exit code 2: {one_line(lines[-1].split('error:', 1)[1].strip())}"
    return f"exit code {code}"


def skip_reason(entry: dict, max_retries: int) -> str | None:
    """Why a launch leaves a run alone (done, or failed more often than --max-retries allows); None: it runs.
    Interrupted runs always run again: an interruption is never the run's failure."""
    if entry["state"] == RunState.DONE:
        return RunState.DONE.value
    if entry["state"] == RunState.FAILED and entry.get("failures", 0) > max_retries:
        return f"failed {entry['failures']} times; raise --max-retries to try again"
    return None


class Attempt:
    """One attempt: begun by the constructor (folder prepared, job started, start recorded), ended by `end`."""

    def __init__(
        self, run_dir: Path, call: TrainCall, log: Path, *, record: Record | None = None, entry: dict | None = None,
        out: TextIO | None = None, prefix: str = "", fresh_process: bool = False, where: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        self.run_dir, self.log, self.record = run_dir, log, record
        self.call, self.resumed = prepare_run_dir(run_dir, call)
        self.job = Job(self.call, log, out, prefix=prefix, fresh_process=fresh_process)
        self.started = time.time()
        entry = entry or {}
        self.failures = entry.get("failures", 0)
        if record is not None:
            record(state=RunState.RUNNING, pid=self.job.pid, host=socket.gethostname(), **(where or {}),
                   started=now(), ended=None, exit_code=None, attempts=entry.get("attempts", 0) + 1,
                   reason="resumed from its checkpoint" if self.resumed else None)  # fmt: skip

    def poll(self) -> int | None:
        return self.job.poll()

    def supervise(self, should_stop: Callable[[], Stop | None], every: float = 0.2) -> Stop | None:
        """Wait for the job, asking `should_stop` between polls; stop the job when it gives a reason: the
        reason, or None if it ended by itself. Anything raised meanwhile (Ctrl-C) stops the job, then goes on."""
        try:
            while self.job.poll() is None:
                if (stop := should_stop()) is not None:
                    self.job.stop()
                    return stop
                time.sleep(every)
        except BaseException:
            self.job.stop()
            raise
        return None

    def stop(self) -> None:
        self.job.stop()

    def end(self, stop: Stop | None = None) -> Outcome:
        """Wait for the job's end, decide how it ended, record it (its summary with it)."""
        code, _ = self.job.wait(None)
        outcome = decide(code, stop, self.log)
        if self.record is not None:
            self.record(state=outcome.state, ended=now(), exit_code=code, reason=outcome.reason,
                        summary=summary_of(self.run_dir), failures=self.failures + outcome.failure)  # fmt: skip
        return outcome
