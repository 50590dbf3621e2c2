"""GAE bootstrapping rules, normaliser statistics and slot-range sampling, checked against hand computations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ppolab.envs import make_env
from ppolab.ppo.policy import Actor, ObsNormalizer, sampling_params
from ppolab.ppo.rollout import Episodes, Trajectories, collect
from ppolab.ppo.sampling_policy import SamplingPolicy
from ppolab.ppo.storage import compute_gae


def test_gae_bootstraps_time_outs_but_not_terminations():
    g, lam = 0.9, 0.8
    rewards = np.array([[1.0, 1.0], [1.0, 1.0]])
    values = np.array([[0.5, 0.5], [0.5, 0.5]])
    next_values = np.array([[0.5, 0.5], [2.0, 2.0]])  # env 0 times out at t=1 (V(final)=2), env 1 terminates
    terminated = np.array([[False, False], [False, True]])
    ended = np.array([[False, False], [True, True]])
    adv, ret = compute_gae(rewards, values, next_values, terminated, ended, g, lam)
    d1 = np.array([1 + g * 2.0 - 0.5, 1 - 0.5])
    d0 = 1 + g * 0.5 - 0.5
    assert np.allclose(adv[1], d1)
    assert np.allclose(adv[0], d0 + g * lam * d1)
    assert np.allclose(ret, adv + values)


def test_gae_does_not_leak_across_episode_boundaries():
    rewards = np.ones((3, 1))
    values = np.zeros((3, 1))
    ended = np.array([[True], [False], [True]])
    adv, _ = compute_gae(rewards, values, np.zeros((3, 1)), ended, ended, 0.99, 0.95)
    assert adv[0, 0] == 1.0


def test_normaliser_merges_batches_exactly():
    rng = np.random.default_rng(0)
    data = rng.normal(3.0, 2.0, size=(1000, 4))
    norm = ObsNormalizer(4)
    for chunk in np.array_split(data, 7):
        norm.update(chunk)
    assert np.allclose(norm.mean.numpy(), data.mean(0))
    assert np.allclose(norm.var.numpy(), data.var(0))
    assert norm.count.item() == 1000


def test_sampling_policy_matches_the_torch_actor():
    torch.manual_seed(0)
    norm = ObsNormalizer(5)
    norm.update(np.random.default_rng(1).normal(size=(50, 5)))
    actor = Actor(norm, 5, 1, [64, 64], 0.2, learn_std=True)
    with torch.no_grad():
        actor.net[-1].weight.normal_()
    obs = np.random.default_rng(2).normal(size=(8, 5)).astype(np.float32)
    expected, _ = actor(torch.from_numpy(obs))
    got = SamplingPolicy(sampling_params(actor))(obs)
    assert np.allclose(got, expected.detach().numpy(), atol=1e-5)


def test_a_slot_samples_the_same_trajectory_whichever_range_it_is_in():
    actor = Actor(ObsNormalizer(5), 5, 1, [16], 0.3, learn_std=False)
    params = sampling_params(actor)
    kw = dict(seed=7, stream=0, iteration=4, steps=30)
    whole = collect(make_env("cartpole", 4), params, first_slot=0, total_slots=4, **kw)
    parts = [
        collect(make_env("cartpole", 1), params, first_slot=0, total_slots=4, **kw),
        collect(make_env("cartpole", 3), params, first_slot=1, total_slots=4, **kw),
    ]
    split = Trajectories.concat(parts)
    for name in Trajectories.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(whole, name), getattr(split, name))


def _continued(env_name: str, slots: list[tuple[int, int]], iterations: range, steps: int, horizon: int):
    """Consecutive iterations of `steps`-step rollouts whose episodes go on up to `horizon` steps, the slots
    split into the (first, count) ranges given, each range with its own envs and episodes."""
    torch.manual_seed(0)
    actor = Actor(ObsNormalizer(5), 5, 1, [16], 0.3, learn_std=False)
    ranges = [(first, make_env(env_name, count), Episodes()) for first, count in slots]
    total = sum(count for _, count in slots)
    return [
        Trajectories.concat([
            collect(env, sampling_params(actor), seed=3, stream=0, iteration=i, first_slot=first, total_slots=total,
                    steps=steps, horizon=horizon, episodes=episodes)
            for first, env, episodes in ranges
        ])
        for i in iterations
    ]  # fmt: skip


def test_episodes_go_on_across_iterations_up_to_the_horizon_whatever_the_split():
    """--steps-per-env: 10-step rollouts of 40-step episodes. An episode's steps continue in the next iteration
    (its first observation the one the last step reached), end at the horizon, and a slot's steps do not depend
    on how the slots are split over processes; a call that does not follow the last starts fresh episodes."""
    whole = _continued("cartpole", [(0, 4)], range(10), steps=10, horizon=40)
    split = _continued("cartpole", [(0, 1), (1, 3)], range(10), steps=10, horizon=40)
    for a, b in zip(whole, split):
        for name in Trajectories.__dataclass_fields__:
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    continued = 0
    for before, after in zip(whole, whole[1:]):
        going_on = ~np.isfinite(before.ep_length[-1])  # not finished at the iteration's end: continued
        assert before.ended[-1].all()  # the last step is cut (bootstrapped) either way
        np.testing.assert_array_equal(after.obs[0, going_on], before.final_obs[-1, going_on])
        continued += going_on.sum()
    assert continued >= 4
    lengths = np.concatenate([t.ep_length[np.isfinite(t.ep_length)] for t in whole])
    assert lengths.max() == 40 and (lengths > 10).any()  # longer than a rollout, never past the horizon
    first_ends = [np.flatnonzero(np.isfinite(np.concatenate([t.ep_length[:, i] for t in whole])))[0] for i in range(4)]
    assert len(set(first_ends)) > 1  # the first episodes are cut at random steps: the envs' episodes do not end as one
    fresh = _continued("cartpole", [(0, 4)], range(3, 4), steps=10, horizon=40)[0]
    jumped = _continued("cartpole", [(0, 4)], range(0, 6, 3), steps=10, horizon=40)[1]  # iteration 3 after 0
    np.testing.assert_array_equal(jumped.obs, fresh.obs)


@pytest.mark.parametrize(
    "name, cfg",
    [
        ("jvrc_walk", {"stand_switch_prob": 0.2, "walk_switch_prob": 0.2}),
        ("h1_walk", {}),
        ("jvrc_step", {}),
        ("h1", {}),
    ],
)
def test_a_humanoid_iteration_samples_the_same_whatever_ran_before_it_and_whichever_range_its_slots_are_in(name, cfg):
    """A resumed run starts an iteration on fresh envs, an uninterrupted one on envs that sampled the one
    before; the sampler splits slots over workers by core count. Neither may change what the iteration samples
    (the walk task's random mode switches drawn often here, so they happen within 60 steps; h1_walk's dynamics
    draws, pushes and sensor noise; the stepping task's plans)."""
    env = make_env(name, 4, cfg)
    actor = Actor(ObsNormalizer(env.obs_dim), env.obs_dim, env.act_dim, [16], 0.2, learn_std=False)
    params = sampling_params(actor)
    kw = dict(seed=7, stream=0, steps=60, total_slots=4)
    collect(env, params, iteration=3, first_slot=0, **kw)  # what ran before, on the same envs
    after = collect(env, params, iteration=4, first_slot=0, **kw)
    fresh = collect(make_env(name, 4, cfg), params, iteration=4, first_slot=0, **kw)
    split = Trajectories.concat([
        collect(make_env(name, 1, cfg), params, iteration=4, first_slot=0, **kw),
        collect(make_env(name, 3, cfg), params, iteration=4, first_slot=1, **kw),
    ])  # fmt: skip
    for name in Trajectories.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(after, name), getattr(fresh, name), err_msg=name)
        np.testing.assert_array_equal(getattr(split, name), getattr(fresh, name), err_msg=name)
