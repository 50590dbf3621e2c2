"""`randomization.ramp`: training's randomisation grows with the iteration, from the model's own values to the
full draws, on the same draws at every strength; checks and evaluation (envs training never steps) get it all."""

from __future__ import annotations

import numpy as np
import pytest

from ppolab.envs import make_env
from ppolab.ppo.policy import Actor, ObsNormalizer, sampling_params
from ppolab.ppo.rollout import collect

PERTURB = {"enabled": True, "force": 10.0, "torque": 2.0, "interval": 0.001, "bodies": ["pelvis", "torso_link"]}
RAMPED = {"randomization": {"enabled": True, "ramp": [100, 300], "push_force": 60.0, "push_interval": 0.001,
                            "joint_damping": [0.02, 2.0], "joint_frictionloss": [0.0, 2.0], "com_offset": 0.01,
                            "obs_noise": {"joint_pos": 0.02, "joint_vel": 0.05}, "perturbation": PERTURB}}  # fmt: skip


def _drawn(env, iteration: int) -> dict[str, np.ndarray]:
    """What env 0 gets from the same reset at `iteration`: its dynamics, noise, a perturbation and a push."""
    b = env.batch
    env.set_iteration(iteration)
    b.reset_one(0, np.random.default_rng(7))
    m, d = b.models[0], b.datas[0]
    out = {"mass": m.body_mass.copy(), "damping": m.dof_damping.copy(), "friction": m.geom_friction[:, 0].copy(),
           "frictionloss": m.dof_frictionloss.copy(), "com": m.body_ipos.copy(),
           "noise": b.noisy(np.zeros((1, env.obs_dim)), env.layout)[0].astype(float)}  # fmt: skip
    b._during_episode(0, d)
    out["wrench"] = d.xfrc_applied.copy()
    d.xfrc_applied[:] = 0.0
    b._update_push(0, d, 1.0, 4, b.cfg.randomization.push_force)
    out["push"] = d.xfrc_applied.copy()
    return out


def test_the_ramp_moves_every_draw_from_the_model_s_value_to_its_full_range():
    env = make_env("h1_walk", 1, RAMPED)
    base = env.batch.base
    own = {"mass": base.body_mass, "damping": base.dof_damping, "friction": base.geom_friction[:, 0],
           "frictionloss": base.dof_frictionloss, "com": base.body_ipos}  # fmt: skip
    none, half, full = _drawn(env, 50), _drawn(env, 200), _drawn(env, 300)
    for key, value in own.items():
        assert np.allclose(none[key], value), f"{key} before the ramp is not the model's own"
        assert not np.allclose(full[key], value), f"{key} at the ramp's end is not drawn"
        assert np.allclose(half[key] - value, 0.5 * (full[key] - value)), f"{key} half way is not half the draw"
    for key in ("noise", "wrench", "push"):
        assert not np.any(none[key]), f"{key} applied before the ramp starts"
        assert np.any(full[key]), f"no {key} at the ramp's end"
        assert np.allclose(half[key], 0.5 * full[key]), f"{key} half way is not half the full one"
    assert all(np.array_equal(full[k], _drawn(env, 10_000)[k]) for k in full)  # after the ramp: all of it


def test_without_a_ramp_and_in_an_env_training_never_steps_the_randomisation_is_full():
    ramped, plain = make_env("h1_walk", 1, RAMPED), make_env("h1_walk", 1, {**RAMPED, "randomization": {
        **RAMPED["randomization"], "ramp": None}})  # fmt: skip
    assert ramped.batch.strength == 1.0  # a check's or evaluation's env: nothing set its iteration
    assert all(np.array_equal(a, b) for a, b in zip(_drawn(plain, 0).values(), _drawn(ramped, 300).values()))


def test_the_sampler_sets_the_strength_of_the_iteration_it_samples():
    env = make_env("h1_walk", 2, RAMPED)
    actor = Actor(ObsNormalizer(env.obs_dim), env.obs_dim, env.act_dim, [8], 0.1, learn_std=False)
    kw = dict(seed=1, stream=0, first_slot=0, total_slots=2, steps=2)
    for iteration, strength in ((0, 0.0), (150, 0.25), (299, 0.995), (400, 1.0)):
        collect(env, sampling_params(actor), iteration=iteration, **kw)
        assert env.batch.strength == pytest.approx(strength), iteration


@pytest.mark.parametrize(("ramp", "iteration", "strength"), [
    ([0, 100], 0, 0.0), ([0, 100], 25, 0.25), ([0, 100], 100, 1.0), ([50, 50], 49, 0.0), ([50, 50], 50, 1.0),
])  # fmt: skip
def test_the_strength_is_linear_between_the_ramp_s_ends(ramp, iteration, strength):
    from ppolab.envs.humanoid import Randomization

    assert Randomization(ramp=ramp).strength(iteration) == pytest.approx(strength)


def test_a_ramp_is_kept_in_the_resolved_config_and_no_ramp_leaves_it_as_saved_before(tmp_path):
    from ppolab.envs import env_config

    ramped = tmp_path / "ramp.yaml"
    ramped.write_text("randomization: {ramp: [10, 20]}\n")
    assert env_config.resolve("h1_walk", str(ramped)).data()["randomization"]["ramp"] == [10, 20]  # resume continues it
    plain = tmp_path / "plain.yaml"
    plain.write_text("randomization: {enabled: true}\n")
    assert "ramp" not in env_config.resolve("h1_walk", str(plain)).data()["randomization"]
