"""Mirror symmetry of a task: a signed permutation of observations and of actions.

Mirroring swaps left and right: the permutation exchanges each left index with
its right twin, and the sign flips quantities that change direction in a mirror
(roll, yaw, lateral velocity). Applying it twice gives the original back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SignedPermutation:
    perm: np.ndarray  # mirrored[..., k] = sign[k] * x[..., perm[k]]
    sign: np.ndarray

    @classmethod
    def build(cls, size: int, swaps: list[tuple[int, int]], negate: list[int]) -> SignedPermutation:
        perm = np.arange(size)
        for a, b in swaps:
            perm[a], perm[b] = b, a
        sign = np.ones(size)
        sign[negate] = -1.0
        return cls(perm, sign)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x[..., self.perm] * self.sign


@dataclass(frozen=True)
class Symmetry:
    obs: SignedPermutation
    act: SignedPermutation


def leg_mirror(first: int, n_per_leg: int, negate_parts: list[int]) -> tuple[list[tuple[int, int]], list[int]]:
    """Swaps and sign flips for two legs stored one after the other from index `first`."""
    swaps = [(first + k, first + n_per_leg + k) for k in range(n_per_leg)]
    negate = [first + k for k in negate_parts] + [first + n_per_leg + k for k in negate_parts]
    return swaps, negate
