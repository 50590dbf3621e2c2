"""What the sampler, the trainer and playback need of an env: a batch of MuJoCo envs stepped together."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

import mujoco
import numpy as np
from pydantic import BaseModel


class BatchEnv(Protocol):
    """`num_envs` envs of one task. The horizon, and resets after an episode ends, belong to the sampler.

    Optional: `set_iteration(iteration)` for curricula that follow training (jvrc_step's stairs).
    """

    name: ClassVar[str]
    Config: ClassVar[type[BaseModel]]  # the task's settings (`--yaml` overrides them)
    obs_dim: ClassVar[int]
    act_dim: ClassVar[int]
    symmetry: ClassVar[Any]  # mirror maps of observations and actions (ppolab.envs.symmetry), or None
    num_envs: int
    cfg: BaseModel
    model: mujoco.MjModel  # for rendering

    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        """Start a new episode in env `i`, every random draw from `rng`."""

    def observe(self) -> np.ndarray:
        """(num_envs, obs_dim) float32 observations."""

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Apply (num_envs, act_dim) actions for one control period: observations, rewards, terminated."""
