"""The walking task's per-step arithmetic, compiled (why and how: ppolab/envs/compiled.py): its observed command
and its reward, one loop over the envs. The terms are defined in `WalkTask`'s docstrings;
tests/test_humanoid_envs.py checks each against its own numpy expression.
"""

from __future__ import annotations

import math

import numpy as np

from ppolab.envs.compiled import clamp, compiled, compose_terms, foot_clock_score, heading_of, wrap

# the sizes walk_reward writes, in this order: walk.WALK_TERMS starts with them (checked when a walker is built)
SIZES = ("foot_force", "foot_velocity", "root_accel", "torque_change", "action_change", "yaw_rate", "velocity",
         "velocity_fine", "upper_body", "posture", "height", "heading")  # fmt: skip
STANDING, FORWARD = 0, 2  # walk.py's modes, not imported from it: walk.py imports this module (lazily, to keep
# numba out of commands that build no walker), and the layers allow no import cycle


@compiled
def walk_command(
    qpos: np.ndarray, mode: np.ndarray, rate: np.ndarray, velocity: np.ndarray, heading_ref: np.ndarray,
    line_origin: np.ndarray, heading_gain: float, heading_limit: float, heading_standing: bool,
    lateral_gain: float, lateral_limit: float, command: np.ndarray, heading: np.ndarray, heading_error: np.ndarray,
) -> None:  # fmt: skip
    """Into `command`, `heading` and `heading_error` (n,): the mode's yaw rate plus the heading correction, the
    mode's velocity plus, in the forward mode, the correction back onto the line the mode started on."""
    for i in range(qpos.shape[0]):
        w, x, y, z = qpos[i, 3], qpos[i, 4], qpos[i, 5], qpos[i, 6]
        h = heading_of(w, x, y, z)
        error = wrap(heading_ref[i] - h)
        correction = clamp(heading_gain * error, heading_limit)
        if not heading_standing and mode[i] == STANDING:
            correction = 0.0
        command[i, 0] = rate[i] + correction
        command[i, 1] = velocity[i, 0]
        command[i, 2] = velocity[i, 1]
        if lateral_gain > 0.0 and mode[i] == FORWARD:
            ref = heading_ref[i]
            offset = math.cos(ref) * (qpos[i, 1] - line_origin[i, 1]) - math.sin(ref) * (qpos[i, 0] - line_origin[i, 0])
            command[i, 2] += clamp(-lateral_gain * offset, lateral_limit)  # left of the line: offset > 0
        heading[i] = h
        heading_error[i] = error


@compiled
def walk_reward(
    sensors: np.ndarray, qpos: np.ndarray, qvel: np.ndarray, root_acc: np.ndarray, torque: np.ndarray,
    prev_torque: np.ndarray, target: np.ndarray, prev_target: np.ndarray, mode_clock: np.ndarray,
    mode: np.ndarray, phase: np.ndarray, command: np.ndarray, heading: np.ndarray, heading_error: np.ndarray,
    v_avg: np.ndarray, goal_height: float, at: np.ndarray, leg_q: np.ndarray, nominal_leg: np.ndarray,
    params: np.ndarray, factor: np.ndarray, linear: np.ndarray, weights: np.ndarray, sizes: np.ndarray,
    terms: np.ndarray, out: np.ndarray,
) -> None:  # fmt: skip
    """Into `sizes` (n, len(SIZES)) each term's size, into `terms` its contribution and into `out` (n,) their
    sum, composed as reward_terms.Rewards says (`factor`, `linear`, `weights`); `v_avg` (n, 2) is updated in place.

    `mode_clock[mode, phase]` is an env's force clock (right, left: +1 bear weight, -1 swing); `at` holds
    where the sole velocities, the touch sensors and the head point start in a sensor row; `leg_q` the leg
    angles' places in qpos; `params` the touch and speed normalisers, the velocity average's weight and the
    fine velocity's scales (ahead: the smallest and the share of the command; sideways: its inverse). What
    each size is: walk.WALK_TERMS."""
    sole, touch, head = at[0], at[1], at[2]
    touch_scale, speed_scale, alpha = params[0], params[1], params[2]
    count = len(SIZES)
    for i in range(qpos.shape[0]):
        s = sensors[i]
        size = sizes[i]
        clock = mode_clock[mode[i], phase[i]]
        force = 0.0
        speed = 0.0
        for f in range(2):
            v = s[sole + 3 * f : sole + 3 * f + 3]
            force += foot_clock_score(clock[f], s[touch + f] * touch_scale)
            speed += foot_clock_score(-clock[f], math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) * speed_scale)
        c, sn = math.cos(heading[i]), math.sin(heading[i])
        vx = c * qvel[i, 0] + sn * qvel[i, 1]  # the root's velocity in its heading's frame
        vy = c * qvel[i, 1] - sn * qvel[i, 0]
        v_avg[i, 0] = (1.0 - alpha) * v_avg[i, 0] + alpha * vx
        v_avg[i, 1] = (1.0 - alpha) * v_avg[i, 1] + alpha * vy
        height = abs(qpos[i, 2] - goal_height)
        if height < 0.01 + 0.05 * command[i, 1]:  # within a tolerance, growing with the speed: none
            height = 0.0
        accel = abs(qvel[i, 3]) + abs(qvel[i, 4]) + abs(qvel[i, 5])
        accel += abs(root_acc[i, 0]) + abs(root_acc[i, 1]) + abs(root_acc[i, 2])
        torque_change = 0.0
        action_change = 0.0
        posture = 0.0
        for j in range(nominal_leg.shape[0]):
            torque_change += abs(torque[i, j] - prev_torque[i, j])
            action_change += abs(target[i, j] - prev_target[i, j])
            d = qpos[i, leg_q[j]] - nominal_leg[j]
            posture += d * d
        ex, ey = vx - command[i, 1], vy - command[i, 2]
        ahead = max(params[3], params[5] * abs(command[i, 1]))  # the scale ahead: absolute, or relative
        fx, fy = (v_avg[i, 0] - command[i, 1]) / ahead, (v_avg[i, 1] - command[i, 2]) * params[4]
        hx, hy = s[head] - qpos[i, 0], s[head + 1] - qpos[i, 1]
        size[0], size[1], size[2] = force, speed, accel
        size[3], size[4] = torque_change, action_change
        size[5] = abs(qvel[i, 5] - command[i, 0]) ** 3
        size[6], size[7] = ex * ex + ey * ey, fx * fx + fy * fy
        size[8], size[9] = math.sqrt(hx * hx + hy * hy), math.sqrt(posture)
        size[10], size[11] = height * height, heading_error[i] * heading_error[i]
        out[i] = compose_terms(size, factor, linear, weights, terms[i], count)
