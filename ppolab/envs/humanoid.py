"""What every humanoid task shares: PD-controlled legs, a held upper body, batched state, randomisation.

The policy outputs joint-position offsets from a nominal pose for the leg joints,
smoothed with the previous action. MuJoCo position servos with torque limits
(one general actuator per joint: gain kp, bias -kp q - kd qdot, clamped force)
are the PD controller, computed in C at the physics rate (1 kHz); the policy
acts at the control rate (40 Hz), one `mj_step(model, data, 25)` call per env.
Arms, torso and waist have servos too, with a fixed target: they hold their pose.

Randomness inside an episode (observation noise, pushes) comes from a per-env
generator seeded by `reset_one`, so an env's trajectory depends only on its own
seed and actions, never on the rest of the batch.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Annotated, Literal

import mujoco
import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    PositiveFloat,
    ValidationInfo,
    field_validator,
)

from ppolab.errors import UserError


def _ordered(v: tuple[float, float]) -> tuple[float, float]:
    if v[0] > v[1]:
        raise ValueError("must be [low, high] with low <= high")
    return v


def _weights(v: tuple[float, ...]) -> tuple[float, ...]:
    if min(v) < 0 or sum(v) <= 0:
        raise ValueError("weights are non-negative and not all zero (they are normalised to sum to 1)")
    return v


Range = Annotated[tuple[float, float], AfterValidator(_ordered)]
ScaleRange = Annotated[tuple[NonNegativeFloat, NonNegativeFloat], AfterValidator(_ordered)]
MassRange = Annotated[tuple[PositiveFloat, PositiveFloat], AfterValidator(_ordered)]
Gains = dict[str, NonNegativeFloat]
Weights3 = Annotated[tuple[float, float, float], AfterValidator(_weights)]
Weights5 = Annotated[tuple[float, float, float, float, float], AfterValidator(_weights)]


class Randomization(BaseModel):
    """Domain randomisation, drawn per env at every reset (pushes: during the episode)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    obs_noise: float = Field(0.01, ge=0, description="std of Gaussian noise added to each observation")
    push_force: float = Field(60.0, ge=0, description="largest horizontal push on the root, in N")
    push_interval: float = Field(3.0, gt=0, description="mean seconds between pushes")
    push_duration: float = Field(0.1, gt=0, description="seconds a push lasts")
    friction: ScaleRange = (0.7, 1.3)
    damping: ScaleRange = (0.8, 1.2)
    mass: MassRange = (0.95, 1.05)


class HumanoidConfig(BaseModel):
    """Timing, gains, action shaping and initial-state noise; each task adds its own reward weights."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    physics_dt: float = Field(0.001, gt=0, le=0.1)
    control_dt: float = Field(0.025, gt=0, le=1.0, description="a whole multiple of physics_dt")
    kp: Gains = Field(description="position gain per joint-name part (first match wins)")
    kd: Gains = Field(description="velocity gain per joint-name part (first match wins)")
    action_scale: float = Field(0.5, gt=0, description="radians of joint offset per unit of action")
    action_clip: float | None = Field(1.0, gt=0, description="actions are clipped to +-this (null: unbounded)")
    action_smoothing: float = Field(0.5, gt=0, le=1, description="weight of the new action against the previous")
    action_filter: Literal["ema", "pair"] = Field(
        "ema",
        description="ema: the offset is an exponential average of actions; pair: the weighted mean of this "
        "action and the previous one (LearningHumanoidWalking's)",
    )
    init_joint_noise: float = Field(0.02, ge=0, description="radians of noise on the initial joint angles")
    randomization: Randomization = Randomization()
    solver: Literal["newton", "pgs", "cg"] = Field(
        "newton", description="MuJoCo's constraint solver (LearningHumanoidWalking: pgs, 50 iterations)"
    )
    solver_iterations: int = Field(100, gt=0, le=10_000, description="the solver's iteration cap")

    @field_validator("control_dt")
    @classmethod
    def _whole_physics_steps(cls, v: float, info: ValidationInfo) -> float:
        physics_dt = info.data.get("physics_dt")  # absent if it failed its own check
        steps = v / physics_dt if physics_dt else 1.0
        if steps < 1 - 1e-9 or abs(steps - round(steps)) > 1e-6:
            raise ValueError(f"must be a whole multiple of physics_dt ({physics_dt}): an action holds whole steps")
        return v


def gain(table: dict[str, float], joint: str) -> float:
    for part, value in table.items():
        if part in joint:
            return value
    raise KeyError(f"no gain for joint {joint!r}; gains are given for {', '.join(table)}")


def check_gain_keys(table: dict[str, float], joints: list[str]) -> None:
    """A key that is part of no joint's name is a typo that would silently change nothing: refuse it."""
    unused = [part for part in table if not any(part in name for name in joints)]
    if unused:
        raise ValueError(f"{', '.join(map(repr, unused))} is part of no joint's name; the joints: {', '.join(joints)}")


