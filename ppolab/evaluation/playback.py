"""`ppolab eval`: run a saved actor deterministically, optionally rendering a video offscreen."""

from __future__ import annotations

import datetime as dt
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

from ppolab.envs import env_class, env_info, make_env
from ppolab.errors import UserError
from ppolab.evaluation.recording import Recorder
from ppolab.ppo import checkpoint as ckpt
from ppolab.ppo.policy import sampling_params
from ppolab.ppo.rollout import evaluate
from ppolab.util.tables import count


@dataclass(frozen=True)
class Command:
    """What the policy is told during playback: a walker's held mode and command, a stepper's plan kind."""

    mode: str | None = None  # standing, in_place, forward (a walker); None: random switches, as in training
    vx: float = 0.0
    vy: float = 0.0
    yaw_rate: float = 0.0
    plan: str | None = None  # a stepper's plan kind, on flat ground

    def overrides(self, env_name: str, cfg: dict | None) -> dict | None:
        """The env settings the command needs (a plan kind is a setting of the stepping task); a mode or plan
        the env's task does not declare is refused."""
        info = env_info(env_name, cfg)
        if self.mode is not None and self.mode not in info.modes:
            raise UserError(f"--mode {self.mode}: " + (f"{env_name}'s modes are {', '.join(info.modes)}" if info.modes
                            else f"{env_name} takes no velocity command (a NAME_walk env does)"))  # fmt: skip
        if self.plan is None:
            return cfg
        if self.plan not in info.plans:
            raise UserError(f"--plan {self.plan}: " + (f"{env_name}'s plans are {', '.join(info.plans)}" if info.plans
                            else f"{env_name} follows no footstep plans (a NAME_step env does)"))  # fmt: skip
        probs = [1.0 if p == self.plan else 0.0 for p in info.plans]
        return {**(cfg or {}), "plan_probs": probs, "stair_ramp_start": 10**9}

    def hold(self, env) -> None:
        """Hold the walker's mode and command (after the resets)."""
        if self.mode is not None:
            env.set_command(env.info.modes.index(self.mode), yaw_rate=self.yaw_rate, vx=self.vx, vy=self.vy)


def shown(env_name: str, overrides: dict | None) -> dict | None:
    """The settings of an env that is looked at (videos, filmstrips, the viewer): the robot's meshes, where the
    task has them; the same physics, its real looks."""
    if "visuals" not in env_class(env_name, overrides).Config.model_fields:
        return overrides
    return {**(overrides or {}), "visuals": True}


def video_in(folder: Path, policy: Path) -> Path:
    """LearningHumanoidWalking's video name for `eval --out-dir`: <actor file's stem>-<date-time>.mp4."""
    stamp = dt.datetime.now().strftime("%Y-%m-%d-%H-%M-%S")
    return folder / f"{ckpt.find_actor(policy).stem}-{stamp}.mp4"


def play(
    path: Path, *, episodes: int, seed: int, max_steps: int | None, video: str | None, filmstrip: str | None = None,
    frames: int = 6, command: Command = Command(), out: TextIO = sys.stdout, seconds: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Score `episodes` deterministic episodes; with a video or filmstrip, episode 1 is recorded as it is
    scored (one simulation). `seconds`, if given, sets the horizon in simulated time (LHW's --ep-len)."""
    out.write(ckpt.describe(ckpt.find_actor(path)) + "\n")  # first: which file and iteration is played
    out.flush()
    actor, meta = ckpt.load_actor(path)
    params = sampling_params(actor)
    overrides = command.overrides(meta["env"], meta.get("env_config"))
    if video or filmstrip:
        overrides = shown(meta["env"], overrides)
    env = make_env(meta["env"], episodes, overrides)
    steps = max_steps or meta["max_traj_len"]
    if seconds is not None:
        steps = max(1, round(seconds / env.cfg.control_dt))
    recorder = None
    if video or filmstrip:
        recorder = Recorder(env, video=Path(video) if video else None, filmstrip=Path(filmstrip) if filmstrip else None,
                            frames=frames, steps=steps, fps=round(1.0 / env.cfg.control_dt))  # fmt: skip
    try:
        returns, lengths = evaluate(env, params, seed=seed, steps=steps, on_start=command.hold, on_step=recorder)
        n = recorder.finish() if recorder else 0
    finally:
        if recorder:
            recorder.close()
    for i, (r, k) in enumerate(zip(returns, lengths), start=1):
        out.write(f"Episode {i}: length {int(k)}, return {r:.3f}\n")
    out.write(
        f"Mean return: {returns.mean():.3f} +- {returns.std():.3f} over {count(episodes, 'episode')} "
        f"(mean length {lengths.mean():.1f})\n"
    )
    if video:
        out.write(f"Video of episode 1 ({n} frames) written to {video}\n")
    if filmstrip:
        out.write(f"Filmstrip of episode 1 ({frames} of its {n} frames) written to {filmstrip}\n")
    return returns, lengths
