"""Preview-by-default launch commands: `ppolab matrix`, `ppolab container`, `ppolab cloud`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import AWS_ID, AWS_SECRET, REPO, WANDB_SECRET, clean_env, run_ppolab

BASE = "ppolab train --n-itr 2 --num-procs 2 --max-traj-len 20 --minibatch-size 8 --eval-episodes 1"


def test_matrix_lists_every_env_for_one_seed_before_the_next_seed():
    proc = run_ppolab("matrix", "--env-ids", "cartpole", "--num-seeds", "3", "--start-seed", "5", "--command", BASE)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("# 3 commands: 1 env x 3 seeds (5..7), seed-major")
    assert lines[1:] == [f"{BASE} --env cartpole --seed {s}" for s in (5, 6, 7)]


def test_matrix_order_is_seed_major_across_envs():
    from ppolab.ops.matrix import Matrix

    m = Matrix.from_command("ppolab train --n-itr 500", ["cartpole", "h1"], [1, 2])
    assert m.cells() == [(1, "cartpole"), (1, "h1"), (2, "cartpole"), (2, "h1")]
    assert m.commands()[1] == "ppolab train --n-itr 500 --env h1 --seed 1"


@pytest.mark.parametrize(
    "command,needle",
    [
        ("ppolab train --env cartpole", "--command sets --env"),
        ("ppolab train --seed=3", "--command sets --seed"),
        ("ppolab train --n-itr x", "--command: argument --n-itr"),
        ("ppolab eval --path x", "--format and --write are for ppolab train commands"),
    ],
)
def test_matrix_refuses_a_base_command_that_sets_what_it_varies(command, needle, tmp_path):
    proc = run_ppolab(
        "matrix", "--env-ids", "cartpole", "--command", command, "--format", "sweep", "--root", str(tmp_path)
    )
    assert proc.returncode == 2
    assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not any(tmp_path.iterdir())


def test_matrix_needs_allow_parallel_for_more_than_one_worker_and_says_why(tmp_path):
    proc = run_ppolab("matrix", "--env-ids", "cartpole", "--workers", "2", "--root", str(tmp_path))
    assert proc.returncode == 2 and "--allow-parallel" in proc.stderr and "compute-bound" in proc.stderr
    assert "compute-bound" in run_ppolab("matrix", "--help").stdout
    assert not any(tmp_path.iterdir())


def test_matrix_renders_a_slurm_script_without_writing_or_submitting(tmp_path):
    proc = run_ppolab(
        "matrix", "--env-ids", "cartpole", "--num-seeds", "4", "--command", BASE, "--format", "slurm",
        "--max-concurrent", "2", "--root", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("#!/bin/bash\n")
    assert "#SBATCH --array=0-3%2" in proc.stdout and "#SBATCH --requeue" in proc.stdout
    assert not any(tmp_path.iterdir())


def test_matrix_with_one_worker_runs_through_the_sweep_runner(tmp_path):
    env = {**os.environ, "PPOLAB_LOCK_DIR": str(tmp_path)}
    proc = run_ppolab(
        "matrix", "--env-ids", "cartpole", "--num-seeds", "2", "--command", BASE, "--workers", "1", "--yes",
        "--root", str(tmp_path / "sweeps"), "--name", "bench", base_env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sweep = tmp_path / "sweeps" / "bench"
    state = json.loads((sweep / "state.json").read_text())
    assert list(state["runs"]) == ["cartpole-s1", "cartpole-s2"]
    assert all(r["state"] == "done" for r in state["runs"].values())
    assert (sweep / "results.md").is_file()
    config = (sweep / "runs" / "cartpole-s2" / "config.yaml").read_text()
    assert "seed: 2" in config and "n_itr: 2" in config


def test_parallel_workers_run_jobs_side_by_side_when_allowed(tmp_path):
    env = {**os.environ, "PPOLAB_LOCK_DIR": str(tmp_path)}
    command = BASE.replace("--n-itr 2", "--n-itr 40")
    proc = run_ppolab(
        "matrix", "--env-ids", "cartpole", "--num-seeds", "2", "--command", command, "--workers", "2",
        "--allow-parallel", "--yes", "--verbose", "--root", str(tmp_path / "sweeps"), "--name", "par", base_env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = json.loads((tmp_path / "sweeps" / "par" / "state.json").read_text())["runs"]
    a, b = runs["cartpole-s1"], runs["cartpole-s2"]
    assert a["state"] == b["state"] == "done"
    lines = proc.stdout.splitlines()
    first = [i for i, line in enumerate(lines) if line.startswith("[cartpole-s1] ")]
    second = [i for i, line in enumerate(lines) if line.startswith("[cartpole-s2] ")]
    assert first and second and second[0] < first[-1]  # the two trained at once: their lines interleave


def test_container_prints_commands_and_passes_secrets_by_name_only():
    env = {**os.environ, "WANDB_API_KEY": WANDB_SECRET}
    proc = run_ppolab("container", "--cuda", "cu128", "--push", "ghcr.io/lab", base_env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("docker build -t ppolab:") and "--build-arg TORCH_VARIANT=cu128" in lines[0]
    assert lines[0].endswith(str(REPO))
    run = next(line for line in lines if line.startswith("docker run"))
    assert "--gpus all" in run and "-e WANDB_API_KEY " in run
    assert any(line.startswith("docker push ghcr.io/lab/ppolab:") for line in lines)
    assert WANDB_SECRET not in proc.stdout + proc.stderr
    assert "preview only" in lines[-1]
    assert (REPO / "Dockerfile").read_text().count("ARG TORCH_VARIANT=cpu") == 1


def test_container_execute_says_why_when_docker_cannot_build():
    if _has("docker") and subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
        pytest.skip("a Docker engine is running here: --execute would really build")
    proc = run_ppolab("container", "--execute")
    assert proc.returncode == 2 and "--execute:" in proc.stderr and "Traceback" not in proc.stderr


def _has(cmd: str) -> bool:
    import shutil

    return shutil.which(cmd) is not None


def _sweep(tmp_path):
    d = tmp_path / "sweeps" / "c"
    d.mkdir(parents=True)
    (d / "sweep.yaml").write_text(
        "metadata: {name: cloudy}\ndefaults: {env: cartpole, n_itr: 100}\nseeds: [1, 2]\n"
        "runs: {A: {name: control}, B: {name: clip03, config: {clip: 0.3}}}\n"
    )
    return d


def test_cloud_prints_a_job_definition_and_one_submission_per_run(tmp_path):
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:ppolab/wandb-AbCdEf"
    proc = run_ppolab(
        "cloud", str(_sweep(tmp_path)), "--provider", "aws-batch", "--job-queue", "gpu-q", "--vcpus", "8",
        "--memory", "32000", "--gpus", "1", "--retries", "4", "--secret", f"WANDB_API_KEY={arn}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    definition = doc["jobDefinition"]["containerProperties"]
    assert {"type": "GPU", "value": "1"} in definition["resourceRequirements"]
    assert definition["secrets"] == [{"name": "WANDB_API_KEY", "valueFrom": arn}]
    assert doc["jobDefinition"]["retryStrategy"]["attempts"] == 4
    jobs = doc["jobs"]
    assert [j["jobName"] for j in jobs] == [  # the sweep's one name, its folder's, not its title (cloudy)
        "c-control-s1",
        "c-control-s2",
        "c-clip03-s1",
        "c-clip03-s2",
    ]
    assert all(j["jobQueue"] == "gpu-q" for j in jobs)
    script = jobs[2]["containerOverrides"]["command"][2]
    assert "--clip 0.3" in script and "--seed 1" in script and "--resume /mnt/ppolab/c/runs/clip03-s1" in script


def test_cloud_refuses_a_literal_secret_without_echoing_it(tmp_path):
    proc = run_ppolab("cloud", str(_sweep(tmp_path)), "--secret", f"WANDB_API_KEY={WANDB_SECRET}")
    assert proc.returncode == 2 and "--secret WANDB_API_KEY" in proc.stderr and "ARN" in proc.stderr
    assert WANDB_SECRET not in proc.stdout + proc.stderr


def test_cloud_execute_needs_ready_credentials(tmp_path):
    sweep = _sweep(tmp_path)
    proc = run_ppolab("cloud", str(sweep), "--execute", base_env=clean_env(tmp_path))
    assert proc.returncode == 2 and "AWS credentials are missing" in proc.stderr
    env = {**clean_env(tmp_path), "AWS_ACCESS_KEY_ID": AWS_ID, "AWS_SECRET_ACCESS_KEY": AWS_SECRET}
    proc = run_ppolab("cloud", str(sweep), "--execute", base_env=env)
    if not _has("aws"):
        assert proc.returncode == 2 and "AWS CLI" in proc.stderr
    assert AWS_SECRET not in proc.stdout + proc.stderr


def test_matrix_runs_any_program_with_env_and_seed_flags_appended_as_cleanrl_does(tmp_path):
    program = tmp_path / "bench.py"
    program.write_text(
        "import sys, pathlib\npathlib.Path(sys.argv[-1] + sys.argv[-3]).write_text(' '.join(sys.argv[1:]))\n"
    )
    command = f"{sys.executable} {program}"
    listing = run_ppolab("matrix", "--env-ids", "Hopper-v4", "Ant-v4", "--num-seeds", "2", "--command", command)
    assert listing.returncode == 0, listing.stderr
    assert listing.stdout.splitlines()[1:] == [
        f"{command} --env-id {env} --seed {seed}" for seed in (1, 2) for env in ("Hopper-v4", "Ant-v4")
    ]  # seed-major, CleanRL's flag names
    ran = run_ppolab(
        "matrix", "--env-ids", "Hopper-v4", "--num-seeds", "2", "--command", command, "--env-flag=--task",
        "--workers", "1", "--yes", cwd=tmp_path, env={"PPOLAB_LOCK_DIR": str(tmp_path)},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "Matrix finished: 2/2 commands succeeded" in ran.stdout
    assert (tmp_path / "1Hopper-v4").read_text() == "--task Hopper-v4 --seed 1"
    assert (tmp_path / "2Hopper-v4").exists()
