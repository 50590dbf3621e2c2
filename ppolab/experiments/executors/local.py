"""Run a sweep's jobs strictly one at a time, recording state after every transition.

Launching again resumes: done runs are never run again; interrupted or failed
runs run again from their last checkpoint (`ppolab train --resume`), up to
`max_retries` more attempts after failures of the run itself (a non-zero exit, a
timeout); a run interrupted because the runner died or was stopped resumes on
relaunch without using up a retry. Each job runs as its own training process
under the machine lock; its output goes to `logs/<run>.log` in the sweep folder
(and to the terminal with `verbose`), while the terminal shows the live view
(experiments/live.py). If the runner dies, its job gets SIGTERM (Linux
parent-death signal) and stops cleanly at the end of an iteration.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import TextIO

from ppolab.analysis.anomalies import describe
from ppolab.errors import NO_SPACE_EXIT, UserError
from ppolab.experiments.display import duration
from ppolab.experiments.executors.attempt import Attempt, Outcome, Stop, skip_reason
from ppolab.experiments.executors.job import remove_leftovers
from ppolab.experiments.live import SweepView
from ppolab.experiments.machine_lock import hold_machine
from ppolab.experiments.plan import LOGS_DIR, RUNS_DIR, PlannedRun
from ppolab.experiments.state import RESULTS_FILE, VANISHED, SweepState
from ppolab.util.files import remove_stale_temps
from ppolab.util.interrupt import sigterm_as_interrupt
from ppolab.util.run_state import RunState


def run_sweep(
    sweep_dir: Path,
    sweep_name: str,
    planned: list[PlannedRun],
    *,
    wait_for_lock: bool = True,
    max_retries: int = 2,
    parallel: int = 1,
    verbose: bool = False,
    out: TextIO = sys.stdout,
) -> int:
    """Run every job that is not done yet. Returns 0 if all are done, 1 if some failed, 130 if stopped.

    `parallel` > 1 runs that many jobs at once (the runner still holds the machine
    lock, so other sweeps wait); callers only allow it when the user asked for it.
    """
    say = lambda line: print(line, file=out, flush=True)  # noqa: E731
    lock = hold_machine({"sweep": sweep_name, "dir": str(sweep_dir.resolve())}, wait_for_lock, say)
    previous = signal.signal(signal.SIGTERM, sigterm_as_interrupt)
    previous_int = signal.getsignal(signal.SIGINT)  # the wrap-up ignores Ctrl-C outside the report
    try:
        remove_stale_temps(sweep_dir)  # a runner killed during a state write left its temp file
        if removed := remove_leftovers(sweep_dir / RUNS_DIR):
            say(
                f"Removed {len(removed)} folder(s) left by runs killed before their first iteration: "
                + ", ".join(removed)
            )
        state = SweepState.load(sweep_dir, sweep_name, {p.name: str(Path(RUNS_DIR) / p.name) for p in planned})
        state.data["runner_pid"] = os.getpid()
        for name in state.runs:  # a run left "running" by a dead runner was interrupted
            if name in {p.name for p in planned} and state.effective_state(name) != state.runs[name]["state"]:
                state.runs[name]["state"] = RunState.INTERRUPTED
        state.save()
        view = SweepView(sweep_dir, planned, out)
        try:
            return _Scheduler(sweep_dir, planned, state, max_retries, max(1, parallel), view, verbose, out).run()
        finally:
            view.close()
    finally:
        lock.release()
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


class _Active:
    def __init__(self, index: int, run: PlannedRun, attempt: Attempt) -> None:
        self.index, self.run, self.attempt = index, run, attempt
        self.deadline = None if run.timeout is None else time.monotonic() + run.timeout


class _Scheduler:
    """Start jobs in plan order, at most `parallel` at once; record every transition in state.json."""

    def __init__(
        self,
        sweep_dir: Path,
        planned: list[PlannedRun],
        state: SweepState,
        max_retries: int,
        parallel: int,
        view: SweepView,
        verbose: bool,
        out: TextIO,
    ) -> None:
        self.sweep_dir, self.planned, self.state = sweep_dir, planned, state
        self.max_retries, self.parallel, self.view = max_retries, parallel, view
        self.out = out if verbose else None  # where the jobs' own output goes besides their log files
        self.total = len(planned)
        self.active: list[_Active] = []
        self.ran_any = False

    def say(self, text: str) -> None:
        self.view.say(text)

    def run(self) -> int:
        queue = [(i, run) for i, run in enumerate(self.planned, start=1) if self._should_run(i, run)]
        self.ran_any = bool(queue)
        try:
            while queue or self.active:
                while queue and len(self.active) < self.parallel:
                    self._start(*queue.pop(0))
                for act in list(self.active):
                    if act.attempt.poll() is not None:
                        if self._finish(act, None).stops_the_sweep:
                            self._stop_all("sweep stopped")
                            return 130 if act.attempt.job.returncode == 130 else NO_SPACE_EXIT
                    elif act.deadline is not None and time.monotonic() > act.deadline:
                        act.attempt.stop()
                        self._finish(act, Stop(f"timeout after {act.run.timeout:.0f}s", failure=True))
                self.view.tick()
                time.sleep(0.05)
        except KeyboardInterrupt:
            during = ", ".join(f"Run {a.index}/{self.total}: {a.run.name}" for a in self.active)
            self._stop_all("sweep stopped")
            self.say(f"Sweep stopped during {during or 'its start'}. Launch it again to continue.")
            return 130
        return self._wrap_up()

    def _should_run(self, i: int, run: PlannedRun) -> bool:
        entry = self.state.runs[run.name]
        if skip := skip_reason(entry, self.max_retries):
            self.say(f"Skipping Run {i}/{self.total}: {run.name} ({skip})")
            return False
        if entry["reason"] == VANISHED:
            self.say(f"Run {i}/{self.total}: {run.name}: {VANISHED}")
        return True

    def _start(self, i: int, run: PlannedRun) -> None:
        entry = self.state.runs[run.name]
        prefix = f"[{run.name}] " if self.parallel > 1 else ""
        attempt = Attempt(self.sweep_dir / entry["run_dir"], run.call, self.sweep_dir / LOGS_DIR / f"{run.name}.log",
                          record=lambda **fields: self.state.update(run.name, **fields), entry=entry, out=self.out,
                          prefix=prefix)  # fmt: skip
        note = " (resuming from its last checkpoint)" if attempt.resumed else ""
        self.say(f"Starting Run {i}/{self.total}: {run.name}{note}")
        self.say(f"$ {' '.join(attempt.call.argv)}")
        self.active.append(_Active(i, run, attempt))

    def _finish(self, act: _Active, stop: Stop | None) -> Outcome:
        self.active.remove(act)
        outcome = act.attempt.end(stop)
        run, where = act.run, f"Run {act.index}/{self.total} {act.run.name}"
        if outcome.stops_the_sweep and outcome.exit_code == NO_SPACE_EXIT:  # every later run would stop too
            self.say(f"{where} stopped: no space left. Free space and launch again.")
        elif outcome.stops_the_sweep:  # the run itself was stopped (SIGINT/SIGTERM): the sweep stops too
            self.say(f"{where} was stopped. Launch the sweep again to continue.")
        elif outcome.state == RunState.INTERRUPTED:  # killed from outside: not the run's failure, no retry spent
            self.say(f"{where} was {outcome.reason}.")
        else:
            summary = self.state.runs[run.name]["summary"]
            seconds = time.time() - act.attempt.started
            self.say(_status_line(act.index, self.total, run.name, outcome.state, seconds, outcome.reason, summary))
        return outcome

    def _stop_all(self, reason: str) -> None:
        for act in self.active:
            act.attempt.stop()
        for act in list(self.active):
            self.active.remove(act)
            act.attempt.end(Stop(reason))

    def _wrap_up(self) -> int:
        """Say how the sweep ended and write its report. Every run has ended and is recorded: from here a Ctrl-C
        can stop the report, never turn the finished sweep into an interrupted one."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        failed = [p.name for p in self.planned if self.state.runs[p.name]["state"] != RunState.DONE]
        self.say(
            f"Sweep finished: {self.total - len(failed)}/{self.total} runs done"
            + (f"; not done: {', '.join(failed)}" if failed else "")
        )
        report = self.sweep_dir / RESULTS_FILE
        if not self.ran_any and report.is_file() and not report.is_symlink():  # nothing new to report
            self.say(f"Report: {report} (no run this time; `ppolab report` draws it again)")
        elif len(failed) < self.total:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C stops the report alone
            try:
                from ppolab.experiments.report import write_report  # seconds of imports: Ctrl-C may come here

                self.say(f"Report: {write_report(self.sweep_dir)}")
            except UserError as exc:  # a report problem never costs the runs anything
                self.say(f"No report: {exc}")
            except KeyboardInterrupt:  # every run is recorded: the sweep is finished, the report can come later
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                self.say(f"Report not written (interrupted); `ppolab report {self.sweep_dir}` draws it")
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        return 1 if failed else 0


def _status_line(
    i: int, total: int, name: str, final: str, seconds: float, reason: str | None, summary: dict | None
) -> str:
    head = f"Run {i}/{total} {name}: {final} in {duration(seconds)}"
    if reason:
        head += f" ({reason})"
    if not summary:
        return head + "; no iteration recorded"
    parts = []
    if summary["final_mean_reward"] is not None:
        parts.append(f"final reward {summary['final_mean_reward']:.1f}")
    if summary["peak_eval_reward"] is not None:
        parts.append(f"peak eval {summary['peak_eval_reward']:.1f} at iteration {summary['peak_eval_iteration']}")
    parts.append(describe(summary["anomalies"]))
    return head + "; " + ", ".join(parts)
