"""`ppolab slurm` against a real single-node Slurm (Debian's slurm-wlm and munge on this machine).

The fixture starts the cluster with scripts/slurm_local.sh when it is not up
(.ci/run starts it first); without root or packages the tests skip and say why.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, wait_until

SWEEP = """\
metadata: {{name: {name}, hypothesis: "clip 0.3 is no worse"}}
defaults: {{env: cartpole, n_itr: {n_itr}, num_procs: 2, max_traj_len: 50, minibatch_size: 32,
           eval_freq: 50, eval_episodes: 1}}
seeds: [1]
runs:
  A: {{name: control}}
  B: {{name: clip03, config: {{clip: 0.3}}}}
"""


def _slurm_up() -> bool:
    if not shutil.which("sinfo"):
        return False
    out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30)
    return out.returncode == 0 and any(s in out.stdout for s in ("idle", "mixed", "allocated"))


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A Slurm for this module's tests: the one running, or one started here and stopped when every test
    worker is done with it (pytest-xdist may run this module's tests on several workers at once: a lock
    file beside the workers' folders is held shared while a worker uses Slurm, exclusively to start or stop it)."""
    with open(tmp_path_factory.getbasetemp().parent / "slurm.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker at a time looks and starts
        started = False
        if not _slurm_up():
            if os.geteuid() != 0:
                pytest.skip("no Slurm running, and starting one needs root: sudo bash scripts/slurm_local.sh start")
            proc = subprocess.run(["bash", str(REPO / "scripts" / "slurm_local.sh"), "start"], capture_output=True,
                                  text=True, timeout=900)  # fmt: skip
            if proc.returncode != 0:
                pytest.skip(f"could not start a local Slurm: {(proc.stderr or proc.stdout).strip()[-300:]}")
            started = True
        fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            yield
        finally:
            if started:
                fcntl.flock(lock, fcntl.LOCK_EX)  # waits for the other workers' Slurm tests to finish
                subprocess.run(["bash", str(REPO / "scripts" / "slurm_local.sh"), "stop"], timeout=60)


def ppolab(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ppolab", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def make_sweep(tmp_path: Path, name: str, n_itr: int) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "sweep.yaml").write_text(textwrap.dedent(SWEEP.format(name=name, n_itr=n_itr)))
    return d


def states(d: Path) -> dict:
    return json.loads((d / "state.json").read_text())


def iterations(run_dir: Path) -> list[int]:
    from ppolab.analysis.parse import read_jsonl

    path = run_dir / "metrics.jsonl"
    return [r["iteration"] for r in read_jsonl(path).iterations] if path.exists() else []


def test_a_two_run_sweep_completes_as_a_job_array(slurm, tmp_path):
    d = make_sweep(tmp_path, "arr", n_itr=5)
    preview = ppolab("slurm", str(d), "--cpus-per-task", "1", "--mem", "1G", "--time", "10:00", cwd=tmp_path)
    assert preview.returncode == 0 and "#SBATCH --array=0-1" in preview.stdout
    assert not (d / "state.json").exists() and not (d / "slurm.sbatch").exists()  # preview changes nothing

    sub = ppolab("slurm", str(d), "--cpus-per-task", "1", "--mem", "1G", "--time", "10:00", "--submit", cwd=tmp_path)
    assert sub.returncode == 0, sub.stderr
    job_id = states(d)["slurm"]["job_id"]
    assert f"Submitted Slurm job {job_id}" in sub.stdout

    wait_until(lambda: all(r["state"] == "done" for r in states(d)["runs"].values()), "both runs done", every=1)
    for name in ("control-s1", "clip03-s1"):
        assert iterations(d / "runs" / name) == list(range(5))
        assert states(d)["runs"][name]["slurm_task"].startswith(f"{job_id}_")
    wait_until(lambda: (d / "results.md").is_file(), "the report of the last task", every=1.0)
    status = ppolab("sweep", str(d), "--status", cwd=tmp_path)
    assert "Slurm" in status.stdout.splitlines()[0]

    def both_completed() -> bool:  # Slurm's own view trails the runs' state by its epilog (COMPLETING)
        out = ppolab("sweep", str(d), "--status", cwd=tmp_path).stdout
        return f"{job_id}_0 COMPLETED" in out and f"{job_id}_1 COMPLETED" in out

    wait_until(both_completed, "Slurm shows both tasks COMPLETED", every=1.0)

    again = ppolab("slurm", str(d), "--submit", cwd=tmp_path)
    assert again.returncode == 0 and "nothing to submit" in again.stdout


def test_a_requeued_task_resumes_its_run_from_the_checkpoint(slurm, tmp_path):
    d = make_sweep(tmp_path, "requeue", n_itr=120)
    sub = ppolab(
        "slurm", str(d), "--cpus-per-task", "2", "--mem", "1G", "--time", "10:00", "--max-concurrent", "1",
        "--submit", cwd=tmp_path,
    )  # fmt: skip
    assert sub.returncode == 0, sub.stderr
    job_id = states(d)["slurm"]["job_id"]
    run_dir = d / "runs" / "control-s1"
    wait_until(lambda: len(iterations(run_dir)) >= 20, "20 iterations of the first run", every=1.0)
    subprocess.run(["scontrol", "requeue", f"{job_id}_0"], check=True)  # what preemption does

    wait_until(lambda: all(r["state"] == "done" for r in states(d)["runs"].values()), "both runs done", every=1)
    assert iterations(run_dir) == list(range(120))  # nothing lost, nothing repeated
    entry = states(d)["runs"]["control-s1"]
    assert entry["attempts"] == 2 and entry["reason"] is None
    log = (d / "logs" / "control-s1.log").read_text()
    assert "Training interrupted at iteration" in log and "Resuming" in log


def test_sweep_with_the_slurm_executor_submits_the_array(slurm, tmp_path):
    """`ppolab sweep DIR --executor slurm`: the same array as `ppolab slurm --submit`, chosen like any executor."""
    d = make_sweep(tmp_path, "viaexec", n_itr=3)
    sub = ppolab("sweep", str(d), "--yes", "--executor", "slurm", cwd=tmp_path)
    assert sub.returncode == 0, sub.stdout + sub.stderr
    job_id = states(d)["slurm"]["job_id"]
    assert f"Submitted Slurm job {job_id}" in sub.stdout
    wait_until(lambda: all(r["state"] == "done" for r in states(d)["runs"].values()), "both runs done", every=1)
    assert all(iterations(d / "runs" / n) == list(range(3)) for n in ("control-s1", "clip03-s1"))
