"""Robot tasks in simulation, each a batch of MuJoCo envs stepped together (the BatchEnv protocol).

The envs are cartpole, h1 (ppolab's H1 push-standing task), and each task on each robot
file (`task_registry`: walk, stand, step): `<robot>_<task>` for every shipped robot
(`ppolab robots`). A user's robot file adds its own: `register_robot(FILE)`, which
`ppolab train --robot FILE` calls; its runs keep the file's contents in their env.yaml.
A task registered later (`task_registry.register_task`) adds its env on every robot.
"""

from __future__ import annotations

import difflib
import os

# ppolab renders headless (evaluation videos): EGL needs no display. It must be chosen before mujoco is imported.
os.environ.setdefault("MUJOCO_GL", "egl")

from collections.abc import Callable, Iterator, MutableMapping  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

from ppolab.envs import robot_file, task_registry  # noqa: E402
from ppolab.errors import UserError  # noqa: E402

if TYPE_CHECKING:
    from ppolab.envs.protocol import BatchEnv, TaskInfo
    from ppolab.envs.robot_task import RobotTask


def _shipped(robot: str, task: str) -> Callable[[], type[BatchEnv]]:
    def build() -> type[BatchEnv]:
        from ppolab.envs.robot_task import task_env

        return task_env(task_registry.task_class(task), robot_file.shipped_robot(robot))

    return build


class EnvRegistry(MutableMapping[str, "type[BatchEnv]"]):
    """Every env by name. The names come from the robot files alone; a class is made (MuJoCo imported, the
    robot's YAML read) the first time it is looked up, so the commands that only name envs (sweep, report,
    slurm, matrix...) start in a fraction of the time."""

    def __init__(self) -> None:
        self._made: dict[str, type[BatchEnv]] = {}
        self._makers: dict[str, Callable[[], type[BatchEnv]]] = {}
        self._infos: dict[str, TaskInfo] = {}  # what each env's task declares, known without building it
        for name, reg in task_registry.ENVS_OF_THEIR_OWN.items():
            self._makers[name], self._infos[name] = reg.load, reg.info
        self.user_robots: dict[str, robot_file.RobotFile] = {}  # a user's robot files, by robot name
        for task in task_registry.task_names():
            self.add_task(task)
        task_registry.on_register(self.add_task, self.remove_task)

    def remove_task(self, task: str) -> None:
        """The task's env on every robot, gone (task_registry.unregister_task)."""
        for name in [n for n in self._makers if n.endswith(f"_{task}") and n not in task_registry.ENVS_OF_THEIR_OWN]:
            del self[name]

    def add_task(self, task: str) -> None:
        """The task's env on every shipped robot and every user robot registered so far."""
        for robot in robot_file.shipped():
            self._makers.setdefault(f"{robot}_{task}", _shipped(robot, task))
            self._infos[f"{robot}_{task}"] = task_registry.task_info(task)
        for file in self.user_robots.values():
            self[f"{file.name}_{task}"] = _user_robot_env(file, task)

    def __getitem__(self, name: str) -> type[BatchEnv]:
        if name not in self._made:
            self._made[name] = self._makers[name]()  # KeyError for an unknown name, as a dict
        return self._made[name]

    def __setitem__(self, name: str, cls: type[BatchEnv]) -> None:
        self._made[name] = cls
        self._makers.setdefault(name, lambda: cls)
        self._infos[name] = cls.info

    def info(self, name: str) -> TaskInfo:
        """What the env's task declares (its checks, modes, plans, preset), without building the env class:
        naming an env imports no MuJoCo. KeyError for an unknown name, as a dict."""
        return self._infos[name] if name in self._infos else self[name].info

    def __delitem__(self, name: str) -> None:
        self._made.pop(name, None)
        self._infos.pop(name, None)
        del self._makers[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)

    def __contains__(self, name: object) -> bool:
        return name in self._makers


ENVS = EnvRegistry()
USER_ROBOT_KEY = "robot"  # a user robot's env config carries its robot file here


