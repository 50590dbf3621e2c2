"""The PPO update: clipped-surrogate epochs over a RolloutStorage's minibatches, with a flat Adam."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ppolab.ppo.fused_step import FusedStep, supports
from ppolab.ppo.policy import Actor, Critic, gaussian_entropy, gaussian_log_prob
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
        self.grads = (self.grad[:n_actor], self.grad[n_actor:])
        self.lr, self.eps, self.betas = lr, eps, betas
        self.step_count = 0
        self.exp_avg = torch.zeros_like(self.flat)
        self.exp_avg_sq = torch.zeros_like(self.flat)

    def zero_grad(self) -> None:
        self.grad.zero_()

    @torch.no_grad()
    def step(self, max_grad_norm: float) -> None:
        """Clip each network's gradient to max_grad_norm (its global norm), then take one Adam step."""
        for g in self.grads:
            g.mul_((max_grad_norm / (torch.linalg.vector_norm(g) + 1e-6)).clamp(max=1.0))
        b1, b2 = self.betas
        self.step_count += 1
        bias1, bias2 = 1 - b1**self.step_count, 1 - b2**self.step_count
        self.exp_avg.lerp_(self.grad, 1 - b1)
        self.exp_avg_sq.mul_(b2).addcmul_(self.grad, self.grad, value=1 - b2)
        denom = self.exp_avg_sq.sqrt().div_(bias2**0.5).add_(self.eps)
        self.flat.addcdiv_(self.exp_avg, denom, value=-self.lr / bias1)

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


def minibatch_step(actor, critic, optimizer: FlatAdam, hp: Hyper, mirror: Mirror | None) -> AutogradStep | FusedStep:
    """The fused step where it applies (MLP networks) unless `--update exact` asks for autograd's."""
    if hp.update == "fused" and supports(actor, critic):
        return FusedStep(actor, critic, hp.clip, hp.entropy_coeff, mirror)
    return AutogradStep(actor, critic, optimizer, hp, mirror)


def ppo_update(
    actor,
    critic,
    optimizer: FlatAdam,
    storage: RolloutStorage,
    hp: Hyper,
    rng: np.random.Generator,
    mirror: Mirror | None = None,
) -> dict[str, float]:
    """Run the epochs over the storage's minibatches (rows or LSTM segments); return the iteration's metrics."""
    step = minibatch_step(actor, critic, optimizer, hp, mirror)
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
