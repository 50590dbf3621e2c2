"""`<robot>_stand`: LearningHumanoidWalking's standing task on any robot file.

Stand still at the nominal height: LHW's terms reward no horizontal velocity and no yaw rate,
the height, the upper body over the root, the nominal posture and small torques.
Observation: the robot state only (as LHW's H1 standing env).
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

from ppolab.envs.robot_task import RobotTask, RobotTaskConfig


class StandRewards(BaseModel):
    """LearningHumanoidWalking's standing weights (they sum to 1)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    velocity: float = 0.3
    yaw_rate: float = 0.3
    height: float = 0.1
    upper_body: float = 0.1
    torque: float = 0.1
    posture: float = 0.1


class StandConfig(RobotTaskConfig):
    """LHW's standing task; a robot file's `tasks: stand:` changes any of it."""

    rewards: StandRewards = StandRewards()


class StandTask(RobotTask):
    """Stand still at the nominal pose"""

    task = "stand"
    Config = StandConfig

    def __init__(self, num_envs: int, config: StandConfig | None = None) -> None:
        super().__init__(num_envs, config)
        self.layout = self.proprioception_layout()
        self.obs_dim, self.act_dim = next(reversed(self.layout.values())).stop, self.n_legs
        self.symmetry = self.mirrored([], [])

    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        self.batch.reset_one(i, rng)

    def observe(self) -> np.ndarray:
        return self.batch.noisy(self.proprioception(), self.layout)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b, w = self.batch, self.cfg.rewards
        b.apply(action)
        legs = b.qpos[:, b.layout.leg_qpos]
        terms = {
            "velocity": np.exp(-4.0 * np.sum(b.qvel[:, 0:2] ** 2, axis=1)),
            "yaw_rate": np.exp(-4.0 * b.qvel[:, 5] ** 2),
            "height": np.exp(-0.5 * (b.qpos[:, 2] - self.goal_height) ** 2),
            "upper_body": np.exp(-40.0 * np.sum(self.head_offset() ** 2, axis=1)),
            "torque": np.exp(-5e-5 * np.sum(b.torque**2, axis=1)),
            "posture": np.exp(-np.sum((legs - b.nominal_leg) ** 2, axis=1)),
        }
        reward = sum(getattr(w, k) * v for k, v in terms.items())
        return self.observe(), reward, self.fallen()
