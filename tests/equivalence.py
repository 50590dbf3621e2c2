"""Recorded trajectories of every shipped env: what a change to a task's code must reproduce.

Each record is a batch of envs reset from fixed seeds and stepped for a few seconds by the env's shipped
policy (its mean action), or by fixed random actions where none ships: the observations, actions, rewards
and terminations. tests/test_task_equivalence.py replays the recorded actions and compares, so a
refactor of a task (its reward terms, its declarations) that changes what a policy sees or earns fails.

    python tests/equivalence.py --write     # record again (only when a change is meant to change them)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "equivalence"
REPO = Path(__file__).resolve().parents[1]
ENVS = ("cartpole", "h1", "jvrc_walk", "jvrc_step", "jvrc_stand", "h1_walk", "g1_walk", "t1_walk",
        "berkeley_walk", "op3_walk", "berkeley_step")  # fmt: skip
N_ENVS, STEPS = 3, 100


def _policy(env_name: str):
    """The shipped policy's env config and mean-action function, or (None, None) where none ships."""
    from ppolab.ppo.checkpoint import load_actor
    from ppolab.ppo.policy import sampling_params
    from ppolab.ppo.sampling_policy import SamplingPolicy

    folder = REPO / "pretrained" / env_name
    if not (folder / "actor.pt").is_file():
        return None, None
    actor, meta = load_actor(folder)
    return meta.get("env_config"), SamplingPolicy(sampling_params(actor))


def record(env_name: str, actions: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Step the env from its seeded starts; with `actions` given, replay them instead of choosing."""
    from ppolab.envs import make_env
    from ppolab.ppo.rollout import slot_rng

    cfg, policy = _policy(env_name)
    env = make_env(env_name, N_ENVS, cfg)
    env.set_iteration(0)
    for i in range(N_ENVS):
        env.reset_one(i, slot_rng(7, 0, 0, i))
    noise = np.random.default_rng(11).uniform(-1.0, 1.0, (STEPS, N_ENVS, env.act_dim)).astype(np.float32)
    obs = env.observe()
    out = {"obs": [obs], "actions": [], "rewards": [], "terminated": []}
    for t in range(STEPS):
        if actions is not None:
            action = actions[t]
        else:
            action = policy(obs) if policy is not None else 0.3 * noise[t]
        obs, reward, terminated = env.step(np.asarray(action, np.float32))
        for key, value in (("obs", obs), ("actions", action), ("rewards", reward), ("terminated", terminated)):
            out[key].append(np.array(value, copy=True))
    return {k: np.stack(v) for k, v in out.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="record every env into tests/data/equivalence")
    args = parser.parse_args()
    if not args.write:
        parser.print_help()
        return 2
    DATA.mkdir(parents=True, exist_ok=True)
    for name in ENVS:
        rec = record(name)
        np.savez_compressed(DATA / f"{name}.npz", **rec)
        print(f"{name}: {rec['rewards'].shape[0]} steps, mean reward {rec['rewards'].mean():.4f}, "
              f"{int(rec['terminated'].sum())} terminations")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
