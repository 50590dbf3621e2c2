"""Robot tasks in simulation, each a batch of MuJoCo envs stepped together.

A batched env exposes `obs_dim`, `act_dim`, `num_envs`, `reset_one(i, rng)`,
`observe()` and `step(action) -> (obs, reward, terminated)`; the horizon and
resets after an episode ends belong to the sampler, not the env.
"""

from __future__ import annotations

import os

# ppolab renders headless (evaluation videos): EGL needs no display. It must be chosen before mujoco is imported.
os.environ.setdefault("MUJOCO_GL", "egl")

from collections.abc import Callable  # noqa: E402
from typing import Any

from ppolab.envs.cartpole import CartpoleEnv  # noqa: E402
from ppolab.errors import UserError  # noqa: E402

ENVS: dict[str, Callable[..., Any]] = {"cartpole": CartpoleEnv}


def make_env(name: str, num_envs: int) -> Any:
    """Build a batch of `num_envs` instances of the named env."""
    try:
        factory = ENVS[name]
    except KeyError:
        raise UserError(f"unknown env {name!r}; choose one of: {', '.join(sorted(ENVS))}") from None
    return factory(num_envs)
