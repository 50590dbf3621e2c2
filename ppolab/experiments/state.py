"""`state.json` in a sweep folder: every run's state, rewritten atomically at every transition.

    {
      "sweep": "gamma-ablation",
      "updated": "2026-11-30T10:15:02+00:00",
      "runner_pid": 4242,
      "runs": {
        "control-s1": {"state": "done", "pid": 4250, "host": "node1", "started": "...", "ended": "...", "exit_code": 0,
                       "attempts": 1, "run_dir": "runs/control-s1", "reason": null, "summary": {...}},
        ...
      }
    }

States: pending, running, done, failed, interrupted. A run found "running" whose
process is gone is interrupted. Writes go to a temp file that is then renamed,
so a reader never sees half a file, whatever kills the writer.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ppolab.errors import UserError
from ppolab.util.files import atomic_write_text

STATE_FILE = "state.json"
LOCK_FILE = ".state.lock"
STATES = ("pending", "running", "done", "failed", "interrupted")


def now() -> str:
    return dt.datetime.now().astimezone().isoformat(timespec="seconds")


def new_entry(run_dir: str) -> dict[str, Any]:
    return {
        "state": "pending",
        "pid": None,
        "host": None,
        "started": None,
        "ended": None,
        "exit_code": None,
        "attempts": 0,
        "run_dir": run_dir,
        "reason": None,
        "summary": None,
    }


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has exited
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


class SweepState:
    def __init__(self, sweep_dir: Path, data: dict[str, Any]) -> None:
        self.path = sweep_dir / STATE_FILE
        self.data = data

    @classmethod
    def load(cls, sweep_dir: Path, sweep_name: str, run_dirs: dict[str, str]) -> SweepState:
        """Read state.json (or start one); add runs new to the plan, keep what is recorded."""
        path = sweep_dir / STATE_FILE
        data: dict[str, Any] = {"sweep": sweep_name, "updated": now(), "runner_pid": None, "runs": {}}
        if path.exists():
            try:
                data = json.loads(path.read_text())
            except ValueError:
                raise UserError(
                    f"{path}: not valid JSON; move it aside to start the sweep's bookkeeping again"
                ) from None
        for name, run_dir in run_dirs.items():
            data["runs"].setdefault(name, new_entry(run_dir))
        return cls(sweep_dir, data)

    @classmethod
    def read(cls, sweep_dir: Path) -> SweepState | None:
        path = sweep_dir / STATE_FILE
        try:
            return cls(sweep_dir, json.loads(path.read_text()))
        except (FileNotFoundError, ValueError):
            return None

    @property
    def runs(self) -> dict[str, dict[str, Any]]:
        return self.data["runs"]

    def update(self, name: str, **fields: Any) -> None:
        self.runs[name].update(fields)
        self.save()

    def save(self) -> None:
        self.data["updated"] = now()
        atomic_write_text(self.path, json.dumps(self.data, indent=2) + "\n")

    def effective_state(self, name: str) -> str:
        """'running' only while its process lives; otherwise it was interrupted.

        A run on another host (a Slurm or Ray node) cannot be checked from here: its record stands.
        """
        entry = self.runs[name]
        local = entry.get("host") in (None, socket.gethostname())
        if entry["state"] == "running" and local and not pid_alive(entry["pid"]):
            return "interrupted"
        return entry["state"]


@contextmanager
def locked(sweep_dir: Path, sweep_name: str, run_dirs: dict[str, str]) -> Iterator[SweepState]:
    """Read, change and write state.json while other writers wait (Slurm array tasks on several nodes).

    POSIX record locks (fcntl.lockf) go through NFS's lock manager and are honoured
    by Lustre and GPFS, where a BSD flock may only lock the local node.
    """
    with open(sweep_dir / LOCK_FILE, "a+") as f:
        fcntl.lockf(f, fcntl.LOCK_EX)
        try:
            yield SweepState.load(sweep_dir, sweep_name, run_dirs)
        finally:
            fcntl.lockf(f, fcntl.LOCK_UN)
