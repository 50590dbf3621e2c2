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

LOCK_NAME = "ppolab-train.lock"


def lock_path() -> Path:
    return Path(os.environ.get("PPOLAB_LOCK_DIR") or tempfile.gettempdir()) / LOCK_NAME


class MachineLock:
    def __init__(self, owner: dict) -> None:
        self.path = lock_path()
        self.owner = owner
        self.fd: int | None = None

    def holder(self) -> str:
        try:
            info = json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return "another ppolab job"
        return f"sweep '{info.get('sweep', '?')}' (pid {info.get('pid', '?')}, since {info.get('since', '?')})"

    def acquire(self, wait: bool, on_wait: Callable[[str], None] | None = None, poll: float = 1.0) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
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
        os.ftruncate(fd, 0)
        os.pwrite(
            fd, json.dumps({**self.owner, "pid": os.getpid(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}).encode(), 0
        )
        self.fd = fd
        return True

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
