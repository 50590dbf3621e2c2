"""numba for the tasks' per-step arithmetic: how a kernel is compiled and cached, and the small helpers the
kernels inline (walk_kernels, step_kernels).

Why compiled: a task runs for every env at every control step, and in numpy its cost is per call, not per
element: a task's reward and observation take dozens of calls a batch step, 100-250 us for 6 envs, beside about
1.2-2.4 ms of `mj_step`. One compiled loop over the envs does the same in a few microseconds. Each env is
computed on its own, in a fixed order, so a row's result never depends on how many envs a process steps (a
seed's metrics do not depend on the core count).

numba compiles on first use and keeps the machine code in a cache (beside the kernel's file, or in the user's
cache folder where that one is read-only; see `compiled`): a new process loads it in about 0.4 s of numba's own
start-up instead of compiling, once, before a sampler forks its workers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from numba import njit


def compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`njit` with its machine code cached on disk where numba finds a writable folder; where it finds none
    (a read-only install and a read-only home: numba refuses `cache=True` then), compiled in each process."""
    try:
        return njit(cache=True)(fn)
    except RuntimeError:
        return njit(fn)


@njit(inline="always")  # inlined into the kernels: no symbol of its own to cache
def wrap(angle: float) -> float:
    """An angle wrapped into [-pi, pi), as humanoid.wrap_angle."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


@njit(inline="always")
def clamp(x: float, limit: float) -> float:
    return min(max(x, -limit), limit)


@njit(inline="always")
def heading_of(w: float, x: float, y: float, z: float) -> float:
    """The heading (yaw) of a quaternion (w, x, y, z), as humanoid.yaw."""
    return math.atan2(2.0 * (w * z) + 2.0 * (x * y), 1.0 - (2.0 * (y * y) + 2.0 * (z * z)))


@njit(inline="always")
def foot_clock_score(clock: float, value: float) -> float:
    """tan(pi/4 x clock x (2 value - 1)), the value clipped to [0, 1]: +1 when a foot's normalised force or
    speed is what its clock in [-1, 1] asks for (LHW's clock reward), -1 when it is the opposite, 0 for a clock
    at 0. A task averages it over the feet."""
    return math.tan(0.25 * math.pi * clock * (2.0 * min(max(value, 0.0), 1.0) - 1.0))


@njit(inline="always")
def compose_terms(sizes: Any, factor: Any, linear: Any, weights: Any, terms: Any, count: int) -> float:
    """A reward table's first `count` terms of one env (reward_terms.Rewards): each contribution into `terms`,
    weight x scale x size for a linear term and weight x exp(-scale x size) for an exp term (`factor` holds the
    scale, negated for exp terms); returns their sum."""
    total = 0.0
    for k in range(count):
        x = sizes[k] * factor[k]
        c = weights[k] * (x if linear[k] else math.exp(x))
        terms[k] = c
        total += c
    return total
