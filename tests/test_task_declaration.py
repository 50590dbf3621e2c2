"""A task is one module plus its registration: what it declares (protocol.TaskInfo) is what its callers read.

The toy task below is written as a user would add one: a RobotTask subclass with its reward table, its checks
and its preset, registered with `register_task` (and its check with `register_check`). Nothing else in ppolab
changes, and it runs on every robot file, trains, logs its reward terms and is checked."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import REPO

from ppolab.envs import ENVS, make_env, register_robot, robot_file
from ppolab.envs.protocol import TaskInfo
from ppolab.envs.reward_terms import EXP, LINEAR, RewardTable, Term
from ppolab.envs.robot_task import RobotTask, RobotTaskConfig
from ppolab.envs.task_registry import register_task, task_names, unregister_task

TOY_TERMS = RewardTable(
    Term("alive", 0.5, LINEAR, 1.0, lambda t: np.ones(t.num_envs), doc="1 a step"),
    Term("still", 0.5, EXP, 2.0, lambda t: np.sum(t.batch.qvel[:, :3] ** 2, axis=1), doc="the root's speed, squared"),
)
ToyRewards = TOY_TERMS.weights_model("ToyRewards", "The toy task's weights.")


class ToyConfig(RobotTaskConfig):
    rewards: ToyRewards = ToyRewards()  # type: ignore[valid-type]


class ToyTask(RobotTask):
    """Stay up without moving (a toy task)"""

    task = "toy"
    info = TaskInfo("toy", checks=("upright",), preset={"n_itr": 7, "max_traj_len": 50}, servos=True)
    Config = ToyConfig

    def __init__(self, num_envs: int, config: ToyConfig | None = None) -> None:
        super().__init__(num_envs, config)
        self.layout = self.observation_layout([])
        self.obs_dim, self.act_dim = self.layout["joint_vel"].stop, self.n_legs
        self.symmetry = self.mirrored([], [])
        self.rewards = TOY_TERMS.bind(self, self.cfg.rewards)

    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        self.batch.reset_one(i, rng)

    def observe(self) -> np.ndarray:
        return self.batch.noisy(self.proprioception(), self.layout)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self.batch.apply(action)
        return self.observe(), self.rewards.compose(), self.fallen()


def upright(subject, gate: bool = False) -> dict:
    """The toy task's one check: a second under the policy's mean action, every env still up."""
    from ppolab.evaluation.behaviour import _run, _start, _verdict

    env, actor = _start(subject, 2)
    alive, _ = _run(env, actor, round(1.0 / env.cfg.control_dt), gate=gate)
    return _verdict({"still_up": int(alive.sum())}, {"one fell": bool(alive.all())})


@pytest.fixture(scope="module")
def toy():
    from ppolab.evaluation.behaviour import CHECKS, register_check

    register_task(ToyTask)
    register_check("upright", upright)
    yield ToyTask
    unregister_task("toy")  # the tests after these see ppolab's tasks alone (`--help` lists every env)
    CHECKS.pop("upright")


def test_a_registered_task_runs_on_every_robot_file_with_what_it_declares(toy, tmp_path):
    assert "toy" in task_names() and {"jvrc_toy", "g1_toy", "t1_toy"} <= set(ENVS)
    env = make_env("g1_toy", 3)
    for i in range(3):
        env.reset_one(i, np.random.default_rng(i))
    _, reward, _ = env.step(np.zeros((3, env.act_dim)))
    assert env.rewards.names == ("alive", "still") and np.allclose(env.rewards.terms.sum(axis=1), reward)
    assert ENVS["g1_toy"].info.checks == ("upright",) and ENVS["g1_toy"].name == "g1_toy"

    from ppolab.runner.config import TrainConfig
    from ppolab.runner.presets import PRESET_FIELDS

    assert TrainConfig(env="jvrc_toy").n_itr == 7  # its preset
    assert set(toy.info.preset) <= PRESET_FIELDS
    # a user's robot file gets it too, and its `tasks:` section may set the toy task's settings
    data = robot_file.read(REPO / "ppolab" / "envs" / "robots" / "t1.yaml").model_dump(exclude={"source"})
    tasks = {**data["tasks"], "toy": {"goal_height": 0.6}}
    mine = robot_file.parse({**data, "name": "mybot", "tasks": tasks}, tmp_path / "mybot.yaml")
    assert "mybot_toy" in register_robot(mine)
    assert make_env("mybot_toy", 1).goal_height == pytest.approx(0.6)


def test_a_registered_task_trains_logs_its_terms_and_is_checked(toy, tmp_path):
    from ppolab.evaluation.behaviour import checks_of
    from ppolab.runner.entry import TrainRequest, run

    assert list(checks_of("jvrc_toy")) == ["upright"]
    config = {"env": "jvrc_toy", "n_itr": 2, "num_procs": 2, "hidden_sizes": [32, 32], "check_every": 1,
              "logdir": str(tmp_path), "seed": 3}  # fmt: skip
    assert run(TrainRequest.of(config, sampler_procs=1)) == 0
    run_dir = next(tmp_path.iterdir())
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    iterations = [r for r in records if r["type"] == "iteration"]
    assert all({"rewards/alive", "rewards/still"} <= set(r) for r in iterations) and len(iterations) == 2
    rounds = [r for r in records if r["type"] == "check"]
    assert rounds and all("upright.still_up" in r for r in rounds), rounds
