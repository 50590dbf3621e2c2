"""One runner per sweep folder, whichever machine it runs on.

The machine lock (machine_lock.py) keeps one training job per machine; it cannot see a runner on another host
that shares the disk, nor one started with another PPOLAB_LOCK_DIR. Two runners on one sweep would train the same
run twice. So a runner holds a POSIX record lock (`fcntl.lockf`, which NFS's lock manager honours across hosts)
on `SWEEP/.runner.lock` for its whole life. The kernel (or the lock manager) drops it when the holder dies,
however it dies, so a stale lock never blocks a sweep. The holder writes who it is into the file, so a second
runner can say for whom it waits, or refuse in one line with --no-wait.

A POSIX lock belongs to the process and is dropped when the process closes any descriptor of the file, so the
holder never opens the file again while it holds it; only waiters read it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

from ppolab.errors import UserError
from ppolab.util.files import refuse_links

RUNNER_LOCK = ".runner.lock"


class RunnerLock:
    def __init__(self, sweep_dir: Path) -> None:
        self.path = sweep_dir / RUNNER_LOCK
        self.fd: int | None = None

    def holder(self) -> str:
        try:
            info = json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return "another runner"
        return f"the runner on {info.get('host', '?')} (pid {info.get('pid', '?')}, since {info.get('since', '?')})"

    def acquire(self, wait: bool, on_wait: Callable[[str], None], poll: float = 0.5) -> bool:
        refuse_links(self.path.parent, [RUNNER_LOCK], what=" (the sweep's runner lock)")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
        told = False
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:  # EAGAIN or EACCES: held by another process, here or on another host
                if not wait:
                    os.close(fd)
                    return False
                if not told:
                    on_wait(self.holder())
                    told = True
                time.sleep(poll)
        who = {"host": socket.gethostname(), "pid": os.getpid(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(who).encode(), 0)
        self.fd = fd
        return True

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing drops the POSIX lock
            self.fd = None


def hold_sweep(sweep_dir: Path, wait: bool, say: Callable[[str], None]) -> RunnerLock:
    """This sweep folder's runner lock, for the caller's lifetime: waits for another runner, or with `wait`
    False refuses in one line naming it."""
    lock = RunnerLock(sweep_dir)
    if not lock.acquire(wait, lambda who: say(f"Waiting for {who}: one runner per sweep folder.")):
        raise UserError(f"{sweep_dir}: {lock.holder()} is running this sweep; wait for it, or drop --no-wait to queue")
    return lock
