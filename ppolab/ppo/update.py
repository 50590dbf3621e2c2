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

from ppolab.ppo.fused_step import ActorStep, CriticStep, supports
from ppolab.ppo.policy import Actor, Critic, gaussian_entropy, gaussian_log_prob
from ppolab.ppo.storage import RolloutStorage

ACTOR, CRITIC = 0, 1  # FlatAdam's parts


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


class FlatAdam:
    """Adam (Kingma & Ba, as torch.optim.Adam computes it) over actor and critic held in one flat buffer.

    On small networks the per-tensor, per-call overhead of torch.optim.Adam,
    clip_grad_norm_ and zero_grad (a dozen tensors, a few microseconds each,
    ~0.7 ms per minibatch here) costs more than the arithmetic. Here every
    parameter is a view into one flat tensor, its gradient a view into one flat
    gradient, and a step is seven in-place ops. Module parameters keep their
    shapes and names, so state dicts and checkpoints are unchanged.
    """

    def __init__(self, actor: Actor, critic: Critic, lr: float, eps: float, betas=(0.9, 0.999)) -> None:
        params = [*actor.parameters(), *critic.parameters()]
        n_actor = sum(p.numel() for p in actor.parameters())
        self.flat = torch.cat([p.detach().reshape(-1) for p in params])
        self.grad = torch.zeros_like(self.flat)
        offset = 0
        for p in params:
            n = p.numel()
            p.data = self.flat[offset : offset + n].view_as(p)
            p.grad = self.grad[offset : offset + n].view_as(p)  # backward accumulates into it in place
            offset += n
        self.lr, self.eps, self.betas = lr, eps, betas
        self.step_count = 0  # minibatch steps taken (both networks)
        self.exp_avg = torch.zeros_like(self.flat)
        self.exp_avg_sq = torch.zeros_like(self.flat)
        halves = (slice(0, n_actor), slice(n_actor, self.flat.numel()))  # ACTOR, CRITIC
        self.parts = [(self.flat[h], self.grad[h], self.exp_avg[h], self.exp_avg_sq[h]) for h in halves]

    def share_memory(self) -> None:
        """Put the buffers in shared memory (in place: every view follows), for a forked process to step a part."""
        for t in (self.flat, self.grad, self.exp_avg, self.exp_avg_sq):
            t.share_memory_()

    def zero_grad(self) -> None:
        self.grad.zero_()

    def step(self, max_grad_norm: float) -> None:
        """One Adam step of both networks."""
        self.step_count += 1
        for part in (ACTOR, CRITIC):
            self.step_part(part, max_grad_norm, self.step_count)

    @torch.no_grad()
    def step_part(self, part: int, max_grad_norm: float, t: int) -> None:
        """Adam step t of one network (ACTOR or CRITIC), its gradient first clipped to max_grad_norm (its global
        norm). The caller counts the steps: the fused update runs the two parts in separate loops."""
        flat, grad, exp_avg, exp_avg_sq = self.parts[part]
        grad.mul_(torch.linalg.vector_norm(grad).add_(1e-6).reciprocal_().mul_(max_grad_norm).clamp_(max=1.0))
        b1, b2 = self.betas
        bias1, bias2 = 1 - b1**t, 1 - b2**t
        exp_avg.lerp_(grad, 1 - b1)
        exp_avg_sq.mul_(b2).addcmul_(grad, grad, value=1 - b2)
        denom = exp_avg_sq.sqrt().div_(bias2**0.5).add_(self.eps)
        flat.addcdiv_(exp_avg, denom, value=-self.lr / bias1)

    def state_dict(self) -> dict:
        return {"step": self.step_count, "exp_avg": self.exp_avg, "exp_avg_sq": self.exp_avg_sq}

    def load_state_dict(self, state: dict) -> None:
        self.step_count = int(state["step"])
        self.exp_avg.copy_(state["exp_avg"])
        self.exp_avg_sq.copy_(state["exp_avg_sq"])


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


def critic_epochs(step: CriticStep, optimizer: FlatAdam, obs, returns, perms, hp: Hyper, t0: int) -> list:
    """The critic's minibatch steps: each epoch's permutation cut into minibatches, Adam steps t0+1, t0+2, ..."""
    losses, t = [], t0
    for perm in perms:
        epoch_obs, epoch_returns = obs[perm], returns[perm]
        for start in range(0, len(perm), hp.minibatch_size):
            t += 1
            mb = slice(start, start + hp.minibatch_size)
            losses.append(step(epoch_obs[mb], epoch_returns[mb]))
            optimizer.step_part(CRITIC, hp.max_grad_norm, t)
    return losses


def fused_update(actor, critic, optimizer: FlatAdam, storage: RolloutStorage, hp: Hyper, rng: np.random.Generator,
                 mirror: Mirror | None, elsewhere: CriticRunner | None) -> dict[str, float]:  # fmt: skip
    """The actor's epochs here and the critic's (here after them, or `elsewhere` at the same time), over the
    same permutations: every sample once per epoch, in minibatches of `minibatch_size` rows."""
    perms = [torch.from_numpy(rng.permutation(storage.obs.shape[0])) for _ in range(hp.epochs)]
    t0 = optimizer.step_count
    if elsewhere is not None:
        elsewhere.start(storage.obs, storage.returns, perms, t0)
    step, t = ActorStep(actor, hp.clip, hp.entropy_coeff, mirror), t0
    actor_losses, mirror_losses, ratios = [], [], []
    for perm in perms:
        for mb in storage.rows(perm, hp.minibatch_size):
            t += 1
            pg_loss, mirror_loss, ratio = step(mb)
            optimizer.step_part(ACTOR, hp.max_grad_norm, t)
            actor_losses.append(pg_loss)
            ratios.append(ratio)
            if mirror_loss is not None:
                mirror_losses.append(mirror_loss)
    if elsewhere is None:
        critic_losses = critic_epochs(CriticStep(critic), optimizer, storage.obs, storage.returns, perms, hp, t0)
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
) -> dict[str, float]:
    """Run the epochs over the storage's minibatches (rows or LSTM segments); return the iteration's metrics.
    The fused path where it applies (MLP networks) unless `--update exact` asks for autograd's."""
    if hp.update == "fused" and supports(actor, critic):
        return fused_update(actor, critic, optimizer, storage, hp, rng, mirror, critic_elsewhere)
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
