"""The sweep runner: one job at a time, state after every run, resume after kill -9, no run twice."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import (
    REPO,
    iterations_logged,
    make_sweep,
    read_metrics,
    run_ppolab,
    state_of,
    wait_until,
    without_timings,
)


@pytest.fixture
def lock_dir(tmp_path, monkeypatch):
    d = tmp_path / "lock"
    d.mkdir()
    monkeypatch.setenv("PPOLAB_LOCK_DIR", str(d))
    return d


def sweep_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "ppolab", "sweep", *args]


def run(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return run_ppolab("sweep", *args, timeout=timeout)


def start(d: Path) -> subprocess.Popen:
    """Launch the sweep in the background, output captured."""
    return subprocess.Popen(
        sweep_cmd(str(d), "--yes"),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def test_launch_runs_every_job_in_order_and_records_state(tmp_path, lock_dir):
    d = make_sweep(tmp_path)
    before = run(str(d), "--status").stdout
    assert "Sweep: 0/2 runs done, 6 iterations left, ETA unknown until a run starts" in before
    proc = run(str(d), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert out.index("Starting Run 1/2: control-s1") < out.index("Starting Run 2/2: clip03-s1")
    status_line = next(line for line in out.splitlines() if line.startswith("Run 1/2 control-s1: done in "))
    assert "final reward " in status_line and "peak eval " in status_line
    assert "Sweep finished: 2/2 runs done" in out
    assert "Total time elapsed" not in out  # training output goes to logs/<run>.log (--verbose streams it)
    states = state_of(d)
    found = states["control-s1"]["summary"]["anomalies"]  # the line says what the run's summary found
    assert status_line.endswith("stable") if not found else all(a["rule"] in status_line for a in found)
    assert {n: s["state"] for n, s in states.items()} == {"control-s1": "done", "clip03-s1": "done"}
    assert all(s["exit_code"] == 0 and s["attempts"] == 1 and s["summary"]["iterations"] == 3 for s in states.values())
    assert (d / "runs" / "control-s1" / "metrics.jsonl").exists()
    report = (d / "results.md").read_text()  # the runner writes the report when the sweep ends
    assert "**Hypothesis.** a larger clip changes nothing in 3 iterations" in report and "**Verdict: " in report
    header = "| Run | Final Reward | Peak Eval Reward | Peak Iter | Stable? | Key Hyperparam Diffs |"
    assert header in re.sub(r" +", " ", report)  # columns are padded to their widest cell
    assert all(
        (d / "plots" / f).stat().st_size > 10_000 for f in ("learning_curves.png", "eval_reward.png", "diagnostics.png")
    )
    assert "[tiny](sweeps/tiny/results.md)" in (d.parent.parent / "experiment-tracker.md").read_text()
    status = run(str(d), "--status").stdout  # --status and --list of the finished sweep
    rows = [line for line in status.splitlines() if line.startswith("| ") and "Name" not in line]
    assert len(rows) == 2 and all("| done" in r and "3/3" in r for r in rows)
    assert status.splitlines()[-1] == "Sweep: 2/2 runs done, 0 iterations left, ETA -"
    listing = run("--list", "--root", str(d.parent)).stdout
    verdict = re.search(r"\*\*Verdict: (\w+)", report).group(1)
    row = next(line for line in listing.splitlines() if line.startswith("| tiny "))
    assert "2/2" in row and f"| {verdict} " in row  # the report's verdict, where the sweeps are listed
    log = (d / "logs" / "clip03-s1.log").read_text()
    assert "********** Iteration 2 ************" in log  # output went to the run's log file too
    written = (d / "results.md").stat().st_mtime_ns
    again = run(str(d), "--yes")
    assert again.returncode == 0
    assert "Skipping Run 1/2: control-s1 (done)" in again.stdout and "Starting Run" not in again.stdout
    assert "no run this time" in again.stdout and (d / "results.md").stat().st_mtime_ns == written  # nothing new
    redo = (d / "runs" / "clip03-s1" / "metrics.jsonl").read_text()
    shutil.rmtree(d / "runs" / "clip03-s1")  # a user deletes a finished run's folder to run it again
    status = re.sub(r" +", " ", run(str(d), "--status").stdout)
    assert "clip03-s1 | pending (its run folder was removed after it finished; it runs again)" in status
    third = run(str(d), "--yes")
    assert "Run 2/2: clip03-s1: its run folder was removed after it finished; it runs again" in third.stdout
    assert "Skipping Run 1/2: control-s1 (done)" in third.stdout and "Starting Run 2/2: clip03-s1" in third.stdout
    assert "Sweep finished: 2/2 runs done" in third.stdout and state_of(d)["clip03-s1"]["state"] == "done"
    assert (d / "results.md").stat().st_mtime_ns > written  # a run ran: the report is written again
    first = [json.loads(line) for line in redo.splitlines()]
    assert without_timings(read_metrics(d / "runs" / "clip03-s1")) == without_timings(first)  # the same run again


def test_two_launches_at_once_run_each_job_once(tmp_path, lock_dir):
    d = make_sweep(tmp_path, n_itr=20)  # long enough for the two launches to overlap
    first = start(d)
    wait_until(iterations_logged(d / "runs" / "control-s1"), "the first launch's first iteration", alive=first)
    second = start(d)  # the first launch is training: the second must wait for it
    out1, _ = first.communicate(timeout=300)
    out2, _ = second.communicate(timeout=300)
    assert first.returncode == 0 and second.returncode == 0
    assert out1.count("Starting Run") + out2.count("Starting Run") == 2
    assert "Waiting for the runner on" in out2 + out1  # the sweep folder's runner lock, then the machine's
    assert all(s["attempts"] == 1 for s in state_of(d).values())


def test_no_wait_refuses_while_another_job_holds_the_machine(tmp_path, lock_dir):
    d = make_sweep(tmp_path, n_itr=2000)  # still running when the second launch asks
    first = subprocess.Popen(
        sweep_cmd(str(d), "--yes"),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_until(iterations_logged(d / "runs" / "control-s1"), "the first sweep's first iteration", alive=first)
        other = make_sweep(tmp_path / "other")
        proc = run(str(other), "--yes", "--no-wait")
        assert proc.returncode == 2
        assert "the machine is busy with sweep 'tiny'" in proc.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=120)
    assert first.returncode == 130
    assert state_of(d)["control-s1"]["state"] == "interrupted"


def test_a_process_that_released_the_lock_queues_again(lock_dir):
    """Holding the lock marks this process's children as its jobs; once released, neither this process
    nor what it starts may skip the lock (an in-process sweep, then a `ppolab train`)."""
    import os

    from ppolab.experiments.machine_lock import HELD, MachineLock

    assert HELD not in os.environ
    lock = MachineLock({"sweep": "first"})
    assert lock.acquire(wait=False)
    assert os.environ.get(HELD) == "1"
    assert not MachineLock({"sweep": "second"}).acquire(wait=False)  # held: a second holder is refused
    lock.release()
    assert HELD not in os.environ
    again = MachineLock({"sweep": "third"})
    assert again.acquire(wait=False)
    again.release()


def test_a_run_over_its_timeout_is_stopped_and_marked(tmp_path, lock_dir):
    d = make_sweep(tmp_path, n_itr=2000)
    text = (d / "sweep.yaml").read_text().replace("seeds: [1]", "seeds: [1]\ntimeout: 3")
    (d / "sweep.yaml").write_text(text)
    proc = run(str(d), "--yes", "--max-retries", "0", timeout=400)
    assert proc.returncode == 1
    states = state_of(d)
    assert states["control-s1"]["state"] == "failed" and states["control-s1"]["reason"] == "timeout after 3s"
    assert "Training interrupted at iteration" in (d / "logs" / "control-s1.log").read_text()


def test_kill_9_of_the_runner_then_relaunch_completes_every_run_once_and_spends_no_retry(tmp_path, lock_dir):
    """kill -9 of the runner mid-run with --max-retries 0: the relaunch waits for the orphaned trainer,
    resumes the run from its checkpoint (no retry spent: with none allowed, a spent one would skip it),
    and every iteration of every run is in its metrics exactly once."""
    d = make_sweep(tmp_path, n_itr=24)
    metrics = d / "runs" / "control-s1" / "metrics.jsonl"
    runner = subprocess.Popen(
        sweep_cmd(str(d), "--yes", "--max-retries", "0"), cwd=REPO, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    wait_until(iterations_logged(metrics.parent, 5), "iteration 4 of control-s1", alive=runner)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    assert state_of(d)["control-s1"]["state"] == "running"  # as the dead runner left it
    assert "interrupted" in run(str(d), "--status").stdout  # its process is gone
    proc = run(str(d), "--yes", "--max-retries", "0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Starting Run 1/2: control-s1 (resuming from its last checkpoint)" in proc.stdout
    assert "Skipping" not in proc.stdout
    states = state_of(d)
    assert all(s["state"] == "done" and s["failures"] == 0 for s in states.values())
    assert states["control-s1"]["attempts"] == 2 and states["clip03-s1"]["attempts"] == 1
    for name in ("control-s1", "clip03-s1"):  # nothing lost, nothing duplicated
        rows = [r["iteration"] for r in read_metrics(d / "runs" / name) if r["type"] == "iteration"]
        assert rows == list(range(24))


def test_a_training_killed_from_outside_is_interrupted_not_failed(tmp_path, lock_dir):
    """kill -9 of the training process itself (not the runner), with --max-retries 0: the run is
    interrupted (no retry spent), the sweep goes on, and a relaunch resumes it from its checkpoint."""
    d = make_sweep(tmp_path, n_itr=24)
    metrics = d / "runs" / "control-s1" / "metrics.jsonl"
    runner = start_with(d, "--max-retries", "0")
    wait_until(iterations_logged(metrics.parent, 5), "iteration 4 of control-s1", alive=runner)
    os.kill(state_of(d)["control-s1"]["pid"], signal.SIGKILL)
    out, _ = runner.communicate(timeout=120)
    entry = state_of(d)["control-s1"]
    assert entry["state"] == "interrupted" and entry["failures"] == 0, out
    assert "killed by SIGKILL from outside the sweep" in entry["reason"] and "failed" not in out
    assert state_of(d)["clip03-s1"]["state"] == "done"  # the sweep went on
    proc = run(str(d), "--yes", "--max-retries", "0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    states = state_of(d)
    assert states["control-s1"]["state"] == "done" and states["control-s1"]["failures"] == 0
    rows = [r["iteration"] for r in read_metrics(d / "runs" / "control-s1") if r["type"] == "iteration"]
    assert rows == list(range(24))


def start_with(d: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(sweep_cmd(str(d), "--yes", *args), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)  # fmt: skip


def test_a_run_that_fails_uses_a_retry(tmp_path, lock_dir):
    d = make_sweep(tmp_path, n_itr=3)
    text = (
        (d / "sweep.yaml")
        .read_text()
        .replace("    config:\n      clip: 0.3", "    config:\n      clip: 0.3\n      yaml: missing.yaml")
    )
    (d / "sweep.yaml").write_text(text)  # clip03 fails at its start: its --yaml file does not exist
    first = run(str(d), "--yes", "--max-retries", "1")
    assert "Run 2/2 clip03-s1: failed" in first.stdout and state_of(d)["clip03-s1"]["failures"] == 1
    assert "(exit code 2: --yaml missing.yaml: no such file)" in first.stdout  # the reason, not only the code
    assert state_of(d)["clip03-s1"]["reason"] == "exit code 2: --yaml missing.yaml: no such file"
    retry = run(str(d), "--yes", "--max-retries", "1")  # a relaunch retries a failed run: one retry
    assert "Starting Run 2/2: clip03-s1" in retry.stdout and state_of(d)["clip03-s1"]["failures"] == 2
    again = run(str(d), "--yes", "--max-retries", "1")
    assert "Skipping Run 2/2: clip03-s1 (failed 2 times; raise --max-retries to try again)" in again.stdout


def test_the_sweep_eta_is_the_iterations_left_at_the_pace_measured_so_far():
    from ppolab.experiments.display import sweep_line

    rows = [
        {"state": "done", "iteration": 30, "n_itr": 30, "s_per_iteration": 2.0},
        {"state": "running", "iteration": 10, "n_itr": 30, "s_per_iteration": 2.0},
        {"state": "pending", "iteration": 0, "n_itr": 30, "s_per_iteration": None},
        {"state": "failed", "iteration": 4, "n_itr": 30, "s_per_iteration": 2.0},  # not run again by itself
    ]
    assert sweep_line(rows) == "Sweep: 1/4 runs done, 50 iterations left, ETA 0:01:40"
