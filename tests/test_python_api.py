"""ppolab from Python: tasks as Gymnasium envs that another algorithm trains, and train, load, evaluate and
compare as functions over the command line's code."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import ppolab
from ppolab.envs.vector import TaskEnv


def test_a_single_env_passes_gymnasium_s_checker():
    env = TaskEnv("t1_walk")
    check_env(env, skip_render_check=True)
    first, _ = env.reset(seed=5)
    again, _ = env.reset(seed=5)
    np.testing.assert_array_equal(first, again)


def test_the_vector_env_keeps_gymnasium_s_contract():
    env = ppolab.make_env("t1_walk", 4, max_episode_steps=30)
    assert isinstance(env, gym.vector.VectorEnv) and env.num_envs == 4
    obs, _ = env.reset(seed=1)
    assert obs.shape == (4, 37) and obs.dtype == np.float32 and env.observation_space.contains(obs)
    np.testing.assert_array_equal(env.reset(seed=1)[0], obs)  # the same seed, the same starts
    rng = np.random.default_rng(0)
    ended_at = []
    for t in range(35):
        action = rng.normal(0, 0.3, (4, env.single_action_space.shape[0])).astype(np.float32)
        obs, reward, terminated, truncated, infos = env.step(action)
        assert reward.shape == (4,) and terminated.dtype == bool and truncated.dtype == bool
        terms = np.stack(list(infos["reward_terms"].values()), axis=1)
        np.testing.assert_allclose(terms.sum(axis=1), reward, rtol=1e-6, atol=1e-9)
        if (terminated | truncated).any():
            assert infos["_final_obs"].tolist() == (terminated | truncated).tolist()
            ended_at.append(t)
    assert 29 in ended_at  # the horizon truncates every env still up, then they go on from new starts


def test_a_cleanrl_style_ppo_loop_trains_on_a_ppolab_task():
    """A plain PPO written here, as CleanRL writes it, on ppolab's walker: the API is enough for it."""
    envs = ppolab.make_env("t1_walk", 4)
    n_obs, n_act = envs.single_observation_space.shape[0], envs.single_action_space.shape[0]
    torch.manual_seed(0)
    actor = torch.nn.Sequential(torch.nn.Linear(n_obs, 64), torch.nn.Tanh(), torch.nn.Linear(64, n_act))
    critic = torch.nn.Sequential(torch.nn.Linear(n_obs, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
    log_std = torch.nn.Parameter(torch.full((n_act,), -1.5))
    opt = torch.optim.Adam([*actor.parameters(), *critic.parameters(), log_std], lr=3e-4)
    obs, _ = envs.reset(seed=0)
    steps, returns = 32, []
    for _ in range(3):
        buf = {k: [] for k in ("obs", "act", "logp", "rew", "done", "val")}
        for _ in range(steps):
            o = torch.as_tensor(obs)
            with torch.no_grad():
                dist = torch.distributions.Normal(actor(o), log_std.exp())
                act = dist.sample()
                buf["logp"].append(dist.log_prob(act).sum(-1))
                buf["val"].append(critic(o).squeeze(-1))
            obs, rew, term, trunc, _ = envs.step(act.numpy())
            buf["obs"].append(o), buf["act"].append(act)
            (
                buf["rew"].append(torch.as_tensor(rew, dtype=torch.float32)),
                buf["done"].append(torch.as_tensor(term | trunc)),
            )
        with torch.no_grad():
            next_val = critic(torch.as_tensor(obs)).squeeze(-1)
        adv, last = torch.zeros(steps, 4), torch.zeros(4)
        for t in reversed(range(steps)):
            nv = next_val if t == steps - 1 else buf["val"][t + 1]
            nonterminal = (~buf["done"][t]).float()
            delta = buf["rew"][t] + 0.99 * nv * nonterminal - buf["val"][t]
            last = delta + 0.99 * 0.95 * nonterminal * last
            adv[t] = last
        b_obs, b_act = torch.stack(buf["obs"]).reshape(-1, n_obs), torch.stack(buf["act"]).reshape(-1, n_act)
        b_logp, b_adv = torch.stack(buf["logp"]).reshape(-1), adv.reshape(-1)
        b_ret = b_adv + torch.stack(buf["val"]).reshape(-1)
        for _ in range(2):
            dist = torch.distributions.Normal(actor(b_obs), log_std.exp())
            ratio = (dist.log_prob(b_act).sum(-1) - b_logp).exp()
            norm = (b_adv - b_adv.mean()) / (b_adv.std() + 1e-8)
            loss = -torch.min(ratio * norm, ratio.clamp(0.8, 1.2) * norm).mean()
            loss = loss + 0.5 * ((critic(b_obs).squeeze(-1) - b_ret) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            assert torch.isfinite(loss)
        returns.append(float(torch.stack(buf["rew"]).mean()))
    assert all(np.isfinite(returns)) and min(returns) > 0  # the walking reward is positive per step


def test_train_load_evaluate_and_compare_from_python(tmp_path):
    flags = {"env": "cartpole", "n_itr": 3, "num_procs": 2, "max_traj_len": 50, "minibatch_size": 32,
             "eval_freq": 2, "eval_episodes": 2, "logdir": str(tmp_path)}  # fmt: skip
    runs = [ppolab.train(**flags, seed=seed, run_name=f"api-s{seed}") for seed in (1, 2)]
    assert [r.name for r in runs] == ["api-s1", "api-s2"]
    records = [json.loads(line) for line in (runs[0] / "metrics.jsonl").read_text().splitlines()]
    assert sum(r["type"] == "iteration" for r in records) == 3 and (runs[0] / "config.yaml").is_file()
    policy = ppolab.load(runs[0])
    assert policy.env == "cartpole" and policy(np.zeros(5)).shape == (1,) and policy(np.zeros((3, 5))).shape == (3, 1)
    scores = ppolab.evaluate(runs[0], episodes=2)
    assert len(scores["returns"]) == 2 and all(n > 0 for n in scores["lengths"])
    assert "verdict" in ppolab.compare(runs)
    with pytest.raises(ppolab.UserError, match="--lr"):
        ppolab.train(env="cartpole", lr=-1.0, logdir=str(tmp_path))
