"""Each env's recommended training settings: what `ppolab train --env X` uses for flags not given.

The values are the ones measured to learn each task (see benchmarks/README.md);
anything given on the command line, in a sweep or a config file wins. A run's
config.yaml records the settings it used, so a preset changing later never
changes how an existing run resumes.
"""

from __future__ import annotations

from typing import Any

from ppolab.envs.task_registry import LHW_TRAINING, ROBOT_TASK_PRESET

# an env's own settings, over those its task declares (protocol.TaskInfo.preset)
PRESETS: dict[str, dict[str, Any]] = {
    # walking straight after about 1,000 (benchmarks/README.md); LHW trains it without the checks
    "jvrc_walk": {**LHW_TRAINING, "n_itr": 1500, "check_every": 0},
    "jvrc_step": {**LHW_TRAINING, "n_itr": 8400},  # 8,400 x 4,800 steps: about 40 M env steps, LHW's budget
    # LHW's H1 gains (kp 100 at the knees) do not hold the robot up under action 0: it starts standing
    "h1_walk": {"start_standing": True},
}
# the settings a preset may give: their --help defaults say so (read without importing every task; a test
# holds every task's declared preset to this list)
PRESET_FIELDS = frozenset({*LHW_TRAINING, *ROBOT_TASK_PRESET, "check_every", "start_standing", "learn_std",
                           "entropy_coeff", "n_itr"})  # fmt: skip


def preset_fields() -> set[str]:
    """Every setting some env's preset gives (its --help default then says that a preset may differ)."""
    return set(PRESET_FIELDS)


def preset(env: object) -> dict[str, Any]:
    """The env's recommended settings: its task's (`info.preset`), then its own (PRESETS); {} for a name that is
    no env (yet: a user robot's env before its file is read)."""
    if not isinstance(env, str):
        return {}
    from ppolab.envs import ENVS

    task = dict(ENVS.info(env).preset) if env in ENVS else {}
    return {**task, **PRESETS.get(env, {})}


def with_preset(values: dict[str, Any]) -> dict[str, Any]:
    """Train settings with the env's preset filling in what `values` leaves out."""
    return {**preset(values.get("env")), **values}
