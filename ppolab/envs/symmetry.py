"""Mirror symmetry of a task: a signed permutation of observations and of actions.

Mirroring swaps left and right: the permutation exchanges each left index with
its right twin, and the sign flips quantities that change direction in a mirror
(roll, yaw, lateral velocity). Applying it twice gives the original back. A robot
task derives its maps from the robot file (`robot_task.RobotTask.mirrored`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SignedPermutation:
    perm: np.ndarray  # mirrored[..., k] = sign[k] * x[..., perm[k]]
    sign: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x[..., self.perm] * self.sign


@dataclass(frozen=True)
class Symmetry:
    obs: SignedPermutation
    act: SignedPermutation
