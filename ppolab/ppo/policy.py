"""Actor (Gaussian MLP), critic (MLP) and the running observation normaliser they share.

The normaliser lives inside both networks as buffers, so `actor.pt` alone is
enough to run the policy. The MLPs are built from a `network.NetSpec`, which the
numpy twin that rollout workers run (`sampling_policy.py`, fed by `sampling_params`)
and the fused update (`fused_step.py`) read too.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ppolab.ppo.network import ACTIVATIONS, NetSpec
from ppolab.ppo.sampling_policy import SamplingParams

LOG_2PI = math.log(2.0 * math.pi)


class ObsNormalizer(nn.Module):
    """Running mean and variance of observations (parallel-merge update, float64)."""

    def __init__(self, dim: int, clip: float = 10.0) -> None:
        super().__init__()
        self.clip = clip
        self.register_buffer("mean", torch.zeros(dim, dtype=torch.float64))
        self.register_buffer("var", torch.ones(dim, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        std = torch.sqrt(self.var + 1e-8)
        return ((obs - self.mean.to(obs.dtype)) / std.to(obs.dtype)).clamp(-self.clip, self.clip)

    @torch.no_grad()
    def update(self, batch: np.ndarray) -> None:
        """Merge a batch's statistics into the running ones (Chan et al.)."""
        x = torch.as_tensor(batch, dtype=torch.float64).reshape(-1, self.mean.numel())
        n = float(x.shape[0])
        if n == 0:
            return
        b_mean, b_var = x.mean(0), x.var(0, unbiased=False)
        total = self.count + n
        delta = b_mean - self.mean
        m2 = self.var * self.count + b_var * n + delta**2 * self.count * n / total
        self.mean.copy_(self.mean + delta * n / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)


def mlp(spec: NetSpec) -> nn.Sequential:
    """The spec's layers as torch modules: Linear, activation, ..., Linear."""
    layers: list[nn.Module] = []
    activation = getattr(nn, ACTIVATIONS[spec.activation].torch_module)
    for i in range(spec.layers):
        layers.append(nn.Linear(spec.sizes[i], spec.sizes[i + 1]))
        if i < spec.layers - 1:
            layers.append(activation())
    return nn.Sequential(*layers)


def start_at(layer: nn.Linear, mean: np.ndarray) -> None:
    """The output layer's bias set to `mean`: with its weights scaled small, the untrained policy's mean action."""
    with torch.no_grad():
        layer.bias.copy_(torch.as_tensor(mean, dtype=layer.bias.dtype))


