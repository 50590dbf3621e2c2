"""Robot tasks in simulation, each a batch of MuJoCo envs stepped together.

A batched env exposes `obs_dim`, `act_dim`, `num_envs`, `reset_one(i, rng)`,
`observe()` and `step(action) -> (obs, reward, terminated)`; the horizon and
resets after an episode ends belong to the sampler, not the env.
"""

from __future__ import annotations

from ppolab.errors import UserError

from typing import Any, Callable

from ppolab.envs.cartpole import CartpoleEnv

ENVS: dict[str, Callable[..., Any]] = {"cartpole": CartpoleEnv}


def make_env(name: str, num_envs: int) -> Any:
    """Build a batch of `num_envs` instances of the named env."""
    try:
        factory = ENVS[name]
    except KeyError:
        raise UserError(f"unknown env {name!r}; choose one of: {', '.join(sorted(ENVS))}") from None
    return factory(num_envs)
