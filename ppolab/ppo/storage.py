"""One iteration's experience, ready for PPO: bootstrap, GAE, and the minibatches of an epoch.

The sampler's trajectories come in; out go minibatches that the one update loop
(ppolab.ppo.update) consumes whatever the network: shuffled rows for the
feed-forward networks, groups of whole episode segments (padded, with a mask)
for the LSTM ones, which start every segment from a zero state as the sampler did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch

from ppolab.ppo.policy import gaussian_kl, gaussian_log_prob
from ppolab.ppo.rollout import Trajectories


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
    # everything but the recursion over time for the whole batch at once: the loop is three small ops a step.
    # The running advantage stays float64 (the decay is), each step's stored in float32
    delta = rewards + gamma * next_values * ~terminated - values
    decay = gamma * lam * ~ended
    advantages = np.empty_like(delta)
    last = np.zeros(values.shape[1])
    for t in reversed(range(rewards.shape[0])):
        last = delta[t] + decay[t] * last
        advantages[t] = last
    return advantages, advantages + values


@dataclass
class Segments:
    """Where each segment's steps sit in the flat (T * slots) arrays: `index[l, s]`, -1 past its end."""

    index: np.ndarray  # (L, S) int64
    lengths: np.ndarray  # (S,)

    @classmethod
    def split(cls, ended: np.ndarray) -> Segments:
        steps, slots = ended.shape
        runs: list[list[int]] = []
        for slot in range(slots):
            start = 0
            for t in np.flatnonzero(ended[:, slot]):
                runs.append([u * slots + slot for u in range(start, t + 1)])
                start = t + 1
        longest = max(len(r) for r in runs)
        index = np.full((longest, len(runs)), -1, np.int64)
        for s, r in enumerate(runs):
            index[: len(r), s] = r
        return cls(index, np.array([len(r) for r in runs]))

    def take(self, columns: np.ndarray) -> Segments:
        index = self.index[:, columns]
        keep = int(self.lengths[columns].max())
        return Segments(index[:keep], self.lengths[columns])

    @property
    def mask(self) -> torch.Tensor:
        return torch.from_numpy(self.index >= 0)

    def pad(self, flat: torch.Tensor) -> torch.Tensor:
        """(N, ...) flat rows to (L, S, ...) sequences, zeros past each segment's end."""
        out = flat[torch.from_numpy(np.maximum(self.index, 0)).to(flat.device)]
        mask = self.mask.to(flat.device).reshape(*self.index.shape, *([1] * (flat.dim() - 1)))
        return out * mask.to(out.dtype)

    def flat_index(self) -> torch.Tensor:
        """The flat rows of the real (unpadded) steps, in the order `x[mask]` returns them."""
        return torch.from_numpy(self.index[self.index >= 0])


def old_outputs(actor, critic, obs: torch.Tensor, final_obs: torch.Tensor, seg: Segments):
    """LSTM: means, std, values at every step, and the value after each segment's last step.

    The critic runs each segment one step further (its final observation), so a
    cut episode is bootstrapped from the LSTM state it reached, not a fresh one.
    """
    with torch.no_grad():
        padded = seg.pad(obs)
        mean, std = actor.seq(padded)
        mask = seg.mask
        extended = torch.cat([padded, torch.zeros_like(padded[:1])])
        last = torch.from_numpy(seg.lengths - 1)
        cols = torch.arange(len(seg.lengths))
        ends = torch.from_numpy(seg.index[seg.lengths - 1, np.arange(len(seg.lengths))])
        extended[last + 1, cols] = final_obs[ends]
        values_ext = critic.seq(extended)
        order = seg.flat_index()
        n = obs.shape[0]
        mean_flat = torch.empty(n, mean.shape[-1], dtype=mean.dtype)
        mean_flat[order] = mean[mask]
        values = torch.empty(n, dtype=values_ext.dtype)
        values[order] = values_ext[:-1][mask]
        final_values = torch.zeros(n, dtype=values_ext.dtype)
        final_values[ends] = values_ext[last + 1, cols]
    return mean_flat, std, values, final_values


