"""PPO's minibatch step for MLP networks with the gradients written out by hand (`--update fused`).

Why: on the small networks PPO uses, autograd's bookkeeping costs more than the arithmetic. A
cartpole minibatch (256 rows through two 64 x 64 MLPs) is about 14 MFLOP, a fraction of a
millisecond, yet the autograd step took about 2 ms: some 150 small ops, each with its dispatch,
graph node and temporary. Here the same loss and its gradient are about 70 ops: one forward pass
per network that keeps each layer's output, the loss's gradient in closed form, and the backward
matmuls written straight into the optimiser's flat gradient (ppolab.ppo.update.FlatAdam).

The mathematics is the autograd path's, term for term (clipped surrogate, value loss, entropy bonus,
mirror loss), and tests/test_update.py checks the result against autograd's. The float32
results differ from it in the last bits (another summation order in a few matmuls), so a seed's
metrics agree with `--update exact` to a tolerance, not bit for bit; within each path runs are
bit-identical and resume is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ppolab.ppo.policy import LOG_2PI, Actor, Critic


def linears(net: nn.Sequential) -> list[nn.Linear]:
    return [m for m in net if isinstance(m, nn.Linear)]


def supports(actor: nn.Module, critic: nn.Module) -> bool:
    """The fused step covers feed-forward Actor/Critic MLPs (tanh or ReLU); the LSTM ones use autograd."""
    return isinstance(actor, Actor) and isinstance(critic, Critic) and actor.activation in ("tanh", "relu")


@dataclass
class MLP:
    """One network's linear layers and activation: a forward that keeps what the backward needs."""

    layers: list[nn.Linear]
    relu: bool

    def __post_init__(self) -> None:
        self.transposed = [lin.weight.t() for lin in self.layers]  # views: they follow the in-place Adam steps

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        """[input, hidden outputs..., output]: each linear layer's input, then the network's output."""
        outs = [x]
        last = len(self.layers) - 1
        for i, (lin, wt) in enumerate(zip(self.layers, self.transposed)):
            y = torch.addmm(lin.bias, outs[-1], wt)
            if i < last:
                y = y.relu_() if self.relu else y.tanh_()
            outs.append(y)
        return outs

    def backward(self, outs: list[torch.Tensor], grad: torch.Tensor) -> None:
        """Write d(loss)/d(parameters) into the layers' .grad views, given d(loss)/d(output)."""
        for i in range(len(self.layers) - 1, -1, -1):
            lin = self.layers[i]
            torch.mm(grad.t(), outs[i], out=lin.weight.grad)
            torch.sum(grad, 0, out=lin.bias.grad)
            if i:
                grad = grad.mm(lin.weight)
                if self.relu:  # autograd's own kernels for the activations' gradients
                    grad = torch.ops.aten.threshold_backward(grad, outs[i], 0)
                else:
                    grad = torch.ops.aten.tanh_backward(grad, outs[i])


class ActorStep:
    """The policy's half of one PPO minibatch for an Actor whose parameters are views into a FlatAdam
    buffer: gradients written, returns the policy loss, the mirror loss (or None) and the ratios."""

    def __init__(self, actor: Actor, clip: float, entropy_coeff: float, mirror=None) -> None:
        self.actor, self.pi = actor, MLP(linears(actor.net), actor.activation == "relu")
        self.learn_std = isinstance(actor.log_std, nn.Parameter)
        self.clip, self.entropy_coeff, self.mirror = clip, entropy_coeff, mirror
        if mirror is not None:
            self.inverse_perm = torch.argsort(mirror.act_perm)
        self.zero = torch.zeros((), device=actor.log_std.device)  # torch.where's other: no scalar wrapped per call

    @torch.no_grad()
    def __call__(self, mb) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        rows = mb.obs.shape[0]
        mirrored = self.mirror is not None and mb.mirror_obs is not None
        x = torch.cat([mb.obs, mb.mirror_obs]) if mirrored else mb.obs  # one pass for both halves
        pi_outs = self.pi.forward(x)
        mean = pi_outs[-1][:rows]
        log_std = self.actor.log_std
        std = log_std.exp()
        z = (mb.actions - mean) / std
        zz = z * z
        logp = -0.5 * zz.sum(-1) - (log_std.sum() + 0.5 * LOG_2PI * z.shape[1])
        ratio = (logp - mb.logprobs).exp()
        neg_adv = -mb.advantages
        unclipped, clipped = neg_adv * ratio, neg_adv * ratio.clamp(1 - self.clip, 1 + self.clip)
        pg_loss = torch.max(unclipped, clipped).mean()
        # d pg / d ratio: -A/B where the unclipped term is the max (ties only where the clip is inactive)
        d_logp = torch.where(unclipped >= clipped, neg_adv, self.zero).mul_(ratio).div_(rows)
        d_mean = (d_logp[:, None] * z).div_(std)
        if self.learn_std:  # d logp / d log_std = z^2 - 1 per action; the entropy term's is 1
            torch.sub(d_logp @ (zz - 1.0), self.entropy_coeff, out=log_std.grad)
        mirror_loss = None
        if mirrored:
            m = self.mirror
            diff = mean - pi_outs[-1][rows:, m.act_perm] * m.act_sign
            mirror_loss = (diff * diff).mean()
            g = diff.mul(2.0 * m.coeff / diff.numel())
            d_mean = torch.cat([d_mean + g, (-g * m.act_sign)[:, self.inverse_perm]])
        self.pi.backward(pi_outs, d_mean)
        return pg_loss, mirror_loss, ratio


class CriticStep:
    """The value function's half: 0.5 mean squared error to the returns, gradients written into the
    Critic's views of a FlatAdam buffer. Independent of the actor's half, so either may run first, or
    both at once (ppolab.ppo.critic_process)."""

    def __init__(self, critic: Critic) -> None:
        self.v = MLP(linears(critic.net), critic.activation == "relu")

    @torch.no_grad()
    def __call__(self, obs: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
        v_outs = self.v.forward(obs)
        err = v_outs[-1].squeeze(-1) - returns
        self.v.backward(v_outs, err.div(obs.shape[0])[:, None])
        return 0.5 * (err * err).mean()
