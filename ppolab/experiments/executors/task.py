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
from collections.abc import Callable
from pathlib import Path

from ppolab.errors import UserError
from ppolab.experiments.executors.attempt import Attempt, Stop
from ppolab.experiments.machine_lock import HELD
from ppolab.experiments.plan import LOGS_DIR, RUNS_DIR, PlannedRun, load_plan
from ppolab.experiments.spec import sweep_name
from ppolab.experiments.state import locked
from ppolab.util.run_state import RunState

# the signal the task received -> why its run was stopped, once it has stopped (Slurm requeues it then)
Interpret = Callable[[int], Stop]


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


def stopped_by_signal(_signum: int) -> Stop:
    return Stop("stopped: the sweep was interrupted, or the cluster stopped the task")


def run_task(
    sweep_dir: Path,
    index: int,
    *,
    where: dict[str, str],
    interpret: Interpret = stopped_by_signal,
    fresh_process: bool = False,
    out=sys.stdout,
) -> RunState:
    """Run run number `index` of the sweep (an Attempt, as the local runner's); its final state.

    `where` goes into the run's state entry (e.g. {"slurm_task": "123_4"}). `fresh_process`
    starts the trainer with exec instead of fork: a must inside a threaded worker (Ray).
    A Ctrl-C or Ray's cancel (KeyboardInterrupt) stops the run like a signal does.
    """
    _, planned = load_plan(sweep_dir)
    if not 0 <= index < len(planned):
        raise UserError(f"--task {index}: the sweep has runs 0..{len(planned) - 1}")
    os.environ[HELD] = "1"  # the scheduler (Slurm, Ray) places the run: the trainer takes no machine lock
    run, dirs, name = planned[index], run_dirs(planned), sweep_name(sweep_dir)
    signals = StopSignals()

    def record(**fields) -> None:  # tasks on several nodes: state.json under its lock, each time
        with locked(sweep_dir, name, dirs) as state:
            state.update(run.name, **fields)

    with locked(sweep_dir, name, dirs) as state:
        entry = dict(state.runs[run.name])
    if entry["state"] == RunState.DONE:
        print(f"Run {run.name} is already done; nothing to do.", file=out, flush=True)
        return RunState.DONE
    attempt = Attempt(sweep_dir / entry["run_dir"], run.call, sweep_dir / LOGS_DIR / f"{run.name}.log",
                      record=record, entry=entry, out=out, fresh_process=fresh_process, where=where)  # fmt: skip
    label = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in where.items())
    print(f"{label} on {socket.gethostname()}: {run.name}", file=out, flush=True)
    print(f"$ {' '.join(attempt.call.argv)}", file=out, flush=True)
    try:
        stop = attempt.supervise(lambda: Stop("stopping") if signals.got is not None else None)
    except KeyboardInterrupt:  # Ctrl-C, or Ray's cancel: the run has stopped cleanly
        stop = Stop("stopping")
    if stop is not None:  # the run has stopped cleanly by now; what the signal meant (Slurm: requeue) comes next
        stop = interpret(signals.got or signal.SIGINT)
    outcome = attempt.end(stop)
    print(f"Run {run.name}: {outcome.state}" + (f" ({outcome.reason})" if outcome.reason else ""), file=out,
          flush=True)  # fmt: skip
    with locked(sweep_dir, name, dirs) as state:
        all_ended = all(RunState(state.runs[p.name]["state"]).ended for p in planned)
    if all_ended and outcome.state.ended:
        from ppolab.experiments.report import write_report

        try:
            print(f"Report: {write_report(sweep_dir)}", file=out, flush=True)
        except UserError as exc:
            print(f"No report: {exc}", file=out, flush=True)
    return outcome.state
