"""PPO's minibatch step for MLP networks with the gradients written out by hand (`--update fused`).

Why: on the small networks PPO uses, autograd's bookkeeping costs more than the arithmetic. A
cartpole minibatch (256 rows through two 64 x 64 MLPs) is about 14 MFLOP, a fraction of a
millisecond, yet the autograd step took about 2 ms: some 150 small ops, each with its dispatch,
graph node and temporary. Here the same loss and its gradient are about 60 ops: one forward pass
per network that keeps each layer's output, the loss's gradient in closed form, the backward
matmuls written straight into the optimiser's flat gradient (ppolab.ppo.adam.FlatAdam), then
clipping and Adam.

A whole epoch of one network's minibatch steps is one call of a function that TorchScript's
interpreter runs: the same ATen kernels in the same order, so the same bits as from Python, without
Python's 1-2 us around each op and each minibatch (cartpole's update 1.41x faster in `ppolab train`;
torch.compile was no faster, benchmarks/README.md). Where TorchScript cannot be had (it is deprecated),
the functions run from Python, with the same results.

The mathematics is the autograd path's, term for term (clipped surrogate, value loss, entropy bonus,
mirror loss), and tests/test_update.py checks the result against autograd's. The float32
results differ from it in the last bits (another summation order in a few matmuls), so a seed's
metrics agree with `--update exact` to a tolerance, not bit for bit; within each path runs are
bit-identical and resume is exact.
"""

from __future__ import annotations

import math
import warnings

import torch
from torch import Tensor, nn

from ppolab.ppo.adam import ACTOR, CRITIC, FlatAdam, adam_step, bias_corrections
from ppolab.ppo.policy import Actor, Critic


def supports(actor: nn.Module, critic: nn.Module) -> bool:
    """The fused step covers feed-forward Actor/Critic MLPs (tanh or ReLU); the LSTM ones use autograd."""
    return isinstance(actor, Actor) and isinstance(critic, Critic) and actor.activation in ("tanh", "relu")


def mlp_forward(transposed: list[Tensor], biases: list[Tensor], x: Tensor, relu: bool) -> list[Tensor]:
    """[input, hidden outputs..., output]: each linear layer's input, then the network's output."""
    outs = [x]
    last = len(biases) - 1
    for i in range(len(biases)):
        y = torch.addmm(biases[i], outs[-1], transposed[i])
        if i < last:
            y = y.relu_() if relu else y.tanh_()
        outs.append(y)
    return outs


def mlp_backward(weights: list[Tensor], weight_grads: list[Tensor], bias_grads: list[Tensor], outs: list[Tensor],
                 grad: Tensor, relu: bool) -> None:  # fmt: skip
    """Write d(loss)/d(parameters) into the gradient views, given d(loss)/d(output)."""
    for j in range(len(weights)):
        i = len(weights) - 1 - j
        torch.mm(grad.t(), outs[i], out=weight_grads[i])
        torch.sum(grad, [0], out=bias_grads[i])
        if i > 0:
            grad = grad.mm(weights[i])
            if relu:  # autograd's own kernels for the activations' gradients
                grad = torch.ops.aten.threshold_backward(grad, outs[i], 0.0)
            else:
                grad = torch.ops.aten.tanh_backward(grad, outs[i])


def actor_step(weights: list[Tensor], transposed: list[Tensor], biases: list[Tensor], weight_grads: list[Tensor],
               bias_grads: list[Tensor], log_std: Tensor, log_std_grad: Tensor | None, part: list[Tensor],
               obs: Tensor, actions: Tensor, logprobs: Tensor, advantages: Tensor, mirror_obs: Tensor | None,
               act_perm: Tensor | None, act_sign: Tensor | None, inverse_perm: Tensor | None,
               settings: list[float], relu: bool) -> tuple[Tensor, Tensor | None, Tensor]:  # fmt: skip
    """The policy's half of one PPO minibatch and its Adam step. `settings`: clip, entropy coefficient, mirror
    weight, then Adam's (see `adam`). Returns the policy loss, the mirror loss (or None) and the ratios."""
    clip, entropy_coeff, mirror_coeff = settings[0], settings[1], settings[2]
    rows = obs.shape[0]
    x = obs if mirror_obs is None else torch.cat([obs, mirror_obs])  # one pass for both halves
    pi_outs = mlp_forward(transposed, biases, x, relu)
    mean = pi_outs[-1][:rows]
    std = log_std.exp()
    z = (actions - mean) / std
    zz = z * z
    logp = -0.5 * zz.sum(-1) - (log_std.sum() + 0.5 * math.log(2.0 * math.pi) * z.shape[1])  # policy.LOG_2PI
    ratio = (logp - logprobs).exp()
    neg_adv = -advantages
    unclipped, clipped = neg_adv * ratio, neg_adv * ratio.clamp(1 - clip, 1 + clip)
    pg_loss = torch.max(unclipped, clipped).mean()
    # d pg / d ratio: -A/B where the unclipped term is the max (ties only where the clip is inactive)
    d_logp = torch.where(unclipped >= clipped, neg_adv, 0.0).mul_(ratio).div_(rows)
    d_mean = (d_logp.unsqueeze(1) * z).div_(std)
    if log_std_grad is not None:  # d logp / d log_std = z^2 - 1 per action; the entropy term's is 1
        torch.sub(d_logp @ (zz - 1.0), entropy_coeff, out=log_std_grad)
    mirror_loss: Tensor | None = None
    if mirror_obs is not None and act_perm is not None and act_sign is not None and inverse_perm is not None:
        diff = mean - pi_outs[-1][rows:][:, act_perm] * act_sign
        mirror_loss = (diff * diff).mean()
        g = diff.mul(2.0 * mirror_coeff / diff.numel())
        d_mean = torch.cat([d_mean + g, (-g * act_sign)[:, inverse_perm]])
    mlp_backward(weights, weight_grads, bias_grads, pi_outs, d_mean, relu)
    adam(part, settings[3:])
    return pg_loss, mirror_loss, ratio


