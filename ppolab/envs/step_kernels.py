"""The stepping task's per-step arithmetic, compiled (why and how: ppolab/envs/compiled.py): the targets'
progress, the reward's sizes and the targets as observed, one loop over the envs. The terms are defined in
step.STEP_TERMS; tests/test_humanoid_envs.py checks each against its own numpy expression.
"""

from __future__ import annotations

import math

import numpy as np

from ppolab.envs.compiled import compiled, compose_terms, foot_clock_score, heading_of, wrap

# the sizes step_reward writes, in this order: step.STEP_TERMS starts with them (checked when a stepper is built)
SIZES = ("foot_force", "foot_velocity", "orientation", "height", "step", "upper_body")


@compiled
def nearest_sole(sensors: np.ndarray, sole: int, point: np.ndarray) -> float:
    """Distance from a (3,) point to the nearer of the two soles whose positions start at `sole` in a sensor row."""
    best = math.inf
    for f in range(2):
        d = 0.0
        for k in range(3):
            e = sensors[sole + 3 * f + k] - point[k]
            d += e * e
        best = min(best, d)
    return math.sqrt(best)


@compiled
def step_reward(
    sensors: np.ndarray, qpos: np.ndarray, plan: np.ndarray, standing: np.ndarray, target: np.ndarray,
    reached: np.ndarray, clock: np.ndarray, phase: np.ndarray, at: np.ndarray, hold_frames: int, radius: float,
    goal_height: float, touch_scale: float, factor: np.ndarray, linear: np.ndarray, weights: np.ndarray,
    sizes: np.ndarray, terms: np.ndarray, out: np.ndarray,
) -> None:  # fmt: skip
    """Into `sizes` (n, len(SIZES)) each term's size, into `terms` its contribution and into `out` (n,) their sum
    (composed as reward_terms.Rewards says), after moving each env's target on (`target` and `reached` updated
    in place: a sole held within `radius` of the target for `hold_frames` frames reaches it). `clock` is the
    force clock by phase (period, 2), held at +1 for a `standing` plan; `at` where the sole positions, sole
    velocities, touch sensors and head point start in a sensor row. What each size is: step.STEP_TERMS."""
    sole, vel, touch, head = at[0], at[1], at[2], at[3]
    last = plan.shape[1] - 1
    count = len(SIZES)
    for i in range(qpos.shape[0]):
        s = sensors[i]
        size = sizes[i]
        inside = nearest_sole(s, sole, plan[i, target[i]]) < radius
        reached[i] = reached[i] + 1 if inside else 0
        if inside and reached[i] >= hold_frames:
            target[i] = min(target[i] + 1, last)
            reached[i] = 0
            inside = False
        t1, t2 = plan[i, target[i]], plan[i, min(target[i] + 1, last)]
        hit = math.exp(-nearest_sole(s, sole, t1) / 0.25) if inside else 0.0
        mx, my = qpos[i, 0] - (t1[0] + t2[0]) / 2, qpos[i, 1] - (t1[1] + t2[1]) / 2
        progress = math.exp(-math.sqrt(mx * mx + my * my) / 2)
        force, speed = 0.0, 0.0
        for f in range(2):
            v = s[vel + 3 * f : vel + 3 * f + 3]
            c = 1.0 if standing[i] else clock[phase[i], f]
            force += foot_clock_score(c, s[touch + f] * touch_scale)
            speed += foot_clock_score(-c, math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) / 0.2)
        half = t1[3] / 2  # the target's heading as a quaternion (w, 0, 0, z)
        align = qpos[i, 3] * math.cos(half) + qpos[i, 6] * math.sin(half)
        height = abs(qpos[i, 2] - min(s[sole + 2], s[sole + 5]) - goal_height)
        height = 0.0 if height < 0.01 else height
        hx, hy = s[head] - qpos[i, 0], s[head + 1] - qpos[i, 1]
        size[0], size[1], size[2] = force, speed, 1.0 - align * align
        size[3], size[4], size[5] = height * height, 0.8 * hit + 0.2 * progress, hx * hx + hy * hy
        out[i] = compose_terms(size, factor, linear, weights, terms[i], count)


@compiled
def targets_in_root_frame(qpos: np.ndarray, plan: np.ndarray, target: np.ndarray, standing: np.ndarray,
                          out: np.ndarray) -> None:  # fmt: skip
    """Into `out` (n, 8): the next two targets (x, y, z, yaw) relative to the root's position and heading;
    zeros for a standing plan."""
    last = plan.shape[1] - 1
    for i in range(qpos.shape[0]):
        h = heading_of(qpos[i, 3], qpos[i, 4], qpos[i, 5], qpos[i, 6])
        c, sn = math.cos(h), math.sin(h)
        for j in range(2):
            t = plan[i, min(target[i] + j, last)]
            dx, dy = t[0] - qpos[i, 0], t[1] - qpos[i, 1]
            o = out[i, 4 * j : 4 * j + 4]
            o[0], o[1], o[2], o[3] = c * dx + sn * dy, c * dy - sn * dx, t[2] - qpos[i, 2], wrap(t[3] - h)
            if standing[i]:
                o[:] = 0.0
