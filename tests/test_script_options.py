"""Every option that ppolab writes into a script, a job definition or a shell line is held to the grammar of
what reads it: a value built to break out of its line is refused in one line naming the flag, and never runs."""

from __future__ import annotations

import subprocess

import pytest
from conftest import make_sweep, run_ppolab

BREAKOUTS = [
    "p\necho BROKE > {m}",
    "$(touch {m})",
    "`touch {m}`",
    "p'; touch {m}; '",
    'p" ; touch {m} #',
    "p;touch {m}",
]

SLURM_TEXT = ["--partition", "--time", "--mem"]
SLURM_INT = ["--cpus-per-task", "--gpus-per-task", "--max-concurrent"]
OPTIONS = (
    [("slurm", o) for o in SLURM_TEXT + SLURM_INT]
    + [("matrix", o) for o in SLURM_TEXT + SLURM_INT + ["--env-ids", "--env-flag", "--seed-flag"]]
    + [("container", o) for o in ["--tag", "--cuda", "--push"]]
    + [("cloud", o) for o in ["--job-queue", "--image", "--output-dir", "--secret", "--vcpus", "--memory", "--gpus",
                              "--retries"]]
)  # fmt: skip


def _argv(command: str, option: str, value: str, sweep) -> list[str]:
    if command == "slurm":
        return ["slurm", str(sweep), option, value]
    if command == "matrix":  # the sbatch script of a train command; another program's listing for its flags
        if option in ("--env-flag", "--seed-flag"):
            return ["matrix", "--env-ids", "Hopper-v4", "--command", "python train.py", option, value]
        if option == "--env-ids":
            return ["matrix", "--command", "python train.py", "--env-ids", value]
        return ["matrix", "--env-ids", "cartpole", "--format", "slurm", option, value]
    if command == "cloud":
        return ["cloud", str(sweep), option, value]
    return ["container", option, value]


@pytest.mark.parametrize(("command", "option"), OPTIONS)
def test_an_option_built_to_break_out_is_refused_in_one_line(tmp_path, command, option):
    sweep = make_sweep(tmp_path)
    for template in BREAKOUTS:
        marker = tmp_path / "broke"
        value = template.format(m=marker)
        proc = run_ppolab(*_argv(command, option, value, sweep), cwd=tmp_path)
        assert proc.returncode == 2, (option, value, proc.stdout[-500:], proc.stderr)
        assert option in proc.stderr and proc.stderr.count("\n") == 1, (option, value, proc.stderr)
        assert str(marker) not in proc.stdout and not marker.exists(), (option, value)


def test_the_good_forms_of_each_option_are_taken(tmp_path):
    sweep = make_sweep(tmp_path)
    for argv in (
        ["slurm", str(sweep), "--partition", "gpu,cpu", "--time", "2-00:00:00", "--mem", "8000M"],
        ["matrix", "--env-ids", "cartpole", "--format", "slurm", "--partition", "short", "--time", "90:00"],
        ["container", "--tag", "registry.example.com:5000/team/ppolab:v1", "--cuda", "cu128", "--push", "ghcr.io/me"],
        ["cloud", str(sweep), "--job-queue", "gpu_queue-1", "--image", "ghcr.io/me/ppolab:0.1.0", "--output-dir",
         "/mnt/efs/ppolab"],
    ):  # fmt: skip
        proc = run_ppolab(*argv, cwd=tmp_path)
        assert proc.returncode == 0, (argv, proc.stderr)


def test_another_programs_command_is_listed_as_words_that_run_as_given(tmp_path):
    """--command is the user's own program: its words are quoted into each listed line, so running a line
    runs that program with those words, and nothing else."""
    marker = tmp_path / "broke"
    proc = run_ppolab("matrix", "--env-ids", "Hopper-v4", "--command", f"echo 'hi; touch {marker}' $HOME",
                      "--seeds", "1", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    line = proc.stdout.splitlines()[-1]
    ran = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=tmp_path)
    assert ran.stdout == f"hi; touch {marker} $HOME --env-id Hopper-v4 --seed 1\n" and not marker.exists()
