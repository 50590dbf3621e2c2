"""ppolab's tasks as Gymnasium envs: a batch of envs as a `gymnasium.vector.VectorEnv`, one env as a
`gymnasium.Env`, for training them with other algorithms (CleanRL, Stable-Baselines3, your own).

The vector env is the batch ppolab's own sampler steps (one MuJoCo model, every env stepped in one call), so it
runs at ppolab's speed. Episodes end when the task says so (`terminated`: a fall) or at the horizon
(`truncated`: the preset's `max_traj_len`, 400 steps for a humanoid); an env that ends is reset in the same step
(Gymnasium's SAME_STEP autoreset): `infos["final_obs"]` holds the observation it reached, where
`infos["_final_obs"]` is set. `infos["reward_terms"]` gives each reward term's contribution, by name.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ppolab.envs import env_info, make_env


def _spaces(env) -> tuple[gym.spaces.Box, gym.spaces.Box]:
    """One env's observation and action spaces: observations unbounded; actions within the bounds the env clips
    them to (unbounded where it clips none)."""
    obs = gym.spaces.Box(-np.inf, np.inf, (env.obs_dim,), np.float32)
    low, high = np.asarray(env.action_low, np.float32), np.asarray(env.action_high, np.float32)
    return obs, gym.spaces.Box(low, high, dtype=np.float32)


class TaskVectorEnv(VectorEnv):
    """`num_envs` envs of a ppolab task, stepped together."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, name: str, num_envs: int, overrides: Any = None, max_episode_steps: int | None = None) -> None:
        self.env = make_env(name, num_envs, overrides)
        self.num_envs = num_envs
        self.horizon = max_episode_steps or int(env_info(name, overrides).preset.get("max_traj_len", 400))
        self.single_observation_space, self.single_action_space = _spaces(self.env)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.reward_names = self.env.rewards.names
        self._rngs = [np.random.default_rng([0, i]) for i in range(num_envs)]
        self._steps = np.zeros(num_envs, np.int64)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """Every env to a new start state; with `seed`, env i's draws come from (seed, i), as reproducible."""
        if seed is not None:
            self._rngs = [np.random.default_rng([seed, i]) for i in range(self.num_envs)]
        self.env.set_iteration(0)
        for i in range(self.num_envs):
            self.env.reset_one(i, self._rngs[i])
        self._steps[:] = 0
        return self.env.observe().astype(np.float32), {}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        obs, reward, terminated = self.env.step(np.asarray(actions, np.float32).reshape(self.num_envs, -1))
        infos: dict[str, Any] = {"reward_terms": dict(zip(self.reward_names, self.env.rewards.terms.T.copy()))}
        self._steps += 1
        terminated = np.asarray(terminated, bool)
        truncated = (self._steps >= self.horizon) & ~terminated
        ended = terminated | truncated
        obs = np.asarray(obs, np.float32)
        if ended.any():
            infos["final_obs"], infos["_final_obs"] = obs.copy(), ended
            for i in np.flatnonzero(ended):
                self.env.reset_one(i, self._rngs[i])
                self._steps[i] = 0
            obs = self.env.observe().astype(np.float32)
        return obs, np.asarray(reward, np.float64), terminated, truncated, infos

    def render(self) -> None:
        return None


class TaskEnv(gym.Env):
    """One env of a ppolab task, as Gymnasium's single-env API."""

    metadata = {"render_modes": []}

    def __init__(self, name: str, overrides: Any = None, max_episode_steps: int | None = None) -> None:
        self.vec = TaskVectorEnv(name, 1, overrides, max_episode_steps)
        self.observation_space = self.vec.single_observation_space
        self.action_space = self.vec.single_action_space

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        obs, _ = self.vec.reset(seed=int(self.np_random.integers(2**31)))
        return obs[0], {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, terminated, truncated, infos = self.vec.step(np.asarray(action)[None])
        info = {"reward_terms": {k: float(v[0]) for k, v in infos["reward_terms"].items()}}
        if "final_obs" in infos:  # the episode ended: the state it reached, not the next episode's start
            obs = infos["final_obs"]
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), info
