"""The PPO update: clipped-surrogate epochs over a RolloutStorage's minibatches, with a flat Adam.

Two kernels, chosen once per run by `choose_update`: the fused one (the MLPs, the default) runs the
actor's epochs and the critic's epochs as two independent loops over the same minibatch order (their
losses, gradients, clipping and Adam moments are separate), the critic's in a second process where one
is given (ppolab.ppo.critic_process); autograd's (`--update exact`, and the LSTM networks) runs one joint
loss per minibatch (ppolab.ppo.loss). Either is an `Update`: called with an iteration's storage, it
returns the iteration's update metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from ppolab.ppo.adam import FlatAdam
from ppolab.ppo.fused_step import ActorRows, ActorStep, CriticStep, supports
from ppolab.ppo.loss import (
    LossSettings,
    MirrorMaps,
    imitation_loss,
    mirror_loss,
    surrogate_loss,
    total_loss,
    value_loss,
)
from ppolab.ppo.policy import gaussian_entropy, gaussian_log_prob
from ppolab.ppo.storage import RolloutStorage


@dataclass(frozen=True)
class Hyper:
    """The update's settings: epochs over the batch, minibatch rows, the loss's weights, gradient clipping,
    and the kernel asked for ("fused", or "exact": autograd's gradients)."""

    epochs: int
    minibatch_size: int
    loss: LossSettings
    max_grad_norm: float
    update: str = "fused"


LOSSES = ("actor_loss", "critic_loss", "mirror_loss", "imitation_loss")  # the table's loss rows: 0 where none


def update_stats(losses: dict[str, list[torch.Tensor]], ratios: list[torch.Tensor], clip: float, kl, std) -> dict:
    """The iteration table's update metrics, from what the minibatch steps collected."""
    return {
        **{k: torch.stack(v).mean().item() if v else 0.0 for k, v in losses.items()},
        "kl": kl.item(),
        "entropy": gaussian_entropy(std).mean().item(),
        "clip_fraction": ((torch.cat(ratios) - 1.0).abs() > clip).float().mean().item(),
        "noise_std": std.mean().item(),
    }


class Update(Protocol):
    """An iteration's update: the epochs over `storage`, in an order drawn from `rng`; the update metrics."""

    def __call__(self, storage: RolloutStorage, rng: np.random.Generator) -> dict[str, float]: ...

    def close(self) -> None: ...


class CriticRunner(Protocol):
    """Runs the critic's epochs elsewhere (ppolab.ppo.critic_process.CriticProcess) while the actor's run here."""

    def start(
        self, obs: torch.Tensor, returns: torch.Tensor, perms: list[torch.Tensor], t0: int, lr: float
    ) -> None: ...

    def result(self) -> list[torch.Tensor]: ...

    def close(self) -> None: ...


class AutogradUpdate:
    """The reference kernel (`--update exact`, and the LSTM networks): the loss from torch ops (ppolab.ppo.loss),
    its gradients from autograd, one joint step of both networks per minibatch."""

    def __init__(self, actor, critic, optimizer: FlatAdam, hp: Hyper, mirror: MirrorMaps | None) -> None:
        self.actor, self.critic, self.optimizer, self.hp, self.mirror = actor, critic, optimizer, hp, mirror

    def step(self, mb) -> dict[str, torch.Tensor]:
        """One minibatch's losses and gradients: the policy, value, mirror and imitation losses (those that
        apply) and the ratios."""
        settings = self.hp.loss
        mean, std = mb.policy(self.actor)
        ratio = (gaussian_log_prob(mean, std, mb.actions) - mb.logprobs).exp()
        out = {"actor_loss": surrogate_loss(ratio, mb.advantages, settings.clip),
               "critic_loss": value_loss(mb.value(self.critic), mb.returns)}  # fmt: skip
        if self.mirror is not None and mb.mirror_obs is not None:
            out["mirror_loss"] = mirror_loss(mean, mb.policy(self.actor, mb.mirror_obs)[0], self.mirror)
        if mb.expert is not None:
            out["imitation_loss"] = imitation_loss(mean, mb.expert, mb.expert_weight)
        self.optimizer.zero_grad()
        total_loss(out["actor_loss"], out["critic_loss"], std, settings, out.get("mirror_loss"),
                   out.get("imitation_loss")).backward()  # fmt: skip
        return {**{k: v.detach() for k, v in out.items()}, "ratio": ratio.detach()}

    def __call__(self, storage: RolloutStorage, rng: np.random.Generator) -> dict[str, float]:
        losses: dict[str, list[torch.Tensor]] = {k: [] for k in LOSSES}
        ratios = []
        for _ in range(self.hp.epochs):
            for mb in storage.minibatches(self.hp.minibatch_size, rng):
                out = self.step(mb)
                self.optimizer.step(self.hp.max_grad_norm)
                ratios.append(out.pop("ratio"))
                for k, v in out.items():
                    losses[k].append(v)
        kl, std = storage.kl(self.actor)
        return update_stats(losses, ratios, self.hp.loss.clip, kl, std)

    def close(self) -> None:
        pass


def critic_epochs(step: CriticStep, obs, returns, perms, hp: Hyper, t0: int, lr: float) -> list:
    """The critic's minibatch steps: each epoch's permutation cut into minibatches, Adam steps t0+1, t0+2, ...
    at learning rate `lr`."""
    losses, t = [], t0
    for perm in perms:
        losses += step.epoch(t, hp.minibatch_size, obs[perm], returns[perm], lr)
        t += -(-len(perm) // hp.minibatch_size)
    return losses


class FusedUpdate:
    """The fused kernel (ppolab.ppo.fused_step): the actor's epochs here and the critic's (here after them, or
    in `elsewhere` at the same time), over the same permutations: every sample once per epoch."""

    def __init__(self, actor, critic, optimizer: FlatAdam, hp: Hyper, mirror: MirrorMaps | None) -> None:
        self.actor, self.optimizer, self.hp = actor, optimizer, hp
        self.actor_step = ActorStep(actor, optimizer, hp.loss, mirror, hp.max_grad_norm)
        self.critic_step = CriticStep(critic, optimizer, hp.max_grad_norm)
        self.elsewhere: CriticRunner | None = None  # set by whoever starts one (the trainer, on 2+ cores)

    def __call__(self, storage: RolloutStorage, rng: np.random.Generator) -> dict[str, float]:
        hp = self.hp
        perms = [torch.from_numpy(rng.permutation(storage.obs.shape[0])) for _ in range(hp.epochs)]
        t0, lr = self.optimizer.step_count, self.optimizer.lr  # the learning rate of this iteration (a schedule's)
        if self.elsewhere is not None:
            self.elsewhere.start(storage.critic_obs, storage.returns, perms, t0, lr)
        t = t0
        actor_losses, mirror_losses, ratios, imitation_losses = [], [], [], []
        for perm in perms:
            rows = storage.epoch(perm)
            actor_rows = ActorRows(rows.obs, rows.actions, rows.logprobs, rows.advantages, rows.mirror_obs,
                                   rows.expert, rows.expert_weight)  # fmt: skip
            pg, mirrored, ratio, imitated = self.actor_step.epoch(t, hp.minibatch_size, actor_rows, lr)
            actor_losses += pg
            mirror_losses += mirrored
            ratios += ratio
            imitation_losses += imitated
            t += -(-len(perm) // hp.minibatch_size)
        if self.elsewhere is None:
            critic_losses = critic_epochs(self.critic_step, storage.critic_obs, storage.returns, perms, hp, t0, lr)
        else:
            critic_losses = self.elsewhere.result()
        self.optimizer.step_count = t
        kl, std = storage.kl(self.actor)
        losses = {"actor_loss": actor_losses, "critic_loss": critic_losses, "mirror_loss": mirror_losses,
                  "imitation_loss": imitation_losses}  # fmt: skip
        return update_stats(losses, ratios, hp.loss.clip, kl, std)

    def close(self) -> None:
        if self.elsewhere is not None:
            self.elsewhere.close()


def choose_update(actor, critic, optimizer: FlatAdam, hp: Hyper, mirror: MirrorMaps | None) -> Update:
    """The one place the kernel is decided, once per run: fused for the MLPs unless `--update exact` asks for
    autograd's; autograd's for the LSTM networks."""
    if hp.update == "fused" and supports(actor, critic):
        return FusedUpdate(actor, critic, optimizer, hp, mirror)
    return AutogradUpdate(actor, critic, optimizer, hp, mirror)
