"""The PPO update: clipped-surrogate epochs over a RolloutStorage's minibatches, with a flat Adam.

Two paths: the fused one (MLPs, the default) runs the actor's epochs and the critic's epochs as two
independent loops over the same minibatch order (their losses, gradients, clipping and Adam moments are
separate), the critic's in a second process where one is given (ppolab.ppo.critic_process); autograd's
(`--update exact`, and the LSTM networks) runs one joint loss per minibatch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from ppolab.ppo.adam import FlatAdam
from ppolab.ppo.fused_step import ActorStep, CriticStep, supports
from ppolab.ppo.policy import gaussian_entropy, gaussian_log_prob
from ppolab.ppo.storage import RolloutStorage


@dataclass
class Mirror:
    """Signed permutation of actions and the loss weight: the policy of a mirrored state should be mirrored."""

    act_perm: torch.Tensor
    act_sign: torch.Tensor
    coeff: float


@dataclass
class Hyper:
    epochs: int
    minibatch_size: int
    clip: float
    entropy_coeff: float
    max_grad_norm: float
    update: str = "fused"  # or "exact": autograd's gradients (see ppolab/ppo/fused_step.py)


def surrogate_loss(ratio: torch.Tensor, advantages: torch.Tensor, clip: float) -> torch.Tensor:
    """PPO's clipped policy loss."""
    return torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - clip, 1 + clip)).mean()


def update_stats(losses: dict[str, list[torch.Tensor]], ratios: list[torch.Tensor], clip: float, kl, std) -> dict:
    """The iteration table's update metrics, from what the minibatch steps collected."""
    return {
        **{k: torch.stack(v).mean().item() if v else 0.0 for k, v in losses.items()},
        "kl": kl.item(),
        "entropy": gaussian_entropy(std).mean().item(),
        "clip_fraction": ((torch.cat(ratios) - 1.0).abs() > clip).float().mean().item(),
        "noise_std": std.mean().item(),
    }


class AutogradStep:
    """The reference minibatch step (`--update exact`, and the LSTM networks): the loss from torch ops,
    its gradients from autograd. Returns the policy, value and mirror losses and the ratios."""

    def __init__(self, actor, critic, optimizer: FlatAdam, hp: Hyper, mirror: Mirror | None) -> None:
        self.actor, self.critic, self.optimizer, self.mirror = actor, critic, optimizer, mirror
        self.clip, self.entropy_coeff = hp.clip, hp.entropy_coeff

    def __call__(self, mb) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor]:
        mean, std = mb.policy(self.actor)
        ratio = (gaussian_log_prob(mean, std, mb.actions) - mb.logprobs).exp()
        pg_loss = surrogate_loss(ratio, mb.advantages, self.clip)
        critic_loss = 0.5 * ((mb.value(self.critic) - mb.returns) ** 2).mean()
        if self.entropy_coeff:
            loss = pg_loss - self.entropy_coeff * gaussian_entropy(std).mean() + critic_loss
        else:  # the same sum to the last bit (pg - 0 * entropy == pg), without the entropy's ops
            loss = pg_loss + critic_loss
        mirror_loss = None
        if self.mirror is not None and mb.mirror_obs is not None:
            mirrored, _ = mb.policy(self.actor, mb.mirror_obs)
            mirror_loss = ((mean - mirrored[:, self.mirror.act_perm] * self.mirror.act_sign) ** 2).mean()
            loss = loss + self.mirror.coeff * mirror_loss
        self.optimizer.zero_grad()
        loss.backward()  # disjoint parameters: one backward serves both networks
        mirror_loss = None if mirror_loss is None else mirror_loss.detach()
        return pg_loss.detach(), critic_loss.detach(), mirror_loss, ratio.detach()


class CriticRunner(Protocol):
    """Runs the critic's epochs elsewhere (ppolab.ppo.critic_process.CriticProcess) while the actor's run here."""

    def start(self, obs: torch.Tensor, returns: torch.Tensor, perms: list[torch.Tensor], t0: int) -> None: ...

    def result(self) -> list[torch.Tensor]: ...


