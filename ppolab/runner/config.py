"""Every training hyperparameter, once: the schema, the defaults, the `--help` text and the checks.

The defaults below apply where the env's preset (`runner/presets.py`) says nothing.

`ppolab train`'s flags are generated from `TrainConfig` (field `n_itr` is flag
`--n-itr`), so the CLI, `config.yaml` in a run folder and a sweep's `defaults`
use the same names.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ppolab.envs import ENVS, shipped_env_names, unknown_env
from ppolab.ppo.lr_schedule import Schedule
from ppolab.ppo.network import ActivationName
from ppolab.runner.presets import with_preset
from ppolab.util.validation import first_problem

MAX_BATCH = 50_000_000  # samples an iteration: GBs of rollout storage; more is a typo, not a plan
MAX_WIDTH = 65_536
MAX_EPISODES = 10_000  # deterministic evaluation episodes (train's evaluations, `ppolab eval`)
MAX_STEPS = 10**7  # steps of one episode
MAX_SEED = 2**32 - 1
MAX_HIDDEN_WEIGHTS = 10**8  # 0.4 GB of float32, 1.6 GB with its gradient and Adam's two moments
RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+=-]{0,99}")  # a folder name: no path, no leading dot or dash


class TrainConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    env: str = Field(description="task to train: " + ", ".join(shipped_env_names()) + ", or NAME_walk, NAME_stand, "
                     "NAME_step of your robot file (--robot)")  # fmt: skip
    robot: str | None = Field(
        None,
        description="your robot file (`ppolab robots check FILE` first); its envs: NAME_walk, NAME_stand, "
        "NAME_step. Its contents are kept in the run's env.yaml",
    )
    logdir: str = Field("logs", description="root folder; each run gets a new folder inside it")
    run_name: str | None = Field(None, description="name of the run folder (default: time, env and seed)")
    experiment_tag: str | None = Field(None, description="free-form tag recorded with the run (sweeps set it)")
    n_itr: int = Field(20000, gt=0, le=10**9, description="training iterations")
    lr: float = Field(3e-4, gt=0, description="Adam learning rate for actor and critic (with --schedule adaptive, "
                      "the first one)")  # fmt: skip
    schedule: Schedule = Field(
        "fixed",
        description="learning rate schedule: fixed, or adaptive (rsl_rl's rule, after each iteration's update: "
        "divided by 1.5 when the update's KL is above twice --desired-kl, times 1.5 below half of it, within "
        "1e-5..1e-2)",
    )
    desired_kl: float = Field(0.01, gt=0, description="the KL divergence per update that --schedule adaptive aims at")
    eps: float = Field(1e-5, gt=0, description="Adam epsilon")
    gamma: float = Field(0.99, gt=0, le=1, description="discount factor")
    lam: float = Field(0.95, ge=0, le=1, description="GAE lambda")
    std_dev: float = Field(0.223, gt=0, description="action noise std (initial value with --learn-std)")
    learn_std: bool = Field(False, description="make the action std a trained parameter")
    std_final: float | None = Field(
        None, gt=0,
        description="shrink the fixed action std linearly from --std-dev to this over --std-decay-itr iterations, "
        "then hold it: the mean action, which the checks and a robot run, then walks the gait that training "
        "scores (benchmarks/README.md: at a constant 0.223, jvrc_walk's mean action walked 0.05 m/s faster than "
        "its noisy gait). Default: none, a constant std",
    )  # fmt: skip
    std_decay_itr: int = Field(1000, gt=0, le=10**9, description="the iterations --std-final takes to reach")
    entropy_coeff: float = Field(0.0, ge=0, description="entropy bonus weight")
    clip: float = Field(0.2, gt=0, description="PPO ratio clip range")
    minibatch_size: int = Field(64, gt=0, le=MAX_BATCH, description="samples per gradient step")
    epochs: int = Field(3, gt=0, le=10_000, description="passes over each batch")
    num_procs: int = Field(12, gt=0, le=65_536, description="logical rollout workers (mapped onto the available cores)")
    num_envs_per_worker: int = Field(1, gt=0, le=65_536, description="envs each rollout worker steps")
    max_grad_norm: float = Field(0.5, gt=0, description="gradient-norm clip, per network")
    max_traj_len: int = Field(
        400, gt=0, le=MAX_STEPS, description="steps each env collects per iteration, and the episode horizon"
    )
    steps_per_env: int | None = Field(
        None, gt=0, le=MAX_STEPS,
        description="steps each env collects per iteration, with episodes going on across iterations up to "
        "--max-traj-len steps (rsl_rl's num_steps_per_env). Default: --max-traj-len, every iteration starting "
        "fresh episodes (LearningHumanoidWalking's)",
    )  # fmt: skip
    input_norm_steps: int | None = Field(
        None, ge=0, le=10**9,
        description="env steps of the initial policy that start the observation normaliser, in whole batches "
        "(0: it starts from zeros). Default: one batch (ppolab's); LearningHumanoidWalking's default is 100000",
    )  # fmt: skip
    eval_freq: int = Field(
        100, gt=0, le=10**9, description="evaluate and checkpoint every N iterations (and at 0 and the end)"
    )
    check_every: int = Field(
        0, ge=0, le=10**9,
        description="run the env's behaviour checks (walk, stand, turn and straightness; footsteps; pushes) on the "
        "current policy every N iterations and at the end: pass/fail and figures in metrics.jsonl, TensorBoard and "
        "the console (0: never). A round ends at its first failing check, so it costs little until the policy walks",
    )  # fmt: skip
    stop_on_pass: bool = Field(
        False, description="end the run at the first round of checks that passes (with --check-every)"
    )
    time_limit: float | None = Field(
        None, gt=0, le=10**7,
        description="end the run once it has trained this many minutes (a resumed run counts its earlier time): "
        "a budget in wall time, the same for every configuration of a sweep or study, where --n-itr's changes "
        "with the batch and the physics step. The run ends at --n-itr or here, whichever comes first (an env's "
        "preset may set --n-itr: jvrc_walk's is 1,500), so give a large --n-itr for a budget in time alone. "
        "Default: none (--n-itr alone)",
    )  # fmt: skip
    eval_episodes: int = Field(10, gt=0, le=MAX_EPISODES, description="deterministic episodes per evaluation")
    seed: int | None = Field(
        None, ge=0, le=MAX_SEED, description="random seed, 0..2^32-1 (default: drawn at random and recorded)"
    )
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="device for the update (sampling is on CPU)")
    update: Literal["fused", "exact"] = Field(
        "fused",
        description="minibatch gradients: fused (written out for MLPs, faster, the critic's epochs in a second "
        "process on 2+ cores; equal to exact within float32 rounding) or exact (autograd's, the reference; LSTMs "
        "always use it)",
    )
    mirror: bool = Field(True, description="symmetry (mirror) loss, for envs that define a symmetry")
    mirror_coeff: float = Field(0.4, ge=0, description="weight of the mirror loss (jvrc_walk, jvrc_step)")
    imitate: str | None = Field(
        None,
        description="an expert policy (a run folder or actor .pt, LearningHumanoidWalking's --imitate): the "
        "student's mean action is pulled towards the expert's on the student's own states. The student's env says "
        "what the expert sees (same robot: shared entries copied; a stepper shows a walking expert in-place "
        "stepping, on samples with footstep targets)",
    )
    imitate_coeff: float = Field(0.3, ge=0, description="weight of the imitation loss (LHW's default, 0.3)")
    imitate_sha256: str | None = Field(
        None, description="the expert's SHA-256, recorded when the run starts: a resume refuses an expert that changed"
    )
    hidden_sizes: list[int] = Field([64, 64], min_length=1, description="hidden layer widths of actor and critic")
    activation: ActivationName = Field(
        "tanh", description="hidden-layer activation of the MLPs (elu: rsl_rl's default; LSTMs use their own gates)"
    )
    recurrent: bool = Field(
        False, description="LSTM actor and critic (hidden sizes = LSTM layers), trained on episodes"
    )
    privileged_critic: bool = Field(
        False, description="the critic also reads state a robot does not measure (the root's velocity and height, "
        "the soles' loads and heights, the friction and mass drawn, the task's own: tasks on a robot file), as "
        "mjlab's and MuJoCo Playground's critics do; the actor and what it exports are unchanged (MLPs only)",
    )  # fmt: skip
    continued: str | None = Field(None, description="start from pretrained weights: a run folder or actor .pt file")
    start_standing: bool = Field(
        False,
        description="the untrained policy's mean action holds the robot's nominal pose against gravity, instead of 0 "
        "(tasks on a robot file): for servos too soft to hold it, like LHW's H1 gains (h1_walk's preset)",
    )
    yaml: str | None = Field(
        None, description="YAML file overriding the env's configuration (gains, rewards, timing, randomisation)"
    )
    track: bool = Field(False, description="also log to Weights & Biases (offline, to sync later, without an API key)")
    wandb_project: str = Field("ppolab", description="W&B project, with --track")
    wandb_entity: str | None = Field(None, description="W&B entity (user or team), with --track; default: yours")
    wandb_group: str | None = Field(None, description="W&B group, with --track (sweeps set their name)")

    @model_validator(mode="before")
    @classmethod
    def _env_preset(cls, data: object) -> object:
        """Settings not given come from the env's preset (`ppolab envs`), then from the defaults below.
        A preset's minibatch never exceeds a batch the user made smaller: it shrinks to the batch."""
        if not isinstance(data, dict):
            return data
        _register_user_robot(data)
        merged = with_preset(data)
        if "minibatch_size" not in data and "minibatch_size" in merged:
            steps = "steps_per_env" if merged.get("steps_per_env") else "max_traj_len"
            size = [merged.get(k, cls.model_fields[k].default) for k in ("num_procs", "num_envs_per_worker", steps)]
            if all(isinstance(v, int) and v > 0 for v in size):
                merged["minibatch_size"] = min(merged["minibatch_size"], size[0] * size[1] * size[2])
        return merged

    @field_validator("env")
    @classmethod
    def _known_env(cls, v: str) -> str:
        """A shipped env, or one of the --robot file's (`_env_preset` registered them)."""
        if v not in ENVS:
            raise ValueError(unknown_env(v))
        return v

    @field_validator("run_name")
    @classmethod
    def _folder_name(cls, v: str | None) -> str | None:
        if v is not None and not RUN_NAME.fullmatch(v):
            raise ValueError(
                "use letters, digits and _ . + = - (at most 100, not starting with . or -); it names a folder"
            )
        return v

    @field_validator("hidden_sizes")
    @classmethod
    def _positive_widths(cls, v: list[int]) -> list[int]:
        if any(h <= 0 or h > MAX_WIDTH for h in v):
            raise ValueError(f"layer widths must be from 1 to {MAX_WIDTH}")
        weights = sum(a * b for a, b in zip(v, v[1:]))
        if weights > MAX_HIDDEN_WEIGHTS:
            raise ValueError(
                f"{weights:,} weights between hidden layers (at most {MAX_HIDDEN_WEIGHTS:,}, "
                "1.6 GB a network with gradients and Adam's state); use narrower layers"
            )
        return v

    @property
    def batch_size(self) -> int:
        """Samples per iteration: fixed by the config, never by the machine."""
        return self.num_slots * self.rollout_steps

    @property
    def rollout_steps(self) -> int:
        """Steps each env collects per iteration."""
        return self.steps_per_env or self.max_traj_len

    @property
    def horizon(self) -> int | None:
        """The episode horizon when episodes go on across iterations (--steps-per-env); None when every
        iteration starts fresh episodes of at most max_traj_len steps (rollout.collect)."""
        return None if self.steps_per_env is None else self.max_traj_len

    @property
    def num_slots(self) -> int:
        return self.num_procs * self.num_envs_per_worker

    @model_validator(mode="after")
    def _std_schedule_of_a_fixed_std(self) -> TrainConfig:
        if self.std_final is not None and self.learn_std:
            raise ValueError("--std-final shrinks a fixed action std; leave out --learn-std (a learned std is trained)")
        return self

    @model_validator(mode="after")
    def _privileged_critic_of_an_mlp(self) -> TrainConfig:
        if self.privileged_critic and self.recurrent:
            raise ValueError("--privileged-critic is for the MLP critic; leave out --recurrent or set it to false")
        return self

    @model_validator(mode="after")
    def _checks_asked_of_a_checked_env(self) -> TrainConfig:
        if self.stop_on_pass and not self.check_every:
            raise ValueError("--stop-on-pass needs --check-every N (how often to run the checks)")
        if self.check_every:
            from ppolab.envs import env_info

            if not env_info(self.env).checks:
                raise ValueError(f"--check-every: {self.env}'s task declares no behaviour checks (`ppolab envs` lists "
                                 "each env's)")  # fmt: skip
        return self

    @model_validator(mode="after")
    def _minibatch_fits(self) -> TrainConfig:
        steps = "--steps-per-env" if self.steps_per_env else "--max-traj-len"
        if self.batch_size > MAX_BATCH:
            raise ValueError(
                f"--num-procs x --num-envs-per-worker x {steps} = a batch of {self.batch_size:,} samples "
                f"(at most {MAX_BATCH:,}, which already takes GBs of memory); lower one of them"
            )
        if self.minibatch_size > self.batch_size:
            raise ValueError(
                f"minibatch_size {self.minibatch_size} is larger than the batch "
                f"(--num-procs x --num-envs-per-worker x {steps} = {self.batch_size}); lower --minibatch-size"
            )
        return self

    @model_validator(mode="after")
    def _rollouts_fit_episodes(self) -> TrainConfig:
        if self.steps_per_env is None:
            return self
        if self.steps_per_env > self.max_traj_len:
            raise ValueError(
                f"--steps-per-env {self.steps_per_env} is longer than an episode (--max-traj-len {self.max_traj_len}); "
                "lower it, or leave it out for rollouts of whole episodes"
            )
        if self.recurrent:
            raise ValueError(
                "--steps-per-env: a recurrent actor's update starts every segment from a zero state, so its episodes "
                "cannot go on across iterations; leave out --steps-per-env or --recurrent"
            )
        return self


