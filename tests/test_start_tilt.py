"""`randomization.start_tilt`: training starts each episode leaning (roll and pitch within +-start_tilt), a lean
to recover from; the behaviour checks start level, as they start without pushes."""

from __future__ import annotations

import numpy as np

from ppolab.envs import make_env
from ppolab.evaluation import behaviour
from ppolab.ppo.policy import Actor, ObsNormalizer, sampling_params

TILT = 0.05
TILTED = {"randomization": {"enabled": True, "obs_noise": 0.0, "push_force": 0.0, "start_tilt": TILT,
                            "friction": [1.0, 1.0], "damping": [1.0, 1.0], "mass": [1.0, 1.0]}}  # fmt: skip


def _roll_pitch(env) -> np.ndarray:
    """(n, 2) roll and pitch of every env's root, rad."""
    w, x, y, z = env.batch.qpos[:, 3:7].T
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    return np.stack([roll, np.arcsin(np.clip(2 * (w * y - z * x), -1, 1))], 1)


def _starts(env, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    for i in range(env.num_envs):
        env.reset_one(i, rng)
    return _roll_pitch(env)


def test_jvrc_walk_s_preset_tilts_its_starts():
    assert make_env("jvrc_walk", 1, {}).cfg.randomization.start_tilt == TILT
    assert np.abs(_starts(make_env("jvrc_walk", 32, {}))).max() > 0.5 * TILT


def test_training_starts_lean_within_the_start_tilt_and_level_without_it():
    tilted = np.abs(_starts(make_env("jvrc_walk", 64, TILTED)))
    assert tilted.max() <= TILT + 1e-9 and tilted.max() > 0.8 * TILT, tilted.max()
    assert np.median(tilted) > 0.3 * TILT, "the leans are not spread over the range"
    level = _starts(make_env("jvrc_stand", 8, {}))
    assert np.abs(level).max() < 1e-9, "a preset without start_tilt starts tilted"
    off = {"randomization": {**TILTED["randomization"], "enabled": False}}
    assert np.abs(_starts(make_env("jvrc_walk", 8, off))).max() < 1e-9, "a disabled randomisation tilts starts"


def test_the_ramp_grows_the_lean_with_the_iteration():
    env = make_env("jvrc_walk", 32, {"randomization": {**TILTED["randomization"], "ramp": [0, 100]}})
    env.set_iteration(50)
    assert np.abs(_starts(env)).max() <= 0.5 * TILT + 1e-9
    env.set_iteration(100)
    assert np.abs(_starts(env)).max() > 0.5 * TILT


def test_the_behaviour_checks_start_level_from_a_policy_trained_with_tilted_starts():
    probe = make_env("jvrc_walk", 1, TILTED)
    actor = Actor(ObsNormalizer(probe.obs_dim), probe.obs_dim, probe.act_dim, [8], 0.1, learn_std=False)
    subject = behaviour.Subject("jvrc_walk", TILTED, sampling_params(actor))
    env, _ = behaviour._start(subject, 16)
    assert env.cfg.randomization.start_tilt == 0.0
    assert np.abs(_roll_pitch(env)).max() < 1e-9, "a check started the robot leaning"


def test_a_run_s_env_yaml_keeps_its_start_tilt():
    assert make_env("jvrc_stand", 1, {}).cfg.randomization.model_dump()["start_tilt"] == 0.0
    assert make_env("jvrc_walk", 1, TILTED).cfg.randomization.model_dump()["start_tilt"] == TILT


def test_a_saved_env_yaml_from_before_start_tilt_trains_without_it(tmp_path):
    """A run's env.yaml written before start_tilt existed (randomisation on, no start_tilt) reads back without
    a lean, whatever today's preset tilts: `--yaml` with it and `--resume` train the env as it was."""
    import yaml

    from ppolab.envs import env_config

    saved = make_env("jvrc_walk", 1, TILTED).cfg.model_dump(mode="json")
    del saved["randomization"]["start_tilt"]
    assert env_config.restore("jvrc_walk", saved)["randomization"]["start_tilt"] == 0.0
    path = tmp_path / "env.yaml"
    path.write_text(yaml.safe_dump(saved))
    resolved = env_config.resolve("jvrc_walk", str(path)).data()
    assert resolved["randomization"].get("start_tilt", 0.0) == 0.0
