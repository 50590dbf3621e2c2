"""`--recurrent`: PPO with LSTM actor and critic, trained on whole trajectory segments.

An iteration's experience is cut into segments, one per episode (or the part of
it inside the iteration), each starting from a zero LSTM state, as the sampler
ran it. Segments are padded to a common length, time-major, with a mask; a
minibatch is a set of whole segments holding about `minibatch_size` steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ppolab.ppo.policy import (
    RecurrentActor,
    RecurrentCritic,
    gaussian_entropy,
    gaussian_kl,
    gaussian_log_prob,
)
from ppolab.ppo.update import Batch, FlatAdam, Hyper, Mirror, surrogate_loss, update_stats


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


def old_outputs(
    actor: RecurrentActor, critic: RecurrentCritic, obs: torch.Tensor, final_obs: torch.Tensor, seg: Segments
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Means, std, values at every step, and the value of the observation after each segment's last step.

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


def recurrent_update(
    actor: RecurrentActor,
    critic: RecurrentCritic,
    optimizer: FlatAdam,
    seg: Segments,
    b: Batch,
    hp: Hyper,
    rng: np.random.Generator,
    mirror: Mirror | None = None,
) -> dict[str, float]:
    """PPO epochs over minibatches of whole segments; the same losses as the feed-forward update, masked."""
    obs, actions, logprobs, returns, mirror_obs = b.obs, b.actions, b.logprobs, b.returns, b.mirror_obs
    adv = (b.advantages - b.advantages.mean()) / (b.advantages.std() + 1e-8)
    per_batch = max(1, round(hp.minibatch_size / float(seg.lengths.mean())))
    actor_losses, critic_losses, mirror_losses, ratios = [], [], [], []
    for _ in range(hp.epochs):
        order = rng.permutation(len(seg.lengths))
        for start in range(0, len(order), per_batch):
            mb = seg.take(order[start : start + per_batch])
            mask, rows = mb.mask, mb.flat_index()
            mean, std = actor.seq(mb.pad(obs))
            mean = mean[mask]
            ratio = (gaussian_log_prob(mean, std, actions[rows]) - logprobs[rows]).exp()
            a = adv[rows]
            pg_loss = surrogate_loss(ratio, a, hp.clip)
            critic_loss = 0.5 * ((critic.seq(mb.pad(obs))[mask] - returns[rows]) ** 2).mean()
            loss = pg_loss - hp.entropy_coeff * gaussian_entropy(std).mean() + critic_loss
            if mirror is not None and mirror_obs is not None:
                mirrored, _ = actor.seq(mb.pad(mirror_obs))
                mirror_loss = ((mean - mirrored[mask][:, mirror.act_perm] * mirror.act_sign) ** 2).mean()
                loss = loss + mirror.coeff * mirror_loss
                mirror_losses.append(mirror_loss.detach())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step(hp.max_grad_norm)
            actor_losses.append(pg_loss.detach())
            critic_losses.append(critic_loss.detach())
            ratios.append(ratio.detach())
    with torch.no_grad():
        mean, std = actor.seq(seg.pad(obs))
        kl = gaussian_kl(b.old_mean[seg.flat_index()], b.old_std[seg.flat_index()], mean[seg.mask], std).mean()
    losses = {"actor_loss": actor_losses, "critic_loss": critic_losses, "mirror_loss": mirror_losses}
    return update_stats(losses, ratios, hp.clip, kl, std)