def add_servos(
    spec: mujoco.MjSpec,
    joints: list[str],
    kp: dict[str, float],
    kd: dict[str, float],
    limits: dict[str, float] | None,
) -> None:
    """A PD position servo on each joint, its torque clamped to the joint's limit (None: unclamped)."""
    for field, table in (("kp", kp), ("kd", kd)):
        try:
            check_gain_keys(table, joints)
        except ValueError as exc:
            raise UserError(f"{field}: {exc}") from None
    for name in joints:
        p, d = gain(kp, name), gain(kd, name)
        act = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
        act.gainprm[0] = p
        act.biasprm[0:3] = [0.0, -p, -d]
        if limits is None:
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_FALSE
        else:
            act.forcerange = [-limits[name], limits[name]]
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE


def roll_pitch(quat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Roll and pitch of (n, 4) quaternions (w, x, y, z)."""
    w, x, y, z = quat.T
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = np.arcsin(np.clip(2 * (w * y - z * x), -1.0, 1.0))
    return roll, pitch


_NEXT, _PREV = [1, 2, 0], [2, 0, 1]


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b over the last axis: np.cross's arithmetic, bit for bit, without its set-up (np.cross checks,
    broadcasts and moves axes on every call; measured: the jvrc head-offset rotation 2x faster)."""
    return a[..., _NEXT] * b[..., _PREV] - a[..., _PREV] * b[..., _NEXT]


def rotate(quat: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A body-frame vector v (3,) in the world frame, for (n, 4) quaternions (w, x, y, z)."""
    w, xyz = quat[:, :1], quat[:, 1:]
    t = 2.0 * cross(xyz, v)
    return v + w * t + cross(xyz, t)


def yaw(quat: np.ndarray) -> np.ndarray:
    """Heading of (n, 4) quaternions (w, x, y, z)."""
    w, x, y, z = quat.T
    return np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


@dataclass
class RobotLayout:
    """Indices into a humanoid model, resolved once by name."""

    leg_joints: list[str]
    leg_qpos: np.ndarray  # qpos index of each leg joint
    leg_qvel: np.ndarray
    leg_act: np.ndarray  # actuator index of each leg joint
    root_body: int
    upper_body: int  # the body whose orientation "upright" rewards
    torque_limit: np.ndarray  # per leg joint (0 where unclamped)

    @classmethod
    def resolve(cls, model: mujoco.MjModel, legs: list[str], root: str, upper: str) -> RobotLayout:
        jnt = [model.joint(n) for n in legs]
        return cls(
            leg_joints=legs,
            leg_qpos=np.array([j.qposadr[0] for j in jnt]),
            leg_qvel=np.array([j.dofadr[0] for j in jnt]),
            leg_act=np.array([model.actuator(n).id for n in legs]),
            root_body=model.body(root).id,
            upper_body=model.body(upper).id,
            torque_limit=np.array([model.actuator(n).forcerange[1] for n in legs]),
        )


SOLVERS = {"newton": mujoco.mjtSolver.mjSOL_NEWTON, "pgs": mujoco.mjtSolver.mjSOL_PGS, "cg": mujoco.mjtSolver.mjSOL_CG}


def with_solver(model: mujoco.MjModel, cfg: HumanoidConfig) -> mujoco.MjModel:
    """The model with the config's constraint solver: a copy where it differs, so a cached model stays as built."""
    solver = SOLVERS[cfg.solver]
    if model.opt.solver == solver and model.opt.iterations == cfg.solver_iterations:
        return model
    model = copy.copy(model)
    model.opt.solver, model.opt.iterations = solver, cfg.solver_iterations
    return model


class HumanoidBatch:
    """`num_envs` copies of a humanoid: leg servos driven by actions, state gathered into arrays.

    Each env owns its MjModel copy when randomisation is on (masses, friction and
    damping differ per env) or the task moves geoms per env (stairs); otherwise all share one.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        layout: RobotLayout,
        cfg: HumanoidConfig,
        num_envs: int,
        nominal_qpos: np.ndarray,
        own_models: bool = False,
    ) -> None:
        model = with_solver(model, cfg)
        self.base = model
        self.layout = layout
        self.cfg = cfg
        self.num_envs = num_envs
        self.substeps = round(cfg.control_dt / cfg.physics_dt)
        own = own_models or cfg.randomization.enabled
        self.models = [copy.copy(model) if own else model for _ in range(num_envs)]
        self.datas = [mujoco.MjData(m) for m in self.models]
        self.nominal_qpos = nominal_qpos
        self.nominal_leg = nominal_qpos[layout.leg_qpos]
        self.rngs = [np.random.default_rng(i) for i in range(num_envs)]
        self.prev_action = np.zeros((num_envs, len(layout.leg_joints)))  # the offsets last applied
        self.prev_raw = np.zeros_like(self.prev_action)  # the last action, after clipping
        self.push = np.zeros((num_envs, 3))
        self.push_left = np.zeros(num_envs, dtype=int)
        n = num_envs
        self.qpos = np.zeros((n, model.nq))
        self.qvel = np.zeros((n, model.nv))
        self.torque = np.zeros((n, len(layout.leg_joints)))
        self.upper_z = np.zeros(n)  # z component of the upper body's up axis (1 = upright)
        self.self_contact = np.zeros(n, dtype=bool)
        self.geom_body = model.geom_bodyid.copy()
        self.sensors = np.zeros((n, model.nsensordata))
        self.root_acc = np.zeros((n, 3))  # linear acceleration of the free joint (qacc[0:3])
        # views into each MjData's memory, made once: the step loop does no attribute lookups.
        # The leg actuators are one contiguous block in every task here: a slice, not fancy indexing.
        act = layout.leg_act
        self._legs = (
            slice(int(act[0]), int(act[-1]) + 1) if np.array_equal(act, np.arange(act[0], act[-1] + 1)) else act
        )
        self._views = [
            (d, d.ctrl, d.qpos, d.qvel, d.actuator_force, d.xmat[layout.upper_body], d.sensordata, d.qacc)
            for d in self.datas
        ]  # task sensors (foot touch, foot velocity), computed in C

    # -- resets ---------------------------------------------------------------
    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        cfg, m, d = self.cfg, self.models[i], self.datas[i]
        self.rngs[i] = np.random.default_rng(rng.integers(2**63))
        r = cfg.randomization
        if r.enabled:
            b = self.base
            m.body_mass[:] = b.body_mass * rng.uniform(*r.mass, size=b.nbody)
            m.geom_friction[:, 0] = b.geom_friction[:, 0] * rng.uniform(*r.friction)
            m.dof_damping[:] = b.dof_damping * rng.uniform(*r.damping, size=b.nv)
        mujoco.mj_resetData(m, d)
        qpos = self.nominal_qpos.copy()
        qpos[self.layout.leg_qpos] += rng.normal(0.0, cfg.init_joint_noise, size=len(self.layout.leg_qpos))
        d.qpos[:] = qpos
        d.ctrl[:] = qpos[self._act_qpos()]
        mujoco.mj_forward(m, d)
        self.prev_action[i] = 0.0
        self.prev_raw[i] = 0.0
        self.push[i] = 0.0
        self.push_left[i] = 0
        self._gather(i)

    def _act_qpos(self) -> np.ndarray:
        if not hasattr(self, "_act_qpos_idx"):
            m = self.base
            self._act_qpos_idx = np.array([m.jnt_qposadr[m.actuator_trnid[a, 0]] for a in range(m.nu)])
        return self._act_qpos_idx

    # -- stepping -------------------------------------------------------------
    def apply(self, action: np.ndarray) -> np.ndarray:
        """Step every env one control period with the given leg actions; returns the smoothed actions."""
        cfg, k = self.cfg, self.substeps
        a = action if cfg.action_clip is None else np.clip(action, -cfg.action_clip, cfg.action_clip)
        prev = self.prev_raw if cfg.action_filter == "pair" else self.prev_action
        smoothed = cfg.action_smoothing * a + (1.0 - cfg.action_smoothing) * prev
        targets = self.nominal_leg + cfg.action_scale * smoothed
        r = cfg.randomization
        push_on = r.enabled and r.push_force > 0
        push_steps = max(1, round(r.push_duration / cfg.control_dt))
        p_start = cfg.control_dt / r.push_interval
        step, legs = mujoco.mj_step, self._legs
        for i, m in enumerate(self.models):
            d, ctrl = self._views[i][:2]
            ctrl[legs] = targets[i]
            if push_on:
                self._update_push(i, d, p_start, push_steps, r.push_force)
            step(m, d, k)
            self._gather(i)
        self.prev_action = smoothed
        self.prev_raw = a
        return smoothed

    def _update_push(self, i: int, d: mujoco.MjData, p_start: float, steps: int, force: float) -> None:
        if self.push_left[i] > 0:
            self.push_left[i] -= 1
            if self.push_left[i] == 0:
                d.xfrc_applied[self.layout.root_body, :3] = 0.0
        elif self.rngs[i].random() < p_start:
            angle = self.rngs[i].uniform(0, 2 * np.pi)
            magnitude = self.rngs[i].uniform(0.5, 1.0) * force
            d.xfrc_applied[self.layout.root_body, :2] = magnitude * np.array([np.cos(angle), np.sin(angle)])
            self.push_left[i] = steps

    def _gather(self, i: int) -> None:
        d, _, qpos, qvel, force, upper, sensors, qacc = self._views[i]
        self.qpos[i] = qpos
        self.root_acc[i] = qacc[0:3]
        self.qvel[i] = qvel
        self.torque[i] = force[self._legs]
        self.upper_z[i] = upper[8]
        self.sensors[i] = sensors
        n = d.ncon
        if n:  # a contact between two geoms of the robot (not of the world: floor, stairs) is a self-collision
            body = self.geom_body[d.contact.geom[:n]]
            self.self_contact[i] = bool(((body[:, 0] != 0) & (body[:, 1] != 0)).any())
        else:
            self.self_contact[i] = False

    # -- observations -----------------------------------------------------------
    def noisy(self, obs: np.ndarray) -> np.ndarray:
        std = self.cfg.randomization.obs_noise if self.cfg.randomization.enabled else 0.0
        if std > 0:
            obs = obs + np.stack([r.normal(0.0, std, size=obs.shape[1]) for r in self.rngs])
        return obs.astype(np.float32)
