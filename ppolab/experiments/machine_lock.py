"""One training job at a time per machine: a lock shared by every sweep (and tuning study).

An exclusive `flock` on `$PPOLAB_LOCK_DIR/ppolab-train.lock` (default: the
system temp folder). The holder writes who it is into the file, so a second
launch can say for whom it waits. The kernel drops the lock when the holder
dies, however it dies; a training process started under the lock inherits it,
so the machine stays reserved until that process has exited too.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ppolab.errors import UserError

LOCK_NAME = "ppolab-train.lock"
HELD = "PPOLAB_LOCK_HELD"  # set for the processes a lock holder starts: they are its jobs


def _user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def lock_path() -> Path:
    return Path(os.environ.get("PPOLAB_LOCK_DIR") or tempfile.gettempdir()) / LOCK_NAME


class MachineLock:
    def __init__(self, owner: dict) -> None:
        self.path = lock_path()
        self.owner = owner
        self.fd: int | None = None
        self.had_held: str | None = None

    def holder(self) -> str:
        try:
            info = json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return "another ppolab job"
        what = f"sweep '{info['sweep']}'" if "sweep" in info else f"training run {info.get('run', '?')}"
        return f"{what} of {info.get('user', '?')} (pid {info.get('pid', '?')}, since {info.get('since', '?')})"

    def _open(self) -> tuple[int, bool]:
        """The lock file, readable and writable by every user of the machine (they share one lock).
        Another user's file that we may only read still locks: flock needs no write access."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:
            return os.open(self.path, os.O_RDONLY), False
        try:
            os.fchmod(fd, 0o666)  # whatever the umask: the next user must be able to take it
        except PermissionError:  # someone else's file: leave its mode
            pass
        return fd, True

    def acquire(self, wait: bool, on_wait: Callable[[str], None] | None = None, poll: float = 1.0) -> bool:
        fd, writable = self._open()
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not wait:
                    os.close(fd)
                    return False
                if not told and on_wait:
                    on_wait(self.holder())
                    told = True
                time.sleep(poll)
        if writable:
            os.ftruncate(fd, 0)
            who = {**self.owner, "pid": os.getpid(), "user": _user(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}
            os.pwrite(fd, json.dumps(who).encode(), 0)
        self.had_held = os.environ.get(HELD)
        os.environ[HELD] = "1"  # a `ppolab train` started under this lock runs without taking it again
        self.fd = fd
        return True

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
            if self.had_held is None:  # a process that held the lock once must queue like anyone after
                os.environ.pop(HELD, None)


def hold_machine(owner: dict, wait: bool, say: Callable[[str], None]) -> MachineLock:
    """The machine lock for a sweep or a study (one training job at a time), queueing or refusing when busy."""
    lock = MachineLock(owner)
    if not lock.acquire(
        wait, on_wait=lambda who: say(f"Waiting for {who} to finish: one training job at a time on this machine.")
    ):
        raise UserError(f"the machine is busy with {lock.holder()}; wait for it, or drop --no-wait to queue")
    return lock
