"""Each env's recommended training settings: what `ppolab train --env X` uses for flags not given.

The values are the ones measured to learn each task (see benchmarks/README.md);
anything given on the command line, in a sweep or a config file wins. A run's
config.yaml records the settings it used, so a preset changing later never
changes how an existing run resumes.
"""

from __future__ import annotations

from typing import Any

HUMANOID_LHW = {  # LearningHumanoidWalking's settings for its JVRC tasks
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

PRESETS: dict[str, dict[str, Any]] = {
    "cartpole": {  # the README's recommended configuration: eval reward above 450 within 500 iterations
        "std_dev": 0.15,
        "learn_std": True,
        "entropy_coeff": 0.01,
        "minibatch_size": 256,
        "max_traj_len": 500,
        "num_procs": 12,
        "n_itr": 500,
        "eval_freq": 20,
    },
    "h1": {
        "hidden_sizes": [256, 256],
        "lr": 3e-4,
        "minibatch_size": 256,
        "max_traj_len": 400,
        "n_itr": 300,
        "eval_freq": 25,
    },
    "jvrc_walk": {**HUMANOID_LHW, "n_itr": 1500},  # walking straight after about 1,000 (benchmarks/README.md)
    "jvrc_step": {**HUMANOID_LHW, "n_itr": 8400},  # 8,400 x 4,800 steps: about 40 M env steps, LHW's budget
}
# any other robot file's task (NAME_walk, NAME_stand, NAME_step): the Menagerie walkers trained here first
# passed every walking check after 2,300-2,900 iterations from scratch (benchmarks/README.md)
ROBOT_TASK = {**HUMANOID_LHW, "n_itr": 3000}
ROBOT_WALK = {**ROBOT_TASK, "check_every": 100}  # the walking checks as the run goes (--stop-on-pass ends it there)
# LHW's H1 gains (kp 100 at the knees) do not hold the robot up under action 0: it starts standing
PRESETS["h1_walk"] = {**ROBOT_WALK, "start_standing": True}


def preset_fields() -> set[str]:
    """Every setting some env's preset gives (its --help default then says that a preset may differ)."""
    return {k for p in [*PRESETS.values(), ROBOT_WALK] for k in p}


def preset(env: object) -> dict[str, Any]:
    """The env's recommended settings: its own, or those of every task on a robot file."""
    if not isinstance(env, str):
        return {}
    if env in PRESETS:
        return PRESETS[env]
    if env.endswith("_walk"):
        return ROBOT_WALK
    return ROBOT_TASK if env.endswith(("_stand", "_step")) else {}


def with_preset(values: dict[str, Any]) -> dict[str, Any]:
    """Train settings with the env's preset filling in what `values` leaves out."""
    return {**preset(values.get("env")), **values}