class Actor(nn.Module):
    """Gaussian policy: MLP mean, per-action std that is fixed or learned."""

    def __init__(
        self,
        norm: ObsNormalizer,
        obs_dim: int,
        act_dim: int,
        hidden: list[int],
        std: float,
        learn_std: bool,
        activation: str = "tanh",
    ) -> None:
        super().__init__()
        self.norm = norm
        self.spec = NetSpec.of(obs_dim, hidden, act_dim, activation)
        self.net = mlp(self.spec)
        with torch.no_grad():  # small initial means: start near "do nothing"
            self.net[-1].weight.mul_(0.01)
            self.net[-1].bias.zero_()
        log_std = torch.full((act_dim,), math.log(std))
        if learn_std:
            self.log_std = nn.Parameter(log_std)
        else:
            self.register_buffer("log_std", log_std)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.head(self.norm(obs))

    def head(self, normed_obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and std from already-normalised observations (the update normalises once per batch)."""
        return self.net(normed_obs), self.log_std.exp()

    def start_at(self, mean: np.ndarray) -> None:
        """Make `mean` the untrained policy's mean action (near it: the last layer's weights are small)."""
        start_at(self.net[-1], mean)


class Critic(nn.Module):
    """The value function. `privileged_dim` > 0 (an asymmetric critic, as mjlab's and Playground's): it also
    reads the env's privileged state, normalised by a running normaliser of its own, after the observation."""

    def __init__(
        self, norm: ObsNormalizer, obs_dim: int, hidden: list[int], activation: str = "tanh", privileged_dim: int = 0
    ) -> None:
        super().__init__()
        self.norm = norm
        self.priv_norm = ObsNormalizer(privileged_dim) if privileged_dim else None
        self.spec = NetSpec.of(obs_dim + privileged_dim, hidden, 1, activation)
        self.net = mlp(self.spec)

    def forward(self, obs: torch.Tensor, priv: torch.Tensor | None = None) -> torch.Tensor:
        return self.head(self.inputs(self.norm(obs), priv))

    def inputs(self, normed_obs: torch.Tensor, priv: torch.Tensor | None) -> torch.Tensor:
        """What the network reads: the normalised observation, then the normalised privileged state if any."""
        if self.priv_norm is None:
            return normed_obs
        return torch.cat([normed_obs, self.priv_norm(priv)], dim=-1)

    def head(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.net(inputs).squeeze(-1)


class LSTMStack(nn.Module):
    """Stacked LSTM layers (widths may differ), run over time-major (L, S, D) sequences from a zero state."""

    def __init__(self, obs_dim: int, hidden: list[int]) -> None:
        super().__init__()
        sizes = [obs_dim, *hidden]
        self.layers = nn.ModuleList(nn.LSTM(sizes[i], sizes[i + 1]) for i in range(len(hidden)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x, _ = layer(x)
        return x


class RecurrentActor(nn.Module):
    """`--recurrent`: an LSTM Gaussian policy. `seq` maps normalised (L, S, obs) sequences to means."""

    def __init__(
        self, norm: ObsNormalizer, obs_dim: int, act_dim: int, hidden: list[int], std: float, learn_std: bool
    ) -> None:
        super().__init__()
        self.norm = norm
        self.lstm = LSTMStack(obs_dim, hidden)
        self.out = nn.Linear(hidden[-1], act_dim)
        with torch.no_grad():
            self.out.weight.mul_(0.01)
            self.out.bias.zero_()
        log_std = torch.full((act_dim,), math.log(std))
        if learn_std:
            self.log_std = nn.Parameter(log_std)
        else:
            self.register_buffer("log_std", log_std)

    def seq(self, normed_obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.out(self.lstm(normed_obs)), self.log_std.exp()

    def start_at(self, mean: np.ndarray) -> None:
        start_at(self.out, mean)


class RecurrentCritic(nn.Module):
    def __init__(self, norm: ObsNormalizer, obs_dim: int, hidden: list[int]) -> None:
        super().__init__()
        self.norm = norm
        self.priv_norm = None  # it reads the observation alone (--privileged-critic is for the MLP critic)
        self.lstm = LSTMStack(obs_dim, hidden)
        self.out = nn.Linear(hidden[-1], 1)

    def seq(self, normed_obs: torch.Tensor) -> torch.Tensor:
        return self.out(self.lstm(normed_obs)).squeeze(-1)


def gaussian_log_prob(mean: torch.Tensor, std: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    z = (action - mean) / std
    return (-0.5 * z**2 - torch.log(std) - 0.5 * LOG_2PI).sum(-1)


def gaussian_entropy(std: torch.Tensor) -> torch.Tensor:
    """Differential entropy of a diagonal Gaussian (negative for small std)."""
    return (0.5 + 0.5 * LOG_2PI + torch.log(std)).sum(-1)


def gaussian_kl(mean0, std0, mean1, std1) -> torch.Tensor:
    """KL(old || new) between diagonal Gaussians, summed over action dims."""
    return (torch.log(std1 / std0) + (std0**2 + (mean0 - mean1) ** 2) / (2.0 * std1**2) - 0.5).sum(-1)


def sampling_params(actor: Actor | RecurrentActor) -> SamplingParams:
    """What rollout workers need to run the actor's mean in numpy (ppolab.ppo.sampling_policy)."""

    def np_(t: torch.Tensor):
        return t.detach().float().cpu().numpy()

    with torch.no_grad():
        lstm = []
        if isinstance(actor, RecurrentActor):
            linears = [actor.out]
            lstm = [
                (np_(m.weight_ih_l0.T.contiguous()), np_(m.weight_hh_l0.T.contiguous()),
                 np_(m.bias_ih_l0 + m.bias_hh_l0))
                for m in actor.lstm.layers
            ]  # fmt: skip
        else:
            linears = [m for m in actor.net if isinstance(m, nn.Linear)]
        return SamplingParams(
            mean=np_(actor.norm.mean),
            inv_std=np_(1.0 / torch.sqrt(actor.norm.var + 1e-8)),
            clip=float(actor.norm.clip),
            std=np_(actor.log_std.exp()),
            weights=[np_(m.weight.T.contiguous()) for m in linears],
            biases=[np_(m.bias) for m in linears],
            activation=actor.spec.activation if isinstance(actor, Actor) else "tanh",
            lstm=lstm,
        )