@dataclass
class Minibatch:
    """What one optimiser step sees. Feed-forward: rows; LSTM: padded (L, S) segments and their `mask`."""

    obs: torch.Tensor
    actions: torch.Tensor
    logprobs: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    mirror_obs: torch.Tensor | None = None
    mask: torch.Tensor | None = None
    expert: torch.Tensor | None = None  # the expert's actions on these states (--imitate), one row per real step
    expert_weight: torch.Tensor | None = None  # 1 where a sample's action entry counts in the imitation, else 0
    critic_obs: torch.Tensor | None = None  # the critic's inputs where they are not `obs` (a privileged critic)

    def policy(self, actor, obs: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The actor's mean (one row per real step) and std on `obs` (default: the minibatch's)."""
        x = self.obs if obs is None else obs
        if self.mask is None:
            return actor.head(x)
        mean, std = actor.seq(x)
        return mean[self.mask], std

    def value(self, critic) -> torch.Tensor:
        if self.mask is not None:
            return critic.seq(self.obs)[self.mask]
        return critic.head(self.obs if self.critic_obs is None else self.critic_obs)


class RolloutStorage:
    """An iteration's samples with the old policy's outputs, bootstrapped values, advantages and returns.

    Observations are normalised once, with the statistics frozen for the update; `critic_obs`
    is what the critic reads (the same tensor unless the critic is privileged).
    `mirror_obs` (the env's observation mirror) adds the mirrored observations the
    mirror loss needs; `expert` (an expert's actions and their weights, one row per sample) the
    imitation loss's targets.
    """

    def __init__(
        self,
        traj: Trajectories,
        actor,
        critic,
        *,
        gamma: float,
        lam: float,
        recurrent: bool,
        device: torch.device,
        mirror_obs: Callable[[np.ndarray], np.ndarray] | None = None,
        expert: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        steps, slots = traj.rewards.shape
        flat = lambda x: torch.from_numpy(x.reshape(steps * slots, -1)).to(device)  # noqa: E731
        self.seg = Segments.split(traj.ended) if recurrent else None
        self.actions = flat(traj.actions)
        with torch.no_grad():
            self.obs = actor.norm(flat(traj.obs))
            self.critic_obs = self.obs
            if self.seg is None:
                old_mean, old_std = actor.head(self.obs)
                privileged = critic.priv_norm is not None
                self.critic_obs = critic.inputs(self.obs, flat(traj.priv) if privileged else None)
                values = critic.head(self.critic_obs).cpu().numpy().reshape(steps, slots)
                final_values = np.zeros((steps, slots), values.dtype)  # only where an episode ended is it read
                if traj.ended.any():
                    ended_obs = torch.from_numpy(traj.final_obs[traj.ended]).to(device)
                    ended_priv = torch.from_numpy(traj.final_priv[traj.ended]).to(device) if privileged else None
                    final_values[traj.ended] = critic(ended_obs, ended_priv).cpu().numpy()
            else:
                final = actor.norm(flat(traj.final_obs))
                old_mean, old_std, flat_values, flat_final = old_outputs(actor, critic, self.obs, final, self.seg)
                values = flat_values.cpu().numpy().reshape(steps, slots)
                final_values = flat_final.cpu().numpy().reshape(steps, slots)
            self.logprobs = gaussian_log_prob(old_mean, old_std, self.actions)
            self.mirror_obs = None
            if mirror_obs is not None:
                raw = mirror_obs(traj.obs.reshape(steps * slots, -1)).astype(np.float32)
                self.mirror_obs = actor.norm(torch.from_numpy(raw).to(device))
        self.old_mean, self.old_std = old_mean, old_std.expand_as(old_mean)
        self.expert = self.expert_weight = None
        if expert is not None:
            self.expert, self.expert_weight = (torch.from_numpy(x).to(device) for x in expert)
        next_values = np.concatenate([values[1:], np.zeros((1, slots), values.dtype)])
        next_values = np.where(traj.ended, final_values, next_values)
        advantages, returns = compute_gae(traj.rewards, values, next_values, traj.terminated, traj.ended, gamma, lam)
        self.advantages = torch.from_numpy(advantages.reshape(-1)).to(device)
        self.returns = torch.from_numpy(returns.reshape(-1)).to(device)
        self.normalised = (self.advantages - self.advantages.mean()) / (self.advantages.std() + 1e-8)

    def minibatches(self, size: int, rng: np.random.Generator) -> Iterator[Minibatch]:
        """One epoch: every sample once, in minibatches of about `size` steps, advantages normalised."""
        if self.seg is None:
            yield from self.rows(torch.from_numpy(rng.permutation(self.obs.shape[0])), size)
        else:
            yield from self._segments(self.normalised, size, rng)

    def epoch(self, perm: torch.Tensor) -> Minibatch:
        """Every feed-forward row in the order of `perm` (a permutation), advantages normalised: one gather per
        epoch, then contiguous minibatches (slices) of it."""
        mirror = self.mirror_obs[perm] if self.mirror_obs is not None else None
        expert, weight = (None, None) if self.expert is None else (self.expert[perm], self.expert_weight[perm])
        critic_obs = None if self.critic_obs is self.obs else self.critic_obs[perm]
        return Minibatch(self.obs[perm], self.actions[perm], self.logprobs[perm], self.normalised[perm],
                         self.returns[perm], mirror, expert=expert, expert_weight=weight,
                         critic_obs=critic_obs)  # fmt: skip

    def rows(self, perm: torch.Tensor, size: int) -> Iterator[Minibatch]:
        """One epoch of feed-forward minibatches in the order of `perm` (a permutation of the rows)."""
        rows = self.epoch(perm)
        for start in range(0, len(perm), size):
            mb = slice(start, start + size)
            mirror = None if rows.mirror_obs is None else rows.mirror_obs[mb]
            expert, weight = (None, None) if rows.expert is None else (rows.expert[mb], rows.expert_weight[mb])
            critic_obs = None if rows.critic_obs is None else rows.critic_obs[mb]
            yield Minibatch(rows.obs[mb], rows.actions[mb], rows.logprobs[mb], rows.advantages[mb],
                            rows.returns[mb], mirror, expert=expert, expert_weight=weight,
                            critic_obs=critic_obs)  # fmt: skip

    def _segments(self, adv: torch.Tensor, size: int, rng: np.random.Generator) -> Iterator[Minibatch]:
        seg = self.seg
        per_batch = max(1, round(size / float(seg.lengths.mean())))  # whole segments, about `size` steps
        order = rng.permutation(len(seg.lengths))
        for start in range(0, len(order), per_batch):
            mb = seg.take(order[start : start + per_batch])
            rows = mb.flat_index()
            mirror = None if self.mirror_obs is None else mb.pad(self.mirror_obs)
            obs = mb.pad(self.obs)
            expert, weight = (None, None) if self.expert is None else (self.expert[rows], self.expert_weight[rows])
            yield Minibatch(obs, self.actions[rows], self.logprobs[rows], adv[rows], self.returns[rows], mirror,
                            mb.mask, expert, weight)  # fmt: skip

    def kl(self, actor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean KL from the old policy to `actor` over the whole batch, and the actor's std."""
        with torch.no_grad():
            if self.seg is None:
                mean, std = actor.head(self.obs)
                return gaussian_kl(self.old_mean, self.old_std, mean, std).mean(), std
            rows = self.seg.flat_index()
            mean, std = actor.seq(self.seg.pad(self.obs))
            return gaussian_kl(self.old_mean[rows], self.old_std[rows], mean[self.seg.mask], std).mean(), std
