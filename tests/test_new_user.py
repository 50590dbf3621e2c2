"""What a new user tries first, the way other tools taught them: each ends in the run they meant, or in one
line saying what to do, never a traceback."""

from __future__ import annotations

import shutil
import subprocess
import sys

from conftest import REPO, run_ppolab


def test_eval_takes_a_run_as_its_argument_or_as_logdir(trained_run):
    for args in (
        ["eval", str(trained_run)],
        ["eval", "--logdir", str(trained_run)],
        ["eval", "--path", str(trained_run)],
    ):
        proc = run_ppolab(*args, "--episodes", "1", "--max-steps", "5")
        assert proc.returncode == 0, (args, proc.stderr)
        assert "Episode" in proc.stdout or "episode" in proc.stdout, proc.stdout
    both = run_ppolab("eval", str(trained_run), "--path", str(trained_run))
    assert both.returncode == 2 and "both name the policy" in both.stderr and both.stderr.count("\n") == 1


def test_the_deploy_example_on_a_stepping_policy_is_one_line(tmp_path):
    assert (
        run_ppolab("export", str(REPO / "pretrained" / "jvrc_step"), "--onnx", str(tmp_path / "s.onnx")).returncode == 0
    )
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "deploy_mujoco.py"), str(tmp_path / "s.onnx")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2 and "not a walking policy" in proc.stderr and "Traceback" not in proc.stderr


def test_run_experiment_outside_the_venv_says_to_set_up(tmp_path):
    """An interpreter without ppolab's packages (a bare venv) gets the set-up line, not a ModuleNotFoundError."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    script = tmp_path / "run_experiment.py"
    shutil.copy(REPO / "run_experiment.py", script)
    proc = subprocess.run([str(bare / "bin" / "python"), str(script), "train", "--env", "cartpole"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "is not installed for" in proc.stderr and "bash scripts/setup.sh" in proc.stderr
    assert proc.stderr.count("\n") == 1
