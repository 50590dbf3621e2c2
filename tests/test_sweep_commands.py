"""`ppolab experiment`, `--detach` and `scripts/launch_sweep.py`, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from conftest import REPO, make_sweep, on_pty, state_of, wait_until

QUICK = [
    "--env",
    "cartpole",
    "--n-itr",
    "2",
    "--num-procs",
    "2",
    "--max-traj-len",
    "20",
    "--minibatch-size",
    "16",
    "--eval-episodes",
    "1",
]


@pytest.fixture(autouse=True)
def lock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PPOLAB_LOCK_DIR", str(tmp_path))


def ppolab(*args: str, cwd=REPO, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ppolab", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_experiment_writes_the_equivalent_sweep_and_runs_it(tmp_path):
    root = tmp_path / "sweeps"
    proc = ppolab(
        "experiment", "gam", "--vary", "gamma=0.95,0.99", "--seeds", "2", *QUICK, "--root", str(root), "--yes"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = yaml.safe_load((root / "gam" / "sweep.yaml").read_text())
    assert doc["defaults"]["env"] == "cartpole" and doc["seeds"] == [1, 2]
    assert doc["runs"]["A"]["grid"] == {"gamma": [0.99, 0.95]}  # the control (cartpole's default 0.99) first
    states = state_of(root / "gam")
    assert sorted(states) == ["gam-gamma095-s1", "gam-gamma095-s2", "gam-gamma099-s1", "gam-gamma099-s2"]
    assert all(s["state"] == "done" for s in states.values())
    again = ppolab(
        "experiment", "gam", "--vary", "gamma=0.95,0.99", "--seeds", "2", *QUICK, "--root", str(root), "--yes"
    )
    assert again.returncode == 0 and again.stdout.count("(done)") == 4  # the same command resumes


def test_experiment_rejects_an_unknown_flag_before_writing_anything(tmp_path):
    proc = ppolab("experiment", "bad", "--vary", "gama=0.95", *QUICK, "--root", str(tmp_path / "sweeps"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == "ppolab experiment: error: unknown train flag 'gama'; did you mean 'gamma'?"
    assert not (tmp_path / "sweeps" / "bad").exists()


def running(pid: int) -> bool:
    """Alive and not a zombie (a container's init may be slow to reap an orphan)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_detach_goes_on_in_the_background_and_status_follows_it(tmp_path):
    d = make_sweep(tmp_path, n_itr=3)
    proc = ppolab("sweep", str(d), "--yes", "--detach")
    assert proc.returncode == 0, proc.stderr
    assert "Sweep running in the background (pid " in proc.stdout
    pid = int(proc.stdout.split("(pid ")[1].split(")")[0])
    wait_until(lambda: not running(pid), "the background runner to finish both runs", every=0.2)
    assert all(r["state"] == "done" for r in state_of(d).values())
    assert "Sweep finished: 2/2 runs done" in (d / "sweep.log").read_text()
    assert "| done" in ppolab("sweep", str(d), "--status").stdout


def test_launch_sweep_script_takes_the_same_arguments(tmp_path):
    d = make_sweep(tmp_path)
    proc = subprocess.run(
        [sys.executable, "scripts/launch_sweep.py", str(d), "--dry-run"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "| Run | Name" in proc.stdout
    assert proc.stdout == ppolab("sweep", str(d), "--dry-run").stdout


def test_ctrl_c_stops_the_current_run_cleanly_and_a_relaunch_continues(tmp_path):
    d = make_sweep(tmp_path, n_itr=60)
    runner = subprocess.Popen(
        [sys.executable, "-m", "ppolab", "sweep", str(d), "--yes"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    last = d / "runs" / "control-s1" / "last.pt"
    wait_until(last.exists, f"the first checkpoint {last}", alive=runner)
    import os
    import signal

    os.killpg(runner.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
    out, _ = runner.communicate(timeout=120)
    assert runner.returncode == 130
    assert "Sweep stopped during Run 1/2: control-s1. Launch it again to continue." in out
    assert "Training interrupted at iteration" in (d / "logs" / "control-s1.log").read_text()
    assert "Training interrupted" not in out  # the terminal shows the sweep's lines; training output is in the log
    assert state_of(d)["control-s1"]["state"] == "interrupted"
    again = subprocess.run(
        [sys.executable, "-m", "ppolab", "sweep", str(d), "--yes"],
        cwd=REPO, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300,
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Starting Run 1/2: control-s1 (resuming from its last checkpoint)" in again.stdout
    assert {name: run["state"] for name, run in state_of(d).items()} == {"control-s1": "done", "clip03-s1": "done"}
    done = [json.loads(line) for line in (d / "runs" / "control-s1" / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in done if r["type"] == "iteration"] == list(range(60))  # none lost, none twice


def answer_no(argv: list[str]) -> tuple[int, bytes]:
    """Run ppolab on a pseudo-terminal, answer its approval question with "n"; (exit code, what it showed)."""
    return on_pty(*argv, answer=b"n\n", after=b"[y/N]", timeout=60)


def test_launch_asks_for_approval_on_a_terminal_and_no_means_nothing_runs(tmp_path):
    d = make_sweep(tmp_path)
    code, seen = answer_no(["sweep", str(d)])
    assert b"Launch 2 runs, one at a time? [y/N]" in seen and b"Not launched." in seen
    assert code == 1
    assert not (d / "state.json").exists()


def test_experiment_names_its_control_and_a_dry_run_or_a_no_writes_nothing(tmp_path):
    root = tmp_path / "sweeps"
    args = ["experiment", "gamma", "--vary", "gamma=0.95,0.999", *QUICK, "--root", str(root)]
    dry = ppolab(*args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "Control: gamma=0.99" in dry.stdout  # cartpole's default, added and compared first
    names = [line.split("|")[2].strip() for line in dry.stdout.splitlines() if line.startswith("| 1 ")]
    assert names == ["run-gamma099"]  # not "gamma-gamma099": the name does not repeat the flag
    assert "Hypothesis: gamma other than the control (gamma=0.99) changes the final reward" in dry.stdout
    assert not root.exists()
    code, seen = answer_no([*args, "--control", "gamma=0.95"])
    assert code == 1 and b"Control: gamma=0.95" in seen and b"Not launched. Nothing was written." in seen
    assert not root.exists()
    wrong = ppolab(*args, "--control", "lr=0.1", "--dry-run")
    assert wrong.returncode == 2 and "--control lr: not a varied flag" in wrong.stderr
