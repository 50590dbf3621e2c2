"""JVRC-1 humanoid: the model built from the `jvrc-description` URDF, and the walking task.

The URDF's meshes are COLLADA, which MuJoCo does not read: they are converted
(trimesh) and kept as visual-only geoms. MjSpec then makes the robot a MuJoCo model: a free joint on the base,
the upper body's joints removed (arms, waist and neck held rigid in their
nominal pose), PD servos on the 12 leg joints with the URDF's torque limits,
box feet with touch and velocity sensors, leg capsules for self-collision,
and the video scene (sky, checker floor, light, tracking camera).

`jvrc_walk` observation (37): root roll and pitch, root angular velocity (3),
12 leg joint positions and velocities, a gait clock (sin, cos), the mode
one-hot (standing, in place, forward) and the command (yaw rate, vx, vy).
"""

from __future__ import annotations

import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Literal

import mujoco
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, PositiveFloat, field_validator

from ppolab.envs.gait_clock import clock_score, clock_tables
from ppolab.envs.humanoid import (
    Gains,
    HumanoidBatch,
    HumanoidConfig,
    Randomization,
    Range,
    RobotLayout,
    Weights3,
    add_servos,
    check_gain_keys,
    gain,
    roll_pitch,
    rotate,
    yaw,
)
from ppolab.envs.model_cache import load_or_build
from ppolab.envs.scene import add_scene
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
# the neck-pitch joint in the pelvis frame (waist 0.192 + neck 0.453 above it, as in jvrc1.xml); the upper
# body is rigid with the pelvis here, so the head's position follows from the root's pose
HEAD_POS = np.array([-0.003, 0.0, 0.645])


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
    urdf: str,
    physics_dt: float,
    kp: dict[str, float],
    kd: dict[str, float],
    armature: dict[str, float],
    damping: float,
    torque_limits: bool,
    stairs: int = 0,
    visuals: bool = False,
) -> mujoco.MjModel:
    spec = mujoco.MjSpec.from_file(urdf)
    spec.option.timestep = physics_dt
    if not visuals:  # training: no meshes (35 visual geoms cost ~6% of a physics step)
        for geom in list(spec.geoms):
            if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
                spec.delete(geom)
        for mesh in list(spec.meshes):
            spec.delete(mesh)
        return _finish(spec, urdf, kp, kd, armature, damping, torque_limits, stairs)
    with tempfile.TemporaryDirectory() as meshes:
        visual_meshes(spec, Path(urdf), Path(meshes))
        return _finish(spec, urdf, kp, kd, armature, damping, torque_limits, stairs)


def visual_meshes(spec: mujoco.MjSpec, urdf: Path, out: Path) -> None:
    """The URDF's COLLADA meshes as visual-only geoms (no contacts, no mass), converted to STL in `out`.

    The physics keeps its own simple shapes (box soles, leg capsules): the meshes only make videos show
    the robot. The compiled model embeds them, and the model cache keeps it, so conversion runs once.
    """
    import trimesh

    spec.compiler.discardvisual = False  # else the compiler drops every geom without contacts
    colors = link_colors(urdf)
    package = urdf.parent.parent
    for mesh in spec.meshes:
        source = package / mesh.file.split("package://jvrc_description/", 1)[-1]
        target = out / (source.stem + ".stl")
        trimesh.load(str(source), force="mesh").export(str(target))
        mesh.file = str(target)
        mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL  # open surfaces are fine: no mass is taken
    for body in spec.bodies:
        for geom in body.geoms:
            if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
                geom.contype, geom.conaffinity, geom.group = 0, 0, 1
                geom.mass, geom.density = 0.0, 0.0
                geom.rgba = colors.get(body.name, [0.7, 0.7, 0.7, 1.0])


def link_colors(urdf: Path) -> dict[str, list[float]]:
    """Each link's visual colour, from the URDF's named materials."""
    root = ET.parse(urdf).getroot()
    named = {
        m.attrib["name"]: [float(v) for v in m.find("color").attrib["rgba"].split()]
        for m in root.iter("material")
        if m.find("color") is not None
    }
    colors = {}
    for link in root.iter("link"):
        material = link.find("visual/material")
        if material is not None and material.attrib.get("name") in named:
            colors[link.attrib["name"]] = named[material.attrib["name"]]
    return colors


def _finish(spec, urdf, kp, kd, armature, damping, torque_limits, stairs) -> mujoco.MjModel:
    for equality in list(spec.equalities):  # the hands' mimic joints, removed below
        spec.delete(equality)
    for joint in list(spec.joints):
        if joint.name not in LEGS:
            spec.delete(joint)  # its body is now rigid with its parent: the upper body holds its pose
        else:  # the reflected rotor inertia and viscous friction of the MJCF model LHW trains on
            joint.armature = gain(armature, joint.name)
            joint.damping = [damping, 0.0, 0.0]
    base = spec.body("base_link")
    base.add_freejoint(name="root")
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
    add_servos(spec, LEGS, kp, kd, effort_limits(Path(urdf)) if torque_limits else None)
    add_scene(spec, base)
    return spec.compile()


