"""One run of a sweep, run where a cluster scheduler (Slurm, Ray) placed it.

The task runs (or resumes, from `last.pt`) its run like the local runner does and
records every transition in the sweep's state.json under a lock that holds across
nodes (POSIX record locks, which NFS honours). The scheduler decides how many
run at once, so tasks take no machine lock. The last task to end writes the
sweep's report.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ppolab.errors import UserError
from ppolab.experiments.executors.job import (
    Job,
    failure_reason,
    killed_from_outside,
    prepare_run_dir,
    started_entry,
    summary_of,
)
from ppolab.experiments.machine_lock import HELD
from ppolab.experiments.plan import LOGS_DIR, RUNS_DIR, PlannedRun, load_plan
from ppolab.experiments.spec import sweep_name
from ppolab.experiments.state import locked, now
from ppolab.util.run_state import RunState

# (signal received or None, exit code) -> (final state, reason)
Decide = Callable[[int | None, int], tuple[str, str | None]]


def run_dirs(planned: list[PlannedRun]) -> dict[str, str]:
    return {p.name: str(Path(RUNS_DIR) / p.name) for p in planned}


class StopSignals:
    """Notes the first SIGUSR1 (time limit near), SIGTERM or SIGINT; the task then stops its run cleanly."""

    def __init__(self) -> None:
        self.got: int | None = None
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, self._note)

    def _note(self, signum: int, _frame) -> None:
        self.got = self.got or signum


def default_decide(got: int | None, code: int) -> tuple[str, str | None]:
    if got is not None:
        return RunState.INTERRUPTED, "stopped: the sweep was interrupted, or the cluster stopped the task"
    if outside := killed_from_outside(code):
        return RunState.INTERRUPTED, outside
    return (RunState.DONE, None) if code == 0 else (RunState.FAILED, f"exit code {code}")


def run_task(
    sweep_dir: Path,
    index: int,
    *,
    where: dict[str, str],
    decide: Decide = default_decide,
    fresh_process: bool = False,
    out=sys.stdout,
) -> str:
    """Run run number `index` of the sweep; its final state ("done", "failed", "interrupted", "pending").

    `where` goes into the run's state entry (e.g. {"slurm_task": "123_4"}). `fresh_process`
    starts the trainer with exec instead of fork: a must inside a threaded worker (Ray).
    A Ctrl-C or Ray's cancel (KeyboardInterrupt) stops the run like a signal does.
    """
    spec, planned = load_plan(sweep_dir)
    if not 0 <= index < len(planned):
        raise UserError(f"--task {index}: the sweep has runs 0..{len(planned) - 1}")
    os.environ[HELD] = "1"  # the scheduler (Slurm, Ray) places the run: the trainer takes no machine lock
    run, dirs = planned[index], run_dirs(planned)
    signals = StopSignals()
    with locked(sweep_dir, sweep_name(sweep_dir), dirs) as state:
        entry = state.runs[run.name]
        if entry["state"] == RunState.DONE:
            print(f"Run {run.name} is already done; nothing to do.", file=out, flush=True)
            return RunState.DONE
        call, resumed = prepare_run_dir(sweep_dir / entry["run_dir"], run.call)
        label = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in where.items())
        print(f"{label} on {socket.gethostname()}: {run.name}", file=out, flush=True)
        print(f"$ {' '.join(call.argv)}", file=out, flush=True)
        job = Job(call, sweep_dir / LOGS_DIR / f"{run.name}.log", out, fresh_process=fresh_process)
        reason = "resumed from its checkpoint" if resumed else None
        state.update(run.name, **started_entry(job, entry["attempts"] + 1, reason, **where))
    try:
        while job.poll() is None:
            if signals.got is not None:
                job.stop()
                break
            time.sleep(0.2)
    except KeyboardInterrupt:
        signals.got = signal.SIGINT
        job.stop()
    code, _ = job.wait(None)
    final, reason = decide(signals.got, code)
    if final == RunState.FAILED and reason == f"exit code {code}":
        reason = failure_reason(code, sweep_dir / LOGS_DIR / f"{run.name}.log")
    with locked(sweep_dir, sweep_name(sweep_dir), dirs) as state:
        state.update(
            run.name,
            state=final,
            ended=now(),
            exit_code=code,
            reason=reason,
            summary=summary_of(sweep_dir / dirs[run.name]),
        )
        all_ended = all(state.runs[p.name]["state"] in (RunState.DONE, RunState.FAILED) for p in planned)
    print(f"Run {run.name}: {final}" + (f" ({reason})" if reason else ""), file=out, flush=True)
    if all_ended and final in (RunState.DONE, RunState.FAILED):
        from ppolab.experiments.report import write_report

        try:
            print(f"Report: {write_report(sweep_dir)}", file=out, flush=True)
        except UserError as exc:
            print(f"No report: {exc}", file=out, flush=True)
    return final