def critic_step(weights: list[Tensor], transposed: list[Tensor], biases: list[Tensor], weight_grads: list[Tensor],
                bias_grads: list[Tensor], part: list[Tensor], obs: Tensor, returns: Tensor, settings: list[float],
                relu: bool) -> Tensor:  # fmt: skip
    """The value function's half: 0.5 mean squared error to the returns, and its Adam step."""
    v_outs = mlp_forward(transposed, biases, obs, relu)
    err = v_outs[-1].squeeze(-1) - returns
    mlp_backward(weights, weight_grads, bias_grads, v_outs, err.div(obs.shape[0]).unsqueeze(1), relu)
    adam(part, settings)
    return 0.5 * (err * err).mean()


def adam(part: list[Tensor], s: list[float]) -> None:
    """adam.adam_step on a part (flat, grad, exp_avg, exp_avg_sq); `s`: max grad norm, lr, beta1, beta2, eps,
    then the step's sqrt(1 - beta2^t) and 1 - beta1^t."""
    adam_step(part[0], part[1], part[2], part[3], s[0], s[1], (s[2], s[3]), s[4], s[5], s[6])


def step_settings(adam_settings: list[float], t: int) -> list[float]:
    """Adam's settings (max grad norm, lr, beta1, beta2, eps) and step t's bias corrections."""
    bias2_sqrt, bias1 = bias_corrections((adam_settings[2], adam_settings[3]), t)
    return adam_settings + [bias2_sqrt, bias1]


def actor_epoch(weights: list[Tensor], transposed: list[Tensor], biases: list[Tensor], weight_grads: list[Tensor],
                bias_grads: list[Tensor], log_std: Tensor, log_std_grad: Tensor | None, part: list[Tensor],
                obs: Tensor, actions: Tensor, logprobs: Tensor, advantages: Tensor, mirror_obs: Tensor | None,
                act_perm: Tensor | None, act_sign: Tensor | None, inverse_perm: Tensor | None,
                loss_settings: list[float], adam_settings: list[float], relu: bool, size: int,
                t0: int) -> tuple[list[Tensor], list[Tensor], list[Tensor]]:  # fmt: skip
    """One epoch's actor steps, t0+1, t0+2, ...: its rows (in the epoch's order) cut into minibatches of
    `size`. Returns the policy losses, the mirror losses and the ratios, one per minibatch."""
    pg_losses: list[Tensor] = []
    mirror_losses: list[Tensor] = []
    ratios: list[Tensor] = []
    t = t0
    for start in range(0, obs.shape[0], size):
        t += 1
        mb_mirror = None if mirror_obs is None else mirror_obs[start : start + size]
        pg, mirror_loss, ratio = actor_step(
            weights, transposed, biases, weight_grads, bias_grads, log_std, log_std_grad, part,
            obs[start : start + size], actions[start : start + size], logprobs[start : start + size],
            advantages[start : start + size], mb_mirror, act_perm, act_sign, inverse_perm,
            loss_settings + step_settings(adam_settings, t), relu,
        )  # fmt: skip
        pg_losses.append(pg)
        ratios.append(ratio)
        if mirror_loss is not None:
            mirror_losses.append(mirror_loss)
    return pg_losses, mirror_losses, ratios


