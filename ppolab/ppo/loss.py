"""PPO's loss: its settings by name, and its terms written with torch ops (the reference).

The loss is  clipped surrogate - entropy_coeff * entropy + 0.5 * value error^2 + mirror_coeff * mirror error
+ imitate_coeff * imitation error, the mirror term (a left-right symmetric policy, as LHW's) only where the env
has a mirror map, the imitation term (the mean action against an expert's, LHW's --imitate) only with an expert.

Two kernels minimise it: autograd over the terms below (`--update exact`, and the LSTM networks), and
the fused step (ppolab.ppo.fused_step), which writes the same terms and their gradients by hand for speed.
Both read `LossSettings` and `MirrorMaps` from here, by name. tests/test_update.py checks that the two
agree on every setting; AGENTS.md says how to add a term to both.

The settings are NamedTuples because the fused kernel runs under TorchScript, which takes them as they are.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from ppolab.ppo.policy import gaussian_entropy


class LossSettings(NamedTuple):
    """The loss's weights: PPO's clip range, the entropy bonus's, the mirror loss's and the imitation loss's
    coefficients."""

    clip: float
    entropy_coeff: float
    mirror_coeff: float
    imitate_coeff: float = 0.0


class MirrorMaps(NamedTuple):
    """The signed permutation that mirrors an action (left <-> right): mirrored[:, i] = a[:, perm[i]] * sign[i];
    `inverse` is perm's inverse (the fused step's gradient goes back through it)."""

    perm: Tensor
    sign: Tensor
    inverse: Tensor


def mirror_maps(perm: Tensor, sign: Tensor) -> MirrorMaps:
    return MirrorMaps(perm, sign, torch.argsort(perm))


def surrogate_loss(ratio: Tensor, advantages: Tensor, clip: float) -> Tensor:
    """PPO's clipped policy loss."""
    return torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - clip, 1 + clip)).mean()


def value_loss(values: Tensor, returns: Tensor) -> Tensor:
    return 0.5 * ((values - returns) ** 2).mean()


def mirror_loss(mean: Tensor, mirrored_mean: Tensor, maps: MirrorMaps) -> Tensor:
    """How far the policy is from symmetric: its mean against the mirror image of its mean on mirrored states."""
    return ((mean - mirrored_mean[:, maps.perm] * maps.sign) ** 2).mean()


def imitation_loss(mean: Tensor, expert: Tensor, weight: Tensor) -> Tensor:
    """The mean squared difference between the policy's mean action and the expert's, over the samples and
    action entries that count (`weight` 1, else 0); 0 when none does."""
    diff = (mean - expert) * weight
    return (diff * diff).sum() / weight.sum().clamp(min=1.0)


def total_loss(pg: Tensor, critic: Tensor, std: Tensor, settings: LossSettings, mirror: Tensor | None,
               imitation: Tensor | None = None) -> Tensor:  # fmt: skip
    """The terms weighted and summed, for autograd (the networks' parameters are disjoint: one backward
    serves both)."""
    if settings.entropy_coeff:
        loss = pg - settings.entropy_coeff * gaussian_entropy(std).mean() + critic
    else:  # the same sum to the last bit (pg - 0 * entropy == pg), without the entropy's ops
        loss = pg + critic
    if mirror is not None:
        loss = loss + settings.mirror_coeff * mirror
    if imitation is not None:
        loss = loss + settings.imitate_coeff * imitation
    return loss
