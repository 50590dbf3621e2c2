"""Robot tasks in simulation, each a batch of MuJoCo envs stepped together (the BatchEnv protocol)."""

from __future__ import annotations

import os

# ppolab renders headless (evaluation videos): EGL needs no display. It must be chosen before mujoco is imported.
os.environ.setdefault("MUJOCO_GL", "egl")

from typing import Any  # noqa: E402

from ppolab.envs.cartpole import CartpoleEnv  # noqa: E402
from ppolab.envs.h1 import H1Env  # noqa: E402
from ppolab.envs.jvrc import JvrcWalkEnv  # noqa: E402
from ppolab.envs.jvrc_step import JvrcStepEnv  # noqa: E402
from ppolab.envs.protocol import BatchEnv  # noqa: E402
from ppolab.errors import UserError  # noqa: E402

ENVS: dict[str, type[BatchEnv]] = {
    "cartpole": CartpoleEnv,
    "h1": H1Env,
    "jvrc_walk": JvrcWalkEnv,
    "jvrc_step": JvrcStepEnv,
}


def env_class(name: str) -> type[BatchEnv]:
    try:
        return ENVS[name]
    except KeyError:
        raise UserError(f"unknown env {name!r}; choose one of: {', '.join(sorted(ENVS))}") from None


def make_env(name: str, num_envs: int, overrides: dict[str, Any] | None = None) -> BatchEnv:
    """Build a batch of `num_envs` instances of the named env, its configuration changed by `overrides`."""
    cls = env_class(name)
    return cls(num_envs, cls.Config(**overrides)) if overrides else cls(num_envs)