class JvrcConfig(HumanoidConfig):
    """JVRC-1 as LearningHumanoidWalking simulates it: its gains, armature and damping, no torque
    clamp (the URDF's 100 N m is a placeholder below what a half-sitting stance knee needs), actions
    in radians averaged with the previous one, and no randomisation."""

    kp: Gains = {"HIP": 200.0, "KNEE": 250.0, "ANKLE": 80.0}
    kd: Gains = {"HIP": 20.0, "KNEE": 25.0, "ANKLE": 8.0}
    armature: Gains = Field(
        {"HIP_P": 0.1925, "HIP_R": 0.1813, "HIP_Y": 0.1237, "KNEE": 0.1305, "ANKLE_R": 0.0653, "ANKLE_P": 0.1337},
        description="reflected rotor inertia per joint-name part, kg m^2",
    )
    damping: float = Field(0.2, ge=0, description="joint viscous damping, N m s/rad")
    torque_limits: bool = Field(False, description="clamp servo torques to the URDF's effort limits")
    visuals: bool = Field(False, description="load the robot's meshes (videos turn this on; physics is the same)")
    action_scale: PositiveFloat = 1.0
    action_clip: PositiveFloat | None = None
    action_filter: Literal["ema", "pair"] = "pair"
    init_joint_noise: NonNegativeFloat = 0.0
    randomization: Randomization = Randomization(enabled=False)
    height_range: Range = (0.6, 1.4)
    terminate_on_self_collision: bool = True

    @field_validator("kp", "kd", "armature")
    @classmethod
    def _parts_of_leg_joints(cls, v: dict[str, float]) -> dict[str, float]:
        check_gain_keys(v, LEGS)  # a typo would otherwise change nothing, silently
        return v


