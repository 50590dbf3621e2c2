"""One training run as a sweep job, shared by every executor (local, Slurm, Ray) and by tuning.

A job is a `TrainCall` (a fresh config, or a run folder to resume) run by the
trainer's Python entry point in a child process of its own: forked from the
executor, which imported torch and the trainer once, or exec'd where forking is
unsafe (a threaded Ray worker). Its output goes line by line to the terminal and
to a log file. A crash, a kill or a timeout ends the child alone.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import TextIO

from ppolab.analysis.summary import summarize_run
from ppolab.errors import UserError
from ppolab.experiments.plan import TrainCall
from ppolab.util.files import refuse_links
from ppolab.util.interrupt import deferred_signals
from ppolab.util.run_folder import LAST, RunFolder

STOP_GRACE_S = 60.0


def run_training(call: TrainCall) -> int:
    """A job's training: the CLI's own entry point (ppo.entry), without the machine lock (the runner holds it)."""
    from ppolab.runner.entry import TrainRequest, run

    return run(TrainRequest(config=call.config, resume=call.resume))


try:  # looked up once, here: between fork and exec the child may only call plain C
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux
    _PRCTL = None


def _die_with_parent(parent: int) -> None:
    """In the child: get SIGTERM when the runner `parent` dies (Linux prctl PR_SET_PDEATHSIG).

    A runner that died before the prctl took effect would never send it, so the child then ends at
    once. SIGTERM is unblocked and at its default: a child exec'd from a Ray worker thread would
    otherwise inherit that thread's blocked or ignored SIGTERM and outlive its worker."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)
    if os.getppid() != parent:
        os._exit(1)


def _preload_trainer() -> None:
    """Import the trainer (torch, TensorBoard) in the executor before its first fork, so that every run
    forked from it starts at once; a launch with nothing left to run never pays for it. A stop during
    the import is acted on right after it (deferred_signals says why)."""
    with deferred_signals():
        import torch.utils.tensorboard  # noqa: F401

        import ppolab.runner.trainer  # noqa: F401


class Job:
    """One training in a child process; its output copied line by line to a log file and to `out`, if given.

    Forked, not exec'd: the runner has imported torch and the trainer once, so a
    run starts in milliseconds instead of re-importing them (seconds) each time.
    The child is still its own process: a crash, a kill or a timeout ends it
    alone, and it inherits the machine lock, which it holds until it exits.
    """

    def __init__(
        self, call: TrainCall, log_path: Path, out: TextIO | None, prefix: str = "", fresh_process: bool = False
    ) -> None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log = open(log_path, "a")
        self.out = out
        self.prefix = prefix
        self.returncode: int | None = None
        for stream in (sys.stdout, sys.stderr, out):
            if stream is not None:
                stream.flush()
        if fresh_process:  # exec a new interpreter: forking a threaded process (a Ray worker) is unsafe
            proc = subprocess.Popen(
                [sys.executable, "-m", "ppolab", *call.argv[1:]],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, as below
                preexec_fn=functools.partial(_die_with_parent, os.getpid()),
                env={**os.environ, "RAY_ADDRESS": ""},  # the run samples locally, on the CPUs given to it
                text=True,
                errors="replace",
            )
            self.pid, self.pipe = proc.pid, proc.stdout
        else:
            _preload_trainer()
            read_fd, write_fd = os.pipe()
            parent = os.getpid()
            self.pid = os.fork()
            if self.pid == 0:
                os.close(read_fd)
                self._child(call, write_fd, parent)  # never returns
            os.close(write_fd)
            self.pipe = os.fdopen(read_fd, "r", errors="replace")
        self.copier = threading.Thread(target=self._copy, daemon=True)
        self.copier.start()

    @staticmethod
    def _child(call: TrainCall, write_fd: int, parent: int) -> None:
        code = 1
        try:
            os.setpgid(0, 0)  # its own process group: the runner stops the run and its sampling workers together
            _die_with_parent(parent)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(write_fd, 1)
            os.dup2(write_fd, 2)
            os.close(write_fd)
            sys.stdout.reconfigure(line_buffering=True)
            sys.stderr.reconfigure(line_buffering=True)
            code = run_training(call)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)

    def _copy(self) -> None:
        for line in self.pipe:
            self.log.write(line)
            self.log.flush()
            if self.out is None:  # the log file only
                continue
            try:
                self.out.write(self.prefix + line)
                self.out.flush()
            except (OSError, ValueError):  # terminal gone (detached): the log file still has it
                pass

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def _wait_exit(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def wait(self, timeout: float | None) -> tuple[int, str | None]:
        """Exit code and, if the runner had to stop it, why."""
        reason = None
        if not self._wait_exit(timeout):
            self.stop()
            reason = f"timeout after {timeout:.0f}s"
        self.copier.join(timeout=5)
        if not self.copier.is_alive():  # else a leftover process still writes: leave the pipe to it
            self.pipe.close()
            self.log.close()
        return self.returncode, reason

    def stop(self) -> None:
        """SIGTERM (the trainer finishes cleanly), then SIGKILL if it does not exit in time."""
        if self.poll() is None:
            self._signal(signal.SIGTERM)
            if not self._wait_exit(STOP_GRACE_S):
                self._signal(signal.SIGKILL)
                self._wait_exit(None)

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            os.kill(self.pid, sig)


def prepare_run_dir(run_dir: Path, call: TrainCall) -> tuple[TrainCall, bool]:
    """A run's next attempt: resumed if it has a checkpoint, else `call`, a fresh start.

    A folder of ppolab's own without a checkpoint never finished an iteration (a kill before the first): it
    holds nothing to keep, and goes. A folder ppolab did not make (no marker) is never touched: the run is refused.
    """
    refuse_links(run_dir, what=", in the sweep's runs")
    folder = RunFolder(run_dir)
    if folder.has_checkpoint():
        return TrainCall(resume=run_dir), True
    if run_dir.exists() or run_dir.is_symlink():
        if run_dir.is_symlink() or not folder.is_ppolabs():
            raise UserError(f"{run_dir} exists and is not a ppolab run folder; move it away or rename the run")
        if folder.holds_work():
            raise UserError(f"{run_dir} holds a run's records but no {LAST} to resume from (slimmed, or its "
                            "checkpoints removed); move it away to run it again")  # fmt: skip
        shutil.rmtree(run_dir)
    return call, False


def remove_leftovers(runs_dir: Path) -> list[str]:
    """Remove the folders in a sweep's runs/ that runs killed before their first iteration left: ppolab's own
    (their marker) holding no work (RunFolder.holds_work: no checkpoint, no slimmed records, no summary line),
    and (older versions' name for them) `RUN.incomplete-TIME`. Only for a runner that holds the sweep's runner
    lock, so that no run of this sweep is starting meanwhile."""
    removed = []
    for child in sorted(runs_dir.iterdir()) if runs_dir.is_dir() and not runs_dir.is_symlink() else []:
        folder = RunFolder(child)
        if child.is_dir() and not child.is_symlink() and folder.is_ppolabs() and not folder.holds_work():
            shutil.rmtree(child)
            removed.append(child.name)
    return removed


def summary_of(run_dir: Path) -> dict | None:
    s = summarize_run(run_dir)
    return s.as_dict() if s else None
