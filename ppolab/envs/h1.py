"""`h1`: Unitree H1 standing still at its nominal height under pushes (ppolab's own task).

The robot is the shipped `h1` robot file with its torso and arms held by PD servos (the
file welds them for walking), its motors replaced by servos clamped to their torque
ranges. Observation (35): root roll and pitch, root angular velocity (3), and the leg
joints' positions, velocities and torques (10 each). `h1_walk` is LHW's walking task on
the same robot file.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, StrictBool

from ppolab.envs.humanoid import Gains, HumanoidBatch, HumanoidConfig, Range, RobotLayout, roll_pitch
from ppolab.envs.protocol import Marker
from ppolab.envs.reward_terms import EXP, LINEAR, RewardTable, Term
from ppolab.envs.robot_file import shipped_robot
from ppolab.envs.robot_task import build_robot
from ppolab.envs.task_registry import ENVS_OF_THEIR_OWN

NOMINAL_LEG = {"hip_pitch": -0.4, "knee": 0.8, "ankle": -0.4}
HELD = ["torso", *(f"{s}_{j}" for s in ("left", "right") for j in ("shoulder_pitch", "shoulder_roll", "shoulder_yaw",
                                                                   "elbow"))]  # fmt: skip


def _still(t) -> np.ndarray:
    q = t.batch.qvel
    return 0.5 * np.exp(-5.0 * np.sum(q[:, 0:2] ** 2, axis=1)) + 0.5 * np.exp(-5.0 * q[:, 5] ** 2)


H1_TERMS = RewardTable(
    Term("still", 0.2, LINEAR, 1.0, _still, doc="half exp(-5 x the horizontal velocity squared), half exp(-5 x "
         "the yaw rate squared)"),
    Term("height", 0.3, EXP, 40.0, lambda t: (t.batch.qpos[:, 2] - t.cfg.target_height) ** 2,
         doc="the root height's error, squared"),
    Term("upright", 0.2, EXP, 20.0, lambda t: 1.0 - t.batch.upper_z, doc="1 - the torso's up axis' height"),
    Term("torque", 0.1, EXP, 2.0, lambda t: np.mean((t.batch.torque / t.batch.layout.torque_limit) ** 2, axis=1),
         doc="the legs' torques over their limits, squared, averaged"),
    Term("posture", 0.2, EXP, 5.0, lambda t: np.mean((t.batch.qpos[:, t.batch.layout.leg_qpos]
                                                      - t.batch.nominal_leg) ** 2, axis=1),
         doc="the legs' squared distance from the nominal pose, averaged"),
)  # fmt: skip
H1Rewards = H1_TERMS.weights_model("H1Rewards", "The standing-under-pushes terms' weights (h1.H1_TERMS).")


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
    rewards: H1Rewards = H1Rewards()  # type: ignore[valid-type]
    terminate_on_self_collision: StrictBool = Field(True, description="end the episode when two robot parts touch")


H1Config.joint_names = [*shipped_robot("h1").legs, *HELD]


def robot_file():
    """The h1 robot file as this task has it: torso and arms held, the model's own masses."""
    return shipped_robot("h1").model_copy(update={"others": "hold", "body_mass": {}})


class H1Env:
    """Unitree H1 stands still under pushes"""

    name = "h1"
    info = ENVS_OF_THEIR_OWN["h1"].info
    Config = H1Config
    has_symmetry = False

    def __init__(self, num_envs: int, config: H1Config | None = None) -> None:
        self.cfg = cfg = config or H1Config()
        file = robot_file()
        robot = build_robot(file, cfg)
        self.model = robot.model
        layout = RobotLayout.resolve(self.model, file.legs, root="pelvis", upper="torso_link")
        nominal = self.model.qpos0.copy()
        nominal[2] = cfg.target_height
        for name in file.legs:
            part = name.split("_", 1)[1]
            nominal[self.model.joint(name).qposadr[0]] = NOMINAL_LEG.get(part, 0.0)
        self.batch = HumanoidBatch(self.model, layout, cfg, num_envs, nominal)
        self.num_envs = num_envs
        self.obs_dim, self.act_dim = 35, len(file.legs)
        bound = np.inf if cfg.action_clip is None else cfg.action_clip  # the batch clips actions to it
        self.action_low, self.action_high = np.full(self.act_dim, -bound), np.full(self.act_dim, bound)
        n = len(file.legs)  # named slices, as the robot tasks have them: per-group observation noise finds them
        self.layout = {"root_orient": slice(0, 2), "root_ang_vel": slice(2, 5), "joint_pos": slice(5, 5 + n),
                       "joint_vel": slice(5 + n, 5 + 2 * n), "joint_torque": slice(5 + 2 * n, 5 + 3 * n)}  # fmt: skip
        self.symmetry = None
        self.batch.check_noise_groups(self.layout)
        self.rewards = H1_TERMS.bind(self, cfg.rewards)

    @property
    def datas(self) -> list:
        return self.batch.datas

    def set_iteration(self, iteration: int) -> None:
        """The randomisation's ramp, if its config has one."""
        self.batch.set_iteration(iteration)

    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        self.batch.reset_one(i, rng)

    def markers(self, i: int) -> list[Marker]:
        return []

    def observe(self) -> np.ndarray:
        b, lay = self.batch, self.batch.layout
        roll, pitch = roll_pitch(b.qpos[:, 3:7])
        obs = np.concatenate(
            [roll[:, None], pitch[:, None], b.qvel[:, 3:6], b.qpos[:, lay.leg_qpos], b.qvel[:, lay.leg_qvel], b.torque],
            axis=1,
        )
        return b.noisy(obs, self.layout)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b, cfg = self.batch, self.cfg
        b.apply(action)
        z = b.qpos[:, 2]
        reward = self.rewards.compose()
        lo, hi = cfg.height_range
        terminated = (z < lo) | (z > hi)
        if cfg.terminate_on_self_collision:
            terminated |= b.self_contact
        return self.observe(), reward, terminated
