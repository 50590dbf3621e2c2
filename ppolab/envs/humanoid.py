"""What every humanoid task shares: PD-controlled legs, a held upper body, batched state, randomisation.

The policy outputs joint-position offsets from a nominal pose for the leg joints,
smoothed with the previous action. MuJoCo position servos with torque limits
(one general actuator per joint: gain kp, bias -kp q - kd qdot, clamped force)
are the PD controller, computed in C at the physics rate (1 kHz); the policy
acts at the control rate (40 Hz), one `mj_step(model, data, 25)` call per env.
The other joints are welded, or held by servos with a fixed target, as the robot file says.

Randomness inside an episode (observation noise, pushes, perturbations) comes from a per-env
generator seeded by `reset_one`, so an env's trajectory depends only on its own
seed and actions, never on the rest of the batch.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

import mujoco
import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    SerializerFunctionWrapHandler,
    StrictBool,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from ppolab.envs.robot_model import SELF_CONTACT, TORQUE
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
IterationRange = Annotated[tuple[NonNegativeInt, NonNegativeInt], AfterValidator(_ordered)]
Gains = dict[str, NonNegativeFloat]
Weights3 = Annotated[tuple[float, float, float], AfterValidator(_weights)]
Weights5 = Annotated[tuple[float, float, float, float, float], AfterValidator(_weights)]


def ramp_share(ramp: tuple[int, int] | None, iteration: int) -> float:
    """How far training is through an iteration ramp [first, last]: 0 up to `first`, 1 from `last`, linear
    between; 1 without a ramp. The curricula that follow training's iteration (the randomisation's, the
    walking task's speeds) read it, so that a resumed run continues where it was."""
    if ramp is None or iteration >= ramp[1]:
        return 1.0
    first, last = ramp
    return 0.0 if iteration <= first else (iteration - first) / (last - first)


class Perturbation(BaseModel):
    """LearningHumanoidWalking's perturbations: now and then a random wrench on each named body, which stays
    until the next draw; after each body's draw, half the time every wrench is cleared (LHW's order: with two
    bodies, none a half of the time, the last body's alone a quarter, both a quarter)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: StrictBool = False
    force: float = Field(10.0, ge=0, description="N: each component uniform in [-force, force]")
    torque: float = Field(2.0, ge=0, description="N m: each component uniform in [-torque, torque]")
    interval: float = Field(5.0, gt=0, description="mean seconds between draws")
    bodies: list[str] = Field([], description="bodies that each get their own wrench, by the model's names (a "
                              "welded body's goes to the body it is merged into); empty: the root")  # fmt: skip


class Randomization(BaseModel):
    """Domain randomisation, drawn per env at every reset (pushes, perturbations and redraws: during the episode)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    enabled: StrictBool = True
    obs_noise: NonNegativeFloat | dict[str, NonNegativeFloat] = Field(
        0.01,
        description="a number: std of Gaussian noise on every observation; a mapping: uniform noise of that "
        "half-width per observation group (LHW's: root_orient, root_ang_vel, joint_pos, joint_vel, joint_torque)",
    )
    push_force: float = Field(60.0, ge=0, description="largest horizontal push on the root, in N")
    push_interval: float = Field(3.0, gt=0, description="mean seconds between pushes")
    push_duration: float = Field(0.1, gt=0, description="seconds a push lasts")
    start_tilt: float = Field(
        0.0, ge=0, le=0.5,
        description="roll and pitch of every start, uniform within +-this, rad, beyond init_tilt: a lean to "
        "recover from at each reset, the start's counterpart of a push (the behaviour checks start without it)",
    )  # fmt: skip
    friction: ScaleRange = (0.7, 1.3)
    damping: ScaleRange = Field((0.8, 1.2), description="scale of the model's joint damping")
    mass: MassRange = (0.95, 1.05)
    joint_damping: ScaleRange | None = Field(None, description="N m s/rad of the legs, drawn (LHW: 0.02 to 2)")
    joint_frictionloss: ScaleRange | None = Field(None, description="N m of the legs, drawn (LHW: 0 to 2)")
    com_offset: float = Field(0.0, ge=0, le=0.1, description="m: each body's centre of mass moved up to this much")
    redraw_interval: float | None = Field(None, gt=0, description="mean seconds between redraws in an episode")
    perturbation: Perturbation = Perturbation()
    ramp: IterationRange | None = Field(
        None,
        description="training iterations [first, last] over which every draw grows from the model's own value "
        "(no noise, no wrench) to its full range, linearly: a gait learned first, robustness after. Checks and "
        "evaluation get the full range. null: full from the first iteration",
    )

    @model_serializer(mode="wrap")
    def _without_unset_ramp(self, handler: SerializerFunctionWrapHandler) -> dict:
        """No ramp is written as none: a config saved before the ramp existed reads back as it was saved (the
        shipped policies' env.yaml), and means what it meant."""
        out = handler(self)
        if self.ramp is None:
            out.pop("ramp", None)
        return out

    def strength(self, iteration: int) -> float:
        """How much of the randomisation training gets at `iteration`: 0 none, 1 all of it (see `ramp`)."""
        return ramp_share(self.ramp, iteration)


