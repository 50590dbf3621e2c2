"""Training and sweeps on a real Ray cluster: a head and a worker node on loopback, started here."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import REPO, TINY, make_sweep, read_metrics, run_ppolab, wait_until, without_timings

RAY = Path(sys.executable).with_name("ray")
NODE = ["--num-cpus", "{cpus}", "--object-store-memory", "200000000", "--disable-usage-stats"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """`ray start --head` (2 CPUs) and a second node (1 CPU) joining it, both on 127.0.0.1."""
    if not RAY.exists():
        pytest.skip("ray is not installed")
    port = free_port()
    # Ray's token authentication, as a real cluster has it: every process of the test reads the token file
    token = tmp_path_factory.mktemp("ray") / "auth_token"
    token.write_text(secrets.token_hex(32))
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")}
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))
    env = {**os.environ, "RAY_ADDRESS": ""}
    head = [str(RAY), "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port)]
    groups = []  # each node's processes share the process group of the `ray start` that made them
    try:
        groups.append(start_node([*head, "--include-dashboard", "false", *(a.format(cpus=2) for a in NODE)], env))
        groups.append(
            start_node([str(RAY), "start", "--address", f"127.0.0.1:{port}", *(a.format(cpus=1) for a in NODE)], env)
        )
        yield f"127.0.0.1:{port}"
    finally:
        stop_nodes(groups)  # only the nodes started here: `ray stop` would stop every Ray on the machine
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def start_node(argv: list[str], env: dict) -> int:
    """`ray start` in a session of its own; its daemons inherit the process group, returned."""
    proc = subprocess.Popen(argv, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out.decode(errors="replace")[-2000:]
    return proc.pid


def stop_nodes(groups: list[int]) -> None:
    """SIGTERM every process of the given groups, then SIGKILL what is left after a grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for group in groups:
            try:
                os.killpg(group, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 15
        while sig == signal.SIGTERM and time.monotonic() < deadline and any(_alive(g) for g in groups):
            time.sleep(0.2)


def _alive(group: int) -> bool:
    """Whether a process of the group still runs (zombies waiting for init to reap them do not count)."""
    for proc in Path("/proc").iterdir():
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == group:
            return True
    return False


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (its children, theirs, ...), read from /proc."""
    found, todo = set(), [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*"):
            try:
                kids = {int(k) for k in (task / "children").read_text().split()}
            except OSError:
                continue
            todo.extend(kids - found)
            found |= kids
    return found


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting to be reaped is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def iterations(path: Path) -> int:
    return sum(1 for r in read_metrics(path) if r["type"] == "iteration") if (path / "metrics.jsonl").exists() else 0


def test_training_on_ray_survives_a_killed_worker_and_matches_the_local_backend(ray_cluster, tmp_path):
    args = [*TINY, "--n-itr", "100", "--seed", "3", "--sampler-procs", "2"]
    local = run_ppolab("train", *args, "--logdir", str(tmp_path / "local"), "--run-name", "r")
    assert local.returncode == 0, local.stderr

    proc = subprocess.Popen(
        [sys.executable, "-m", "ppolab", "train", *args, "--logdir", str(tmp_path / "ray"), "--run-name", "r"],
        cwd=REPO, env={**os.environ, "RAY_ADDRESS": ray_cluster}, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    header = ""
    for line in proc.stdout:
        header += line
        if "Ray actors" in line:
            break
    pids = [int(p) for p in re.search(r"\(pids ([\d, ]+)\)", header).group(1).split(", ")]
    assert len(pids) == 2 and f"cluster at {ray_cluster}" in header
    wait_until(lambda: iterations(tmp_path / "ray" / "r") >= 5, "5 iterations on Ray")
    os.kill(pids[1], signal.SIGKILL)  # what a lost node does to its actor
    rest = proc.stdout.read()
    assert proc.wait(120) == 0, rest
    assert re.search(r"Rollout worker 1 \(pid \d+ .*\) died: \w+\. Replaced; its part of iteration \d+", rest)
    assert "Training finished" in rest
    # the same batch and metrics as the local backend, worker death and all
    assert without_timings(read_metrics(tmp_path / "ray" / "r")) == without_timings(
        read_metrics(tmp_path / "local" / "r")
    )


def test_a_sweep_on_ray_runs_side_by_side_and_resumes_a_run_lost_with_its_worker(ray_cluster, tmp_path):
    d = make_sweep(tmp_path, n_itr=100)
    env = {"RAY_ADDRESS": ray_cluster, "PPOLAB_LOCK_DIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppolab", "sweep", str(d), "--yes", "--executor", "ray"],
        cwd=REPO, env={**os.environ, **env}, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip

    def state() -> dict:
        path = d / "state.json"
        return json.loads(path.read_text())["runs"] if path.exists() else {}

    wait_until(lambda: all(r.get("state") == "running" for r in state().values()) and state(), "both runs running")
    control = state()["control-s1"]
    worker_pid = int(control["ray_worker"].split()[1])
    wait_until(lambda: iterations(d / "runs" / "control-s1") >= 5, "5 iterations of control-s1")
    first_attempt = descendants(worker_pid)  # its `ppolab train` and that run's sampling workers
    assert first_attempt, "the Ray worker runs its training in a child process"
    os.kill(worker_pid, signal.SIGKILL)  # the Ray worker that ran the task is gone, as with its node
    wait_until(lambda: not any(running(p) for p in first_attempt), "the killed worker's training to end with it")
    out = proc.stdout.read()
    assert proc.wait(300) == 0, out
    assert "Run control-s1: lost with its Ray worker" in out and "submitted again" in out
    runs = state()
    assert {r["state"] for r in runs.values()} == {"done"}
    assert runs["control-s1"]["attempts"] == 2 and runs["clip03-s1"]["attempts"] == 1
    assert [r["iteration"] for r in read_metrics(d / "runs" / "control-s1") if r["type"] == "iteration"] == list(
        range(100)
    )  # resumed from its checkpoint: nothing lost, nothing repeated
    assert (d / "results.md").is_file()
    status = run_ppolab("sweep", str(d), "--status")
    assert status.returncode == 0 and status.stdout.count("| done") == 2 and "Ray worker" in status.stdout


def test_no_ray_address_means_the_local_backend_and_no_ray_at_all(tmp_path):
    code = (
        "import sys; from ppolab.cli.main import main; main(sys.argv[1:]); "
        "print('RAY_IMPORTED' if 'ray' in sys.modules else 'NO_RAY')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "train", *TINY, "--n-itr", "1", "--logdir", str(tmp_path)],
        cwd=REPO, env={**os.environ, "RAY_ADDRESS": ""}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("NO_RAY") and "processes on" in proc.stdout


@pytest.mark.parametrize("address", ["127.0.0.1:1", "not-an-address"])
def test_a_wrong_ray_address_is_one_line_and_no_run_folder(tmp_path, address):
    proc = run_ppolab("train", *TINY, "--n-itr", "1", "--logdir", str(tmp_path / "logs"), env={"RAY_ADDRESS": address})
    assert proc.returncode == 2 and proc.stderr.startswith(f"ppolab train: error: RAY_ADDRESS={address}: ")
    assert len(proc.stderr.splitlines()) == 1 and not (tmp_path / "logs").exists()


def test_an_empty_ray_address_starts_a_private_cluster_whatever_a_dead_ones_file_says(tmp_path):
    """Ray's own default joins the cluster its current-cluster file names; after a `ray start` cluster died
    without `ray stop`, that file points at nothing and every run waited for the GCS timeout, then failed."""
    ray_tmp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))  # short: Ray's sockets live there (108-byte paths)
    (ray_tmp / "ray").mkdir()
    (ray_tmp / "ray" / "ray_current_cluster").write_text("127.0.0.1:1\n")  # a cluster that is gone
    try:
        proc = run_ppolab("train", *TINY, "--n-itr", "1", "--backend", "ray", "--logdir", str(tmp_path / "logs"),
                          env={"RAY_ADDRESS": "", "RAY_TMPDIR": str(ray_tmp)}, timeout=120)  # fmt: skip
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "a private local Ray" in proc.stdout
