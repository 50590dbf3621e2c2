"""--privileged-critic: the critic reads true state a robot does not measure, taken from MuJoCo beside each
observation; the actor, what it samples and what it exports stay as they were."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
import torch
from conftest import run_ppolab

from ppolab.envs import make_env
from ppolab.ppo import checkpoint as ckpt
from ppolab.ppo.policy import Actor, ObsNormalizer, sampling_params
from ppolab.ppo.rollout import Episodes, collect, slot_rng


def _stepped(name: str, n: int = 4, steps: int = 40):
    env = make_env(name, n)
    for i in range(n):
        env.reset_one(i, np.random.default_rng(10 + i))
    rng = np.random.default_rng(0)
    for _ in range(steps):
        env.step(0.3 * rng.standard_normal((n, env.act_dim)))
    return env


@pytest.mark.parametrize("name", ["g1_walk", "h1_walk"])
def test_the_privileged_state_is_what_mujoco_says(name):
    """Each entry against MuJoCo's own data: the root's velocity turned into its heading's frame (from the root
    quaternion, by MuJoCo), its height, the soles' loads, the drawn friction and mass (h1_walk randomises
    them), and the walking reward's averaged velocity."""
    env = _stepped(name)
    priv = env.privileged()
    assert priv.shape == (4, env.privileged_dim) == (4, 12) and priv.dtype == np.float32
    for i, (m, d) in enumerate(zip(env.batch.models, env.datas)):
        mat = np.zeros(9)  # the root's rotation from its quaternion (xmat is a physics step older than qpos)
        mujoco.mju_quat2Mat(mat, d.qpos[3:7])
        heading = math.atan2(mat[3], mat[0])  # the body x axis, seen from above
        ahead = d.qvel[0] * math.cos(heading) + d.qvel[1] * math.sin(heading)
        side = -d.qvel[0] * math.sin(heading) + d.qvel[1] * math.cos(heading)
        np.testing.assert_allclose(priv[i, :4], [ahead, side, d.qvel[2], d.qpos[2]], atol=1e-4)
        touch = [d.sensor(f"{side_}_touch").data[0] for side_ in ("right", "left")]
        np.testing.assert_allclose(priv[i, 4:6], np.minimum(np.array(touch) / env.weight, 2.0), atol=1e-4)
        base = env.batch.base
        friction, mass = m.geom_friction[5, 0] / base.geom_friction[5, 0], m.body_mass.sum() / base.body_mass.sum()
        np.testing.assert_allclose(priv[i, 8:10], [friction, mass], atol=1e-5)
    np.testing.assert_allclose(priv[:, 10:], env.v_avg, atol=1e-6)
    assert abs(priv[:, 0]).max() > 0.01  # the robots move: the comparison above is not of zeros
    if name == "h1_walk":
        assert np.ptp(priv[:, 9]) > 0  # each env drew its own masses


def test_collect_records_the_state_behind_each_observation_and_samples_the_same():
    """The privileged state at step t is the state the observation at t was taken in: replaying the recorded
    actions in a fresh env (the same start draws) gives it again. Recording it changes nothing sampled, and an
    episode that goes on into the next iteration starts from the privileged state its last step left."""
    torch.manual_seed(0)
    env = make_env("g1_walk", 3)
    actor = Actor(ObsNormalizer(env.obs_dim), env.obs_dim, env.act_dim, [32], 0.3, learn_std=False)
    kw = dict(seed=5, stream=0, first_slot=0, total_slots=3, steps=25, horizon=400)
    plain = collect(env, sampling_params(actor), iteration=0, **kw)
    rich_env, episodes = make_env("g1_walk", 3), Episodes()
    rich = collect(rich_env, sampling_params(actor), iteration=0, episodes=episodes, privileged=True, **kw)
    assert plain.priv.shape == (25, 3, 0) and rich.priv.shape == (25, 3, 12)
    for field in ("obs", "actions", "rewards", "ended", "final_obs"):
        np.testing.assert_array_equal(getattr(plain, field), getattr(rich, field), err_msg=field)
    assert not rich.ended[:-1].any(), "an episode ended early: the replay below assumes none did"
    replay = make_env("g1_walk", 3)
    for i in range(3):  # each slot's generator as collect uses it: the action noise drawn first, then the start
        rng = slot_rng(5, 0, 0, i)
        rng.standard_normal((25, env.act_dim), dtype=np.float32)
        replay.reset_one(i, rng)
    for t in range(25):
        np.testing.assert_allclose(replay.privileged(), rich.priv[t], atol=1e-5, err_msg=f"step {t}")
        replay.step(rich.actions[t])
    np.testing.assert_allclose(replay.privileged(), rich.final_priv[-1], atol=1e-5)
    going_on = collect(rich_env, sampling_params(actor), iteration=1, episodes=episodes, privileged=True, **kw)
    np.testing.assert_array_equal(going_on.priv[0], rich.final_priv[-1])


def _train(tmp_path, *flags: str):
    return run_ppolab("train", "--env", "g1_walk", "--num-procs", "2", "--max-traj-len", "60", "--eval-freq", "1",
                      "--eval-episodes", "1", "--check-every", "0", "--seed", "2", "--logdir", str(tmp_path / "runs"),
                      "--run-name", "r", *flags, cwd=tmp_path)  # fmt: skip


def test_a_privileged_critic_trains_and_resumes_and_the_actor_is_as_before(tmp_path):
    """The critic's first layer reads the observation and the 12 privileged entries, normalised by statistics
    of their own that training keeps; the actor reads the observation alone (actor.pt and its meta as without
    the flag), and a resumed run goes on with the same critic."""
    done = _train(tmp_path, "--privileged-critic", "--n-itr", "2")
    assert done.returncode == 0, done.stderr
    run = tmp_path / "runs" / "r"
    critic = ckpt.load(run / "critic.pt")["state_dict"]
    actor = ckpt.load(run / "actor.pt")
    obs_dim = actor["meta"]["obs_dim"]
    assert actor["state_dict"]["net.0.weight"].shape[1] == obs_dim == make_env("g1_walk", 1).obs_dim
    assert critic["net.0.weight"].shape[1] == obs_dim + 12
    assert critic["priv_norm.count"].item() > 0 and critic["priv_norm.var"][:4].min().item() > 0  # moving robots
    resumed = run_ppolab("train", "--resume", str(run), "--n-itr", "4", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert ckpt.load(run / "critic_3.pt")["state_dict"]["net.0.weight"].shape[1] == obs_dim + 12
    evaluated = run_ppolab("eval", str(run), "--episodes", "1", "--max-steps", "20", cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--env", "cartpole", "--privileged-critic"], "--privileged-critic: cartpole has no privileged state"),
        (["--env", "g1_walk", "--privileged-critic", "--recurrent"], "--privileged-critic is for the MLP critic"),
    ],
)
def test_a_privileged_critic_where_there_is_none_is_one_line(tmp_path, flags, says):
    done = run_ppolab("train", *flags, "--n-itr", "1", "--logdir", str(tmp_path / "runs"), cwd=tmp_path)
    assert done.returncode == 2
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
