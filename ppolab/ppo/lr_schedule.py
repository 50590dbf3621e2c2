"""The learning rate's schedule (`--schedule`): fixed, or adapted to how far each update moved the policy.

`adaptive` follows rsl_rl's rule (its PPO's "adaptive" schedule, as MuJoCo Playground and mjlab train with it):
when the KL divergence between the policy before and after an update is above twice `--desired-kl`, the
learning rate is divided by 1.5; below half of it, multiplied by 1.5; kept within [1e-5, 1e-2]. rsl_rl adapts
after every minibatch; here it adapts after every iteration's update, from that update's mean KL, so the fused
epochs run at one rate and a seed's rates are the same on any machine. The rate in use is in each iteration's
record (`lr`) and in last.pt, so a resumed run continues with it.
"""

from __future__ import annotations

from typing import Literal

Schedule = Literal["fixed", "adaptive"]
LR_MIN, LR_MAX, FACTOR = 1e-5, 1e-2, 1.5


def next_lr(schedule: Schedule, lr: float, kl: float, desired_kl: float) -> float:
    """The learning rate for the next iteration, after an update whose mean KL was `kl`."""
    if schedule == "fixed" or kl != kl:  # nan: nothing to adapt to
        return lr
    if kl > 2.0 * desired_kl:
        return max(LR_MIN, lr / FACTOR)
    if 0.0 < kl < 0.5 * desired_kl:
        return min(LR_MAX, lr * FACTOR)
    return lr
