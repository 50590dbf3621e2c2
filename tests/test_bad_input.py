"""A user mistake gets one clear line naming the flag and exit code 2, before any work starts."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO, TINY, iterations_logged, run_ppolab, wait_until

CASES = {
    "unknown env": (["train", "--env", "pendulum"], "--env: unknown env 'pendulum'; choose one of: berkeley_stand"),
    "negative lr": (["train", "--env", "cartpole", "--lr", "-0.1"], "--lr: Input should be greater than 0"),
    "not a number": (["train", "--env", "cartpole", "--lr", "fast"], "argument --lr: invalid float value: 'fast'"),
    "minibatch larger than batch": (
        ["train", "--env", "cartpole", "--num-procs", "2", "--max-traj-len", "10", "--minibatch-size", "64"],
        "minibatch_size 64 is larger than the batch (--num-procs x --num-envs-per-worker x --max-traj-len = 20)",
    ),
    "rollouts longer than episodes": (
        ["train", "--env", "cartpole", "--max-traj-len", "100", "--steps-per-env", "200"],
        "--steps-per-env 200 is longer than an episode (--max-traj-len 100); lower it",
    ),
    "continued episodes with an LSTM": (
        ["train", "--env", "cartpole", "--steps-per-env", "100", "--recurrent"],
        "--steps-per-env: a recurrent actor's update starts every segment from a zero state",
    ),
    "gamma above one": (
        ["train", "--env", "cartpole", "--gamma", "1.5"],
        "--gamma: Input should be less than or equal to 1",
    ),
    "missing env": (["train", "--n-itr", "3"], "--env is required"),
    "absurd epochs": (
        ["train", "--env", "cartpole", "--epochs", "99999999999999999999999"],
        "--epochs: Input should be less than or equal to 10000",
    ),
    "absurd eval episodes": (
        ["train", "--env", "cartpole", "--eval-episodes", "10000000"],
        "--eval-episodes: Input should be less than or equal to 10000",
    ),
    "a batch that cannot fit": (
        ["train", "--env", "cartpole", "--num-procs", "60000", "--max-traj-len", "1000"],
        "a batch of 60,000,000 samples (at most 50,000,000",
    ),
    "networks that cannot fit": (
        ["train", "--env", "cartpole", "--hidden-sizes", "20000", "20000"],
        "--hidden-sizes: 400,000,000 weights between hidden layers (at most 100,000,000",
    ),
    "unknown flag": (["train", "--env", "cartpole", "--lerning-rate", "1"], "unknown argument --lerning-rate"),
    "continued path missing": (
        ["train", "--env", "cartpole", "--continued", "/nonexistent/actor.pt"],
        "--continued: /nonexistent/actor.pt: no such file",
    ),
    "resume path missing": (["train", "--resume", "/nonexistent/run"], "--resume: /nonexistent/run is not a folder"),
    "eval path missing": (["eval", "--path", "/nonexistent/run"], "--path: /nonexistent/run: no such file"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_line_exit_2_no_traceback_no_run_folder(case, tmp_path):
    args, expected = CASES[case]
    if args[0] == "train":
        args = [*args, "--logdir", str(tmp_path / "logs")] if "--resume" not in args else args
    proc = run_ppolab(*args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert expected in lines[0]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "logs").exists() or not any((tmp_path / "logs").iterdir())


def test_unreadable_continued_checkpoint(tmp_path):
    bad = tmp_path / "actor.pt"
    bad.write_bytes(b"this is not a checkpoint")
    proc = run_ppolab("train", "--env", "cartpole", "--continued", str(bad), "--logdir", str(tmp_path / "logs"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"ppolab train: error: --continued: {bad}: "
        "not a readable checkpoint (truncated, corrupt, or not saved by ppolab)"
    )


def test_resume_folder_without_checkpoint(tmp_path):
    proc = run_ppolab("train", "--resume", str(tmp_path))
    assert proc.returncode == 2
    assert "last.pt is missing; no completed iteration to resume from" in proc.stderr


def test_resume_refuses_to_change_the_configuration(trained_run):
    proc = run_ppolab("train", "--resume", str(trained_run), "--lr", "0.1")
    assert proc.returncode == 2
    assert "drop --lr (only --n-itr and --time-limit may change)" in proc.stderr


def test_continued_from_a_different_network_shape(trained_run, tmp_path):
    proc = run_ppolab(
        "train", *TINY, "--continued", str(trained_run), "--hidden-sizes", "32", "--logdir", str(tmp_path)
    )
    assert proc.returncode == 2
    assert "does not match this network (check --hidden-sizes and --recurrent)" in proc.stderr


def test_run_experiment_without_the_dependencies_says_how_to_set_up():
    import subprocess
    import sys

    # -S: no site-packages, as with an interpreter that has nothing installed
    proc = subprocess.run([sys.executable, "-S", "run_experiment.py", "train", "--env", "cartpole"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "set up first: `bash scripts/setup.sh`" in proc.stderr and "uv run python run_experiment.py" in proc.stderr


def test_train_takes_the_machine_lock_and_no_lock_skips_it(tmp_path):
    """A second `ppolab train` waits for the first and says for whom; --no-lock trains at once."""
    import os
    import select
    import signal
    import subprocess
    import sys

    env = {**os.environ, "RAY_ADDRESS": "", "PPOLAB_LOCK_DIR": str(tmp_path)}
    base = [sys.executable, "-m", "ppolab", "train", *TINY, "--logdir", str(tmp_path / "runs")]
    first = subprocess.Popen([*base, "--n-itr", "2000", "--run-name", "first"], env=env, stdout=subprocess.DEVNULL)
    wait_until(iterations_logged(tmp_path / "runs" / "first"), "the first run's first iteration", alive=first)
    first.send_signal(signal.SIGSTOP)  # it holds the lock; paused, it leaves the cores to the rest of the suite
    second = subprocess.Popen(
        [*base, "--n-itr", "1", "--run-name", "second"], env=env, stdout=subprocess.PIPE, text=True
    )
    ready, _, _ = select.select([second.stdout], [], [], 60)
    line = second.stdout.readline() if ready else ""
    assert line.startswith("Waiting for the machine lock, held by training run first of ")
    assert not (tmp_path / "runs" / "second").exists()
    free = subprocess.run([*base, "--n-itr", "1", "--run-name", "free", "--no-lock"], env=env, capture_output=True)
    assert free.returncode == 0 and (tmp_path / "runs" / "free" / "last.pt").exists()
    first.send_signal(signal.SIGTERM)
    first.send_signal(signal.SIGCONT)  # the stop request is handled once it runs again
    assert first.wait(60) == 130
    assert second.wait(120) == 0  # the lock passed on: it ran
    assert oct((tmp_path / "ppolab-train.lock").stat().st_mode & 0o777) == "0o666"  # any user can take it


def test_a_wandb_agent_command_line_drives_train(tmp_path):
    """`wandb agent` runs `${program} ${args}`: every flag as --key=value, booleans as True/False, and
    LearningHumanoidWalking's underscore spellings."""
    args = ["--env=cartpole", "--lr=0.001", "--learn_std=True", "--mirror=False", "--n_itr=1", "--num_procs=2",
            "--max_traj_len=40", "--minibatch-size=16", f"--logdir={tmp_path}", "--run-name=agent"]  # fmt: skip
    proc = run_ppolab("train", *args)
    assert proc.returncode == 0, proc.stderr
    import yaml

    cfg = yaml.safe_load((tmp_path / "agent" / "config.yaml").read_text())
    assert (cfg["lr"], cfg["learn_std"], cfg["mirror"], cfg["n_itr"], cfg["num_procs"]) == (0.001, True, False, 1, 2)
    bad = run_ppolab("train", "--env=cartpole", "--learn-std=maybe")
    assert bad.returncode == 2 and "expected true or false, got 'maybe'" in bad.stderr
    typo = run_ppolab("train", "--env", "cartpole", "--entropy-coff", "0.01")
    assert typo.returncode == 2
    assert typo.stderr.strip() == (
        "ppolab train: error: unknown argument --entropy-coff; did you mean --entropy-coeff? (see ppolab train --help)"
    )
    proc = run_ppolab("train", "--env", "cartpole", "--anneal", "1")
    assert proc.returncode == 2 and "--anneal (LearningHumanoidWalking): in ppolab, drop it" in proc.stderr
    assert "did you mean" not in proc.stderr


def test_the_command_line_a_wandb_sweep_agent_builds_trains_with_those_values(tmp_path):
    """`wandb agent` runs `${interpreter} ${program} ${args}`: every parameter as --key=value, booleans as True/False,
    keys as the sweep config spells them (LearningHumanoidWalking's underscores here)."""
    import yaml

    args = {"env": "cartpole", "learn_std": True, "lr": 0.0003, "n_itr": 2, "num_procs": 2, "max_traj_len": 50,
            "minibatch_size": 32, "eval_freq": 1, "logdir": str(tmp_path), "run_name": "agent"}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "run_experiment.py", "train", *(f"--{k}={v}" for k, v in args.items()), "--no-lock"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    cfg = yaml.safe_load((tmp_path / "agent" / "config.yaml").read_text())
    assert cfg["learn_std"] is True and cfg["lr"] == 0.0003 and cfg["n_itr"] == 2 and cfg["max_traj_len"] == 50
