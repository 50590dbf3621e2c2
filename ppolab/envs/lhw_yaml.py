"""LearningHumanoidWalking's env config files (`envs/<robot>/configs/*.yaml`) read as ppolab env settings.

`ppolab train --env jvrc_walk --yaml envs/jvrc/configs/base.yaml` takes LHW's file as it is: every
key with a ppolab meaning becomes that setting (the table is in the README, "LearningHumanoidWalking's
env files"), and a key with none is refused by name with the reason, in one line. A file is read this
way when it has a key only LHW's files have (`sim_dt`, `pdgains`, `observation_noise`, ...).
"""

from __future__ import annotations

import math
from typing import Any

from ppolab.errors import UserError

LHW_ONLY = {
    "sim_dt", "obs_history_len", "pdgains", "observation_noise", "dynamics_randomization", "init_noise",
    "half_sitting_pose", "ctrllimited", "jointlimited", "reduced_xml", "xml_export_path", "task", "reward_weights",
}  # fmt: skip
KEYS = LHW_ONLY | {"control_dt", "action_smoothing", "kp", "kd", "perturbation"}  # each has a method of its own
# LHW's walking reward names (tasks/walking_task.py) and ppolab's
REWARDS = {
    "foot_frc_score": "foot_force", "foot_vel_score": "foot_velocity", "root_accel": "root_accel",
    "height_error": "height", "com_vel_error": "velocity", "yaw_vel_error": "yaw_rate",
    "upper_body_reward": "upper_body", "posture_error": "posture", "torque_penalty": "torque_change",
    "action_penalty": "action_change", "orient_cost": "orientation",
}  # fmt: skip
NOISE_GROUPS = {"root_orient": "root_orient", "root_ang_vel": "root_ang_vel", "motor_pos": "joint_pos",
                "motor_vel": "joint_vel", "motor_tau": "joint_torque"}  # fmt: skip
# LHW's dynamics randomisation (envs/common/domain_randomization.py), as h1_walk's robot file has it
DYNAMICS = {"joint_damping": [0.02, 2.0], "joint_frictionloss": [0.0, 2.0], "mass": [0.95, 1.05], "com_offset": 0.01}


def is_lhw(data: Any) -> bool:
    """A file in LHW's schema: a key only its files have, or gains given as lists."""
    if not isinstance(data, dict):
        return False
    lists = any(isinstance(data.get(k), list) for k in ("kp", "kd"))
    perturbation = data.get("perturbation")  # top-level: LHW's (ppolab's is randomization.perturbation)
    return lists or bool(LHW_ONLY & set(data)) or (isinstance(perturbation, dict) and "enable" in perturbation)


def translate(data: dict[str, Any], config_cls: type, source: str) -> tuple[dict[str, Any], list[str]]:
    """ppolab overrides for the env whose config class is `config_cls`, and notes for the console about keys
    read with nothing to do; a UserError names a key that has no ppolab meaning."""
    t = _Translation(config_cls, source)
    for key, value in data.items():
        handler = getattr(t, f"_{key}") if key in KEYS else None
        if handler is None:
            raise t.error(key, "no ppolab setting corresponds to it; drop it (README: LearningHumanoidWalking's "
                          "env files)")  # fmt: skip
        handler(value)
    return t.finish(), t.notes


