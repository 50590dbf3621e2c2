"""`ppolab doctor` never shows a secret; `ppolab repro` reproduces a seeded run."""

from __future__ import annotations

import os

from conftest import (
    AWS_ID,
    AWS_SECRET,
    HF_SECRET,
    REPO,
    SECRETS,
    TINY,
    WANDB_SECRET,
    clean_env,
    only_run_dir,
    read_metrics,
    run_ppolab,
    without_timings,
)


def test_doctor_reads_files_and_variables_and_never_prints_a_secret(tmp_path):
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".cache" / "huggingface").mkdir(parents=True)
    (home / ".netrc").write_text(f"machine api.wandb.ai\n  login user\n  password {WANDB_SECRET}\n")
    (home / ".aws" / "credentials").write_text(
        f"[default]\naws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_SECRET}\n"
    )
    (home / ".cache" / "huggingface" / "token").write_text(HF_SECRET)
    proc = run_ppolab("doctor", "--require", "wandb,aws,hf", base_env=clean_env(home))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("wandb", "aws", "hf"):
        assert any(line.split()[:2] == [name, "set"] for line in proc.stdout.splitlines()), proc.stdout
    assert not any(s in proc.stdout + proc.stderr for s in SECRETS)


def test_doctor_flags_placeholders_and_missing_and_fails_the_requirement(tmp_path):
    env = {**clean_env(tmp_path), "WANDB_API_KEY": "<your-key-here>", "HF_TOKEN": "changeme"}
    proc = run_ppolab("doctor", "--require", "wandb", base_env=env)
    assert proc.returncode == 1
    lines = {line.split()[0]: line.split()[1] for line in proc.stdout.splitlines() if line.startswith("  ")}
    assert lines["wandb"] == "placeholder" and lines["hf"] == "placeholder" and lines["aws"] == "missing"
    assert "<your-key-here>" not in proc.stdout and "changeme" not in proc.stdout
    assert run_ppolab("doctor", "--require", "github", base_env=env).returncode == 2


def test_training_and_sweeps_leave_no_secret_in_output_logs_or_state(tmp_path):
    env = {
        **clean_env(tmp_path),
        "WANDB_API_KEY": WANDB_SECRET,
        "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
        "AWS_ACCESS_KEY_ID": AWS_ID,
        "HF_TOKEN": HF_SECRET,
    }
    out = run_ppolab("train", *TINY, "--n-itr", "2", "--seed", "1", "--logdir", str(tmp_path / "logs"), base_env=env)
    assert out.returncode == 0, out.stderr
    sweep = tmp_path / "sweeps" / "s"
    sweep.mkdir(parents=True)
    (sweep / "sweep.yaml").write_text(
        "metadata: {name: s}\ndefaults: {env: cartpole, n_itr: 1, num_procs: 2, "
        "max_traj_len: 20, minibatch_size: 8, eval_episodes: 1}\nruns: {A: {name: a}}\n"
    )
    sw = run_ppolab("sweep", str(sweep), "--yes", base_env=env)
    assert sw.returncode == 0, sw.stdout + sw.stderr
    texts = [out.stdout, out.stderr, sw.stdout, sw.stderr]
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix not in (".pt",) and "home" not in path.parts:
            texts.append(path.read_text(errors="replace"))
    assert not any(s in t for s in SECRETS for t in texts)


def test_repro_prints_what_reproduces_a_run_and_run_gives_the_same_metrics(trained_run, tmp_path):
    env = {**os.environ}
    proc = run_ppolab("repro", str(trained_run), base_env=env)
    assert proc.returncode == 0
    assert "Command: ppolab train --env cartpole" in proc.stdout and "--seed 3" in proc.stdout
    assert "Git commit: " in proc.stdout and "Versions: ppolab " in proc.stdout and "Seed: 3" in proc.stdout
    again = run_ppolab("repro", str(trained_run), "--run", "--logdir", str(tmp_path), base_env=env)
    assert again.returncode == 0, again.stderr
    new = only_run_dir(tmp_path)
    assert new != trained_run
    assert without_timings(read_metrics(new)) == without_timings(read_metrics(trained_run))


def test_doctor_help_and_a_sweep_plan_start_without_importing_torch_or_mujoco(tmp_path):
    """They answer in about a second: torch (3-5 s to import here) is only loaded by commands that train, and
    MuJoCo (with the env classes) only by those that step an env; naming an env does not need it."""
    import subprocess
    import sys

    example = tmp_path / "example"  # a copy of the file alone, whatever the checkout's example holds
    example.mkdir()
    (example / "sweep.yaml").write_text((REPO / "experiments" / "sweeps" / "example" / "sweep.yaml").read_text())
    plan = ["sweep", str(example), "--dry-run"]
    for args in (["doctor"], ["--help"], ["sweep", "--help"], plan):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "ppolab", *args],
            capture_output=True, text=True, env=clean_env(tmp_path), timeout=120,
        )  # fmt: skip
        imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
        assert proc.returncode in (0, 1) and "torch" not in imported and "scipy" not in imported, args
        if args != ["doctor"]:  # doctor reports MuJoCo's version and rendering
            assert "mujoco" not in imported and "ppolab.envs.walk" not in imported, args