class HumanoidConfig(BaseModel):
    """Timing, gains, action shaping and start states; each task adds its own rewards. A robot's tasks get
    their defaults from its robot file (gains, rates, and its `tasks:` section)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    physics_dt: float = Field(0.001, ge=1e-4, le=0.1, description="s: at least 0.1 ms (finer steps take hours a run)")
    control_dt: float = Field(0.025, ge=1e-4, le=1.0, description="a whole multiple of physics_dt")
    kp: Gains = Field(description="position gain per joint-name part (the longest matching part wins)")
    kd: Gains = Field(description="velocity gain per joint-name part (the longest matching part wins)")
    armature: Gains = Field({}, description="reflected rotor inertia per joint-name part, kg m^2 (else the model's)")
    damping: Gains = Field({}, description="joint viscous damping per joint-name part, N m s/rad (else the model's)")
    visuals: StrictBool = Field(False, description="load the robot's meshes (videos turn this on; physics is the same)")
    action_scale: float = Field(0.5, gt=0, description="radians of joint offset per unit of action")
    action_clip: float | None = Field(1.0, gt=0, description="actions are clipped to +-this (null: unbounded)")
    action_smoothing: float = Field(0.5, gt=0, le=1, description="weight of the new action against the previous")
    action_filter: Literal["ema", "pair"] = Field(
        "ema",
        description="ema: the offset is an exponential average of actions; pair: the weighted mean of this "
        "action and the previous one (LearningHumanoidWalking's)",
    )
    init_joint_noise: float = Field(0.02, ge=0, description="std of noise on the initial leg angles, rad")
    init_tilt: float = Field(0.0, ge=0, le=0.5, description="initial roll and pitch, uniform within +-this, rad")
    init_lift: float = Field(0.0, ge=0, le=0.5, description="initial root height above standing, up to this, m")
    init_yaw: Range = Field((0.0, 0.0), description="initial heading, uniform in this range, rad")
    randomization: Randomization = Randomization()
    solver: Literal["newton", "pgs", "cg"] = Field(
        "newton", description="MuJoCo's constraint solver (LearningHumanoidWalking: pgs, 50 iterations)"
    )
    solver_iterations: int = Field(100, gt=0, le=10_000, description="the solver's iteration cap")
    joint_limits: StrictBool = Field(True, description="the joints' range limits act (LearningHumanoidWalking's "
                               "jointlimited: false turns them off)")  # fmt: skip
    terminate_on_self_collision: StrictBool = Field(True, description="end the episode when two robot parts touch")
    joint_names: ClassVar[list[str]] = []  # the robot's servoed joints: a gain key must be part of one

    @model_validator(mode="after")
    def _gain_keys_name_joints(self) -> HumanoidConfig:
        """A key that is part of no joint's name is a typo that would silently change nothing: refuse it."""
        for field in ("kp", "kd", "armature", "damping"):
            try:
                check_gain_keys(getattr(self, field), type(self).joint_names)
            except ValueError as exc:
                raise ValueError(f"{field}: {exc}") from None
        return self

    @field_validator("control_dt")
    @classmethod
    def _whole_physics_steps(cls, v: float, info: ValidationInfo) -> float:
        physics_dt = info.data.get("physics_dt")  # absent if it failed its own check
        steps = v / physics_dt if physics_dt else 1.0
        if steps < 1 - 1e-9 or abs(steps - round(steps)) > 1e-6:
            raise ValueError(f"must be a whole multiple of physics_dt ({physics_dt}): an action holds whole steps")
        return v


def check_gain_keys(table: dict[str, float], joints: list[str]) -> None:
    """Every key is part of some joint's name (no joints known: nothing to check)."""
    unused = [part for part in table if joints and not any(part in name for name in joints)]
    if unused:
        raise ValueError(f"{', '.join(map(repr, unused))} is part of no joint's name; the joints: {', '.join(joints)}")