class _Translation:
    """One method per LHW key, each writing the ppolab settings it means into `out`."""

    def __init__(self, config_cls: type, source: str) -> None:
        self.cls, self.source, self.out = config_cls, source, {}
        self.fields = config_cls.model_fields
        self.legs: list[str] = list(getattr(config_cls, "joint_names", []))
        self.random: dict[str, Any] = {}
        self.notes: list[str] = []  # said on the console: keys read but with nothing to do in ppolab

    def error(self, key: str, why: str) -> UserError:
        return UserError(f"{self.source}: {key}: {why}")

    def _number(self, key: str, value: Any, positive: bool = False) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.error(key, f"expected a number, got {value!r}")
        if positive and value <= 0:
            raise self.error(key, f"expected a number above 0, got {value!r}")
        return float(value)

    def _flag(self, key: str, value: Any) -> bool:
        """LHW's booleans are YAML's true and false; anything else ("yes" in quotes, 1, "x") is a mistake."""
        if not isinstance(value, bool):
            raise self.error(key, f"true or false, got {value!r}")
        return value

    def _xml_export_path(self, v: Any) -> None:
        self.notes.append(f"{self.source}: xml_export_path ignored: ppolab writes no XML there (it compiles its "
                          "models into its own cache, PPOLAB_CACHE_DIR)")  # fmt: skip

    def _sim_dt(self, v: Any) -> None:
        dt = self._number("sim_dt", v)
        if not 1e-4 <= dt <= 0.1:
            raise self.error("sim_dt", f"{v!r}: a physics step of 0.0001 to 0.1 s (0.1 ms at the finest), at most "
                             "control_dt")  # fmt: skip
        self.out["physics_dt"] = dt

    def _control_dt(self, v: Any) -> None:
        self.out["control_dt"] = self._number("control_dt", v)

    def _obs_history_len(self, v: Any) -> None:
        if v != 1:
            raise self.error("obs_history_len", f"{v!r}: ppolab's policies observe the current step (1); for a "
                             "memory train a recurrent policy (--recurrent)")  # fmt: skip

    def _action_smoothing(self, v: Any) -> None:  # LHW: a x new + (1 - a) x previous action
        self.out.update(action_smoothing=self._number("action_smoothing", v), action_filter="pair")

    def _kp(self, v: Any) -> None:
        self.out["kp"] = self._per_leg("kp", v)

    def _kd(self, v: Any) -> None:
        self.out["kd"] = self._per_leg("kd", v)

    def _per_leg(self, key: str, v: Any) -> dict[str, float]:
        if isinstance(v, dict):
            return {str(k): self._number(f"{key}.{k}", x) for k, x in v.items()}
        if not isinstance(v, list) or len(v) != len(self.legs):
            raise self.error(key, f"a list of {len(self.legs)} values, one per leg joint in LHW's order "
                             f"({', '.join(self.legs)})")  # fmt: skip
        return {joint: self._number(key, x) for joint, x in zip(self.legs, v)}

    def _pdgains(self, v: Any) -> None:
        if not isinstance(v, dict):
            raise self.error("pdgains", "a mapping of joint name to [kp, kd]")
        joints = list(self.cls.joint_names)
        kp, kd = {}, {}
        for name, pair in v.items():
            joint = next((j for j in (str(name), str(name).removesuffix("_joint")) if j in joints), None)
            if joint is None:
                raise self.error(f"pdgains.{name}", f"no such servoed joint in this env (its joints: "
                                 f"{', '.join(joints)}; the others are welded)")  # fmt: skip
            if not isinstance(pair, list) or len(pair) != 2:
                raise self.error(f"pdgains.{name}", "expected [kp, kd]")
            kp[joint], kd[joint] = (self._number(f"pdgains.{name}", x) for x in pair)
        self.out["kp"], self.out["kd"] = kp, kd

    def _half_sitting_pose(self, v: Any) -> None:
        if "nominal_pose" not in self.fields:
            raise self.error("half_sitting_pose", "this env's pose is fixed; the robot tasks (NAME_walk, ...) take it")
        if not isinstance(v, list) or len(v) != len(self.legs):
            raise self.error("half_sitting_pose", f"a list of {len(self.legs)} leg angles ({', '.join(self.legs)})")
        values = [self._number("half_sitting_pose", x) for x in v]
        degrees = max(abs(x) for x in values) > math.pi  # LHW's JVRC file is in degrees, its H1 file in radians
        self.out["nominal_pose"] = {j: math.radians(x) if degrees else x for j, x in zip(self.legs, values)}

    def _init_noise(self, v: Any) -> None:  # LHW: uniform +-v degrees on every joint, whose std is v / sqrt(3)
        self.out["init_joint_noise"] = math.radians(self._number("init_noise", v)) / math.sqrt(3)

    def _ctrllimited(self, v: Any) -> None:
        if v is not False:
            raise self.error("ctrllimited", "ppolab's servos take any target (false); limit torques with the "
                             "robot file's torque_limit")  # fmt: skip

    def _jointlimited(self, v: Any) -> None:
        self.out["joint_limits"] = self._flag("jointlimited", v)

    def _reduced_xml(self, v: Any) -> None:
        if v is not True:
            raise self.error("reduced_xml", "ppolab always builds the reduced model (the joints that are not "
                             "legs welded or held, as the robot file says): true")  # fmt: skip

    def _task(self, v: Any) -> None:
        if not isinstance(v, dict):
            raise self.error("task", "a mapping of goal_height, swing_duration, stance_duration, total_duration")
        for key, value in v.items():
            if key in ("goal_height", "swing_duration", "stance_duration") and key in self.fields:
                self.out[key] = self._number(f"task.{key}", value)
            elif key != "total_duration":
                raise self.error(f"task.{key}", "this env has no such setting")
        total, swing, stance = (None if v.get(k) is None else self._number(f"task.{k}", v[k])
                                for k in ("total_duration", "swing_duration", "stance_duration"))  # fmt: skip
        if total is not None and None not in (swing, stance) and abs(total - swing - stance) > 1e-9:
            raise self.error("task.total_duration", f"{total} must be swing + stance ({swing} + {stance}): a half "
                             "gait cycle")  # fmt: skip

    def _reward_weights(self, v: Any) -> None:
        if not isinstance(v, dict) or "rewards" not in self.fields:
            raise self.error("reward_weights", "a mapping of LHW's reward names to weights, for a task with rewards")
        terms = self.fields["rewards"].annotation.model_fields
        rewards = {}
        for name, weight in v.items():
            ours = REWARDS.get(str(name), str(name))
            if ours not in terms:
                raise self.error(f"reward_weights.{name}", f"no such term in this task (LHW's names: "
                                 f"{', '.join(k for k, o in REWARDS.items() if o in terms)})")  # fmt: skip
            rewards[ours] = self._number(f"reward_weights.{name}", weight)
        self.out["rewards"] = rewards

    def _observation_noise(self, v: Any) -> None:
        if not isinstance(v, dict):
            raise self.error("observation_noise", "a mapping with enabled, multiplier, type and scales")
        if not self._flag("observation_noise.enabled", v.get("enabled", True)):
            self.random["obs_noise"] = 0.0
            return
        if v.get("type", "uniform") != "uniform":
            raise self.error("observation_noise.type", "ppolab's noise per observation group is uniform (LHW's "
                             "default); for Gaussian noise give randomization.obs_noise one std instead")  # fmt: skip
        k = self._number("observation_noise.multiplier", v.get("multiplier", 1.0))
        if k < 0:
            raise self.error("observation_noise.multiplier", f"0 or more, got {k!r}")
        scales = v.get("scales") or {}
        if not isinstance(scales, dict):
            raise self.error("observation_noise.scales", f"a mapping of LHW's groups ({', '.join(NOISE_GROUPS)})")
        unknown = [g for g in scales if g not in NOISE_GROUPS]
        if unknown:
            raise self.error(f"observation_noise.scales.{unknown[0]}", f"LHW's groups: {', '.join(NOISE_GROUPS)}")
        self.random["obs_noise"] = {NOISE_GROUPS[g]: k * self._number(f"scales.{g}", s) for g, s in scales.items()}

    def _perturbation(self, v: Any) -> None:
        if not isinstance(v, dict):
            raise self.error("perturbation", "a mapping of enable, bodies, force_magnitude, torque_magnitude, interval")
        names = {"enable": "enabled", "force_magnitude": "force", "torque_magnitude": "torque",
                 "interval": "interval", "bodies": "bodies"}  # fmt: skip
        out = {}
        for key, value in v.items():
            if key not in names:
                raise self.error(f"perturbation.{key}", f"LHW's keys: {', '.join(names)}")
            if key == "enable":
                value = self._flag("perturbation.enable", value)
            elif key != "bodies":
                value = self._number(f"perturbation.{key}", value, positive=key == "interval")
            out[names[key]] = value
        self.random["perturbation"] = out

    def _dynamics_randomization(self, v: Any) -> None:
        if not isinstance(v, dict):
            raise self.error("dynamics_randomization", "a mapping with enable and interval")
        interval = self._number("dynamics_randomization.interval", v.get("interval", 0.5), positive=True)
        if self._flag("dynamics_randomization.enable", v.get("enable", False)):
            self.random.update(DYNAMICS)
            self.random["redraw_interval"] = interval

    def finish(self) -> dict[str, Any]:
        """The overrides; randomisation on when LHW's file asks for any of it, and then only what it asks for
        (no pushes, start tilt, friction or damping scales that LHW's file does not name). Without any, the
        preset's randomisation stays, less ppolab's start tilt, which no LHW task has."""
        if self.random:
            neutral = {"enabled": True, "obs_noise": 0.0, "push_force": 0.0, "start_tilt": 0.0,
                       "friction": [1.0, 1.0], "damping": [1.0, 1.0], "mass": [1.0, 1.0]}  # fmt: skip
            perturbation = {"enabled": False, **self.random.pop("perturbation", {})}
            self.out["randomization"] = {**neutral, **self.random, "perturbation": perturbation}
        else:
            self.out["randomization"] = {"start_tilt": 0.0}
        return self.out
