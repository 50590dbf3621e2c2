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

The mathematics is the autograd path's (ppolab.ppo.loss), term for term (clipped surrogate, value
loss, entropy bonus, mirror loss, imitation loss), and tests/test_update.py checks the result against autograd's. The
network's layers and activation come from its `network.NetSpec`; each activation's derivative is in
`activate_backward`, and tests/test_network.py checks every activation of `network.ACTIVATIONS` here. The float32
results differ from it in the last bits (another summation order in a few matmuls), so a seed's
metrics agree with `--update exact` to a tolerance, not bit for bit; within each path runs are
bit-identical and resume is exact.
"""

import math
import warnings
from typing import NamedTuple

import torch
from torch import Tensor, nn

from ppolab.ppo.adam import ACTOR, CRITIC, FlatAdam, adam_step, bias_corrections
from ppolab.ppo.loss import LossSettings, MirrorMaps
from ppolab.ppo.policy import Actor, Critic


def supports(actor: nn.Module, critic: nn.Module) -> bool:
    """The fused step covers the feed-forward Actor/Critic MLPs (every activation); the LSTM ones use autograd."""
    return isinstance(actor, Actor) and isinstance(critic, Critic)


class Mlp(NamedTuple):
    """One network's layers as the kernel sees them: the weights, their transposes and biases, the views of
    their gradients in the optimiser's flat gradient, and the hidden activation's name."""

    weights: list[Tensor]
    transposed: list[Tensor]
    biases: list[Tensor]
    weight_grads: list[Tensor]
    bias_grads: list[Tensor]
    activation: str


class AdamPart(NamedTuple):
    """One network's part of a FlatAdam (parameters, gradient, moments: flat views) and Adam's settings."""

    flat: Tensor
    grad: Tensor
    exp_avg: Tensor
    exp_avg_sq: Tensor
    max_grad_norm: float
    lr: float
    beta1: float
    beta2: float
    eps: float


class LogStd(NamedTuple):
    """The policy's log std and the view of its gradient (None: a fixed std, a buffer)."""

    value: Tensor
    grad: Tensor | None


class ActorRows(NamedTuple):
    """Rows the policy's loss reads: normalised observations, actions, their old log-probabilities, normalised
    advantages, the mirrored observations (None without the mirror loss), and an expert's actions with their
    weights (None without --imitate)."""

    obs: Tensor
    actions: Tensor
    logprobs: Tensor
    advantages: Tensor
    mirror_obs: Tensor | None
    expert: Tensor | None = None
    expert_weight: Tensor | None = None


def activate(y: Tensor, activation: str) -> Tensor:
    """A hidden layer's activation, in place: network.ACTIVATIONS's, as torch's modules compute it."""
    if activation == "tanh":
        return y.tanh_()
    if activation == "relu":
        return y.relu_()
    if activation == "elu":
        return torch.nn.functional.elu_(y)
    raise RuntimeError("fused_step.activate has no case for the activation " + activation)


def activate_backward(grad: Tensor, out: Tensor, activation: str) -> Tensor:
    """d(loss)/d(pre-activation) from d(loss)/d(output) and the output: autograd's own kernels."""
    if activation == "tanh":
        return torch.ops.aten.tanh_backward(grad, out)
    if activation == "relu":
        return torch.ops.aten.threshold_backward(grad, out, 0.0)
    if activation == "elu":  # from the result: alpha 1, scale 1, input scale 1
        return torch.ops.aten.elu_backward(grad, 1.0, 1.0, 1.0, True, out)
    raise RuntimeError("fused_step.activate_backward has no derivative for the activation " + activation)


def mlp_forward(net: Mlp, x: Tensor) -> list[Tensor]:
    """[input, hidden outputs..., output]: each linear layer's input, then the network's output."""
    outs = [x]
    last = len(net.biases) - 1
    for i in range(len(net.biases)):
        y = torch.addmm(net.biases[i], outs[-1], net.transposed[i])
        if i < last:
            y = activate(y, net.activation)
        outs.append(y)
    return outs


def mlp_backward(net: Mlp, outs: list[Tensor], grad: Tensor) -> None:
    """Write d(loss)/d(parameters) into the gradient views, given d(loss)/d(output)."""
    for j in range(len(net.weights)):
        i = len(net.weights) - 1 - j
        torch.mm(grad.t(), outs[i], out=net.weight_grads[i])
        torch.sum(grad, [0], out=net.bias_grads[i])
        if i > 0:
            grad = activate_backward(grad.mm(net.weights[i]), outs[i], net.activation)


