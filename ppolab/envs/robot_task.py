"""What every task on a robot file shares: the robot built from its config, the proprioceptive
observation and its mirror, and task configs whose defaults come from the robot file.

A task class (walk, stand, step) is written once; `task_env(Task, robot)` binds it to one
robot, so `h1_walk` and `g1_walk` are the same code on different robot files. The robot's
defaults (gains, rates, its file's `tasks:` section) become the task config's defaults, so
`--yaml` overrides and the saved `env.yaml` work as for any env.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, StrictBool, ValidationError, create_model, model_validator

from ppolab.envs.gait_clock import check_half_cycle
from ppolab.envs.humanoid import HumanoidBatch, HumanoidConfig, RobotLayout, check_gain_keys, roll_pitch, yaw
from ppolab.envs.imitation import ExpertView, NoExpertView, shared_view
from ppolab.envs.protocol import Marker, TaskInfo
from ppolab.envs.robot_file import RobotFile
from ppolab.envs.robot_model import BuildParams, Robot, load
from ppolab.envs.standing import holding_offsets
from ppolab.envs.symmetry import SignedPermutation, Symmetry
from ppolab.errors import UserError
from ppolab.util.validation import first_problem


class RobotTaskConfig(HumanoidConfig):
    """What a task on a robot file adds to the humanoid settings: its termination and goal heights (by
    default from the nominal pose) and whether the joint torques are observed (LHW's H1 observes them)."""

    goal_height: float | None = Field(None, gt=0, description="root height the height term asks for (null: the "
                                      "nominal pose's)")  # fmt: skip
    height_range: tuple[float, float] | None = Field(
        None, description="the episode ends with the root outside this, m (null: 0.75 to 1.75 x the goal height)"
    )
    observe_torque: StrictBool = Field(False, description="the leg joints' torques are part of the observation")
    nominal_pose: dict[str, float] = Field({}, description="leg joint angles (rad) by joint-name part, "
                                           "replacing the robot file's nominal pose (the zero action)")  # fmt: skip

    @model_validator(mode="after")
    def _pose_keys_name_joints(self) -> RobotTaskConfig:
        try:
            check_gain_keys(self.nominal_pose, type(self).joint_names)
        except ValueError as exc:
            raise ValueError(f"nominal_pose: {exc}") from None
        return self

    def heights(self, nominal: float) -> tuple[float, tuple[float, float]]:
        goal = self.goal_height or nominal
        return goal, tuple(self.height_range or (0.75 * goal, 1.75 * goal))


class ClockedConfig(RobotTaskConfig):
    """A task on LHW's gait clock (walking, stepping): one cycle is right swing, double support, left swing,
    double support. The default is a 1.1 s cycle (LHW's JVRC: 2.2 s, which caps the speed a policy reaches)."""

    swing_duration: float = Field(0.4, gt=0, le=5.0, description="seconds one foot swings (LHW's JVRC: 0.75)")
    stance_duration: float = Field(0.15, gt=0, le=5.0, description="seconds of each double support (LHW's JVRC: "
                                   "0.35)")  # fmt: skip

    @model_validator(mode="after")
    def _mirrored_halves(self) -> ClockedConfig:
        check_half_cycle(self.swing_duration, self.stance_duration, self.control_dt)
        return self


def robot_defaults(robot: RobotFile, task: str) -> dict[str, Any]:
    """The task settings a robot file gives: gains, armature, damping, rates, then its `tasks:` section."""
    out: dict[str, Any] = {
        "physics_dt": robot.rates.physics_dt, "control_dt": robot.rates.control_dt, "kp": dict(robot.gains.kp),
        "kd": dict(robot.gains.kd), "armature": dict(robot.armature), "damping": dict(robot.damping),
    }  # fmt: skip
    for section in ("all", task):
        for key, value in robot.tasks.get(section, {}).items():
            out[key] = {**out[key], **value} if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def config_class(base: type[RobotTaskConfig], robot: RobotFile, task: str, embed: bool) -> type[RobotTaskConfig]:
    """`base` with the robot's defaults: a mistake in the robot file's `tasks:` names the file and key. A user's
    robot file is `embed`ded as the field `robot`: every env.yaml and saved policy carries it."""
    data = robot_defaults(robot, task)
    try:
        defaults = base(**data)
    except ValidationError as exc:
        err = first_problem(exc)
        raise UserError(f"{robot.where('tasks')}: {task}: {err['where']}: {err['msg']}") from None
    fields = {}
    for k in data:  # the base field with the robot's default: its checks (gt=0, ...) and description kept
        info = copy.copy(base.model_fields[k])
        info.default = getattr(defaults, k)
        fields[k] = (base.model_fields[k].annotation, info)
    if embed:
        fields["robot"] = (RobotFile, Field(robot, description="the robot file (its contents, kept with the run)"))
    cls = create_model(f"{robot.name.title()}{task.title()}Config", __base__=base, **fields)
    cls.__doc__ = base.__doc__
    cls.joint_names = list(robot.legs)
    return cls


def build_robot(file: RobotFile, cfg: HumanoidConfig, stairs: int = 0) -> Robot:
    params = BuildParams(cfg.physics_dt, cfg.kp, cfg.kd, cfg.armature, cfg.damping, cfg.visuals, stairs)
    return load(file, params, getattr(cfg, "nominal_pose", None))


class RobotTask:
    """The part of a task that is about the robot: building it, its batch, its proprioception and mirror.

    Subclasses set `task`, `info` (what the task declares: protocol.TaskInfo) and `Config`, and define
    `observe`, `step` and `reset_one`; `task_registry.register_task` adds them. `task_env` makes the env class
    of one robot: it sets `robot_file`, `name` and the robot's `Config`.
    """

    task: ClassVar[str]
    info: ClassVar[TaskInfo]
    has_symmetry: ClassVar[bool] = True  # every robot file names its left and right
    robot_file: ClassVar[RobotFile]
    name: ClassVar[str]
    Config: ClassVar[type[RobotTaskConfig]]

    def __init__(self, num_envs: int, config: RobotTaskConfig | None = None, stairs: int = 0) -> None:
        self.cfg = cfg = config or self.Config()
        self.robot = robot = build_robot(self.robot_file, cfg, stairs)
        self.model = robot.model
        f = self.robot_file
        layout = RobotLayout.resolve(self.model, f.legs, root=f.root, upper=f.root)
        # stairs move per env: every env then needs its own model copy, randomised or not
        self.batch = HumanoidBatch(self.model, layout, cfg, num_envs, robot.nominal_qpos, own_models=stairs > 0)
        self.num_envs = num_envs
        self.weight = robot.weight
        self.goal_height, self.height_range = cfg.heights(robot.height)
        self.n_legs = len(f.legs)
        self.s = robot.sensors
        bound = np.inf if cfg.action_clip is None else cfg.action_clip  # the batch clips actions to it
        self.action_low, self.action_high = np.full(self.n_legs, -bound), np.full(self.n_legs, bound)

    @property
    def datas(self) -> list:
        return self.batch.datas

    def set_iteration(self, iteration: int) -> None:
        """Curricula that follow training hook in here: the randomisation's ramp, the stepping task's stairs."""
        self.batch.set_iteration(iteration)

    def standing_action(self) -> np.ndarray:
        """The action whose servo targets hold the nominal pose, standing on both soles (`--start-standing`)."""
        c = self.cfg
        action = holding_offsets(self.model, self.robot.nominal_qpos, self.batch.layout) / c.action_scale
        return action if c.action_clip is None else np.clip(action, -c.action_clip, c.action_clip)

    # -- an expert's view of this task's states (--imitate) --------------------------------------
    def expert_view(self, expert: RobotTask) -> ExpertView:
        """How this task's observations look to a policy trained on `expert` (an env of the same robot): the
        entries both observe copied by name, what only the expert observes filled by `expert_fill`."""
        mine, theirs = self.robot_file.name, getattr(type(expert), "robot_file", None)
        if theirs is None or theirs.name != mine:
            raise NoExpertView(f"its env is not one of robot {mine}'s tasks")
        if expert.act_dim != self.act_dim:
            raise NoExpertView(f"it drives {expert.act_dim} joints, this env {self.act_dim}")
        return shared_view(self.layout, expert.layout, self.expert_fill(expert.task), self.act_dim,
                           self.expert_mask())  # fmt: skip

    def expert_fill(self, expert_task: str) -> dict[str, np.ndarray]:
        """The values of what only an expert of `expert_task` observes (none by default: same task, same view)."""
        return {}

    def expert_mask(self):
        """Which samples the imitation counts, from the observation batch (None: every sample)."""
        return None

    # -- what every task observes first ---------------------------------------------------------
    def proprioception_layout(self) -> dict[str, slice]:
        """Named slices of the robot state at the start of every observation (LHW's order)."""
        n = self.n_legs
        names = [("root_orient", 2), ("root_ang_vel", 3), ("joint_pos", n), ("joint_vel", n)]
        if self.cfg.observe_torque:
            names.append(("joint_torque", n))
        out, start = {}, 0
        for name, size in names:
            out[name] = slice(start, start + size)
            start += size
        return out

    def observation_layout(self, extra: list[tuple[str, int]]) -> dict[str, slice]:
        """Named slices of the whole observation: the robot state, then the task's own entries. The config's
        noise groups must name some of them: checked here, when the task is built."""
        layout = self.proprioception_layout()
        start = layout[next(reversed(layout))].stop
        for name, size in extra:
            layout[name] = slice(start, start + size)
            start += size
        self.batch.check_noise_groups(layout)
        return layout

    def markers(self, i: int) -> list[Marker]:
        """What env i is told, drawn into a video: nothing, for a task without a command."""
        return []

    def proprioception(self) -> np.ndarray:
        b = self.batch
        roll, pitch = roll_pitch(b.qpos[:, 3:7])
        parts = [roll[:, None], pitch[:, None], b.qvel[:, 3:6], b.qpos[:, b.leg_q], b.qvel[:, b.leg_v]]
        if self.cfg.observe_torque:
            parts.append(b.torque)
        return np.concatenate(parts, axis=1)

    def proprioception_mirror(self) -> tuple[list[int], list[float]]:
        """Source index and sign of each proprioceptive entry in the mirrored state."""
        layout = self.proprioception_layout()
        perm, sign = [0, 1, 2, 3, 4], [-1.0, 1.0, -1.0, 1.0, -1.0]  # roll, pitch; angular velocity x, y, z
        m = self.robot.mirror
        for name in ("joint_pos", "joint_vel", "joint_torque"):
            if name in layout:
                first = layout[name].start
                perm += [first + int(t) for t in m.twin]
                sign += list(m.sign[m.twin])
        return perm, sign

    def action_mirror(self) -> SignedPermutation:
        m = self.robot.mirror
        return SignedPermutation(m.twin.copy(), m.sign[m.twin].copy())

    def mirrored(self, extra_perm: list[int], extra_sign: list[float]) -> Symmetry:
        """The task's symmetry: the proprioception's mirror, then the task's own entries (indices relative to
        where they start)."""
        perm, sign = self.proprioception_mirror()
        start = len(perm)
        perm += [start + k for k in extra_perm]
        sign += extra_sign
        return Symmetry(SignedPermutation(np.array(perm), np.array(sign)), self.action_mirror())

    # -- what a privileged critic sees (`--privileged-critic`): true state a robot does not measure ----------
    privileged_dim: ClassVar[int] = 10  # a task that adds entries (task_privileged) adds their count

    def privileged(self) -> np.ndarray:
        """(n, privileged_dim): the root's velocity in its heading's frame (3) and its height over the floor, the
        soles' loads over the weight and their heights over the floor, the friction and mass drawn over the
        model's (1, 1 without randomisation), then the task's own (`task_privileged`). Why: the actor infers
        these from joint motion; a critic that reads them predicts the return a speed earns directly."""
        b = self.batch
        heading = yaw(b.qpos[:, 3:7])
        cos, sin = np.cos(heading), np.sin(heading)
        vx, vy = b.qvel[:, 0], b.qvel[:, 1]
        ground = self.ground_height()
        parts = [(cos * vx + sin * vy)[:, None], (cos * vy - sin * vx)[:, None], b.qvel[:, 2:3],
                 (b.qpos[:, 2] - ground)[:, None], np.minimum(b.sensors[:, self.s.touch] / self.weight, 2.0),
                 self.sole_positions()[:, :, 2] - np.asarray(ground).reshape(-1, 1), b.dynamics,
                 *self.task_privileged()]  # fmt: skip
        return np.concatenate(parts, axis=1).astype(np.float32)

    def task_privileged(self) -> list[np.ndarray]:
        """The task's own privileged entries, (n, k) each (none by default)."""
        return []

    def foot_contact(self) -> np.ndarray:
        """(n, 2) bool: the right and the left sole carry more than 5% of the weight."""
        return self.batch.sensors[:, self.s.touch] > 0.05 * self.weight

    def sole_positions(self) -> np.ndarray:
        """(n, 2, 3) world position of the bottom of the right and the left sole."""
        return self.batch.sensors[:, self.s.sole_pos].reshape(-1, 2, 3)

    def head_offset(self) -> np.ndarray:
        """(n, 2) horizontal offset of the head point from the root."""
        return self.batch.sensors[:, self.s.head_pos][:, :2] - self.batch.qpos[:, :2]

    def fallen(self) -> np.ndarray:
        lo, hi = self.height_range
        z = self.batch.qpos[:, 2] - self.ground_height()
        out = (z < lo) | (z > hi)
        if self.cfg.terminate_on_self_collision:
            out |= self.batch.self_contact
        return out

    def ground_height(self) -> np.ndarray | float:
        """The floor under the robot: 0 but where a task builds stairs."""
        return 0.0


def task_env(task: type[RobotTask], robot: RobotFile, embed: bool = False) -> type[RobotTask]:
    """The env class of `task` on `robot`: named `<robot>_<task>`, its config's defaults the robot's."""
    config = config_class(task.Config, robot, task.task, embed)
    name = f"{robot.name}_{task.task}"
    doc = (task.__doc__ or "").strip().splitlines()[0].rstrip(".")
    about = f"{doc}: {robot.description or robot.name}."
    attrs = {"robot_file": robot, "name": name, "Config": config, "__doc__": about}
    return type(f"{robot.name.title()}{task.__name__}", (task,), attrs)
