"""The tests' fork server runs a command as a fresh interpreter would: same exit code and output, in the
caller's folder; a time-out kills it. (The CPUs and umask it passes on are what test_determinism_and_resume's
one-core run and test_damage's umask test rely on.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import REPO
from forkserver import ForkServer, can_serve


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    started = ForkServer(tmp_path_factory.mktemp("fs"))
    yield started
    started.close()


def fresh(args, cwd, env):
    return subprocess.run([sys.executable, "-m", "ppolab", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)  # fmt: skip


@pytest.mark.parametrize("args", [["--version"], ["train", "--no-such-flag"], ["robots"], ["sweep", "missing-dir"]])
def test_a_forked_command_gives_what_a_fresh_interpreter_gives(server, tmp_path, args):
    env = {**os.environ, "RAY_ADDRESS": "", "HOME": str(tmp_path)}
    served, real = server.run(args, tmp_path, env, 120), fresh(args, tmp_path, env)
    assert (served.returncode, served.stdout, served.stderr) == (real.returncode, real.stdout, real.stderr)


def test_the_fork_works_in_the_callers_folder(server, tmp_path):
    (tmp_path / "robot.yaml").write_text("robot: [unclosed\n")
    env = {**os.environ, "RAY_ADDRESS": ""}
    served = server.run(["robots", "check", "robot.yaml"], tmp_path, env, 120)  # a relative path: the cwd
    real = fresh(["robots", "check", "robot.yaml"], tmp_path, env)
    assert served.returncode == real.returncode == 2
    assert served.stderr == real.stderr and "robot.yaml" in served.stderr


def test_a_command_past_its_time_out_is_killed(server, tmp_path):
    env = {**os.environ, "RAY_ADDRESS": "", "PPOLAB_LOCK_DIR": str(tmp_path)}
    args = ["train", "--env", "cartpole", "--n-itr", "100000", "--logdir", str(tmp_path / "runs")]
    with pytest.raises(subprocess.TimeoutExpired):
        server.run(args, REPO, env, timeout=5)


def test_variables_read_at_import_send_a_command_to_a_fresh_interpreter():
    base = {"HOME": "/h", "MUJOCO_GL": "egl"}
    assert can_serve({**base, "HOME": "/other", "RAY_ADDRESS": ""}, base)
    assert not can_serve({**base, "MUJOCO_GL": "osmesa"}, base)
    assert not can_serve({**base, "PYTORCH_JIT": "0"}, base)
