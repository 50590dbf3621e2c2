"""A fork server for the tests' `ppolab` commands: the suite's CPU went mostly to starting Python and
importing torch, MuJoCo and the trainer again in each of its ~400 commands (1.3 s of CPU for a tiny
training's 1.75 s). The server imports them once; each command is a fork of it that runs `python -m
ppolab ARGS` with the caller's working folder, environment, stdin, stdout and stderr, and exits.

It is the same start the sweep runner gives its trainings (experiments/executors/job.py): the server
only imports, never runs torch, never starts a thread, so every fork starts as a fresh interpreter
would, with the modules already loaded. Commands whose environment changes what is read at import
(MUJOCO_GL, thread counts, Python's own variables) run as real subprocesses instead: `can_serve`.

Run as a script: `python tests/forkserver.py SOCKET PARENT_PID` serves until its parent (the pytest worker) exits.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

IMPORT_TIME_PREFIXES = ("MUJOCO", "PYOPENGL", "EGL", "DISPLAY", "OMP_", "MKL_", "OPENBLAS", "KMP_", "TORCH",
                        "PYTORCH", "CUDA", "PYTHON", "LD_", "RAY_")  # fmt: skip
HEADER = struct.Struct("!I")


def can_serve(env: dict[str, str], server_env: dict[str, str]) -> bool:
    """Whether a fork of the server runs a command as a fresh process would: no variable read at import
    differs (RAY_ADDRESS is the one the tests always set, and ppolab reads it when it samples)."""
    keys = {k for k in env.keys() | server_env.keys() if k.startswith(IMPORT_TIME_PREFIXES) and k != "RAY_ADDRESS"}
    return all(env.get(k) == server_env.get(k) for k in keys)


# ---- the server ---------------------------------------------------------------------------------------


def _preload() -> None:
    """What the commands import; nothing runs (no torch op, no thread), so forking stays safe."""
    import mujoco  # noqa: F401
    import torch.utils.tensorboard  # noqa: F401

    import ppolab.cli  # noqa: F401
    import ppolab.runner.trainer  # noqa: F401


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """One request: a JSON header (argv, cwd, env, the caller's CPUs and umask) and the command's stdin,
    stdout and stderr."""
    size_bytes, fds, _, _ = socket.recv_fds(conn, HEADER.size, 3)
    (size,) = HEADER.unpack(size_bytes)
    return json.loads(_read_exactly(conn, size)), fds


def _run_command(request: dict, fds: list[int], conn: socket.socket) -> None:
    """In the fork: become `python -m ppolab ARGS`, report the exit code on `conn`, and exit."""
    import atexit
    import runpy

    code = 1
    try:
        os.setpgid(0, 0)  # its own group: the client stops it and its sampling workers together
        conn.sendall(HEADER.pack(os.getpid()))  # first its pid, at the end its code: one writer, in order
        for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.sched_setaffinity(0, request["cpus"])  # what a child inherits from the caller
        os.umask(request["umask"])
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = ["ppolab", *request["argv"]]
        runpy.run_module("ppolab", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int | None):
            print(exc.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:  # what the interpreter does on its way out: non-daemon threads, atexit, buffers
            for thread in threading.enumerate():
                if thread is not threading.main_thread() and not thread.daemon:
                    thread.join()
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
            conn.sendall(HEADER.pack(code & 0xFF))
        finally:
            os._exit(code & 0xFF)


def serve(path: str, parent: int) -> None:
    """Accept requests until the parent exits; each one is a fork that runs a command."""
    from ppolab.experiments.executors.job import _die_with_parent

    _die_with_parent(parent)
    _preload()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stopped with the session: exit as Python does
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forks are reaped by the kernel; their codes go by socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(path)
        listener.listen(64)
        print("ready", flush=True)
        while True:
            conn, _ = listener.accept()
            request, fds = _receive(conn)
            if os.fork() == 0:
                listener.close()
                _run_command(request, fds, conn)
            for fd in fds:
                os.close(fd)
            conn.close()


# ---- the client ---------------------------------------------------------------------------------------


class ForkServer:
    """The pytest worker's handle on its server: started on first use, stopped with the session."""

    def __init__(self, folder: Path) -> None:
        self.path = str(folder / "forkserver.sock")
        self.env = dict(os.environ)
        self.proc = subprocess.Popen([sys.executable, __file__, self.path, str(os.getpid())], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, env=self.env, text=True)  # fmt: skip
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"the tests' fork server did not start (it said {line!r}, code {self.proc.poll()})")

    def run(self, argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
        """`subprocess.run([python, -m, ppolab, *argv], capture_output=True, text=True, stdin=DEVNULL)`."""
        import tempfile

        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, open(os.devnull, "rb") as null:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.connect(self.path)
                umask = os.umask(0)
                os.umask(umask)
                request = {"argv": argv, "cwd": str(cwd), "env": env, "cpus": sorted(os.sched_getaffinity(0)),
                           "umask": umask}  # fmt: skip
                body = json.dumps(request).encode()
                socket.send_fds(conn, [HEADER.pack(len(body))], [null.fileno(), out.fileno(), err.fileno()])
                conn.sendall(body)
                (pid,) = HEADER.unpack(_read_exactly(conn, HEADER.size))
                code = self._wait(conn, pid, timeout)
            out.seek(0)
            err.seek(0)
            stdout, stderr = (f.read().decode(errors="replace") for f in (out, err))
        if code is None:
            raise subprocess.TimeoutExpired([sys.executable, "-m", "ppolab", *argv], timeout, stdout, stderr)
        return subprocess.CompletedProcess([sys.executable, "-m", "ppolab", *argv], code, stdout, stderr)

    @staticmethod
    def _wait(conn: socket.socket, pid: int, timeout: float) -> int | None:
        """The command's exit code; -9 if it died without one; None after killing it at the time-out."""
        conn.settimeout(timeout)
        try:
            data = _read_exactly(conn, HEADER.size)
        except TimeoutError:
            _kill_group(pid)
            return None
        except ConnectionError:
            return -signal.SIGKILL
        return HEADER.unpack(data)[0]

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()
        Path(self.path).unlink(missing_ok=True)
        Path(self.path).parent.rmdir()


def _read_exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the other end closed the connection")
        data += chunk
    return data


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
