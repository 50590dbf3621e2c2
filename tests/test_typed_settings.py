"""Settings cross the sweep-to-job and trainer-to-worker boundaries typed, validated once where they are made:
a TrainCall carries a TrainConfig, an env's settings are an EnvSettings that a worker process rebuilds."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest
from conftest import REPO

from ppolab.envs import EnvSettings, env_config, make_env
from ppolab.errors import UserError
from ppolab.experiments.plan import TrainCall
from ppolab.runner.config import TrainConfig
from ppolab.runner.entry import TrainRequest


def test_a_train_call_carries_its_settings_validated_with_the_preset(tmp_path):
    call = TrainCall.fresh({"env": "g1_walk", "seed": 4, "lr": 3e-4}, tmp_path, "preset-s4")
    assert isinstance(call.config, TrainConfig)
    assert (call.config.n_itr, call.config.check_every, call.config.run_name) == (3000, 100, "preset-s4")
    assert call.argv == ["ppolab", "train", "--env", "g1_walk", "--seed", "4", "--lr", "0.0003", "--logdir",
                         str(tmp_path), "--run-name", "preset-s4"]  # fmt: skip
    assert pickle.loads(pickle.dumps(call)).config == call.config  # what a job's process receives
    with pytest.raises(UserError, match="--lr"):
        TrainCall.fresh({"env": "g1_walk", "lr": -1}, tmp_path, "bad")
    with pytest.raises(UserError, match="--mirror-coeff: env cartpole has no mirror symmetry"):
        TrainRequest.of({"env": "cartpole", "mirror_coeff": 1.0})
    with pytest.raises(UserError, match="only --n-itr and --time-limit may change"):
        TrainRequest.of({"lr": 1e-3}, resume=tmp_path)


def test_env_settings_are_validated_once_and_a_user_robot_s_cross_to_another_process(tmp_path):
    robot = tmp_path / "typedbot.yaml"
    robot.write_text(
        (REPO / "ppolab" / "envs" / "robots" / "t1.yaml").read_text().replace("name: t1", "name: typedbot")
    )
    settings = env_config.resolve("typedbot_walk", None, str(robot))
    assert isinstance(settings, EnvSettings) and settings.config.rewards.heading == pytest.approx(0.125)
    env = make_env("typedbot_walk", 2, settings)
    assert env.cfg is settings.config  # taken as it is, not validated again
    blob = pickle.dumps(settings)  # a sampler's worker gets it so: a run-time config class cannot be pickled
    code = (
        "import pickle, sys; from ppolab.envs import make_env; s = pickle.loads(sys.stdin.buffer.read()); "
        "e = make_env(s.env, 1, s); print(e.name, e.act_dim, e.cfg.model_dump(mode='json') == s.data())"
    )
    proc = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().split() == ["typedbot_walk", str(env.act_dim), "True"]


def test_a_robot_file_changed_in_the_same_process_is_the_one_used(tmp_path):
    """A notebook that edits its robot file and builds the env again gets the file as it is now."""
    robot = tmp_path / "samebot.yaml"
    text = (REPO / "ppolab" / "envs" / "robots" / "t1.yaml").read_text().replace("name: t1", "name: samebot")
    robot.write_text(text)
    first = env_config.resolve("samebot_walk", None, str(robot))
    robot.write_text(text.replace("description:", "description: changed,", 1))
    second = env_config.resolve("samebot_walk", None, str(robot))
    assert not first.config.robot.description.startswith("changed")
    assert second.config.robot.description.startswith("changed")
    assert make_env("samebot_walk", 1).robot_file.description.startswith("changed")