def critic_epoch(weights: list[Tensor], transposed: list[Tensor], biases: list[Tensor], weight_grads: list[Tensor],
                 bias_grads: list[Tensor], part: list[Tensor], obs: Tensor, returns: Tensor,
                 adam_settings: list[float], relu: bool, size: int, t0: int) -> list[Tensor]:  # fmt: skip
    """One epoch's critic steps, t0+1, t0+2, ...; returns the value losses."""
    losses: list[Tensor] = []
    t = t0
    for start in range(0, obs.shape[0], size):
        t += 1
        losses.append(critic_step(weights, transposed, biases, weight_grads, bias_grads, part,
                                  obs[start : start + size], returns[start : start + size],
                                  step_settings(adam_settings, t), relu))  # fmt: skip
    return losses


def scripted(fn):
    """`fn` under TorchScript, or `fn` itself where TorchScript cannot be had (the reason kept in
    NOT_SCRIPTED, for the console): the same ops either way."""
    global NOT_SCRIPTED
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            script = torch.jit.script(fn)
    except Exception as exc:  # noqa: BLE001 (a torch without TorchScript, or one that cannot script this)
        NOT_SCRIPTED = f"{type(exc).__name__}: {(str(exc).strip() or '?').splitlines()[0]}"
        return fn
    if not isinstance(script, torch.jit.ScriptFunction):
        NOT_SCRIPTED = "turned off (PYTORCH_JIT=0)"
    return script


NOT_SCRIPTED: str | None = None
ACTOR_EPOCH, CRITIC_EPOCH = scripted(actor_epoch), scripted(critic_epoch)


class PartStep:
    """One network's minibatch step on its part of a FlatAdam: its parameters' and gradients' views (made
    once, in `.parameters()` order, the same memory: Adam's steps show), and its Adam settings."""

    def __init__(self, net: nn.Module, optimizer: FlatAdam, part: int, max_grad_norm: float) -> None:
        self.relu = net.activation == "relu"
        layers = [m for m in net.net if isinstance(m, nn.Linear)]
        self.weights = [lin.weight for lin in layers]
        self.transposed = [w.t() for w in self.weights]  # views: they follow the in-place Adam steps
        self.biases = [lin.bias for lin in layers]
        self.weight_grads = [w.grad for w in self.weights]
        self.bias_grads = [b.grad for b in self.biases]
        self.buffers = list(optimizer.parts[part])
        self.adam_settings = [max_grad_norm, optimizer.lr, *optimizer.betas, optimizer.eps]


class ActorStep(PartStep):
    """The policy's minibatch steps, an epoch at a time (one call: no Python between the minibatches)."""

    def __init__(self, actor: Actor, optimizer: FlatAdam, clip: float, entropy_coeff: float, mirror,
                 max_grad_norm: float) -> None:  # fmt: skip
        super().__init__(actor, optimizer, ACTOR, max_grad_norm)
        self.log_std = actor.log_std  # a parameter (its gradient a view too) or a fixed buffer
        self.log_std_grad = actor.log_std.grad if isinstance(actor.log_std, nn.Parameter) else None
        self.mirror = mirror is not None
        # the mirror's action permutation, its inverse and its signs (None without the mirror loss)
        self.act_perm, self.act_sign = (mirror.act_perm, mirror.act_sign) if self.mirror else (None, None)
        self.inverse_perm = torch.argsort(mirror.act_perm) if self.mirror else None
        self.loss_settings = [clip, entropy_coeff, mirror.coeff if self.mirror else 0.0]

    @torch.no_grad()
    def epoch(self, t0: int, size: int, obs, actions, logprobs, advantages, mirror_obs):
        """Adam steps t0+1, ... over one epoch's rows in minibatches of `size`; (policy losses, mirror losses,
        ratios), one per minibatch."""
        return ACTOR_EPOCH(self.weights, self.transposed, self.biases, self.weight_grads, self.bias_grads,
                           self.log_std, self.log_std_grad, self.buffers, obs, actions, logprobs, advantages,
                           mirror_obs if self.mirror else None, self.act_perm, self.act_sign, self.inverse_perm,
                           self.loss_settings, self.adam_settings, self.relu, size, t0)  # fmt: skip


class CriticStep(PartStep):
    """The value function's minibatch steps, an epoch at a time. Independent of the actor's, so either may
    run first, or both at once (ppolab.ppo.critic_process)."""

    def __init__(self, critic: Critic, optimizer: FlatAdam, max_grad_norm: float) -> None:
        super().__init__(critic, optimizer, CRITIC, max_grad_norm)

    @torch.no_grad()
    def epoch(self, t0: int, size: int, obs, returns) -> list:
        """Adam steps t0+1, ... over one epoch's rows in minibatches of `size`; the value losses."""
        return CRITIC_EPOCH(self.weights, self.transposed, self.biases, self.weight_grads, self.bias_grads,
                            self.buffers, obs, returns, self.adam_settings, self.relu, size, t0)  # fmt: skip
