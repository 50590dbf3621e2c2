"""The PPO update: GAE(lambda), then clipped-surrogate epochs over shuffled minibatches."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ppolab.ppo.policy import Actor, Critic, gaussian_entropy, gaussian_kl, gaussian_log_prob


def compute_gae(
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    terminated: np.ndarray,
    ended: np.ndarray,
    gamma: float,
    lam: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and returns for time-major (T, N) arrays.

    `next_values[t]` is V(s_{t+1}) within an episode and V(final obs) where the
    episode was cut (time-out); a true termination bootstraps nothing.
    """
    steps = rewards.shape[0]
    advantages = np.zeros_like(values)
    last = np.zeros(values.shape[1], dtype=values.dtype)
    bootstrap = ~terminated
    carry = ~ended
    for t in reversed(range(steps)):
        delta = rewards[t] + gamma * next_values[t] * bootstrap[t] - values[t]
        last = delta + gamma * lam * carry[t] * last
        advantages[t] = last
    return advantages, advantages + values


@dataclass
class Batch:
    """One iteration's samples, flattened. `obs` is already normalised (stats are frozen for the update)."""

    obs: torch.Tensor
    actions: torch.Tensor
    logprobs: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    old_mean: torch.Tensor
    old_std: torch.Tensor


@dataclass
class Hyper:
    epochs: int
    minibatch_size: int
    clip: float
    entropy_coeff: float
    max_grad_norm: float


def make_optimizer(actor: Actor, critic: Critic, lr: float, eps: float) -> torch.optim.Adam:
    """One Adam over both networks (Adam is per-parameter, so this equals two) with one fused step."""
    fused = {"fused": True} if next(actor.parameters()).device.type in ("cpu", "cuda") else {}
    return torch.optim.Adam([{"params": actor.parameters()}, {"params": critic.parameters()}], lr=lr, eps=eps, **fused)


def ppo_update(
    actor: Actor, critic: Critic, optimizer: torch.optim.Optimizer, b: Batch, hp: Hyper, rng: np.random.Generator
) -> dict[str, float]:
    """Run the epochs; return the metrics printed in the iteration table."""
    n = b.obs.shape[0]
    advantages = (b.advantages - b.advantages.mean()) / (b.advantages.std() + 1e-8)
    actor_params, critic_params = list(actor.parameters()), list(critic.parameters())
    actor_losses, critic_losses, clipfracs = [], [], []
    for _ in range(hp.epochs):
        perm = torch.from_numpy(rng.permutation(n))
        # shuffle once per epoch, then take contiguous minibatches: no gather per minibatch
        b_obs, b_actions, b_logprobs = b.obs[perm], b.actions[perm], b.logprobs[perm]
        b_advantages, b_returns = advantages[perm], b.returns[perm]
        for start in range(0, n, hp.minibatch_size):
            mb = slice(start, start + hp.minibatch_size)
            mean, std = actor.head(b_obs[mb])
            logratio = gaussian_log_prob(mean, std, b_actions[mb]) - b_logprobs[mb]
            ratio = logratio.exp()
            mb_adv = b_advantages[mb]
            pg_loss = torch.max(-mb_adv * ratio, -mb_adv * ratio.clamp(1 - hp.clip, 1 + hp.clip)).mean()
            entropy = gaussian_entropy(std).mean()
            critic_loss = 0.5 * ((critic.head(b_obs[mb]) - b_returns[mb]) ** 2).mean()

            optimizer.zero_grad(set_to_none=True)
            # disjoint parameters: one backward serves both networks
            (pg_loss - hp.entropy_coeff * entropy + critic_loss).backward()
            nn.utils.clip_grad_norm_(actor_params, hp.max_grad_norm)
            nn.utils.clip_grad_norm_(critic_params, hp.max_grad_norm)
            optimizer.step()

            actor_losses.append(pg_loss.detach())
            critic_losses.append(critic_loss.detach())
            clipfracs.append(((ratio.detach() - 1.0).abs() > hp.clip).float().mean())

    with torch.no_grad():
        mean, std = actor.head(b.obs)
        kl = gaussian_kl(b.old_mean, b.old_std, mean, std).mean()
        entropy = gaussian_entropy(std).mean()
    return {
        "actor_loss": torch.stack(actor_losses).mean().item(),
        "critic_loss": torch.stack(critic_losses).mean().item(),
        "kl": kl.item(),
        "entropy": entropy.item(),
        "clip_fraction": torch.stack(clipfracs).mean().item(),
        "noise_std": std.mean().item(),
    }
