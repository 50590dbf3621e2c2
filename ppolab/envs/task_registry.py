"""The tasks that run on any robot file, by name: the one list of them.

Every name here gives an env on every robot file (`<robot>_<task>`), a section of a robot file's `tasks:`, and
a line of `ppolab robots`. A task is a module with a `robot_task.RobotTask` subclass that declares what its
callers need (`info`, a `protocol.TaskInfo`); adding one is that module and one `register_task` call. The
shipped tasks are named by import path, so naming envs (sweeps, reports, the robot list) imports no task code.
"""

from __future__ import annotations

import importlib
from typing import Any

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

_TASKS: dict[str, Any] = {
    "walk": "ppolab.envs.walk:WalkTask",
    "stand": "ppolab.envs.stand:StandTask",
    "step": "ppolab.envs.step:StepTask",
}
_listeners: list = []  # called with each task registered later (the env registry adds its envs)


def task_names() -> tuple[str, ...]:
    return tuple(_TASKS)


def task_class(name: str) -> Any:
    """The task's class (its module imported on first use); KeyError for a name that is not a task."""
    entry = _TASKS[name]
    if isinstance(entry, str):
        module, attr = entry.split(":")
        entry = _TASKS[name] = getattr(importlib.import_module(module), attr)
    return entry


def register_task(cls: Any) -> None:
    """Add a task (its class's `task` names it): every robot file, shipped or a user's, then has its env."""
    name = cls.task
    if not (name.isidentifier() and name.islower()) or name == "all":
        raise ValueError(f"task name {name!r}: lower-case letters, digits and _ (and not 'all')")
    if name in _TASKS and task_class(name) is not cls:
        raise ValueError(f"task {name!r} is registered already")
    _TASKS[name] = cls
    for listener in _listeners:
        listener(name)


def on_register(listener) -> None:
    _listeners.append(listener)
