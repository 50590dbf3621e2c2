"""Shared helpers: run the real `ppolab` command in a process of its own (a fork of the worker's fork
server, forkserver.py, or a fresh interpreter) and read what a run leaves behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from forkserver import ForkServer, can_serve

REPO = Path(__file__).resolve().parents[1]
TINY = [
    "--env",
    "cartpole",
    "--num-procs",
    "2",
    "--max-traj-len",
    "50",
    "--minibatch-size",
    "32",
    "--eval-freq",
    "2",
    "--eval-episodes",
    "2",
]
TIMING_KEYS = {"sample_time", "optimizer_time", "total_time", "fps", "time"}


# The files that take longest, started first, so that the suite does not end waiting for one of their tests
# (workers steal queued tests from each other: --dist worksteal). Measured with `pytest --durations=0`; the
# rest keep their order.
LONGEST_FIRST = ["test_sweep_runner.py", "test_tune.py", "test_continued_and_eval.py", "test_determinism_and_resume.py",
                 "test_export.py", "test_damage.py", "test_bad_input.py", "test_ray.py", "test_slurm.py",
                 "test_agent_workflow.py", "test_imitation.py", "test_robots.py", "test_recurrent.py"]  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the others keep their order


@pytest.fixture(scope="session", autouse=True)
def session_folders(tmp_path_factory):
    """Folders of the test session's own, shared by its subprocesses: the compiled-model cache, and the
    machine lock (a training job of the user's on this machine never holds the tests up)."""
    names = {"PPOLAB_CACHE_DIR": "model-cache", "PPOLAB_LOCK_DIR": "machine-lock"}
    previous = {var: os.environ.get(var) for var in names}
    for var, name in names.items():
        os.environ[var] = str(tmp_path_factory.mktemp(name))
    yield
    for var, value in previous.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value


WAIT_S = 300.0  # how long a test waits for an event before it fails: generous, for a machine with both cores busy


def wait_until(check, what: str, timeout: float = WAIT_S, every: float = 0.05, alive=None):
    """Poll `check()` until it returns something true, and return that. On time-out, or when the process
    `alive` (a Popen) has exited first, fail saying what was awaited: a wait never falls through silently."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if alive is not None and alive.poll() is not None:
            raise AssertionError(f"the process exited (code {alive.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def iterations_logged(run_dir: Path, n: int = 1):
    """A check for wait_until: the run's metrics.jsonl holds at least `n` iteration records."""

    def check() -> bool:
        path = run_dir / "metrics.jsonl"
        return path.exists() and path.read_text().count('"type": "iteration"') >= n

    return check


def run_ppolab(
    *args: str, cwd: Path | None = None, timeout: int = 300, env: dict | None = None, base_env: dict | None = None
) -> subprocess.CompletedProcess:
    """The one way tests run `python -m ppolab`: no stdin, output captured, sampling local (RAY_ADDRESS unset).

    `env` adds to this process's environment; `base_env` replaces it (e.g. clean_env's, without credentials).
    """
    full_env = {**(os.environ if base_env is None else base_env), "RAY_ADDRESS": "", **(env or {})}
    server = _fork_server()
    if server is not None and can_serve(full_env, server.env):
        return server.run(list(args), cwd or REPO, full_env, timeout)
    return subprocess.run(
        [sys.executable, "-m", "ppolab", *args],
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        stdin=subprocess.DEVNULL,
    )


_SERVER: list[ForkServer] = []


def _fork_server() -> ForkServer | None:
    """This pytest process's fork server, started on first use (PPOLAB_TEST_FORKSERVER=0: none, each
    command a fresh interpreter, as when measuring what the server saves)."""
    if os.environ.get("PPOLAB_TEST_FORKSERVER") == "0" or not hasattr(os, "fork"):
        return None
    if not _SERVER:
        import tempfile

        _SERVER.append(ForkServer(Path(tempfile.mkdtemp(prefix="ppolab-forkserver-"))))
    return _SERVER[0]


SKIP_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", "site"}
_CHECKOUT: list[dict[str, tuple[int, int]]] = []


def _checkout_files() -> dict[str, tuple[int, int]]:
    """Every file of the checkout (but the venv, caches and git's own) with its size and modification time."""
    out = {}
    for folder, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        for name in files:
            st = os.lstat(os.path.join(folder, name))
            out[os.path.relpath(os.path.join(folder, name), REPO)] = (st.st_size, st.st_mtime_ns)
    return out


def pytest_sessionstart(session: pytest.Session) -> None:
    """Note the checkout's files: no test may write into it (each works in a temporary folder), so the tests
    pass the same before or after a user's own runs there, and never change what a user has."""
    if not hasattr(session.config, "workerinput"):  # the controlling process, not an xdist worker
        _CHECKOUT.append(_checkout_files())


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the fork server this process started; fail the session if a test wrote into the checkout."""
    while _SERVER:
        _SERVER.pop().close()
    if _CHECKOUT:
        before, after = _CHECKOUT.pop(), _checkout_files()
        changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        if changed:
            sys.stderr.write(
                f"\nThe tests changed the checkout (a test must work in a temporary folder): {changed[:20]}\n"
            )
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


# credentials of the right shape that must never appear in any output
WANDB_SECRET = "wandbsecret" + "7" * 40
AWS_ID, AWS_SECRET = "AKIAFAKEFAKEFAKE1234", "awssecret" + "9" * 31
HF_SECRET = "hf_" + "hfsecret" + "5" * 30
SECRETS = (WANDB_SECRET, AWS_ID, AWS_SECRET, HF_SECRET)


def clean_env(home) -> dict:
    """This environment without any credential, with `home` as HOME and as the machine lock's folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB", "AWS", "HF_", "HUGGING"))}
    return {**env, "HOME": str(home), "PPOLAB_LOCK_DIR": str(home)}


def only_run_dir(logdir: Path) -> Path:
    runs = [p for p in logdir.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def read_metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def without_timings(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in records]


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory) -> Path:
    """One tiny finished run (4 iterations, evals at 0 and 2 and 3), shared by read-only tests."""
    logdir = tmp_path_factory.mktemp("trained")
    proc = run_ppolab("train", *TINY, "--n-itr", "4", "--seed", "3", "--logdir", str(logdir))
    assert proc.returncode == 0, proc.stderr
    run_dir = only_run_dir(logdir)
    (run_dir / "stdout.txt").write_text(proc.stdout)
    return run_dir


TINY_SWEEP = """\
metadata:
  name: "tiny"
  hypothesis: "a larger clip changes nothing in 3 iterations"
defaults:
  env: cartpole
  n_itr: {n_itr}
  num_procs: 2
  max_traj_len: 50
  minibatch_size: 32
  eval_freq: 2
  eval_episodes: 2
seeds: [1]
runs:
  A:
    name: control
  B:
    name: clip03
    config:
      clip: 0.3
"""


def on_pty(*args: str, answer: bytes | None = None, after: bytes = b"", timeout: float = 120) -> tuple[int, bytes]:
    """Run `ppolab ARGS` with a pseudo-terminal as its output (and as its input when `answer` is given,
    written once `after` has been shown); its exit code and everything it showed."""
    import pty
    import time

    main, secondary = pty.openpty()
    stdin = secondary if answer is not None else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, "-m", "ppolab", *args], cwd=REPO, stdin=stdin, stdout=secondary,
                            stderr=secondary, close_fds=True)  # fmt: skip
    os.close(secondary)
    seen = b""
    if answer is not None:
        deadline = time.time() + timeout
        while after not in seen and time.time() < deadline:
            seen += os.read(main, 4096)
        assert after in seen, f"timed out after {timeout} s waiting for {after!r} on the terminal; it showed {seen!r}"
        os.write(main, answer)
    try:
        while chunk := os.read(main, 65536):
            seen += chunk
    except OSError:  # the terminal closed with the process
        pass
    os.close(main)
    return proc.wait(timeout=timeout), seen


def make_sweep(root: Path, n_itr: int = 3) -> Path:
    """A two-run sweep (control and clip 0.3, seed 1) of tiny cartpole runs, in root/sweeps/tiny."""
    d = root / "sweeps" / "tiny"
    d.mkdir(parents=True)
    (d / "sweep.yaml").write_text(textwrap.dedent(TINY_SWEEP.format(n_itr=n_itr)))
    return d


def state_of(d: Path) -> dict:
    """The runs of a sweep's state.json."""
    return json.loads((d / "state.json").read_text())["runs"]
