"""The tasks, registered by name with what they declare (protocol.TaskInfo): the one list of them.

A task that runs on any robot file (walk, stand, step, or one added with `register_task`) gives an env on every
robot file (`<robot>_<task>`), a section of a robot file's `tasks:` and a line of `ppolab robots`. The
shipped tasks, and the two envs of their own (cartpole, h1), are registered here by import path with their
declarations, so that naming an env, checking a train config against its preset or listing its checks (every
sweep command) imports neither MuJoCo nor the task's code; each class's `info` is its registration's. A task
added later is a module whose class carries its `info`, and one `register_task(cls)` call.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from ppolab.envs.protocol import TaskInfo

# LearningHumanoidWalking's training settings for its JVRC tasks: every robot task's preset starts here
LHW_TRAINING = {
    "hidden_sizes": [256, 256],
    "activation": "relu",
    "std_dev": 0.223,
    "lr": 1e-4,
    "max_grad_norm": 0.05,
    "minibatch_size": 64,
    "epochs": 3,
    "num_procs": 12,
    "max_traj_len": 400,
    "eval_freq": 100,
}
# the Menagerie walkers trained here first passed every walking check after 2,300-2,900 iterations from scratch
ROBOT_TASK_PRESET = {**LHW_TRAINING, "n_itr": 3000}


@dataclass
class Registration:
    """A task's class (or its import path, imported on first use) and what it declares."""

    cls: Any
    info: TaskInfo

    def load(self) -> Any:
        if isinstance(self.cls, str):
            module, attr = self.cls.split(":")
            self.cls = getattr(importlib.import_module(module), attr)
        return self.cls


_TASKS: dict[str, Registration] = {  # the tasks on every robot file
    "walk": Registration("ppolab.envs.walk:WalkTask", TaskInfo(
        "walk", checks=("walk", "stand", "turn", "straight"), modes=("standing", "in_place", "forward"),
        clock=True, servos=True,
        preset={**ROBOT_TASK_PRESET, "check_every": 100},  # the checks as training goes (--stop-on-pass ends it)
    )),
    "stand": Registration("ppolab.envs.stand:StandTask", TaskInfo("stand", preset=ROBOT_TASK_PRESET, servos=True)),
    "step": Registration("ppolab.envs.step:StepTask", TaskInfo(
        "step", checks=("footsteps",), plans=("forward", "backward", "lateral", "curved", "standing"),
        preset=ROBOT_TASK_PRESET, clock=True, servos=True,
    )),
}  # fmt: skip
ENVS_OF_THEIR_OWN: dict[str, Registration] = {  # envs that are not a task on a robot file
    "cartpole": Registration("ppolab.envs.cartpole:CartpoleEnv", TaskInfo("cartpole", preset={
        # eval reward above 450 within 500 iterations (benchmarks/README.md)
        "std_dev": 0.15, "learn_std": True, "entropy_coeff": 0.01, "minibatch_size": 256, "max_traj_len": 500,
        "num_procs": 12, "n_itr": 500, "eval_freq": 20,
    })),
    "h1": Registration("ppolab.envs.h1:H1Env", TaskInfo("h1", checks=("push",), preset={
        "hidden_sizes": [256, 256], "lr": 3e-4, "minibatch_size": 256, "max_traj_len": 400, "n_itr": 300,
        "eval_freq": 25,
    })),
}  # fmt: skip
SHIPPED_TASKS = frozenset(_TASKS)
_listeners: list = []  # called with each task registered later (the env registry adds its envs)
_unlisteners: list = []  # called with each task unregistered (the env registry removes its envs)


def task_names() -> tuple[str, ...]:
    return tuple(_TASKS)


def task_info(name: str) -> TaskInfo:
    """What the task declares, without importing it; KeyError for a name that is not a task."""
    return _TASKS[name].info


def task_class(name: str) -> Any:
    """The task's class (its module imported on first use); KeyError for a name that is not a task."""
    return _TASKS[name].load()


def register_task(cls: Any) -> None:
    """Add a task: a `robot_task.RobotTask` subclass whose `task` names it and whose `info` declares it. Every
    robot file, shipped or a user's, then has its env."""
    name = cls.task
    if not (name.isidentifier() and name.islower()) or name == "all":
        raise ValueError(f"task name {name!r}: lower-case letters, digits and _ (and not 'all')")
    if name in _TASKS and task_class(name) is not cls:
        raise ValueError(f"task {name!r} is registered already")
    if not isinstance(getattr(cls, "info", None), TaskInfo):
        raise ValueError(f"task {name!r}: its class declares no `info` (a protocol.TaskInfo)")
    _TASKS[name] = Registration(cls, cls.info)
    for listener in _listeners:
        listener(name)


def unregister_task(name: str) -> None:
    """Remove a task `register_task` added (a test's own task, so that the tests after it see ppolab's alone):
    its envs go from every registry listening."""
    if name not in _TASKS or name in SHIPPED_TASKS:
        raise ValueError(f"task {name!r} is not a task registered with register_task")
    del _TASKS[name]
    for listener in _unlisteners:
        listener(name)


def on_register(listener, on_unregister=None) -> None:
    _listeners.append(listener)
    if on_unregister is not None:
        _unlisteners.append(on_unregister)
