"""ppolab writes only into what it made: a link in a sweep folder, a run folder that is a link, or a read-only
folder is one line naming it (exit 2), and the link's target is never written."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from conftest import make_sweep, read_metrics, run_ppolab


def tree(path) -> dict:
    """Every file under `path` with its size and modification time: what a write would change."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(path.rglob("*")) if p.is_file()}


def one_error_line(proc: subprocess.CompletedProcess, *says: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr and all(s in lines[0] for s in says), proc.stderr


@pytest.fixture
def lock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PPOLAB_LOCK_DIR", str(tmp_path / "lock"))


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A tiny sweep run to its end once for the module; each test damages its own copy (`done_sweep`)."""
    d = make_sweep(tmp_path_factory.mktemp("finished"))
    assert run_ppolab("sweep", str(d), "--yes").returncode == 0
    return d


@pytest.fixture
def done_sweep(tmp_path, finished, lock_dir):
    d = tmp_path / "sweeps" / "tiny"
    shutil.copytree(finished, d, symlinks=True)
    return d


def test_a_sweep_whose_runs_folder_is_a_link_is_refused_and_the_target_untouched(tmp_path, lock_dir):
    d = make_sweep(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("the user's\n")
    (d / "runs").symlink_to(elsewhere)
    before = tree(elsewhere)
    proc = run_ppolab("sweep", str(d), "--yes")
    one_error_line(proc, str(d / "runs"), "symbolic link")
    assert tree(elsewhere) == before


@pytest.mark.parametrize("entry", ["state.json", "logs", "results.md"])
def test_a_link_where_the_sweep_keeps_its_own_files_is_refused(tmp_path, lock_dir, entry):
    d = make_sweep(tmp_path)
    target = tmp_path / "target"
    target.mkdir() if entry == "logs" else target.write_text("{}\n")
    (d / entry).symlink_to(target)
    before = tree(tmp_path / "target") if entry == "logs" else target.read_bytes()
    one_error_line(run_ppolab("sweep", str(d), "--yes"), str(d / entry))
    assert (tree(target) if entry == "logs" else target.read_bytes()) == before


def test_an_interrupted_run_folder_that_is_a_link_is_not_resumed_into_its_target(tmp_path, done_sweep):
    d = done_sweep
    run_dir = d / "runs" / "control-s1"
    moved = tmp_path / "moved-run"
    shutil.move(run_dir, moved)
    run_dir.symlink_to(moved)
    state = (d / "state.json").read_text().replace('"done"', '"interrupted"', 1)  # control-s1 is the first run
    (d / "state.json").write_text(state)
    before = tree(moved)
    one_error_line(run_ppolab("sweep", str(d), "--yes"), str(run_dir), "symbolic link")
    assert tree(moved) == before


def test_train_resume_of_a_link_is_refused_and_writes_nothing(tmp_path, trained_run):
    logdir = tmp_path / "logs"
    shutil.copytree(trained_run, logdir / "r")  # a finished run of 4 iterations
    link = tmp_path / "link"
    link.symlink_to(logdir / "r")
    before = tree(logdir)
    one_error_line(run_ppolab("train", "--resume", str(link), "--n-itr", "6"), str(link), "symbolic link")
    assert tree(logdir) == before
    (logdir / "r" / "metrics.jsonl").rename(tmp_path / "m.jsonl")
    (logdir / "r" / "metrics.jsonl").symlink_to(tmp_path / "m.jsonl")  # a file of the run that is a link
    one_error_line(run_ppolab("train", "--resume", str(logdir / "r"), "--n-itr", "6"), "metrics.jsonl")
    iterations = [r["iteration"] for r in read_metrics_file(tmp_path / "m.jsonl") if r["type"] == "iteration"]
    assert iterations == [0, 1, 2, 3]


def read_metrics_file(path) -> list[dict]:
    import json

    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("chattr"), reason="chattr +i needs root")
def test_an_immutable_state_file_is_one_line_naming_it(tmp_path, done_sweep):
    d = done_sweep
    if subprocess.run(["chattr", "+i", str(d / "state.json")], capture_output=True).returncode != 0:
        pytest.skip("this filesystem has no immutable flag")
    try:
        (d / "runs" / "clip03-s1" / "last.pt").unlink()  # so that the launch has something to write
        shutil.rmtree(d / "runs" / "clip03-s1")
        proc = run_ppolab("sweep", str(d), "--yes")
        one_error_line(proc, str(d / "state.json"), "chattr -i")
    finally:
        subprocess.run(["chattr", "-i", str(d / "state.json")])


def test_metrics_read_back_after_a_refused_resume_are_the_runs_own(tmp_path, trained_run):
    """The refusal comes before any write: the run resumes normally once the link is replaced by its file."""
    logdir = tmp_path / "logs"
    shutil.copytree(trained_run, logdir / "r")
    (logdir / "r" / "metrics.jsonl").rename(tmp_path / "m.jsonl")
    (logdir / "r" / "metrics.jsonl").symlink_to(tmp_path / "m.jsonl")
    one_error_line(run_ppolab("train", "--resume", str(logdir / "r"), "--n-itr", "5"), "metrics.jsonl")
    (logdir / "r" / "metrics.jsonl").unlink()
    (tmp_path / "m.jsonl").rename(logdir / "r" / "metrics.jsonl")
    proc = run_ppolab("train", "--resume", str(logdir / "r"), "--n-itr", "5")
    assert proc.returncode == 0, proc.stderr
    assert [r["iteration"] for r in read_metrics(logdir / "r") if r["type"] == "iteration"] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("link", ["plots", "plots/learning_curves.png", "results.md"])
def test_the_report_never_writes_through_a_link(tmp_path, done_sweep, link):
    d = done_sweep
    users = tmp_path / "users"
    users.mkdir()
    (users / "keep.png").write_bytes(b"the user's picture")
    target = users if link == "plots" else users / "keep.png"
    path = d / link
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    path.symlink_to(target)
    before = tree(users)
    one_error_line(run_ppolab("report", str(d)), str(path), "symbolic link")
    assert tree(users) == before
