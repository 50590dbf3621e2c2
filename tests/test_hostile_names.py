"""Names that are built to break out of the scripts and files ppolab writes: a sweep folder or matrix name with
`;`, `$()`, backticks, quotes or a newline must never run as code, and a control character is refused."""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import read_metrics, run_ppolab

SWEEP = """\
metadata: {name: hostile, hypothesis: "a name is only a name"}
defaults: {env: cartpole, n_itr: 2, num_procs: 2, max_traj_len: 20, minibatch_size: 20, eval_freq: 50,
           eval_episodes: 1}
seeds: [1]
runs:
  A: {name: control}
"""
# every way out of a shell word at once (one script run each: a run is the test's cost), then quotes and percents
HOSTILE = ["a;touch PWNED;b $(touch PWNED) `touch PWNED` x&&touch PWNED|touch PWNED", "it's 100%done"]


@pytest.mark.parametrize("name", HOSTILE)
def test_the_slurm_script_of_a_hostile_sweep_name_runs_its_sweep_and_nothing_else(tmp_path, name):
    sweep = tmp_path / "sweeps" / name
    sweep.mkdir(parents=True)
    (sweep / "sweep.yaml").write_text(SWEEP)
    shown = run_ppolab("slurm", str(sweep), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    script = tmp_path / "job.sh"
    script.write_text(shown.stdout)
    syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    env = {**os.environ, "RAY_ADDRESS": "", "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_JOB_ID": "7"}
    proc = subprocess.run(["bash", str(script)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not list(tmp_path.rglob("PWNED")), "a name ran as a command"
    runs = [p for p in (sweep / "runs").iterdir()]
    assert len(runs) == 1 and [r["iteration"] for r in read_metrics(runs[0]) if r["type"] == "iteration"] == [0, 1]
    output = next(line for line in shown.stdout.splitlines() if line.startswith("#SBATCH --output="))
    assert output.endswith('/slurm-%A_%a.out"') and str(sweep.resolve()).replace("%", "%%") in output


@pytest.mark.parametrize("name", ["new\nline", "tab\there", "esc\x1b[31m"])
def test_a_sweep_folder_with_a_control_character_is_refused_in_one_line(tmp_path, name):
    sweep = tmp_path / name
    sweep.mkdir()
    (sweep / "sweep.yaml").write_text(SWEEP)
    for args in (["slurm", str(sweep)], ["sweep", str(sweep), "--dry-run"]):
        proc = run_ppolab(*args, cwd=tmp_path)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "the sweep folder's name" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in sweep.iterdir()) == ["sweep.yaml"], "nothing written beside the sweep file"


def test_a_matrix_name_with_a_newline_is_refused_and_writes_nothing(tmp_path):
    proc = run_ppolab("matrix", "--command", "ppolab train --n-itr 2", "--env-ids", "cartpole", "--seeds", "1",
                      "--name", "m\ntouch PWNED", "--root", str(tmp_path), "--write", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2 and "--name 'm\\ntouch PWNED' has" in proc.stderr, proc.stdout + proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_matrix_slurm_listing_quotes_its_names(tmp_path):
    root = tmp_path / "a b"
    proc = run_ppolab("matrix", "--command", "ppolab train --n-itr 2", "--env-ids", "cartpole", "--seeds", "1",
                      "--name", "m;touch PWNED", "--root", str(root), "--format", "slurm", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    script = tmp_path / "job.sh"
    script.write_text(proc.stdout)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    exec_line = next(line for line in proc.stdout.splitlines() if line.startswith("exec "))
    assert "'" + str((root / "m;touch PWNED").resolve()) + "'" in exec_line


@pytest.mark.parametrize("name", ["$(touch PWNED)", "a;touch PWNED", "it's"])
def test_the_cloud_job_script_of_a_hostile_sweep_name_runs_its_run_and_nothing_else(tmp_path, name):
    import json
    import sys
    from pathlib import Path

    sweep = tmp_path / name
    sweep.mkdir()
    (sweep / "sweep.yaml").write_text(SWEEP)
    out_dir = tmp_path / "volume"
    proc = run_ppolab("cloud", str(sweep), "--output-dir", str(out_dir), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    job = json.loads(proc.stdout)["jobs"][0]
    shell, flag, script = job["containerOverrides"]["command"]
    env = {**os.environ, "RAY_ADDRESS": "", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    ran = subprocess.run([shell, flag, script], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert not list(tmp_path.rglob("PWNED")), "a name ran as a command"
    assert (out_dir / name / "runs" / "control-s1" / "last.pt").is_file()
