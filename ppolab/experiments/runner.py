"""Run a sweep's jobs strictly one at a time, recording state after every transition.

Launching again resumes: done runs are never run again; interrupted or failed
runs run again from their last checkpoint (`ppolab train --resume`), up to
`max_retries` more attempts. Each job runs as its own `ppolab train` process
under the machine lock; its output goes to the terminal and to
`logs/<run>.log` in the sweep folder. If the runner dies, its job gets SIGTERM
(Linux parent-death signal) and stops cleanly at the end of an iteration.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from ppolab.analysis.summary import summarize
from ppolab.errors import UserError
from ppolab.experiments.machine_lock import MachineLock
from ppolab.experiments.plan import LOGS_DIR, PlannedRun
from ppolab.experiments.state import SweepState, now

STOP_GRACE_S = 60.0


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when the runner dies (prctl PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except OSError:
        pass


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _fmt_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Job:
    """One `ppolab train` child process, its output copied line by line to the terminal and a log file."""

    def __init__(self, argv: list[str], log_path: Path, out: TextIO, lock_fd: int | None) -> None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log = open(log_path, "a")
        self.out = out
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ppolab", *argv[1:]],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            bufsize=1,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=_die_with_parent,
            pass_fds=(lock_fd,) if lock_fd is not None else (),
        )
        self.copier = threading.Thread(target=self._copy, daemon=True)
        self.copier.start()

    def _copy(self) -> None:
        for line in self.proc.stdout:
            self.log.write(line)
            self.log.flush()
            try:
                self.out.write(line)
                self.out.flush()
            except (OSError, ValueError):  # terminal gone (detached): the log file still has it
                pass

    def wait(self, timeout: float | None) -> tuple[int, str | None]:
        """Exit code and, if the runner had to stop it, why."""
        try:
            code = self.proc.wait(timeout=timeout)
            reason = None
        except subprocess.TimeoutExpired:
            self.stop()
            code, reason = self.proc.returncode, f"timeout after {timeout:.0f}s"
        self.copier.join(timeout=5)
        self.log.close()
        return code, reason

    def stop(self) -> None:
        """SIGTERM (the trainer finishes cleanly), then SIGKILL if it does not exit in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def run_sweep(
    sweep_dir: Path,
    sweep_name: str,
    planned: list[PlannedRun],
    *,
    wait_for_lock: bool = True,
    max_retries: int = 2,
    out: TextIO = sys.stdout,
) -> int:
    """Run every job that is not done yet. Returns 0 if all are done, 1 if some failed, 130 if stopped."""
    lock = MachineLock({"sweep": sweep_name, "dir": str(sweep_dir.resolve())})
    if not lock.acquire(
        wait_for_lock,
        on_wait=lambda who: print(
            f"Waiting for {who} to finish: one training job at a time on this machine.", file=out, flush=True
        ),
    ):
        raise UserError(f"the machine is busy with {lock.holder()}; wait for it, or drop --no-wait to queue")
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        state = SweepState.load(sweep_dir, sweep_name, {p.name: str(Path("runs") / p.name) for p in planned})
        state.data["runner_pid"] = os.getpid()
        for name in state.runs:  # a run left "running" by a dead runner was interrupted
            if name in {p.name for p in planned} and state.effective_state(name) != state.runs[name]["state"]:
                state.runs[name]["state"] = "interrupted"
        state.save()
        return _run_all(sweep_dir, planned, state, lock, max_retries, out)
    finally:
        signal.signal(signal.SIGTERM, previous)
        lock.release()


def _run_all(
    sweep_dir: Path, planned: list[PlannedRun], state: SweepState, lock: MachineLock, max_retries: int, out: TextIO
) -> int:
    total = len(planned)
    for i, run in enumerate(planned, start=1):
        entry = state.runs[run.name]
        if entry["state"] == "done":
            print(f"Skipping Run {i}/{total}: {run.name} (done)", file=out, flush=True)
            continue
        if entry["state"] in ("failed", "interrupted") and entry["attempts"] > max_retries:
            print(
                f"Skipping Run {i}/{total}: {run.name} ({entry['state']} after {entry['attempts']} attempts; "
                "raise --max-retries to try again)",
                file=out,
                flush=True,
            )
            continue
        run_dir = sweep_dir / entry["run_dir"]
        resume = (run_dir / "last.pt").is_file()
        if run_dir.exists() and not resume:  # started but never finished an iteration: nothing to keep
            shutil.move(str(run_dir), str(run_dir.with_name(f"{run_dir.name}.incomplete-{int(time.time())}")))
        argv = ["ppolab", "train", "--resume", str(run_dir)] if resume else run.argv
        note = " (resuming from its last checkpoint)" if resume else ""
        print(f"Starting Run {i}/{total}: {run.name}{note}", file=out, flush=True)
        print(f"$ {' '.join(argv)}", file=out, flush=True)

        job = Job(argv, sweep_dir / LOGS_DIR / f"{run.name}.log", out, lock.fd)
        started = time.time()
        state.update(
            run.name,
            state="running",
            pid=job.proc.pid,
            started=now(),
            ended=None,
            exit_code=None,
            attempts=entry["attempts"] + 1,
            reason=None,
        )
        try:
            code, reason = job.wait(run.timeout)
        except KeyboardInterrupt:
            job.stop()
            job.wait(None)
            state.update(
                run.name,
                state="interrupted",
                ended=now(),
                exit_code=job.proc.returncode,
                reason="sweep stopped",
                summary=_summary(run_dir),
            )
            print(
                f"Sweep stopped during Run {i}/{total}: {run.name}. Launch it again to continue.", file=out, flush=True
            )
            return 130
        final = "done" if code == 0 and reason is None else "failed"
        if reason is None and code != 0:
            reason = f"exit code {code}"
        summary = _summary(run_dir)
        state.update(run.name, state=final, ended=now(), exit_code=code, reason=reason, summary=summary)
        print(_status_line(i, total, run.name, final, time.time() - started, reason, summary), file=out, flush=True)
    failed = [n for n in (p.name for p in planned) if state.runs[n]["state"] != "done"]
    print(
        f"Sweep finished: {total - len(failed)}/{total} runs done"
        + (f"; not done: {', '.join(failed)}" if failed else ""),
        file=out,
        flush=True,
    )
    return 1 if failed else 0


def _summary(run_dir: Path) -> dict | None:
    s = summarize(run_dir)
    return s.as_dict() if s else None


def _status_line(
    i: int, total: int, name: str, final: str, seconds: float, reason: str | None, summary: dict | None
) -> str:
    head = f"Run {i}/{total} {name}: {final} in {_fmt_duration(seconds)}"
    if reason:
        head += f" ({reason})"
    if not summary:
        return head + "; no iteration recorded"
    parts = []
    if summary["final_mean_reward"] is not None:
        parts.append(f"final reward {summary['final_mean_reward']:.1f}")
    if summary["peak_eval_reward"] is not None:
        parts.append(f"peak eval {summary['peak_eval_reward']:.1f} at iteration {summary['peak_eval_iteration']}")
    return head + "; " + ", ".join(parts)