def seconds_left(pace: float, done: int, n_itr: int, elapsed: float, time_limit: float | None) -> float:
    """What a run has left at `pace` seconds an iteration, `done` iterations and `elapsed` seconds in: its
    iterations to --n-itr, or its minutes to --time-limit, whichever ends it first."""
    left = pace * (n_itr - done)
    return max(0.0, min(left, 60 * time_limit - elapsed)) if time_limit is not None else left


def flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def to_args(field: str, value: object) -> list[str]:
    """The command-line words that set one train setting. Booleans are always explicit (`--learn-std=false`):
    a value equal to the field's default may still differ from the env's preset."""
    if isinstance(value, bool):
        return [f"{flag(field)}={'true' if value else 'false'}"]
    if isinstance(value, list):
        return [flag(field), *map(str, value)]
    return [] if value is None else [flag(field), str(value)]


def validation_message(exc: ValidationError) -> str:
    """The first problem as 'FLAG: what is wrong (got VALUE)'."""
    err = first_problem(exc)
    msg = err["msg"]
    if err["loc"]:
        name = str(err["loc"][0])
        got = f" (got {err['input']!r})" if err["type"] != "missing" else ""
        return f"{flag(name)}: {msg}{got}"
    return msg


def _register_user_robot(data: dict) -> None:
    """--robot FILE: read now (a mistake in it is one line), so that its envs, and their presets, exist; --env
    must name one of them."""
    path = data.get("robot")
    if isinstance(path, str) and path:
        from ppolab.envs import robot_file, use_robot
        from ppolab.envs.task_registry import task_names

        file = robot_file.read(path)
        use_robot(file)
        tasks = [f"{file.name}_{t}" for t in task_names()]
        if data.get("env") not in tasks:
            raise ValueError(f"--env: {data.get('env')}: the robot file {path} gives {', '.join(tasks)}")
