"""ppolab from Python: the same code as the command line, as functions (`import ppolab`).

    import ppolab
    env = ppolab.make_env("t1_walk", 4)                  # a Gymnasium vector env of ppolab's task
    run = ppolab.train(env="cartpole", n_itr=50)         # a run folder, as `ppolab train` writes it
    policy = ppolab.load(run)                            # observations -> actions (the mean action)
    ppolab.compare([run_a, run_b])                       # what `ppolab compare --json` says, as a dict

Mistakes raise `ppolab.UserError`, with the line the command line prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ppolab.errors import UserError


def make_env(name: str, num_envs: int = 1, *, robot: str | Path | None = None, yaml: str | Path | None = None,
             max_episode_steps: int | None = None):  # fmt: skip
    """`num_envs` envs of a task as a `gymnasium.vector.VectorEnv` (`ppolab envs` lists the names; `robot` a
    robot file of yours, whose envs are NAME_walk, NAME_stand, NAME_step; `yaml` the env settings to change, as
    `ppolab train --yaml`). `.single_env()`-style use: `ppolab.envs.vector.TaskEnv(name)`."""
    from ppolab.envs import env_config
    from ppolab.envs.vector import TaskVectorEnv

    settings = env_config.resolve(name, str(yaml) if yaml else None, str(robot) if robot else None)
    return TaskVectorEnv(name, num_envs, settings, max_episode_steps)


class Policy:
    """A trained policy: call it on a batch of observations (or one) for its mean actions, as `ppolab eval` and
    the behaviour checks run it. `env` and `env_config` say what it was trained on."""

    def __init__(self, path: str | Path) -> None:
        from ppolab.ppo.checkpoint import find_actor, load_actor
        from ppolab.ppo.policy import sampling_params
        from ppolab.ppo.sampling_policy import SamplingPolicy

        actor, meta = load_actor(Path(path))
        self.path, self.env, self.env_config = find_actor(Path(path)), meta["env"], meta.get("env_config")
        self.obs_dim, self.act_dim = meta["obs_dim"], meta["act_dim"]
        self._policy = SamplingPolicy(sampling_params(actor))

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, np.float32)
        one = obs.ndim == 1
        actions = self._policy(obs[None] if one else obs)
        return actions[0] if one else actions

    def reset(self) -> None:
        """Forget a recurrent policy's state (a new episode)."""
        self._policy.reset(slice(None))


def load(path: str | Path) -> Policy:
    """The policy of a run folder (its actor.pt), a pretrained folder or an actor .pt file."""
    return Policy(path)


def train(**flags: Any) -> Path:
    """Train as `ppolab train` does, with its flags as keyword arguments (`env="t1_walk", n_itr=300`; `resume=`
    a run folder to continue): the run folder, with the same files as the command line writes."""
    from ppolab.runner.entry import TrainRequest, checked
    from ppolab.runner.trainer import train as run_training

    resume = flags.pop("resume", None)
    sampler_procs = flags.pop("sampler_procs", None)
    req = TrainRequest.of(flags, resume=Path(resume) if resume else None, sampler_procs=sampler_procs)
    cfg, resume_dir = checked(req)
    run_dir, _ = run_training(cfg, resume_dir=resume_dir, sampler_procs=sampler_procs)
    return run_dir


def evaluate(path: str | Path, episodes: int = 5, seed: int = 0) -> dict[str, list[float]]:
    """Deterministic episodes of a policy on the env it was trained on, as `ppolab eval`: returns and lengths."""
    import io

    from ppolab.evaluation.playback import play

    returns, lengths = play(Path(path), episodes=episodes, seed=seed, max_steps=None, video=None, out=io.StringIO())
    return {"returns": [float(r) for r in returns], "lengths": [int(n) for n in lengths]}


def compare(paths: list[str | Path], metric: str = "final_reward", min_effect: float | None = None) -> dict:
    """Compare runs, or a sweep folder's runs, as `ppolab compare --json` does: the table, the tests, the verdict."""
    from ppolab.analysis.compare import comparison_data, load_runs, named

    folders = [Path(p) for p in paths]
    missing = next((p for p in folders if not p.exists()), None)
    if missing is not None:
        raise UserError(f"{missing}: no such folder")
    if len(folders) == 1 and (folders[0] / "sweep.yaml").exists():
        from ppolab.experiments.report import sweep_runs

        spec, runs = sweep_runs(folders[0])
        min_effect = min_effect if min_effect is not None else spec.metadata.min_effect
    else:
        runs = load_runs(named(folders))
    return comparison_data(runs, min_effect, metric)


def sweep(path: str | Path) -> int:
    """Run a sweep folder's plan to its end, approved (as `ppolab sweep PATH --yes`): the command's exit code."""
    from ppolab.cli.main import main

    return main(["sweep", str(path), "--yes"])


__all__ = ["Policy", "UserError", "compare", "evaluate", "load", "make_env", "sweep", "train"]
