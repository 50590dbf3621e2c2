"""Same seed, same metrics: across repeats, across process counts, and across an interrupted-then-resumed run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest
from conftest import REPO, TINY, iterations_logged, only_run_dir, read_metrics, run_ppolab, wait_until, without_timings


def train(logdir, *extra):
    proc = run_ppolab("train", *TINY, "--seed", "11", "--logdir", str(logdir), *extra)
    assert proc.returncode == 0, proc.stderr
    return only_run_dir(logdir)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Seed 11, 3 iterations, 2 sampling processes (and, on 2+ cores, the critic's epochs in a second process):
    the run the module's other runs must match. Tests read it, or copy it before they write."""
    return train(tmp_path_factory.mktemp("reference"), "--n-itr", "3", "--sampler-procs", "2")


def test_same_seed_same_metrics_whatever_the_number_of_sampling_processes(tmp_path, reference):
    one = train(tmp_path / "a", "--n-itr", "3", "--sampler-procs", "1")
    a, b = without_timings(read_metrics(one)), without_timings(read_metrics(reference))
    assert a == b
    assert len({r["mean_eprew"] for r in a if r["type"] == "iteration"}) > 1  # it did something


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores to compare with one")
def test_same_seed_same_metrics_on_one_core_as_on_two(tmp_path, reference):
    """On two or more cores the critic's epochs run in a second process beside the actor's; on one core
    they run after them, in the trainer's process. A seed's metrics are the same either way."""
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})  # the child inherits it: one core
    try:
        one = train(tmp_path / "a", "--n-itr", "3")
    finally:
        os.sched_setaffinity(0, cores)
    two = reference
    log = (one / "train.log").read_text()
    assert "1 processes on 1 cores" in log and "second process" not in log  # it did run on one core
    assert "the critic's epochs in a second process" in (two / "train.log").read_text()
    assert without_timings(read_metrics(one)) == without_timings(read_metrics(two))


def test_different_seeds_differ(tmp_path, reference):
    proc = run_ppolab("train", *TINY, "--seed", "12", "--n-itr", "3", "--logdir", str(tmp_path / "b"))
    assert proc.returncode == 0
    assert without_timings(read_metrics(reference)) != without_timings(read_metrics(only_run_dir(tmp_path / "b")))


def test_resume_gives_the_same_metrics_as_an_uninterrupted_run(tmp_path, reference):
    full = train(tmp_path / "full", "--n-itr", "6")
    part = tmp_path / "part" / reference.name
    shutil.copytree(reference, part)  # a finished 3-iteration run, taken on to 6
    proc = run_ppolab("train", "--resume", str(part), "--n-itr", "6")
    assert proc.returncode == 0, proc.stderr
    assert f"Resuming {part} at iteration 3" in proc.stdout
    assert without_timings(read_metrics(part)) == without_timings(read_metrics(full))
    log = (part / "train.log").read_text()
    assert log.count("Training finished.") == 2  # the same log, appended to
    resumed = json.loads((part / "run.json").read_text())["resumed"]
    assert [r["iteration"] for r in resumed] == [3]


def test_rollouts_shorter_than_episodes_sample_the_same_on_one_or_two_processes_and_resume_says_what_changes(tmp_path):
    """--steps-per-env 10 of 50-step episodes: each sampling process keeps its envs' episodes going between
    iterations, so episodes outlast an iteration; a resume starts them afresh and says so."""
    one, two = (train(tmp_path / str(p), "--n-itr", "6", "--steps-per-env", "10", "--minibatch-size", "8",
                      "--sampler-procs", str(p))
                for p in (1, 2))  # fmt: skip
    a = without_timings(read_metrics(one))
    assert a == without_timings(read_metrics(two))
    iters = [r for r in a if r["type"] == "iteration"]
    assert [r["steps"] for r in iters] == [2 * 10] * 6
    assert max(r["mean_eplen"] for r in iters if r["mean_eplen"] == r["mean_eplen"]) > 10  # longer than a rollout
    proc = run_ppolab("train", "--resume", str(two), "--n-itr", "8")
    assert proc.returncode == 0, proc.stderr
    assert "The envs start fresh episodes" in proc.stdout
    assert [r["iteration"] for r in read_metrics(two) if r["type"] == "iteration"] == list(range(8))


def test_kill_9_mid_run_then_resume_loses_nothing_and_duplicates_nothing(tmp_path):
    full = train(tmp_path / "full", "--n-itr", "12")
    logdir = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppolab", "train", *TINY, "--seed", "11", "--n-itr", "400", "--logdir", str(logdir)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until(lambda: any(iterations_logged(m.parent, 4)() for m in logdir.glob("*/metrics.jsonl")),
                   "four iterations in metrics.jsonl", alive=proc)  # fmt: skip
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    run_dir = only_run_dir(logdir)
    resumed = run_ppolab("train", "--resume", str(run_dir), "--n-itr", "12")
    assert resumed.returncode == 0, resumed.stderr
    assert without_timings(read_metrics(run_dir)) == without_timings(read_metrics(full))


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell's background job or nohup hands down


@pytest.mark.parametrize("inherited", [None, _ignore_sigint], ids=["foreground", "background-job"])
def test_ctrl_c_stops_cleanly_with_the_summary_line(tmp_path, inherited):
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppolab", "train", *TINY, "--seed", "1", "--n-itr", "1000", "--logdir", str(tmp_path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=inherited,
    )
    wait_until(lambda: list(tmp_path.glob("*/last.pt")), "the first checkpoint (last.pt)", alive=proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in err
    assert out.splitlines()[-1].startswith("Training interrupted at iteration ")
    run_dir = only_run_dir(tmp_path)
    assert f"Continue it with: ppolab train --resume {run_dir}" in out
    assert (run_dir / "last.pt").exists()


def test_same_seed_same_metrics_with_torchscript_turned_off(tmp_path, reference):
    """The fused epochs run under TorchScript; where it cannot be had (here: PYTORCH_JIT=0) they run from
    Python, the console says so, and a seed's metrics are the same to the last bit."""
    scripted = reference
    proc = run_ppolab("train", *TINY, "--seed", "11", "--n-itr", "3", "--logdir", str(tmp_path / "b"),
                      env={"PYTORCH_JIT": "0"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "the fused epochs run from Python" in proc.stdout
    assert "from Python" not in (scripted / "train.log").read_text()
    assert without_timings(read_metrics(scripted)) == without_timings(read_metrics(only_run_dir(tmp_path / "b")))


def test_lhw_input_norm_steps_sets_the_normaliser_warm_up_in_whole_batches(tmp_path):
    """TINY's batch is 100 steps: 250 warm-up steps take 3 batches; 0 starts the normaliser from zeros (without
    the flag, one batch: the console tests see it). Through LHW's own entry point."""
    for steps, said in (("250", "Normalization initialized with 300 samples"),
                        ("0", "starts from zeros (--input-norm-steps 0)")):  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "run_experiment.py", "train", *TINY, "--n-itr", "1", "--seed", "1",
             "--input_norm_steps", steps, "--logdir", str(tmp_path / steps)],
            cwd=REPO, capture_output=True, text=True, env={**os.environ, "RAY_ADDRESS": ""}, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0 and said in proc.stdout, proc.stderr
