"""Cartpole swing-up: a PD-driven cart on a 1 m rail with a pole that starts hanging down.

Physics at 200 Hz, control at 50 Hz. The action is the target cart position in
[-0.8, 0.8] m; a MuJoCo position actuator (the PD controller) tracks it at the
physics rate, in C. The episode ends when the cart leaves the rail (|x| > 1 m);
the horizon is applied by the sampler.
"""

from __future__ import annotations

import mujoco
import numpy as np
from pydantic import BaseModel, ConfigDict

from ppolab.envs.physics import BatchPhysics
from ppolab.envs.protocol import Marker
from ppolab.envs.reward_terms import EXP, LINEAR, RewardTable, Term
from ppolab.envs.scene import add_floor, add_lights, add_sky
from ppolab.envs.task_registry import ENVS_OF_THEIR_OWN

SWINGUP_TERMS = RewardTable(  # at most 1 a step: upright, centred, calm and cheap (theta = 0 is upright)
    Term("upright", 0.35, LINEAR, 0.5, lambda t: 1.0 + np.cos(t.physics.qpos[:, 1]), doc="(1 + cos theta) / 2"),
    Term(
        "balanced",
        0.35,
        EXP,
        2.0,
        lambda t: (1.0 - np.cos(t.physics.qpos[:, 1])) ** 2,
        doc="(1 - cos theta)^2: sharp near upright",
    ),
    Term(
        "centred",
        0.1,
        EXP,
        2.0,
        lambda t: t.physics.qpos[:, 0] ** 2,
        doc="the cart's distance from the centre, squared",
    ),
    Term("calm", 0.1, EXP, 0.05, lambda t: t.physics.qvel[:, 1] ** 2, doc="the pole's angular velocity, squared"),
    Term("effort", 0.1, EXP, 1.0, lambda t: np.sum(t.action**2, axis=-1), doc="the target position, squared"),
)
SwingupRewards = SWINGUP_TERMS.weights_model("SwingupRewards", "The swing-up terms' weights.")


class CartpoleConfig(BaseModel):
    """Physical constants of the swing-up task."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    physics_dt: float = 0.005
    control_dt: float = 0.02
    rail_limit: float = 1.0
    target_limit: float = 0.8
    cart_mass: float = 1.0
    pole_mass: float = 0.1
    pole_length: float = 0.5
    kp: float = 300.0
    kv: float = 35.0
    init_angle_noise: float = 0.25
    init_pos_noise: float = 0.05
    init_vel_noise: float = 0.05
    rewards: SwingupRewards = SwingupRewards()  # type: ignore[valid-type]


def build_model(cfg: CartpoleConfig) -> mujoco.MjModel:
    """Build the cart, pole and PD actuator with MjSpec (no files involved)."""
    spec = mujoco.MjSpec()
    spec.modelname = "cartpole"
    spec.option.timestep = cfg.physics_dt
    # nothing collides and no joint is limited: skip collision detection and the constraint solver
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    spec.memory = 64 * 1024  # a 2-dof model needs a few kB of arena, not MuJoCo's multi-MB default
    spec.worldbody.add_geom(
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[cfg.rail_limit + 0.1, 0.01, 0.01],
        rgba=[0.6, 0.6, 0.6, 1],
        contype=0,
        conaffinity=0,
    )
    add_sky(spec)  # sky, floor and light for videos; physics never sees them (contacts are off)
    add_floor(spec, collides=False).pos = [0, 0, -1.0]
    add_lights(spec)
    spec.worldbody.add_camera(name="side", pos=[0, -3.2, 0.3], xyaxes=[1, 0, 0, 0, 0, 1])
    cart = spec.worldbody.add_body(name="cart")
    cart.add_joint(name="slider", type=mujoco.mjtJoint.mjJNT_SLIDE, axis=[1, 0, 0])
    cart.add_geom(
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[0.1, 0.06, 0.04],
        mass=cfg.cart_mass,
        rgba=[0.2, 0.4, 0.8, 1],
        contype=0,
        conaffinity=0,
    )
    pole = cart.add_body(name="pole")
    pole.add_joint(name="hinge", type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0, 1, 0])
    pole.add_geom(
        type=mujoco.mjtGeom.mjGEOM_CAPSULE,
        fromto=[0, 0, 0, 0, 0, cfg.pole_length],
        size=[0.02, 0, 0],
        mass=cfg.pole_mass,
        rgba=[0.9, 0.5, 0.1, 1],
        contype=0,
        conaffinity=0,
    )
    act = spec.add_actuator(name="cart_pd", target="slider", trntype=mujoco.mjtTrn.mjTRN_JOINT)
    act.set_to_position(kp=cfg.kp, kv=cfg.kv)
    act.ctrlrange = [-cfg.target_limit, cfg.target_limit]
    act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
    return spec.compile()


class CartpoleEnv:
    """A batch of cartpole swing-up envs. Observation: x, cos th, sin th, x_dot, th_dot."""

    name = "cartpole"
    info = ENVS_OF_THEIR_OWN["cartpole"].info
    Config = CartpoleConfig
    layout = {"cart_pos": slice(0, 1), "pole_cos": slice(1, 2), "pole_sin": slice(2, 3), "cart_vel": slice(3, 4),
              "pole_ang_vel": slice(4, 5)}  # fmt: skip
    obs_dim = 5
    act_dim = 1
    has_symmetry = False
    symmetry = None

    def __init__(self, num_envs: int, config: CartpoleConfig | None = None) -> None:
        self.cfg = config or CartpoleConfig()
        self.model = build_model(self.cfg)
        substeps = round(self.cfg.control_dt / self.cfg.physics_dt)
        self.physics = BatchPhysics(self.model, num_envs, substeps)
        self.num_envs = num_envs
        self.action_low = np.full(self.act_dim, -self.cfg.target_limit)
        self.action_high = np.full(self.act_dim, self.cfg.target_limit)
        self.action = np.zeros((num_envs, self.act_dim))  # the last step's clipped action
        self.rewards = SWINGUP_TERMS.bind(self, self.cfg.rewards)

    @property
    def datas(self) -> list:
        return self.physics.datas

    def set_iteration(self, iteration: int) -> None:
        """No curriculum."""

    def markers(self, i: int) -> list[Marker]:
        return []

    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        """Start env i hanging down (theta near pi) near the rail centre."""
        c = self.cfg
        u = rng.uniform(-1.0, 1.0, size=4)
        qpos = np.array([c.init_pos_noise * u[0], np.pi + c.init_angle_noise * u[1]])
        qvel = c.init_vel_noise * u[2:]
        self.physics.set_state(i, qpos, qvel)

    def observe(self) -> np.ndarray:
        q, v = self.physics.qpos, self.physics.qvel
        return np.stack([q[:, 0], np.cos(q[:, 1]), np.sin(q[:, 1]), v[:, 0], v[:, 1]], axis=1).astype(np.float32)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Apply clipped target positions; return (obs, reward, terminated)."""
        self.action = a = np.clip(action, self.action_low, self.action_high)
        self.physics.step(a)
        reward = self.rewards.compose()
        terminated = np.abs(self.physics.qpos[:, 0]) > self.cfg.rail_limit
        return self.observe(), reward, terminated
