"""LearningHumanoidWalking's gait clock: smooth per-foot targets for ground force and foot speed.

One cycle is right swing, double support, left swing, double support. Each foot's
force clock is -1 while it swings (no load wanted) and +1 while it stands; its
speed clock is the opposite. Between phases the clock is a monotone cubic
(PCHIP) through two knots per phase, each pulled `relax` of the phase's length
inside it, so the targets change smoothly at touchdown and lift-off. Each phase's
two knots hold the same value, so PCHIP's slope is zero at every knot and each
piece is the cubic smoothstep between its two values: written so here, equal to
SciPy's PchipInterpolator on these knots (tests/test_humanoid_envs.py), without
importing scipy.interpolate (0.65 s) in every process that builds a walker.

The phase is an integer count of control steps, so both clocks are tabulated
once per env for the whole cycle: a step looks them up instead of evaluating splines. A foot is scored
against its clock by `compiled.foot_clock_score`, inside the tasks' compiled rewards.
"""

from __future__ import annotations

import math

import numpy as np


def clock_tables(swing: float, stance: float, control_dt: float, relax: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """(period, 2) force clocks for the right and left foot at each integer phase, and the double-support mask.

    `swing` and `stance` are the seconds of one foot's swing and of each double support.
    """
    freq = 1.0 / control_dt
    bounds = np.cumsum([0.0, swing, stance, swing, stance]) * freq  # right swing, dbl, left swing, dbl
    cycle = bounds[-1]
    right = (-1.0, 1.0, 1.0, 1.0)
    left = (1.0, 1.0, -1.0, 1.0)
    knots, r_val, l_val = [], [], []
    for k in range(4):
        a, b = bounds[k], bounds[k + 1]
        off = (b - a) * relax
        knots += [a + off, b - off]
        r_val += [right[k]] * 2
        l_val += [left[k]] * 2
    x = np.concatenate([np.array(knots) + shift for shift in (-cycle, 0.0, cycle)])  # three cycles: continuity
    period = math.floor(cycle)
    phases = np.arange(period, dtype=float)
    piece = np.searchsorted(x, phases, side="right") - 1  # the piece each phase falls in
    s = (phases - x[piece]) / (x[piece + 1] - x[piece])
    rise = s * s * (3.0 - 2.0 * s)  # Hermite with zero slopes at both knots
    values = [np.tile(v, 3) for v in (r_val, l_val)]
    table = np.stack([v[piece] + (v[piece + 1] - v[piece]) * rise for v in values], axis=1)
    double_support = np.all(table >= 1.0 - 1e-9, axis=1)
    return np.clip(table, -1.0, 1.0), double_support


def clock_observation(period: int) -> np.ndarray:
    """(period, 2): what the policy observes of the clock at each phase, sin and cos of its angle."""
    angle = 2 * np.pi * np.arange(period) / period
    return np.stack([np.sin(angle), np.cos(angle)], axis=1)


def check_half_cycle(swing: float, stance: float, control_dt: float) -> None:
    """The mirror maps a gait state to the one half a cycle on: a half cycle must be whole control steps."""
    steps = (swing + stance) / control_dt
    if abs(steps - round(steps)) > 1e-6:
        raise ValueError(
            f"swing_duration + stance_duration ({swing + stance:g} s) must be a whole number of control steps "
            f"({control_dt:g} s), so that half a gait cycle mirrors the other half"
        )
