"""Robot tasks in simulation, each a batch of MuJoCo envs stepped together (the BatchEnv protocol).

The envs are cartpole, h1 (ppolab's H1 push-standing task), and each task on each robot
file: `<robot>_walk`, `<robot>_stand` and `<robot>_step` for every shipped robot
(`ppolab robots`). A user's robot file adds its own three: `register_robot(FILE)`, which
`ppolab train --robot FILE` calls; its runs keep the file's contents in their env.yaml.
"""

from __future__ import annotations

import difflib
import os

# ppolab renders headless (evaluation videos): EGL needs no display. It must be chosen before mujoco is imported.
os.environ.setdefault("MUJOCO_GL", "egl")

from typing import Any  # noqa: E402

from ppolab.envs import robot_file  # noqa: E402
from ppolab.envs.cartpole import CartpoleEnv  # noqa: E402
from ppolab.envs.h1 import H1Env  # noqa: E402
from ppolab.envs.protocol import BatchEnv  # noqa: E402
from ppolab.envs.robot_task import RobotTask, task_env  # noqa: E402
from ppolab.envs.stand import StandTask  # noqa: E402
from ppolab.envs.step import StepTask  # noqa: E402
from ppolab.envs.walk import WalkTask  # noqa: E402
from ppolab.errors import UserError  # noqa: E402

TASKS: dict[str, type[RobotTask]] = {"walk": WalkTask, "stand": StandTask, "step": StepTask}
ENVS: dict[str, type[BatchEnv]] = {"cartpole": CartpoleEnv, "h1": H1Env}
for _robot in robot_file.shipped():
    for _task in TASKS.values():
        _cls = task_env(_task, robot_file.shipped_robot(_robot))
        ENVS[_cls.name] = _cls
USER_ROBOT_KEY = "robot"  # a user robot's env config carries its robot file here


def register_robot(file: robot_file.RobotFile) -> list[str]:
    """The envs of a user's robot file, added to ENVS (a shipped robot's name is refused: rename it)."""
    if file.name in robot_file.shipped() or file.name in ENVS:
        raise UserError(f"{file.where('name')}: {file.name!r} is a shipped robot or env; give yours another name")
    names = []
    for task in TASKS.values():
        cls = task_env(task, file, embed=True)
        ENVS[cls.name] = cls
        names.append(cls.name)
    return names


def env_class(name: str, overrides: dict[str, Any] | None = None) -> type[BatchEnv]:
    """The env class of `name`; a user robot's env is found from the robot file its config carries."""
    if name not in ENVS and isinstance((overrides or {}).get(USER_ROBOT_KEY), dict):
        data = overrides[USER_ROBOT_KEY]
        file = robot_file.parse(data, robot_file.Path(str(data.get("source") or "robot file")))
        if f"{file.name}_" + name.rsplit("_", 1)[-1] == name and file.name not in robot_file.shipped():
            for task in TASKS.values():
                cls = task_env(task, file, embed=True)
                ENVS.setdefault(cls.name, cls)
    try:
        return ENVS[name]
    except KeyError:
        raise UserError(unknown_env(name)) from None


def unknown_env(name: str) -> str:
    """The one line for an env name that is none of ppolab's: the closest name, every name, and --robot."""
    guess = difflib.get_close_matches(name, env_names(), n=1, cutoff=0.6)
    hint = f"did you mean {guess[0]!r}? The envs: " if guess else "choose one of: "
    return f"unknown env {name!r}; {hint}{', '.join(env_names())} (a robot of your own: --robot FILE)"


def env_names() -> list[str]:
    return sorted(ENVS)


def make_env(name: str, num_envs: int, overrides: dict[str, Any] | None = None) -> BatchEnv:
    """Build a batch of `num_envs` instances of the named env, its configuration changed by `overrides`."""
    cls = env_class(name, overrides)
    env = cls(num_envs, cls.Config(**overrides)) if overrides else cls(num_envs)
    if hasattr(env, "batch") and hasattr(env, "layout"):  # a humanoid: its noise groups exist, checked up front
        env.batch.check_noise_groups(env.layout)
    return env