def register_robot(file: robot_file.RobotFile) -> list[str]:
    """The envs of a user's robot file, added to ENVS (a shipped robot's name is refused: rename it)."""
    if file.name in robot_file.shipped() or file.name in ENVS:
        raise UserError(f"{file.where('name')}: {file.name!r} is a shipped robot or env; give yours another name")
    ENVS.user_robots[file.name] = file
    names = [f"{file.name}_{task}" for task in task_registry.task_names()]
    for name, task in zip(names, task_registry.task_names()):
        ENVS[name] = _user_robot_env(file, task)
    return names


def use_robot(file: robot_file.RobotFile) -> None:
    """A user's robot file, registered if it is new or has changed since (a notebook editing its file, two
    policies of robots with one name): its envs are built from this file from now on."""
    if ENVS.user_robots.get(file.name) != file:
        ENVS.user_robots.pop(file.name, None)
        register_robot(file)


def _user_robot_env(file: robot_file.RobotFile, task: str) -> type[RobotTask]:
    """One task on a user's robot file, the file embedded in the config (a run carries its robot)."""
    from ppolab.envs.robot_task import task_env

    return task_env(task_registry.task_class(task), file, embed=True)


def env_class(name: str, overrides: dict[str, Any] | None = None) -> type[BatchEnv]:
    """The env class of `name`; a user robot's env is found from the robot file its config carries."""
    if isinstance((overrides or {}).get(USER_ROBOT_KEY), dict):
        data = overrides[USER_ROBOT_KEY]
        file = robot_file.parse(data, robot_file.Path(str(data.get("source") or "robot file")))
        if file.name not in robot_file.shipped():
            use_robot(file)
    try:
        return ENVS[name]
    except KeyError:
        raise UserError(unknown_env(name)) from None


def env_info(name: str, overrides: dict[str, Any] | None = None) -> TaskInfo:
    """What the env's task declares; a user robot's env is found from the robot file its config carries."""
    return ENVS.info(name) if name in ENVS else env_class(name, overrides).info


def unknown_env(name: str) -> str:
    """The one line for an env name that is none of ppolab's: the closest name, every name, and --robot."""
    guess = difflib.get_close_matches(name, env_names(), n=1, cutoff=0.6)
    hint = f"did you mean {guess[0]!r}? The envs: " if guess else "choose one of: "
    return f"unknown env {name!r}; {hint}{', '.join(env_names())} (a robot of your own: --robot FILE)"


def env_names() -> list[str]:
    return sorted(ENVS)


def shipped_env_names() -> list[str]:
    """ppolab's own envs (shipped robots x shipped tasks, and the envs of their own), whatever a program has
    registered since: what `--help` lists, the same in every process."""
    own = [f"{robot}_{task}" for robot in robot_file.shipped() for task in task_registry.SHIPPED_TASKS]
    return sorted([*own, *task_registry.ENVS_OF_THEIR_OWN])


@dataclass(frozen=True, eq=False)
class EnvSettings:
    """An env's settings in full, validated once (`env_config.resolve`, `load_saved`): `config` is the env's own
    Config, which every env built from it takes as it is; `data()` its JSON form (env.yaml, a saved policy's
    `env_config`). Sent to another process (a sampler's worker) it travels as its data and is validated there,
    once: a user robot's config class is made at run time, and a class made so cannot be pickled."""

    env: str
    config: Any

    def data(self) -> dict[str, Any]:
        return self.config.model_dump(mode="json")

    def __reduce__(self):
        return (settings_of, (self.env, self.data()))


def settings_of(env: str, data: dict[str, Any]) -> EnvSettings:
    """EnvSettings from a validated config's data (a worker's copy, a saved run's)."""
    return EnvSettings(env, env_class(env, data).Config(**data))


def make_env(name: str, num_envs: int, overrides: EnvSettings | dict[str, Any] | None = None) -> BatchEnv:
    """Build a batch of `num_envs` instances of the named env: its settings validated once already (EnvSettings),
    or its configuration changed by `overrides` (a dict, validated here)."""
    if isinstance(overrides, EnvSettings):
        return env_class(name, None)(num_envs, overrides.config)
    cls = env_class(name, overrides)
    return cls(num_envs, cls.Config(**overrides)) if overrides else cls(num_envs)