@dataclass
class FusedSteps:
    """The fused update's two minibatch steps (gradients and Adam), made once per run; a forked critic
    process takes `critic` with it."""

    actor: ActorStep
    critic: CriticStep

    @classmethod
    def make(cls, actor, critic, optimizer: FlatAdam, hp: Hyper, mirror: Mirror | None) -> FusedSteps:
        return cls(ActorStep(actor, optimizer, hp.clip, hp.entropy_coeff, mirror, hp.max_grad_norm),
                   CriticStep(critic, optimizer, hp.max_grad_norm))  # fmt: skip


def critic_epochs(step: CriticStep, obs, returns, perms, hp: Hyper, t0: int) -> list:
    """The critic's minibatch steps: each epoch's permutation cut into minibatches, Adam steps t0+1, t0+2, ..."""
    losses, t = [], t0
    for perm in perms:
        losses += step.epoch(t, hp.minibatch_size, obs[perm], returns[perm])
        t += -(-len(perm) // hp.minibatch_size)
    return losses


def fused_update(actor, optimizer: FlatAdam, storage: RolloutStorage, hp: Hyper, rng: np.random.Generator,
                 steps: FusedSteps, elsewhere: CriticRunner | None) -> dict[str, float]:  # fmt: skip
    """The actor's epochs here and the critic's (here after them, or `elsewhere` at the same time), over the
    same permutations: every sample once per epoch, in minibatches of `minibatch_size` rows."""
    perms = [torch.from_numpy(rng.permutation(storage.obs.shape[0])) for _ in range(hp.epochs)]
    t0 = optimizer.step_count
    if elsewhere is not None:
        elsewhere.start(storage.obs, storage.returns, perms, t0)
    t = t0
    actor_losses, mirror_losses, ratios = [], [], []
    for perm in perms:
        rows = storage.epoch(perm)
        pg, mirror, ratio = steps.actor.epoch(t, hp.minibatch_size, rows.obs, rows.actions, rows.logprobs,
                                              rows.advantages, rows.mirror_obs)  # fmt: skip
        actor_losses += pg
        mirror_losses += mirror
        ratios += ratio
        t += -(-len(perm) // hp.minibatch_size)
    if elsewhere is None:
        critic_losses = critic_epochs(steps.critic, storage.obs, storage.returns, perms, hp, t0)
    else:
        critic_losses = elsewhere.result()
    optimizer.step_count = t
    kl, std = storage.kl(actor)
    losses = {"actor_loss": actor_losses, "critic_loss": critic_losses, "mirror_loss": mirror_losses}
    return update_stats(losses, ratios, hp.clip, kl, std)


def ppo_update(
    actor,
    critic,
    optimizer: FlatAdam,
    storage: RolloutStorage,
    hp: Hyper,
    rng: np.random.Generator,
    mirror: Mirror | None = None,
    critic_elsewhere: CriticRunner | None = None,
    steps: FusedSteps | None = None,
) -> dict[str, float]:
    """Run the epochs over the storage's minibatches (rows or LSTM segments); return the iteration's metrics.
    The fused path where it applies (MLP networks; `steps` made once per run, or here) unless `--update exact`
    asks for autograd's."""
    if hp.update == "fused" and supports(actor, critic):
        steps = steps or FusedSteps.make(actor, critic, optimizer, hp, mirror)
        return fused_update(actor, optimizer, storage, hp, rng, steps, critic_elsewhere)
    step = AutogradStep(actor, critic, optimizer, hp, mirror)
    actor_losses, critic_losses, mirror_losses, ratios = [], [], [], []
    for _ in range(hp.epochs):
        for mb in storage.minibatches(hp.minibatch_size, rng):
            pg_loss, critic_loss, mirror_loss, ratio = step(mb)
            optimizer.step(hp.max_grad_norm)
            actor_losses.append(pg_loss)
            critic_losses.append(critic_loss)
            ratios.append(ratio)
            if mirror_loss is not None:
                mirror_losses.append(mirror_loss)

    kl, std = storage.kl(actor)
    losses = {"actor_loss": actor_losses, "critic_loss": critic_losses, "mirror_loss": mirror_losses}
    return update_stats(losses, ratios, hp.clip, kl, std)
