"""The fixed action std of an iteration: constant (LHW's), or shrinking linearly to `--std-final`.

Why shrink it: with a constant std, what training scores is the noisy gait, while the behaviour checks
and a robot run the mean action; the two drift apart (jvrc_walk's mean action walked 0.05 m/s faster
than its noisy gait at every commanded speed, benchmarks/README.md). The std is a function of the
iteration alone, so a resumed run continues the same schedule.
"""

from __future__ import annotations

import math

import torch

from ppolab.ppo.policy import Actor, RecurrentActor


def std_at(itr: int, start: float, final: float | None, decay_itr: int) -> float:
    """The std of iteration `itr`: `start` without a `final`, else linear from `start` to `final` over
    `decay_itr` iterations, then `final`."""
    if final is None:
        return start
    share = min(1.0, itr / decay_itr)
    return start + (final - start) * share


def set_std(actor: Actor | RecurrentActor, std: float) -> None:
    """Give a fixed-std actor this std (sampling and the update's log-probabilities both read it)."""
    with torch.no_grad():
        actor.log_std.fill_(math.log(std))