def adam(part: AdamPart, t: int) -> None:
    """Adam step t of one network (adam.adam_step), its gradient clipped first."""
    bias2_sqrt, bias1 = bias_corrections((part.beta1, part.beta2), t)
    adam_step(part.flat, part.grad, part.exp_avg, part.exp_avg_sq, part.max_grad_norm, part.lr,
              (part.beta1, part.beta2), part.eps, bias2_sqrt, bias1)  # fmt: skip


def actor_step(net: Mlp, log_std: LogStd, part: AdamPart, loss: LossSettings, mirror: MirrorMaps | None,
               rows: ActorRows, t: int) -> tuple[Tensor, Tensor | None, Tensor, Tensor | None]:  # fmt: skip
    """The policy's half of one PPO minibatch and its Adam step t. Returns the policy loss, the mirror loss
    (or None), the ratios and the imitation loss (or None)."""
    n = rows.obs.shape[0]
    mirror_obs = rows.mirror_obs if mirror is not None else None
    x = rows.obs if mirror_obs is None else torch.cat([rows.obs, mirror_obs])  # one pass for both halves
    pi_outs = mlp_forward(net, x)
    mean = pi_outs[-1][:n]
    std = log_std.value.exp()
    z = (rows.actions - mean) / std
    zz = z * z
    logp = -0.5 * zz.sum(-1) - (log_std.value.sum() + 0.5 * math.log(2.0 * math.pi) * z.shape[1])  # policy.LOG_2PI
    ratio = (logp - rows.logprobs).exp()
    neg_adv = -rows.advantages
    unclipped, clipped = neg_adv * ratio, neg_adv * ratio.clamp(1 - loss.clip, 1 + loss.clip)
    pg_loss = torch.max(unclipped, clipped).mean()
    # d pg / d ratio: -A/B where the unclipped term is the max (ties only where the clip is inactive)
    d_logp = torch.where(unclipped >= clipped, neg_adv, 0.0).mul_(ratio).div_(n)
    d_mean = (d_logp.unsqueeze(1) * z).div_(std)
    log_std_grad = log_std.grad
    if log_std_grad is not None:  # d logp / d log_std = z^2 - 1 per action; the entropy term's is 1
        torch.sub(d_logp @ (zz - 1.0), loss.entropy_coeff, out=log_std_grad)
    imitation: Tensor | None = None
    expert, weight = rows.expert, rows.expert_weight
    if expert is not None and weight is not None:  # loss.imitation_loss and its gradient
        diff = (mean - expert).mul_(weight)
        count = weight.sum().clamp(min=1.0)
        imitation = (diff * diff).sum() / count
        d_mean = d_mean + diff.mul_(2.0 * loss.imitate_coeff).div_(count)
    mirror_loss: Tensor | None = None
    if mirror is not None and mirror_obs is not None:
        diff = mean - pi_outs[-1][n:][:, mirror.perm] * mirror.sign
        mirror_loss = (diff * diff).mean()
        g = diff.mul(2.0 * loss.mirror_coeff / diff.numel())
        d_mean = torch.cat([d_mean + g, (-g * mirror.sign)[:, mirror.inverse]])
    mlp_backward(net, pi_outs, d_mean)
    adam(part, t)
    return pg_loss, mirror_loss, ratio, imitation


def critic_step(net: Mlp, part: AdamPart, obs: Tensor, returns: Tensor, t: int) -> Tensor:
    """The value function's half: 0.5 mean squared error to the returns, and its Adam step t."""
    v_outs = mlp_forward(net, obs)
    err = v_outs[-1].squeeze(-1) - returns
    mlp_backward(net, v_outs, err.div(obs.shape[0]).unsqueeze(1))
    adam(part, t)
    return 0.5 * (err * err).mean()


