"""The servo targets that hold a robot's nominal pose standing on both soles, from static inverse dynamics.

A position servo holds a joint at its target only where gravity loads it not at all: under load it
settles `torque / kp` short of it. With servos stiff for the robot's weight that gap is small and
action 0 (the nominal pose as target) stands. With soft ones it is not: LearningHumanoidWalking's H1
(kp 100 at the knees, 57 kg) folds at the knees under action 0 and falls within a second, so a policy
that starts near action 0 spends its first hundreds of iterations learning to stand up. These offsets
are where such a policy can start instead (`ppolab train --start-standing`).
"""

from __future__ import annotations

import mujoco
import numpy as np

from ppolab.envs.humanoid import RobotLayout
from ppolab.envs.robot_model import SOLE


def holding_offsets(model: mujoco.MjModel, qpos: np.ndarray, layout: RobotLayout) -> np.ndarray:
    """Per leg joint, the target minus the angle at which its servo holds `qpos` at rest, soles on the floor.

    At rest the servos and the soles' support balance gravity: S' tau + J' w = g(q). The floating base's
    six rows fix the soles' wrenches w (the least-norm split between the feet: the model's own contact
    forces settle to a split the servos then hold); the leg rows give each joint's torque, clamped to its
    limit, over its servo's kp.
    """
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    rows = []
    for side in ("right", "left"):
        jac_pos, jac_rot = np.zeros((3, model.nv)), np.zeros((3, model.nv))
        mujoco.mj_jacSite(model, data, jac_pos, jac_rot, model.site(SOLE.format(side)).id)
        rows += [jac_pos, jac_rot]
    jac = np.vstack(rows)
    gravity = data.qfrc_bias.copy()  # at rest: gravity alone
    wrench = np.linalg.lstsq(jac[:, :6].T, gravity[:6], rcond=None)[0]
    torque = (gravity - jac.T @ wrench)[layout.leg_qvel]
    limit = layout.torque_limit
    torque = np.where(limit > 0, np.clip(torque, -limit, limit), torque)
    kp = model.actuator_gainprm[layout.leg_act, 0]
    return np.divide(torque, kp, out=np.zeros_like(torque), where=kp > 0)  # a servo of kp 0 holds nothing
