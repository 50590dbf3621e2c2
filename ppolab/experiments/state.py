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

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from ppolab.errors import UserError
from ppolab.util.files import atomic_write_text, refuse_links
from ppolab.util.run_state import RunState
from ppolab.util.validation import first_problem

STATE_FILE = "state.json"
LOCK_FILE = ".state.lock"
RESULTS_FILE = "results.md"  # the sweep's report (ppolab.experiments.report)
STATES = tuple(RunState)
# what ppolab writes in a sweep folder (runs, their logs, the report, the detached runner's log and pid)
SWEEP_ENTRIES = [
    LOCK_FILE,
    ".runner.lock",
    STATE_FILE,
    "runs",
    "logs",
    "plots",
    RESULTS_FILE,
    "sweep.log",
    "runner.pid",
]


def now() -> str:
    return dt.datetime.now().astimezone().isoformat(timespec="seconds")


def new_entry(run_dir: str) -> dict[str, Any]:
    """A run not started yet, as state.json records it."""
    return RunEntry(state=RunState.PENDING, run_dir=run_dir).model_dump()


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


class RunEntry(BaseModel):
    """One run's record in state.json. Extra keys (where it ran: slurm_task, ray_worker) are kept."""

    model_config = ConfigDict(extra="allow", strict=True)

    state: RunState
    pid: int | None = None
    host: str | None = None
    started: str | None = None
    ended: str | None = None
    exit_code: int | None = None
    attempts: int = 0
    failures: int = 0  # non-zero exits and timeouts of the run itself: what --max-retries counts
    run_dir: str
    reason: str | None = None
    summary: dict | None = None

    @field_validator("state", mode="before")
    @classmethod
    def _known_state(cls, v: Any) -> Any:
        return RunState(v) if isinstance(v, str) and v in RunState._value2member_map_ else v


def _read(sweep_dir: Path) -> dict[str, Any]:
    """state.json, checked against the shape ppolab writes; anything else is one UserError."""
    path = sweep_dir / STATE_FILE
    aside = f"move it aside (e.g. to {STATE_FILE}.damaged) to start the sweep's bookkeeping again; runs resume"
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise UserError(f"{path}: not valid JSON; {aside}") from None
    except OSError as exc:
        raise UserError(f"{path}: unreadable ({exc.strerror}); {aside}") from None
    problem = _shape_problem(data)
    if problem:
        raise UserError(f"{path}: damaged ({problem}); {aside}")
    _forget_vanished(sweep_dir, data)
    return data


VANISHED = "its run folder was removed after it finished; it runs again"


def _forget_vanished(sweep_dir: Path, data: dict[str, Any]) -> None:
    """A done run whose folder is gone (a user deleting it to redo the run) is pending again: "done" with
    nothing on disk would be a result that does not exist. A folder still there is left as it is."""
    for entry in data["runs"].values():
        folder = sweep_dir / entry["run_dir"]
        if entry["state"] == RunState.DONE and not folder.exists() and not folder.is_symlink():
            entry.update(new_entry(entry["run_dir"]), reason=VANISHED)


def _shape_problem(data: Any) -> str | None:
    if not isinstance(data, dict) or not isinstance(data.get("runs"), dict):
        return "no 'runs' mapping"
    for name, entry in data["runs"].items():
        if not isinstance(entry, dict):
            return f"run {name!r} is not a mapping"
        try:
            RunEntry.model_validate(entry)
        except ValidationError as exc:
            err = first_problem(exc)
            if err["type"] == "missing":
                return f"run {name!r} has no {err['where']}"
            if err["where"] == "state":
                return f"run {name!r}: unknown state {entry['state']!r}"
            return f"run {name!r}: {err['where']} is {type(err['input']).__name__}"
        if entry["run_dir"] != f"runs/{name}":
            return f"run {name!r}: run_dir {entry['run_dir']!r} is not runs/{name}"
    return None


class SweepState:
    def __init__(self, sweep_dir: Path, data: dict[str, Any]) -> None:
        self.path = sweep_dir / STATE_FILE
        self.data = data

    @classmethod
    def load(cls, sweep_dir: Path, sweep_name: str, run_dirs: dict[str, str]) -> SweepState:
        """Read state.json (or start one) to change it; add runs new to the plan, keep what is recorded.
        What the sweep writes into must be the sweep's own: a link there is refused before anything is written."""
        refuse_links(sweep_dir, SWEEP_ENTRIES, ", in the sweep folder")
        data: dict[str, Any] = {"sweep": sweep_name, "updated": now(), "runner_pid": None, "runs": {}}
        if (sweep_dir / STATE_FILE).exists():
            data = _read(sweep_dir)
        for name, run_dir in run_dirs.items():
            data["runs"].setdefault(name, new_entry(run_dir))
        return cls(sweep_dir, data)

    @classmethod
    def read(cls, sweep_dir: Path) -> SweepState | None:
        """The recorded state, None before the first launch; a damaged file is a UserError saying so."""
        if not (sweep_dir / STATE_FILE).exists():
            return None
        return cls(sweep_dir, _read(sweep_dir))

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
        if entry["state"] == RunState.RUNNING and local and not pid_alive(entry["pid"]):
            return RunState.INTERRUPTED
        return entry["state"]


@contextmanager
def locked(sweep_dir: Path, sweep_name: str, run_dirs: dict[str, str]) -> Iterator[SweepState]:
    """Read, change and write state.json while other writers wait (Slurm array tasks on several nodes).

    POSIX record locks (fcntl.lockf) go through NFS's lock manager and are honoured
    by Lustre and GPFS, where a BSD flock may only lock the local node.
    """
    refuse_links(sweep_dir, SWEEP_ENTRIES, ", in the sweep folder")  # before the lock file is opened
    with open(sweep_dir / LOCK_FILE, "a+") as f:
        fcntl.lockf(f, fcntl.LOCK_EX)
        try:
            yield SweepState.load(sweep_dir, sweep_name, run_dirs)
        finally:
            fcntl.lockf(f, fcntl.LOCK_UN)