def actor_epoch(net: Mlp, log_std: LogStd, part: AdamPart, loss: LossSettings, mirror: MirrorMaps | None,
                rows: ActorRows, size: int, t0: int
                ) -> tuple[list[Tensor], list[Tensor], list[Tensor], list[Tensor]]:  # fmt: skip
    """One epoch's actor steps, t0+1, t0+2, ...: its rows (in the epoch's order) cut into minibatches of
    `size`. Returns the policy losses, the mirror losses, the ratios and the imitation losses, one per
    minibatch."""
    pg_losses: list[Tensor] = []
    mirror_losses: list[Tensor] = []
    ratios: list[Tensor] = []
    imitation_losses: list[Tensor] = []
    t = t0
    all_mirror_obs = rows.mirror_obs  # locals: TorchScript refines Optional locals only
    all_expert, all_weight = rows.expert, rows.expert_weight
    for start in range(0, rows.obs.shape[0], size):
        t += 1
        end = start + size
        mb_mirror = None if all_mirror_obs is None else all_mirror_obs[start:end]
        mb_expert = None if all_expert is None else all_expert[start:end]
        mb_weight = None if all_weight is None else all_weight[start:end]
        mb = ActorRows(rows.obs[start:end], rows.actions[start:end], rows.logprobs[start:end],
                       rows.advantages[start:end], mb_mirror, mb_expert, mb_weight)  # fmt: skip
        pg, mirror_loss, ratio, imitation = actor_step(net, log_std, part, loss, mirror, mb, t)
        pg_losses.append(pg)
        ratios.append(ratio)
        if mirror_loss is not None:
            mirror_losses.append(mirror_loss)
        if imitation is not None:
            imitation_losses.append(imitation)
    return pg_losses, mirror_losses, ratios, imitation_losses


def critic_epoch(net: Mlp, part: AdamPart, obs: Tensor, returns: Tensor, size: int, t0: int) -> list[Tensor]:
    """One epoch's critic steps, t0+1, t0+2, ...; returns the value losses."""
    losses: list[Tensor] = []
    t = t0
    for start in range(0, obs.shape[0], size):
        t += 1
        losses.append(critic_step(net, part, obs[start : start + size], returns[start : start + size], t))
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


def mlp_of(net: Actor | Critic) -> Mlp:
    """The kernel's view of a network (made once, in `.parameters()` order, the same memory: Adam's steps show)."""
    layers = [m for m in net.net if isinstance(m, nn.Linear)]
    weights = [lin.weight for lin in layers]
    biases = [lin.bias for lin in layers]
    transposed = [w.t() for w in weights]  # views: they follow the in-place Adam steps
    return Mlp(weights, transposed, biases, [w.grad for w in weights], [b.grad for b in biases], net.spec.activation)


def adam_part(optimizer: FlatAdam, part: int, max_grad_norm: float) -> AdamPart:
    flat, grad, exp_avg, exp_avg_sq = optimizer.parts[part]
    beta1, beta2 = optimizer.betas
    return AdamPart(flat, grad, exp_avg, exp_avg_sq, max_grad_norm, optimizer.lr, beta1, beta2, optimizer.eps)


class ActorStep:
    """The policy's minibatch steps, an epoch at a time (one call: no Python between the minibatches)."""

    def __init__(self, actor: Actor, optimizer: FlatAdam, loss: LossSettings, mirror: MirrorMaps | None,
                 max_grad_norm: float) -> None:  # fmt: skip
        self.net = mlp_of(actor)
        self.part = adam_part(optimizer, ACTOR, max_grad_norm)
        learned = isinstance(actor.log_std, nn.Parameter)  # else a fixed buffer
        self.log_std = LogStd(actor.log_std, actor.log_std.grad if learned else None)
        self.loss, self.mirror = loss, mirror

    @torch.no_grad()
    def epoch(self, t0: int, size: int, rows: ActorRows, lr: float
              ) -> tuple[list[Tensor], list[Tensor], list[Tensor], list[Tensor]]:  # fmt: skip
        """Adam steps t0+1, ... at learning rate `lr` over one epoch's rows in minibatches of `size`; (policy
        losses, mirror losses, ratios, imitation losses), one per minibatch."""
        part = self.part._replace(lr=lr)
        return ACTOR_EPOCH(self.net, self.log_std, part, self.loss, self.mirror, rows, size, t0)


class CriticStep:
    """The value function's minibatch steps, an epoch at a time. Independent of the actor's, so either may
    run first, or both at once (ppolab.ppo.critic_process)."""

    def __init__(self, critic: Critic, optimizer: FlatAdam, max_grad_norm: float) -> None:
        self.net = mlp_of(critic)
        self.part = adam_part(optimizer, CRITIC, max_grad_norm)

    @torch.no_grad()
    def epoch(self, t0: int, size: int, obs: Tensor, returns: Tensor, lr: float) -> list[Tensor]:
        """Adam steps t0+1, ... at learning rate `lr` over one epoch's rows in minibatches of `size`; the value
        losses."""
        return CRITIC_EPOCH(self.net, self.part._replace(lr=lr), obs, returns, size, t0)
