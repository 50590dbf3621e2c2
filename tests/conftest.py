"""Shared helpers: run the real `ppolab` command in a subprocess and read what a run leaves behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


def run_ppolab(*args: str, cwd: Path | None = None, timeout: int = 300, env: dict | None = None):
    return subprocess.run(
        [sys.executable, "-m", "ppolab", *args],
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "RAY_ADDRESS": "", **(env or {})},
    )


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