def _euler_parts(quat: np.ndarray) -> np.ndarray:
    """(n, 5) the arguments of the Euler angles of (n, 4) quaternions (w, x, y, z): 2(wx + yz), 2(wz + xy),
    1 - 2(xx + yy), 1 - 2(yy + zz), 2(wy - zx), as one product of the flattened outer products with a table
    (each angle's terms one by one cost four times the calls, and this runs for every env at every control
    step). einsum, not `@`: BLAS rounds a row differently with the number of rows, so a seed's runs would
    differ with how many envs a worker steps, that is with the core count."""
    outer = quat[:, :, None] * quat[:, None, :]
    return np.einsum("ij,jk->ik", outer.reshape(-1, 16), _EULER_TERMS) + _EULER_OFFSET


def _euler_tables() -> tuple[np.ndarray, np.ndarray]:
    terms = np.zeros((16, 5))
    w, x, y, z = range(4)
    for col, pairs in enumerate(
        [[(w, x, 2), (y, z, 2)], [(w, z, 2), (x, y, 2)], [(x, x, -2), (y, y, -2)], [(y, y, -2), (z, z, -2)],
         [(w, y, 2), (z, x, -2)]]
    ):  # fmt: skip
        for a, b, k in pairs:
            terms[4 * a + b, col] = k
    return terms, np.array([0.0, 0.0, 1.0, 1.0, 0.0])


_EULER_TERMS, _EULER_OFFSET = _euler_tables()


