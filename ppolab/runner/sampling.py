"""Choosing a sampling backend: the local worker processes or Ray, behind one interface."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol

from ppolab.envs import EnvSettings
from ppolab.ppo.rollout import Trajectories
from ppolab.ppo.sampling_policy import SamplingParams
from ppolab.runner.sampler import LocalSampler


class Sampler(Protocol):
    """What the trainer needs of a sampling backend (LocalSampler, ray_sampler.RaySampler)."""

    procs: int
    say: Callable[[str], None]

    def describe(self) -> str: ...

    def sample(self, params: SamplingParams, **kwargs) -> Trajectories: ...

    def close(self) -> None: ...


def resolve_backend(requested: str) -> str:
    """auto: Ray when RAY_ADDRESS names a cluster, else the local processes (no Ray started or imported)."""
    if requested == "auto":
        return "ray" if os.environ.get("RAY_ADDRESS") else "local"
    return requested


def make_sampler(
    backend: str,
    env_name: str,
    total_slots: int,
    procs: int | None = None,
    overrides: EnvSettings | None = None,
    say: Callable[[str], None] = print,
) -> Sampler:
    """The sampler of `backend` ("local" or "ray"); both give the same trajectories for a seed."""
    if resolve_backend(backend) == "ray":
        from ppolab.runner.ray_sampler import RaySampler

        return RaySampler(env_name, total_slots, procs, overrides, say)
    return LocalSampler(env_name, total_slots, procs, overrides, say)
