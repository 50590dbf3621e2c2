"""`<robot>_stand`: LearningHumanoidWalking's standing task on any robot file.

Stand still at the nominal height: LHW's terms reward no horizontal velocity and no yaw rate,
the height, the upper body over the root, the nominal posture and small torques.
Observation: the robot state only (as LHW's H1 standing env).
"""

from __future__ import annotations

import numpy as np

from ppolab.envs.reward_terms import EXP, RewardTable, Term
from ppolab.envs.robot_task import RobotTask, RobotTaskConfig
from ppolab.envs.task_registry import task_info


def _legs_off(t) -> np.ndarray:
    b = t.batch
    return np.sum((b.qpos[:, b.layout.leg_qpos] - b.nominal_leg) ** 2, axis=1)


STAND_TERMS = RewardTable(  # LearningHumanoidWalking's standing terms (the weights sum to 1)
    Term(
        "velocity",
        0.3,
        EXP,
        4.0,
        lambda t: np.sum(t.batch.qvel[:, 0:2] ** 2, axis=1),
        doc="the root's horizontal velocity, squared",
    ),
    Term("yaw_rate", 0.3, EXP, 4.0, lambda t: t.batch.qvel[:, 5] ** 2, doc="the yaw rate, squared"),
    Term(
        "height",
        0.1,
        EXP,
        0.5,
        lambda t: (t.batch.qpos[:, 2] - t.goal_height) ** 2,
        doc="the root height's error, squared",
    ),
    Term(
        "upper_body",
        0.1,
        EXP,
        40.0,
        lambda t: np.sum(t.head_offset() ** 2, axis=1),
        doc="the head's horizontal offset over the root, squared",
    ),
    Term("torque", 0.1, EXP, 5e-5, lambda t: np.sum(t.batch.torque**2, axis=1), doc="the legs' torques, squared"),
    Term("posture", 0.1, EXP, 1.0, _legs_off, doc="the legs' squared distance from the nominal pose"),
)
StandRewards = STAND_TERMS.weights_model("StandRewards", "The standing terms' weights (stand.STAND_TERMS).")


class StandConfig(RobotTaskConfig):
    """LHW's standing task; a robot file's `tasks: stand:` changes any of it."""

    rewards: StandRewards = StandRewards()  # type: ignore[valid-type]


class StandTask(RobotTask):
    """Stand still at the nominal pose"""

    task = "stand"
    info = task_info("stand")
    Config = StandConfig

    def __init__(self, num_envs: int, config: StandConfig | None = None) -> None:
        super().__init__(num_envs, config)
        self.layout = self.observation_layout([])
        self.obs_dim, self.act_dim = next(reversed(self.layout.values())).stop, self.n_legs
        self.symmetry = self.mirrored([], [])
        self.rewards = STAND_TERMS.bind(self, self.cfg.rewards)

    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        self.batch.reset_one(i, rng)

    def observe(self) -> np.ndarray:
        return self.batch.noisy(self.proprioception(), self.layout)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self.batch.apply(action)
        return self.observe(), self.rewards.compose(), self.fallen()