def load_robot(cfg: JvrcConfig, stairs: int = 0) -> tuple[mujoco.MjModel, RobotLayout, np.ndarray]:
    """The compiled model (cached), its layout, and the nominal half-sitting pose with the soles on the floor."""
    urdf = urdf_path()
    params = {
        "urdf": str(urdf), "physics_dt": cfg.physics_dt, "kp": cfg.kp, "kd": cfg.kd, "armature": cfg.armature,
        "damping": cfg.damping, "torque_limits": cfg.torque_limits, "stairs": stairs, "visuals": cfg.visuals,
    }  # fmt: skip
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
    """LearningHumanoidWalking's walking reward weights (they sum to 1)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    foot_force: float = 0.225
    foot_velocity: float = 0.225
    root_accel: float = 0.05
    height: float = 0.05
    velocity: float = 0.15
    yaw_rate: float = 0.15
    upper_body: float = 0.05
    posture: float = 0.05
    torque_change: float = 0.025
    action_change: float = 0.025


class WalkConfig(JvrcConfig):
    """LHW's walking task, but a 1.1 s gait cycle instead of LHW's 2.2 s (0.75 s swing, 0.35 s double
    support). Measured: a policy trained 14 M steps on LHW's clock tracks 0.1 m/s but saturates near
    0.15 m/s at a 0.3 m/s command (its step length limits it), and its 4.5 touchdowns per foot in 10 s
    cannot reach the walk check's 8; the same policy run on the faster clock, untrained for it, already
    covers 65% of the distance at 0.3 m/s with 9 touchdowns per foot (benchmarks/README.md)."""

    swing_duration: float = Field(0.4, gt=0, description="seconds one foot swings (LHW: 0.75)")
    stance_duration: float = Field(0.15, gt=0, description="seconds of each double support (LHW: 0.35)")
    mode_probs: Weights3 = Field((0.6, 0.2, 0.2), description="standing, in place, forward")
    forward_speed: Range = Field((0.0, 0.4), description="m/s of the forward mode")
    lateral_speed: Range = Field((0.0, 0.0), description="m/s sideways in the forward mode")
    turn_rate: Range = Field((-0.5, 0.5), description="rad/s of yaw in the in-place mode")
    stand_switch_prob: float = Field(
        0.01, ge=0, le=1, description="chance per step, in double support, of standing <-> in place"
    )
    walk_switch_prob: float = Field(0.005, ge=0, le=1, description="chance per step of in place <-> forward")
    goal_height: float = Field(0.80, gt=0, description="root height the height term asks for, m")
    rewards: WalkRewards = WalkRewards()


STANDING, IN_PLACE, FORWARD = 0, 1, 2


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
    symmetry = walk_symmetry()

    def __init__(self, num_envs: int, config: WalkConfig | None = None) -> None:
        self.cfg = cfg = config or WalkConfig()
        self.model, layout, nominal = load_robot(cfg)
        self.batch = HumanoidBatch(self.model, layout, cfg, num_envs, nominal)
        self.physics = self.batch
        self.num_envs = num_envs
        self.weight = float(self.model.body_subtreemass[1] * -self.model.opt.gravity[2])
        self.clock, self.double_support = clock_tables(cfg.swing_duration, cfg.stance_duration, cfg.control_dt)
        self.period = len(self.clock)
        n = num_envs
        self.phase = np.zeros(n, dtype=int)  # control steps into the gait cycle
        self.mode = np.zeros(n, dtype=int)
        self.command = np.zeros((n, 3))  # yaw rate, vx, vy
        self.prev_torque = np.zeros((n, 12))

    # -- episode state --------------------------------------------------------
    def _set_mode(self, i: int, mode: int, rng: np.random.Generator) -> None:
        c = self.cfg
        self.mode[i] = mode
        self.command[i] = 0.0
        if mode == IN_PLACE:
            self.command[i, 0] = rng.uniform(*c.turn_rate)
        elif mode == FORWARD:
            self.command[i, 1:] = [rng.uniform(*c.forward_speed), rng.uniform(*c.lateral_speed)]

    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        self.batch.reset_one(i, rng)
        env_rng = self.batch.rngs[i]
        self.phase[i] = env_rng.integers(self.period)
        probs = np.array(self.cfg.mode_probs) / sum(self.cfg.mode_probs)
        self._set_mode(i, int(env_rng.choice(3, p=probs)), env_rng)
        self.prev_torque[i] = self.batch.torque[i]

    def _switch_modes(self) -> None:
        """Standing <-> in place (only in double support) and in place <-> forward, at random."""
        c, b = self.cfg, self.batch
        for i in range(self.num_envs):
            u_stand, u_walk = b.rngs[i].random(2)
            mode = self.mode[i]
            if u_stand < c.stand_switch_prob and self.double_support[self.phase[i]] and mode != FORWARD:
                self._set_mode(i, IN_PLACE if mode == STANDING else STANDING, b.rngs[i])
            elif u_walk < c.walk_switch_prob and mode != STANDING:
                self._set_mode(i, IN_PLACE if mode == FORWARD else FORWARD, b.rngs[i])

    def observe(self) -> np.ndarray:
        clock = 2 * np.pi * self.phase / self.period
        obs = np.concatenate(
            [
                robot_state(self.batch), np.sin(clock)[:, None], np.cos(clock)[:, None], np.eye(3)[self.mode],
                self.command,
            ],
            axis=1,
        )  # fmt: skip
        return self.batch.noisy(obs)

    # -- stepping ---------------------------------------------------------------
    def force_clock(self) -> np.ndarray:
        """(n, 2) force clock of the right and left foot: +1 bear weight, -1 swing; standing: both +1."""
        return np.where((self.mode == STANDING)[:, None], 1.0, self.clock[self.phase])

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b, c, w = self.batch, self.cfg, self.cfg.rewards
        prev_target = b.prev_action.copy()
        target = b.apply(action)
        self.phase = (self.phase + 1) % self.period
        self._switch_modes()
        frc_clock = self.force_clock()
        force = np.clip(b.sensors[:, 0:2] / (0.5 * self.weight), 0.0, 1.0)  # half the weight: a full stance
        speed = np.clip(np.linalg.norm(b.sensors[:, 2:8].reshape(-1, 2, 3), axis=2) / 0.2, 0.0, 1.0)
        root_accel = np.exp(-0.25 * (np.abs(b.qvel[:, 3:6]).sum(1) + np.abs(b.root_acc).sum(1)))
        height_err = np.abs(b.qpos[:, 2] - c.goal_height)
        height_err = np.where(height_err < 0.01 + 0.05 * self.command[:, 1], 0.0, height_err)
        heading = yaw(b.qpos[:, 3:7])
        cos, sin, v = np.cos(heading), np.sin(heading), b.qvel[:, 0:2]
        v_body = np.stack([cos * v[:, 0] + sin * v[:, 1], -sin * v[:, 0] + cos * v[:, 1]], axis=1)
        head_offset = rotate(b.qpos[:, 3:7], HEAD_POS)[:, :2]  # head minus root, horizontal
        legs = b.qpos[:, b.layout.leg_qpos]
        terms = {
            "foot_force": clock_score(frc_clock, force),
            "foot_velocity": clock_score(-frc_clock, speed),
            "root_accel": root_accel,
            "height": np.exp(-40.0 * height_err**2),
            "velocity": np.exp(-10.0 * np.sum((v_body - self.command[:, 1:3]) ** 2, axis=1)),
            "yaw_rate": np.exp(-10.0 * np.abs(b.qvel[:, 5] - self.command[:, 0]) ** 3),
            "upper_body": np.exp(-10.0 * np.linalg.norm(head_offset, axis=1)),
            "posture": np.exp(-np.linalg.norm(legs - b.nominal_leg, axis=1)),
            "torque_change": np.exp(-0.25 * np.mean(np.abs(b.torque - self.prev_torque), axis=1)),
            "action_change": np.exp(-5.0 * np.mean(np.abs(target - prev_target), axis=1)),
        }
        self.prev_torque = b.torque.copy()
        reward = sum(getattr(w, k) * v for k, v in terms.items())
        lo, hi = c.height_range
        z = b.qpos[:, 2]
        terminated = (z < lo) | (z > hi)
        if c.terminate_on_self_collision:
            terminated |= b.self_contact
        return self.observe(), reward, terminated