def roll_pitch(quat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Roll and pitch of (n, 4) quaternions (w, x, y, z)."""
    parts = _euler_parts(quat)
    return np.arctan2(parts[:, 0], parts[:, 2]), np.arcsin(clamp(parts[:, 4], -1.0, 1.0))


def yaw(quat: np.ndarray) -> np.ndarray:
    """Heading of (n, 4) quaternions (w, x, y, z)."""
    parts = _euler_parts(quat)
    return np.arctan2(parts[:, 1], parts[:, 3])


def fast_index(idx: np.ndarray) -> slice | np.ndarray:
    """`idx` as a slice where its indices are one ascending block (every robot's legs here): taking a slice
    is a view, several times cheaper than fancy indexing in code run at every control step."""
    block = len(idx) > 0 and np.array_equal(idx, np.arange(idx[0], idx[0] + len(idx)))
    return slice(int(idx[0]), int(idx[0]) + len(idx)) if block else idx


def clamp(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """np.clip without its wrapper's cost (a third of a small clip's time, in a loop run every control step)."""
    return np.minimum(np.maximum(x, low), high)


def wrap_angle(angle: np.ndarray) -> np.ndarray:
    """Angles wrapped into [-pi, pi)."""
    return (angle + np.pi) % (2 * np.pi) - np.pi


@dataclass
class RobotLayout:
    """Indices into a humanoid model, resolved once by name."""

    leg_joints: list[str]
    leg_qpos: np.ndarray  # qpos index of each leg joint
    leg_qvel: np.ndarray
    leg_act: np.ndarray  # actuator index of each leg joint
    leg_bodies: np.ndarray  # the body each leg joint moves
    root_body: int
    upper_body: int  # the body whose orientation "upright" rewards
    torque_limit: np.ndarray  # per leg joint (0 where unclamped)
    torque_sensors: slice  # sensordata of the leg servos' forces, in leg order
    contact_sensor: int  # sensordata: contacts between two parts of the robot found (0 or 1)

    @classmethod
    def resolve(cls, model: mujoco.MjModel, legs: list[str], root: str, upper: str) -> RobotLayout:
        jnt = [model.joint(n) for n in legs]
        torque = np.array([model.sensor_adr[model.sensor(TORQUE + n).id] for n in legs])
        if not np.array_equal(torque, np.arange(torque[0], torque[0] + len(legs))):
            raise ValueError("the leg torque sensors are not one block in leg order")
        return cls(
            leg_joints=legs,
            leg_qpos=np.array([j.qposadr[0] for j in jnt]),
            leg_qvel=np.array([j.dofadr[0] for j in jnt]),
            leg_act=np.array([model.actuator(n).id for n in legs]),
            leg_bodies=np.array([j.bodyid[0] for j in jnt]),
            root_body=model.body(root).id,
            upper_body=model.body(upper).id,
            torque_limit=np.array([model.actuator(n).forcerange[1] for n in legs]),
            torque_sensors=slice(int(torque[0]), int(torque[0]) + len(legs)),
            contact_sensor=int(model.sensor_adr[model.sensor(SELF_CONTACT).id]),
        )


SOLVERS = {"newton": mujoco.mjtSolver.mjSOL_NEWTON, "pgs": mujoco.mjtSolver.mjSOL_PGS, "cg": mujoco.mjtSolver.mjSOL_CG}


def with_physics_settings(model: mujoco.MjModel, cfg: HumanoidConfig) -> mujoco.MjModel:
    """The model with the config's constraint solver and joint limits: a copy where they differ, so a cached
    model stays as built."""
    solver = SOLVERS[cfg.solver]
    limits_off = not cfg.joint_limits and bool(model.jnt_limited.any())
    if model.opt.solver == solver and model.opt.iterations == cfg.solver_iterations and not limits_off:
        return model
    model = copy.copy(model)
    model.opt.solver, model.opt.iterations = solver, cfg.solver_iterations
    if limits_off:
        model.jnt_limited[:] = 0
    return model


def _blend(own: float | np.ndarray, drawn: float | np.ndarray, strength: float) -> float | np.ndarray:
    """`strength` of the way from the model's own value to a draw; at full strength the draw itself, exactly."""
    return drawn if strength >= 1.0 else own + strength * (drawn - own)


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
        model = with_physics_settings(model, cfg)
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
        self.dynamics = np.ones((num_envs, 2))  # each env's friction and total mass over the model's (its draws)
        self.strength = 1.0  # the share of the randomisation applied (`Randomization.ramp`); full unless trained
        self._noise: np.ndarray | None = None  # this step's observation-noise draws, per env
        self._noise_stale = np.ones(num_envs, dtype=bool)  # the envs stepped or reset since their last draw
        n = num_envs
        self.qpos = np.zeros((n, model.nq))
        self.qvel = np.zeros((n, model.nv))
        self.sensors = np.zeros((n, model.nsensordata))  # the task's sensors, leg torques and self-contact
        self.root_acc = np.zeros((n, 3))  # linear acceleration of the free joint (qacc[0:3])
        self._act_qpos = np.array([model.jnt_qposadr[model.actuator_trnid[a, 0]] for a in range(model.nu)])
        self._pushed = self._perturbed_bodies(model, cfg.randomization.perturbation.bodies)
        randomised = np.concatenate([[layout.root_body], layout.leg_bodies])
        self._dyn_bodies = np.unique(randomised)  # LHW's: the root and the leg bodies
        # views into each MjData's memory, made once: the step loop does no attribute lookups.
        self._legs = fast_index(layout.leg_act)
        self.leg_q, self.leg_v = fast_index(layout.leg_qpos), fast_index(layout.leg_qvel)  # for qpos, qvel[:, ...]
        self._views = [(d, d.ctrl, d.qpos, d.qvel, d.sensordata, d.qacc[0:3]) for d in self.datas]

    def _perturbed_bodies(self, model: mujoco.MjModel, names: list[str]) -> list[int]:
        """The body ids LHW's random wrenches act on: the named ones (merged ones found), or the root."""
        from ppolab.envs.robot_model import body_id

        ids = []
        for name in names:
            found = body_id(model, name)
            if found is None or found == 0:
                bodies = ", ".join(model.body(i).name for i in range(1, model.nbody))
                raise UserError(f"randomization.perturbation.bodies: no body {name!r} in the model; its bodies: "
                                f"{bodies}")  # fmt: skip
            ids.append(found)
        return ids or [self.layout.root_body]

    @property
    def upper_z(self) -> np.ndarray:
        """(n,) z component of the upper body's up axis (1 = upright), after the last step: read when asked
        (one task scores it), not copied at every step."""
        ub = self.layout.upper_body
        return np.array([d.xmat[ub, 8] for d in self.datas])

    @property
    def torque(self) -> np.ndarray:
        """(n, legs) the leg servos' forces after the last step (a view: copy it to keep it past the next step)."""
        return self.sensors[:, self.layout.torque_sensors]

    @property
    def self_contact(self) -> np.ndarray:
        """(n,) bool: two parts of the robot touch (a contact whose geoms are both the robot's)."""
        return self.sensors[:, self.layout.contact_sensor] > 0

    def set_iteration(self, iteration: int) -> None:
        """Training's iteration sets how much of the randomisation applies (`Randomization.ramp`)."""
        self.strength = self.cfg.randomization.strength(iteration)

    # -- resets ---------------------------------------------------------------
    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        cfg, m, d = self.cfg, self.models[i], self.datas[i]
        self.rngs[i] = np.random.default_rng(rng.integers(2**63))
        if cfg.randomization.enabled:
            self._draw_dynamics(i, rng)
        mujoco.mj_resetData(m, d)
        d.qpos[:] = self._start_pose(rng)
        d.ctrl[:] = d.qpos[self._act_qpos]
        mujoco.mj_forward(m, d)
        self.prev_action[i] = 0.0
        self.prev_raw[i] = 0.0
        self.push[i] = 0.0
        self.push_left[i] = 0
        self._noise_stale[i] = True
        self._gather(i)

    def _start_pose(self, rng: np.random.Generator) -> np.ndarray:
        """The nominal pose with the config's start noise: leg angles, tilt (the start's own and the
        randomisation's lean to recover from), lift and heading."""
        cfg, lay = self.cfg, self.layout
        qpos = self.nominal_qpos.copy()
        qpos[lay.leg_qpos] += rng.normal(0.0, cfg.init_joint_noise, size=len(lay.leg_qpos))
        r = cfg.randomization
        tilt = cfg.init_tilt + (self.strength * r.start_tilt if r.enabled else 0.0)
        if tilt or cfg.init_lift or cfg.init_yaw != (0.0, 0.0):
            roll, pitch = rng.uniform(-tilt, tilt, size=2)
            heading = rng.uniform(*cfg.init_yaw)
            quat = np.zeros(4)
            mujoco.mju_euler2Quat(quat, [roll, pitch, heading], "xyz")
            turned = np.zeros(4)
            mujoco.mju_mulQuat(turned, quat, qpos[3:7])
            qpos[3:7] = turned
            qpos[2] += rng.uniform(0.0, cfg.init_lift)
        return qpos

    def _draw_dynamics(self, i: int, rng: np.random.Generator) -> None:
        """This env's masses, friction and joint damping (and LHW's joint friction and centres of mass), each
        moved from the model's value towards its draw by the ramp's strength (the same draws at any strength)."""
        r, b, m, s = self.cfg.randomization, self.base, self.models[i], self.strength
        m.body_mass[:] = b.body_mass * _blend(1.0, rng.uniform(*r.mass, size=b.nbody), s)
        m.geom_friction[:, 0] = b.geom_friction[:, 0] * _blend(1.0, rng.uniform(*r.friction), s)
        m.dof_damping[:] = b.dof_damping * _blend(1.0, rng.uniform(*r.damping, size=b.nv), s)
        legs = self.layout.leg_qvel
        if r.joint_damping is not None:
            m.dof_damping[legs] = _blend(b.dof_damping[legs], rng.uniform(*r.joint_damping, size=len(legs)), s)
        if r.joint_frictionloss is not None:
            drawn = rng.uniform(*r.joint_frictionloss, size=len(legs))
            m.dof_frictionloss[legs] = _blend(b.dof_frictionloss[legs], drawn, s)
        if r.com_offset:
            bodies = self._dyn_bodies
            offset = rng.uniform(-r.com_offset, r.com_offset, (len(bodies), 3))
            m.body_ipos[bodies] = b.body_ipos[bodies] + s * offset
        friction = m.geom_friction[:, 0].sum() / max(b.geom_friction[:, 0].sum(), 1e-9)  # one factor for every geom
        self.dynamics[i] = friction, m.body_mass.sum() / b.body_mass.sum()

    # -- stepping -------------------------------------------------------------
    def apply(self, action: np.ndarray) -> np.ndarray:
        """Step every env one control period with the given leg actions; returns the smoothed actions."""
        cfg, k = self.cfg, self.substeps
        a = np.asarray(action, dtype=np.float64)  # the policy's float32, widened: every env's history in one dtype
        a = a if cfg.action_clip is None else clamp(a, -cfg.action_clip, cfg.action_clip)
        prev = self.prev_raw if cfg.action_filter == "pair" else self.prev_action
        smoothed = cfg.action_smoothing * a + (1.0 - cfg.action_smoothing) * prev
        targets = self.nominal_leg + cfg.action_scale * smoothed
        r = cfg.randomization
        push_on = r.enabled and r.push_force > 0
        during = r.enabled and (r.perturbation.enabled or r.redraw_interval is not None)
        push_steps = max(1, round(r.push_duration / cfg.control_dt))
        p_start = cfg.control_dt / r.push_interval
        step, legs, views = mujoco.mj_step, self._legs, self._views
        qpos, qvel, sensors, acc = self.qpos, self.qvel, self.sensors, self.root_acc
        for i, m in enumerate(self.models):
            d, ctrl, q, v, s, acc_i = views[i]
            ctrl[legs] = targets[i]
            if push_on:
                self._update_push(i, d, p_start, push_steps, r.push_force)
            if during:
                self._during_episode(i, d)
            step(m, d, k)
            qpos[i], qvel[i], sensors[i], acc[i] = q, v, s, acc_i  # _gather's copies, inlined
        self.prev_action = smoothed
        self.prev_raw = a
        self._noise_stale[:] = True
        return smoothed

    def _draws(self, shape: tuple[int, int], kind: str) -> np.ndarray:
        """This step's noise draws: new ones only for the envs stepped or reset since the last (each env's own
        generator, into its row: no per-env arrays)."""
        if self._noise is None or self._noise.shape != shape:
            self._noise, self._noise_stale[:] = np.empty(shape), True
        for i in np.flatnonzero(self._noise_stale):
            getattr(self.rngs[i], kind)(out=self._noise[i])
        self._noise_stale[:] = False
        return self._noise

    def _during_episode(self, i: int, d: mujoco.MjData) -> None:
        """LHW's in-episode randomisation: a new random wrench on the root now and then, new dynamics now and then."""
        r, dt, rng = self.cfg.randomization, self.cfg.control_dt, self.rngs[i]
        p = r.perturbation
        if p.enabled and rng.random() < dt / p.interval:
            d.xfrc_applied[self._pushed] = 0.0
            for body in self._pushed:  # two named bodies merged into one: their wrenches add up on it
                d.xfrc_applied[body, :3] += self.strength * rng.uniform(-p.force, p.force, 3)
                d.xfrc_applied[body, 3:] += self.strength * rng.uniform(-p.torque, p.torque, 3)
                if rng.random() < 0.5:
                    d.xfrc_applied[:] = 0.0
        if r.redraw_interval is not None and rng.random() < dt / r.redraw_interval:
            self._draw_dynamics(i, rng)

    def _update_push(self, i: int, d: mujoco.MjData, p_start: float, steps: int, force: float) -> None:
        if self.push_left[i] > 0:
            self.push_left[i] -= 1
            if self.push_left[i] == 0:
                d.xfrc_applied[self.layout.root_body, :3] = 0.0
        elif self.rngs[i].random() < p_start:
            angle = self.rngs[i].uniform(0, 2 * np.pi)
            magnitude = self.rngs[i].uniform(0.5, 1.0) * force * self.strength
            d.xfrc_applied[self.layout.root_body, :2] = magnitude * np.array([np.cos(angle), np.sin(angle)])
            self.push_left[i] = steps

    def _gather(self, i: int) -> None:
        """Env i's state into the batch arrays (the step loop does the same, inlined)."""
        _, _, q, v, s, acc = self._views[i]
        self.qpos[i], self.qvel[i], self.sensors[i], self.root_acc[i] = q, v, s, acc

    # -- observations -----------------------------------------------------------
    def check_noise_groups(self, groups: dict[str, slice] | None) -> None:
        """Noise per group names groups of the task's observation: one it does not have would add nothing."""
        noise = self.cfg.randomization.obs_noise
        for name in noise if isinstance(noise, dict) and self.cfg.randomization.enabled else []:
            if name not in (groups or {}):
                raise UserError(f"randomization.obs_noise.{name}: this task observes no such group; its "
                                f"groups: {', '.join(groups or {}) or 'none (give one std instead)'}")  # fmt: skip

    def noisy(self, obs: np.ndarray, groups: dict[str, slice] | None = None) -> np.ndarray:
        """Observation noise: Gaussian on every entry, or LHW's uniform noise per named group. One draw per env
        and control step (and after its reset), whatever number of times the state is observed in between:
        the sampler observes again after resetting fallen envs, and a draw for every env then would make an
        env's noise depend on whether another env of its batch fell, that is on how slots are split over
        workers."""
        r = self.cfg.randomization
        noise = r.obs_noise if r.enabled else 0.0
        if isinstance(noise, dict):
            half = np.zeros(obs.shape[1])
            self.check_noise_groups(groups)
            for name, width in noise.items():
                half[groups[name]] = width * self.strength
            obs = obs + (2.0 * self._draws(obs.shape, "random") - 1.0) * half
        elif noise > 0:
            obs = obs + noise * self.strength * self._draws(obs.shape, "standard_normal")
        return obs.astype(np.float32)
