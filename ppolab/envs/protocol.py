"""What the sampler, the trainer, playback and the checks need of an env: a batch of MuJoCo envs stepped
together, what its task declares (`TaskInfo`), and what it can do besides (declared here, so that no caller
tests an env's name or probes it with hasattr)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: naming an env must not import MuJoCo
    import mujoco
    import numpy as np
    from pydantic import BaseModel

    from ppolab.envs.reward_terms import Rewards


@dataclass(frozen=True)
class TaskInfo:
    """What a task declares to its callers: the behaviour checks, eval, videos, export and the CLI read this,
    never the env's name.

    - `kind`: the task's name (walk, stand, step on a robot file; h1, cartpole).
    - `checks`: its behaviour checks by name, cheapest first (`evaluation/behaviour.CHECKS`); none: no checks.
    - `modes`: the modes of its velocity command (`eval --mode`, the export contract's `modes`); the env then is
      a `Walker` (`set_command`).
    - `plans`: the kinds of footstep plan it follows (`eval --plan`), set by the `plan_probs` setting.
    - `preset`: the training settings recommended for it (`runner/presets.py` adds an env's own on top).
    - `clock`: it observes a gait clock (`period` control steps a cycle), which the export contract describes.
    - `servos`: a robot on position servos built from a robot file (`robot`, `layout`, `batch`): the export
      contract gives its joints, gains and action meaning.
    """

    kind: str
    checks: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    plans: tuple[str, ...] = ()
    preset: Mapping[str, Any] = field(default_factory=dict)
    clock: bool = False
    servos: bool = False


@dataclass(frozen=True)
class Marker:
    """Something a video draws into the scene to show what the policy is told (not physics)."""

    kind: str  # arrow, sphere, disc
    pos: tuple[float, float, float]
    size: tuple[float, float, float]  # an arrow: (width, width, length); a sphere: (radius, 0, 0); a disc: (r, h, 0)
    rgba: tuple[float, float, float, float]
    heading: float = 0.0  # an arrow's direction, rad


class BatchEnv(Protocol):
    """`num_envs` envs of one task. The horizon, and resets after an episode ends, belong to the sampler."""

    name: ClassVar[str]
    info: ClassVar[TaskInfo]  # what the task declares to its callers
    Config: ClassVar[type[BaseModel]]  # the task's settings (`--yaml` overrides them)
    has_symmetry: ClassVar[bool]  # whether `symmetry` is set (the mirror loss applies)
    obs_dim: int
    act_dim: int
    symmetry: Any  # mirror maps of observations and actions (ppolab.envs.symmetry.Symmetry), or None
    num_envs: int
    cfg: BaseModel
    model: mujoco.MjModel  # for rendering
    layout: dict[str, slice]  # the observation's named entries (noise groups, the export contract)
    action_low: np.ndarray  # (act_dim,) the bounds the env clips an action to (-inf and inf: none)
    action_high: np.ndarray
    rewards: Rewards  # the task's reward table on this batch: each term's contribution at the last step

    @property
    def datas(self) -> list[mujoco.MjData]:
        """Each env's MuJoCo state (videos render env 0's)."""

    def set_iteration(self, iteration: int) -> None:
        """The training iteration, for curricula that follow it (randomisation's ramp, the stepping task's stairs)."""

    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        """Start a new episode in env `i`, every random draw from `rng`."""

    def observe(self) -> np.ndarray:
        """(num_envs, obs_dim) float32 observations."""

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Apply (num_envs, act_dim) actions for one control period: observations, rewards, terminated."""

    def markers(self, i: int) -> list[Marker]:
        """What env i is told, to draw into a video (none for a task without a command)."""


class Walker(BatchEnv, Protocol):
    """A humanoid task with a velocity command (`<robot>_walk`): what the behaviour checks drive."""

    weight: float  # N
    period: int  # control steps of one gait cycle
    heading_error: np.ndarray

    def set_command(self, mode: int, yaw_rate: float = 0.0, vx: float = 0.0, vy: float = 0.0) -> None:
        """Every env in `mode` with this command, held (no random switches)."""

    def foot_contact(self) -> np.ndarray:
        """(num_envs, 2) bool: the right and the left sole carry weight."""


@runtime_checkable
class Standing(Protocol):
    """A robot on position servos (every task on a robot file): where a policy can start standing."""

    def standing_action(self) -> np.ndarray:
        """(act_dim,) the action that holds the nominal pose at rest, both soles on the floor."""


@runtime_checkable
class Privileged(Protocol):
    """A task with state a robot does not measure (every task on a robot file): what a privileged critic sees
    beside the observation (`--privileged-critic`), never the actor."""

    privileged_dim: int

    def privileged(self) -> np.ndarray:
        """(num_envs, privileged_dim) float32: the true state behind the last observation."""


class Imitating(BatchEnv, Protocol):
    """A task that can show its states to an expert policy (`--imitate`; every task on a robot file)."""

    def expert_view(self, expert: Any) -> Any:
        """An `imitation.ExpertView` of this task's observations for a policy of `expert`'s env; raises
        `imitation.NoExpertView` saying why when there is none."""
