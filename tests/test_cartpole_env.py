"""The cartpole swing-up env: shapes, rates, reward range, start state, termination."""

from __future__ import annotations

import numpy as np
import pytest

from ppolab.envs import make_env


def test_shapes_and_rates():
    env = make_env("cartpole", 3)
    assert env.physics.substeps == 4  # 200 Hz physics, 50 Hz control
    assert env.model.opt.timestep == 0.005
    rng = np.random.default_rng(0)
    for i in range(3):
        env.reset_one(i, rng)
    assert env.observe().shape == (3, 5)
    obs, reward, terminated = env.step(np.zeros((3, 1)))
    assert obs.shape == (3, 5) and obs.dtype == np.float32
    assert reward.shape == (3,) and terminated.shape == (3,)


def test_starts_hanging_down_at_a_random_angle():
    env = make_env("cartpole", 2)
    env.reset_one(0, np.random.default_rng(1))
    env.reset_one(1, np.random.default_rng(2))
    obs = env.observe()
    assert np.all(obs[:, 1] < -0.9)  # cos(theta) near -1: hanging
    assert obs[0, 2] != obs[1, 2]


def _reward(theta, x, omega, action) -> np.ndarray:
    """The swing-up reward of states set directly (theta = 0 upright), through the env's reward table."""
    theta = np.atleast_1d(theta)
    env = make_env("cartpole", len(theta))
    for i in range(len(theta)):
        env.physics.set_state(i, np.array([np.atleast_1d(x)[i], theta[i]]), np.array([0.0, np.atleast_1d(omega)[i]]))
    env.action = np.asarray(action, dtype=float).reshape(len(theta), 1)
    return env.rewards.compose()


def test_reward_is_one_at_most_and_only_upright_centred_still_and_idle():
    assert _reward(0.0, 0.0, 0.0, [0.0])[0] == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    r = _reward(rng.uniform(-4, 4, 300), rng.uniform(-1, 1, 300), rng.normal(0, 5, 300), rng.uniform(-0.8, 0.8, 300))
    assert np.all((r >= 0) & (r < 1))
    hanging = _reward(np.pi, 0.0, 0.0, [0.0])[0]
    assert abs(hanging - 0.3) < 1e-3


def test_action_is_a_tracked_target_position_clipped_to_the_rail_limits():
    env = make_env("cartpole", 1)
    env.reset_one(0, np.random.default_rng(0))
    for _ in range(50):
        env.step(np.array([[5.0]]))  # clipped to 0.8
    assert abs(env.physics.qpos[0, 0] - 0.8) < 0.1


def test_leaving_the_rail_terminates():
    env = make_env("cartpole", 1)
    env.reset_one(0, np.random.default_rng(0))
    env.physics.set_state(0, np.array([1.05, np.pi]), np.zeros(2))
    _, _, terminated = env.step(np.array([[0.8]]))
    assert terminated[0]
