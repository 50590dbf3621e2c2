"""JVRC-1 humanoid: the model built from the `jvrc-description` URDF, and the walking task.

The URDF's meshes are COLLADA, which MuJoCo does not read, so every mesh geom is
dropped. MjSpec then makes the robot a MuJoCo model: a free joint on the base,
the upper body's joints removed (arms, waist and neck held rigid in their
nominal pose), PD servos on the 12 leg joints with the URDF's torque limits,
box feet with touch and velocity sensors, leg capsules for self-collision,
a floor and a camera.

`jvrc_walk` observation (37): root roll and pitch, root angular velocity (3),
12 leg joint positions and velocities, a gait clock (sin, cos), the mode
one-hot (standing, in place, forward) and the command (yaw rate, vx, vy).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ppolab.envs.humanoid import HumanoidBatch, HumanoidConfig, RobotLayout, add_servos, roll_pitch, yaw
from ppolab.envs.model_cache import load_or_build
from ppolab.envs.symmetry import SignedPermutation, Symmetry, leg_mirror
from ppolab.errors import UserError

SIDES = ("R", "L")
LEG_PARTS = ("HIP_P", "HIP_R", "HIP_Y", "KNEE", "ANKLE_R", "ANKLE_P")
LEGS = [f"{s}_{p}" for s in SIDES for p in LEG_PARTS]
NOMINAL = {"HIP_P": np.radians(-30.0), "KNEE": np.radians(50.0), "ANKLE_P": np.radians(-24.0)}
FOOT_HALF = (0.1, 0.05, 0.01)  # box half-sizes of each sole
FOOT_POS = (0.029, 0.0, -0.09778)  # sole centre in the ankle-pitch body's frame
ROBOT_GROUP = 2  # collision bit for robot-robot contacts; the floor only uses bit 1
STAIR_HALF = (0.15, 0.6, 0.5)  # box half-sizes of one stair tread


def urdf_path() -> Path:
    try:
        import jvrc_description
    except ImportError:
        raise UserError("the jvrc envs need the package jvrc-description (pip install it, or rerun setup)") from None
    return Path(jvrc_description.__file__).parent / "urdf" / "jvrc1.urdf"


def effort_limits(urdf: Path) -> dict[str, float]:
    limits = {}
    for joint in ET.parse(urdf).getroot().iter("joint"):
        limit = joint.find("limit")
        if limit is not None and "effort" in limit.attrib:
            limits[joint.attrib["name"]] = float(limit.attrib["effort"])
    return limits


def build_model(
    urdf: str, physics_dt: float, kp: dict[str, float], kd: dict[str, float], stairs: int = 0
) -> mujoco.MjModel:
    spec = mujoco.MjSpec.from_file(urdf)
    spec.option.timestep = physics_dt
    for geom in list(spec.geoms):
        if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
            spec.delete(geom)
    for mesh in list(spec.meshes):
        spec.delete(mesh)
    for equality in list(spec.equalities):  # the hands' mimic joints, removed below
        spec.delete(equality)
    for joint in list(spec.joints):
        if joint.name not in LEGS:
            spec.delete(joint)  # its body is now rigid with its parent: the upper body holds its pose
    base = spec.body("base_link")
    base.add_freejoint(name="root")
    pelvis = spec.body("PELVIS_S")
    pelvis.add_geom(  # torso and pelvis, to see the robot in videos; no contacts
        type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.1, 0.14, 0.25], pos=[0, 0, 0.3], rgba=[0.9, 0.55, 0.2, 1],
        contype=0, conaffinity=0, mass=0,
    )  # fmt: skip
    for side in SIDES:
        hip, knee, ankle = (spec.body(f"{side}_{p}_S") for p in ("HIP_Y", "KNEE", "ANKLE_R"))
        for body, child in ((hip, knee), (knee, ankle)):
            body.add_geom(
                type=mujoco.mjtGeom.mjGEOM_CAPSULE, fromto=[0, 0, 0, *child.pos], size=[0.045, 0, 0],
                contype=ROBOT_GROUP, conaffinity=ROBOT_GROUP, mass=0, rgba=[0.8, 0.8, 0.85, 1],
            )  # fmt: skip
        foot = spec.body(f"{side}_ANKLE_P_S")
        foot.add_geom(
            name=f"{side}_foot", type=mujoco.mjtGeom.mjGEOM_BOX, size=list(FOOT_HALF), pos=list(FOOT_POS),
            contype=1 | ROBOT_GROUP, conaffinity=1 | ROBOT_GROUP, mass=0, rgba=[0.3, 0.3, 0.35, 1],
        )  # fmt: skip
        site = foot.add_site(
            name=f"{side}_sole", type=mujoco.mjtGeom.mjGEOM_BOX, pos=list(FOOT_POS),
            size=[FOOT_HALF[0] + 0.005, FOOT_HALF[1] + 0.005, FOOT_HALF[2] + 0.01],
        )  # fmt: skip
        spec.add_sensor(name=f"{side}_touch", type=mujoco.mjtSensor.mjSENS_TOUCH, objtype=mujoco.mjtObj.mjOBJ_SITE,
                        objname=site.name)  # fmt: skip
    for side in SIDES:
        spec.add_sensor(name=f"{side}_foot_vel", type=mujoco.mjtSensor.mjSENS_FRAMELINVEL,
                        objtype=mujoco.mjtObj.mjOBJ_SITE, objname=f"{side}_sole")  # fmt: skip
    for side in SIDES:
        spec.add_sensor(name=f"{side}_foot_pos", type=mujoco.mjtSensor.mjSENS_FRAMEPOS,
                        objtype=mujoco.mjtObj.mjOBJ_SITE, objname=f"{side}_sole")  # fmt: skip
    for k in range(stairs):  # placed per episode by the task; out of the way below the floor until then
        spec.worldbody.add_geom(
            name=f"stair{k}", type=mujoco.mjtGeom.mjGEOM_BOX, size=list(STAIR_HALF), pos=[0, 0, -5],
            rgba=[0.55, 0.5, 0.45, 1], contype=1, conaffinity=1,
        )  # fmt: skip
    add_servos(spec, LEGS, kp, kd, effort_limits(Path(urdf)))
    spec.worldbody.add_geom(
        name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05], rgba=[0.35, 0.4, 0.45, 1],
        contype=1, conaffinity=1,
    )  # fmt: skip
    spec.worldbody.add_light(pos=[0, 0, 3.5], dir=[0, 0, -1], type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL)
    base.add_camera(
        name="track", pos=[0.5, -3.0, 0.2], xyaxes=[1, 0, 0, 0, 0.1, 1], mode=mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM
    )
    return spec.compile()


class JvrcConfig(HumanoidConfig):
    kp: dict[str, float] = {"HIP_Y": 100.0, "HIP": 200.0, "KNEE": 200.0, "ANKLE": 80.0}
    kd: dict[str, float] = {"HIP_Y": 3.0, "HIP": 5.0, "KNEE": 5.0, "ANKLE": 2.0}
    height_range: tuple[float, float] = (0.6, 1.4)
    terminate_on_self_collision: bool = True


def load_robot(cfg: JvrcConfig, stairs: int = 0) -> tuple[mujoco.MjModel, RobotLayout, np.ndarray]:
    """The compiled model (cached), its layout, and the nominal half-sitting pose with the soles on the floor."""
    urdf = urdf_path()
    params = {"urdf": str(urdf), "physics_dt": cfg.physics_dt, "kp": cfg.kp, "kd": cfg.kd, "stairs": stairs}
    model = load_or_build("jvrc", [urdf], build_model, params)
    layout = RobotLayout.resolve(model, LEGS, root="base_link", upper="base_link")
    qpos = model.qpos0.copy()
    for name in LEGS:
        qpos[model.joint(name).qposadr[0]] = NOMINAL.get(name.split("_", 1)[1], 0.0)
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    sole = min(data.geom_xpos[model.geom(f"{s}_foot").id][2] for s in SIDES) - FOOT_HALF[2]
    qpos[2] -= sole  # stand the soles on the floor
    return model, layout, qpos


def robot_state(b: HumanoidBatch) -> np.ndarray:
    """The 29 entries every JVRC task observes first: roll, pitch, angular velocity, leg positions, velocities."""
    roll, pitch = roll_pitch(b.qpos[:, 3:7])
    lay = b.layout
    return np.concatenate(
        [roll[:, None], pitch[:, None], b.qvel[:, 3:6], b.qpos[:, lay.leg_qpos], b.qvel[:, lay.leg_qvel]], axis=1
    )


def gait_scores(b: HumanoidBatch, swing: np.ndarray, weight: float) -> tuple[np.ndarray, np.ndarray]:
    """Clock-matched foot terms in [0, 1]. A swinging foot scores for carrying no weight and for moving;
    a foot in stance for carrying weight and for not sliding. Standing on both feet while the clock
    asks for steps thus scores half: the gait is worth learning (a constant 1 for the phase's other
    half made standing still nearly as good as walking, and policies settled there)."""
    force = np.clip(b.sensors[:, 0:2] / weight, 0.0, 1.0)  # share of body weight on each foot
    speed = np.linalg.norm(b.sensors[:, 2:8].reshape(-1, 2, 3), axis=2)
    foot_force = np.mean(np.where(swing, 1.0 - force, force), axis=1)
    foot_velocity = np.mean(np.where(swing, 1.0 - np.exp(-10.0 * speed**2), np.exp(-20.0 * speed**2)), axis=1)
    return foot_force, foot_velocity


class WalkRewards(BaseModel):
    model_config = ConfigDict(extra="forbid")

    foot_force: float = 0.15
    foot_velocity: float = 0.15
    root_accel: float = 0.05
    height: float = 0.05
    velocity: float = 0.15
    yaw_rate: float = 0.1
    upright: float = 0.1
    posture: float = 0.1
    torque_change: float = 0.05
    action_change: float = 0.1


class WalkConfig(JvrcConfig):
    gait_period: float = Field(0.8, gt=0, description="seconds of one full gait cycle (two steps)")
    mode_interval: float = Field(4.0, gt=0, description="mean seconds between random mode and command changes")
    mode_probs: tuple[float, float, float] = Field((0.15, 0.15, 0.7), description="standing, in place, forward")
    forward_speed: tuple[float, float] = (0.2, 0.6)
    lateral_speed: tuple[float, float] = (-0.1, 0.1)
    yaw_rate: tuple[float, float] = (-0.3, 0.3)
    rewards: WalkRewards = WalkRewards()


ROLL_YAW_PARTS = [1, 2, 4]  # HIP_R, HIP_Y, ANKLE_R: they turn the other way in a mirror


def robot_state_mirror() -> tuple[list[tuple[int, int]], list[int]]:
    """Swaps and flips of the state every JVRC task observes first (29 entries): roll, pitch,
    angular velocity (3), leg positions (12), leg velocities (12)."""
    swaps, negate = [], [0, 2, 4]  # roll, roll rate, yaw rate
    for first in (5, 17):
        s, n = leg_mirror(first, 6, ROLL_YAW_PARTS)
        swaps += s
        negate += n
    return swaps, negate


def walk_symmetry() -> Symmetry:
    swaps, negate = robot_state_mirror()
    negate += [29, 30, 34, 36]  # clock half a cycle on (sin, cos), command yaw rate and vy
    act_swaps, act_negate = leg_mirror(0, 6, ROLL_YAW_PARTS)
    return Symmetry(SignedPermutation.build(37, swaps, negate), SignedPermutation.build(12, act_swaps, act_negate))


class JvrcWalkEnv:
    """A batch of JVRC-1 walking envs: follow a velocity command with a clock-driven gait."""

    name = "jvrc_walk"
    Config = WalkConfig
    obs_dim = 37
    act_dim = 12
    camera = "track"
    symmetry = walk_symmetry()

    def __init__(self, num_envs: int, config: WalkConfig | None = None) -> None:
        self.cfg = cfg = config or WalkConfig()
        self.model, layout, nominal = load_robot(cfg)
        self.batch = HumanoidBatch(self.model, layout, cfg, num_envs, nominal)
        self.physics = self.batch
        self.num_envs = num_envs
        self.target_height = float(nominal[2])
        self.weight = float(self.model.body_subtreemass[1] * -self.model.opt.gravity[2])
        n = num_envs
        self.phase = np.zeros(n)
        self.mode = np.zeros(n, dtype=int)
        self.command = np.zeros((n, 3))  # yaw rate, vx, vy
        self.prev_root_vel = np.zeros((n, 3))
        self.prev_torque = np.zeros((n, 12))

    # -- episode state --------------------------------------------------------
    def _draw_mode(self, i: int, rng: np.random.Generator) -> None:
        c = self.cfg
        self.mode[i] = rng.choice(3, p=np.array(c.mode_probs) / sum(c.mode_probs))
        self.command[i] = 0.0
        if self.mode[i] == 2:
            self.command[i] = [rng.uniform(*c.yaw_rate), rng.uniform(*c.forward_speed), rng.uniform(*c.lateral_speed)]

    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        self.batch.reset_one(i, rng)
        env_rng = self.batch.rngs[i]
        self.phase[i] = env_rng.uniform()
        self._draw_mode(i, env_rng)
        self.prev_root_vel[i] = self.batch.qvel[i, 0:3]
        self.prev_torque[i] = self.batch.torque[i]

    def observe(self) -> np.ndarray:
        clock = 2 * np.pi * self.phase
        obs = np.concatenate(
            [
                robot_state(self.batch), np.sin(clock)[:, None], np.cos(clock)[:, None], np.eye(3)[self.mode],
                self.command,
            ],
            axis=1,
        )  # fmt: skip
        return self.batch.noisy(obs)

    # -- stepping ---------------------------------------------------------------
    def swing(self) -> np.ndarray:
        """(n, 2) swing mask for the right and left foot: the right swings in the first half of the cycle."""
        first_half = self.phase < 0.5
        walking = self.mode != 0
        return np.stack([first_half & walking, ~first_half & walking], axis=1)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b, c, w = self.batch, self.cfg, self.cfg.rewards
        prev_action = b.prev_action.copy()
        smoothed = b.apply(action)
        lay = b.layout
        foot_force, foot_velocity = gait_scores(b, self.swing(), self.weight)
        root_vel = b.qvel[:, 0:3]
        accel = (root_vel - self.prev_root_vel) / c.control_dt
        self.prev_root_vel = root_vel.copy()
        root_accel = np.exp(-0.01 * np.sum(accel**2, axis=1))
        z = b.qpos[:, 2]
        height = np.exp(-40.0 * (z - self.target_height) ** 2)
        heading = yaw(b.qpos[:, 3:7])
        v_body = np.stack(
            [np.cos(heading) * root_vel[:, 0] + np.sin(heading) * root_vel[:, 1],
             -np.sin(heading) * root_vel[:, 0] + np.cos(heading) * root_vel[:, 1]], axis=1
        )  # fmt: skip
        velocity = np.exp(-4.0 * np.sum((v_body - self.command[:, 1:3]) ** 2, axis=1))
        yaw_rate = np.exp(-4.0 * (b.qvel[:, 5] - self.command[:, 0]) ** 2)
        upright = np.exp(-20.0 * (1.0 - b.upper_z))
        hips = [0, 1, 2, 6, 7, 8]  # posture: hip yaw and roll near nominal; pitch is the gait's
        posture = np.exp(-5.0 * np.mean((b.qpos[:, lay.leg_qpos] - b.nominal_leg)[:, hips] ** 2, axis=1))
        torque_change = np.exp(-5.0 * np.mean(((b.torque - self.prev_torque) / lay.torque_limit) ** 2, axis=1))
        self.prev_torque = b.torque.copy()
        action_change = np.exp(-5.0 * np.mean((smoothed - prev_action) ** 2, axis=1))
        reward = (
            w.foot_force * foot_force + w.foot_velocity * foot_velocity + w.root_accel * root_accel
            + w.height * height + w.velocity * velocity + w.yaw_rate * yaw_rate + w.upright * upright
            + w.posture * posture + w.torque_change * torque_change + w.action_change * action_change
        )  # fmt: skip
        self.phase = (self.phase + c.control_dt / c.gait_period) % 1.0
        p_switch = c.control_dt / c.mode_interval
        for i in range(self.num_envs):
            if b.rngs[i].random() < p_switch:
                self._draw_mode(i, b.rngs[i])
        lo, hi = c.height_range
        terminated = (z < lo) | (z > hi)
        if c.terminate_on_self_collision:
            terminated |= b.self_contact
        return self.observe(), reward, terminated
