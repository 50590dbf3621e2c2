"""One runner per sweep folder, whatever the machine lock: two hosts sharing a disk (here: two lock folders)
never train the same run twice, a second runner waits or says who holds the sweep, a dead runner's lock is
stale at once, and what a killed run left is cleaned up by the next launch, in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from conftest import REPO, iterations_logged, make_sweep, read_metrics, run_ppolab, state_of, wait_until


def _runner(d, lock_dir, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PPOLAB_LOCK_DIR": str(lock_dir)}
    argv = [sys.executable, "-m", "ppolab", "sweep", str(d), "--yes", *args]
    return subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)  # fmt: skip


def test_two_runners_with_different_machine_locks_train_each_run_once(tmp_path):
    """As on two hosts sharing a disk: the second runner refuses (--no-wait) or waits, and takes the sweep over
    only when the first stops; every iteration is trained once."""
    d = make_sweep(tmp_path, n_itr=2000)
    run_dir = d / "runs" / "control-s1"
    (tmp_path / "host-a").mkdir()
    (tmp_path / "host-b").mkdir()
    first = _runner(d, tmp_path / "host-a")
    wait_until(iterations_logged(run_dir), "the first runner's first iteration", alive=first)
    refused = run_ppolab("sweep", str(d), "--yes", "--no-wait", env={"PPOLAB_LOCK_DIR": str(tmp_path / "host-b")})
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"the runner on {os.uname().nodename} (pid {first.pid}" in refused.stderr
    log = tmp_path / "second.out"
    with open(log, "w") as out:
        second = subprocess.Popen([sys.executable, "-m", "ppolab", "sweep", str(d), "--yes"], cwd=REPO, stdout=out,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  env={**os.environ, "PPOLAB_LOCK_DIR": str(tmp_path / "host-b")})  # fmt: skip
    try:
        wait_until(lambda: "Waiting for the runner on" in log.read_text(), "the second runner to wait", alive=second)
        assert len(read_metrics(run_dir)) > 0 and "Starting Run" not in log.read_text()
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=120)
        wait_until(lambda: "resuming from its last checkpoint" in log.read_text(), "the second runner to take over",
                   alive=second)  # fmt: skip
        done = len([r for r in read_metrics(run_dir) if r["type"] == "iteration"])
        wait_until(iterations_logged(run_dir, done + 2), "the second runner's iterations", alive=second)
    finally:
        second.send_signal(signal.SIGINT)
        second.wait(timeout=120)
    rows = [r["iteration"] for r in read_metrics(run_dir) if r["type"] == "iteration"]
    assert rows == list(range(len(rows))), "an iteration trained twice, or lost"
    assert "one runner per sweep folder" in log.read_text()


def test_a_killed_runners_lock_is_stale_at_once(tmp_path):
    d = make_sweep(tmp_path, n_itr=400)
    first = _runner(d, tmp_path)
    wait_until(iterations_logged(d / "runs" / "control-s1"), "the first runner's first iteration", alive=first)
    first.send_signal(signal.SIGKILL)
    first.wait()
    trainer = state_of(d)["control-s1"]["pid"]  # the orphaned training stops at its iteration's end
    wait_until(lambda: not os.path.exists(f"/proc/{trainer}"), "the orphaned trainer to stop", timeout=120)
    proc = run_ppolab("sweep", str(d), "--status")
    assert proc.returncode == 0
    second = run_ppolab("sweep", str(d), "--info", "--json")  # reading never takes the lock
    assert second.returncode == 0
    again = _runner(d, tmp_path, "--no-wait")  # the dead runner holds nothing
    wait_until(iterations_logged(d / "runs" / "control-s1", 3), "the relaunch to train", alive=again)
    again.send_signal(signal.SIGINT)
    out, err = again.communicate(timeout=120)
    assert "Waiting for the runner" not in out and again.returncode == 130, out + err


def test_the_next_launch_removes_what_runs_killed_before_their_first_iteration_left(tmp_path):
    d = make_sweep(tmp_path, n_itr=2)
    runs = d / "runs"
    for name in ("control-s1", "clip03-s1.incomplete-1733400000"):  # marked by ppolab, no checkpoint
        (runs / name).mkdir(parents=True)
        (runs / name / ".ppolab-run").write_text("a ppolab run folder\n")
        (runs / name / "metrics.jsonl").write_text("")
    mine = runs / "notes"  # not ppolab's: never touched
    mine.mkdir()
    (mine / "todo.txt").write_text("keep me")
    proc = run_ppolab("sweep", str(d), "--yes")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("Removed ")]
    assert lines == ["Removed 2 folder(s) left by runs killed before their first iteration: "
                     "clip03-s1.incomplete-1733400000, control-s1"]  # fmt: skip
    assert sorted(p.name for p in runs.iterdir()) == ["clip03-s1", "control-s1", "notes"]
    assert (mine / "todo.txt").read_text() == "keep me"


def test_ctrl_c_after_every_run_is_done_exits_0(tmp_path):
    """The sweep has finished when Ctrl-C comes during its report: the exit says it finished (0), and the
    report is left for `ppolab report`."""
    d = make_sweep(tmp_path, n_itr=2)
    runner = _runner(d, tmp_path)
    for line in runner.stdout:
        if line.startswith("Sweep finished"):
            runner.send_signal(signal.SIGINT)
            break
    out, err = runner.communicate(timeout=120)
    assert runner.returncode == 0, out + err
    assert "Report not written (interrupted)" in out or "Report: " in out
    assert all(s["state"] == "done" for s in state_of(d).values())
