"""The shipped policies still do what they were shipped for: a change that breaks a task, a robot file or
the checkpoint format is caught here (short versions of the behaviour checks; the full ones: benchmarks/)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO, run_ppolab

from ppolab.evaluation import behaviour

PRETRAINED = REPO / "pretrained"
SHIPPED = sorted(p.name for p in PRETRAINED.iterdir() if p.is_dir())
WALKERS = [name for name in SHIPPED if name.endswith("_walk")]


@pytest.mark.parametrize("name", WALKERS)
def test_a_shipped_walker_walks_straight_from_a_start_state_training_never_used(name):
    """Five seconds forward at the middle of its speed range: every env up, moving forward, holding its heading."""
    env = behaviour.load_actor(PRETRAINED / name)[1]["env_config"]
    lo, hi = env["forward_speed"]
    result = behaviour._straight_at(PRETRAINED / name, (lo + hi) / 2, seconds=5.0, n=4, slot=9)
    assert result["still_up"] == 4, result
    assert result["speed_share"][0] >= 0.5, result  # at least half the commanded distance, each env
    assert result["max_heading_drift_deg_per_10s"] <= 10.0 and result["max_sideways_share"] <= 0.2, result


@pytest.mark.parametrize("name", WALKERS)
def test_a_shipped_walker_stands_still_when_told_to(name):
    result = behaviour.stand(PRETRAINED / name, seconds=3.0, n=4)
    assert result["still_up"] == 4 and result["max_drift_m"] < 0.15, result
    assert result["passed"] == ("missed" not in result), result  # a failing check says which bars it missed


def test_the_shipped_h1_policy_stands_under_pushes():
    """Three seconds with the env's pushes, masses and friction randomised: every env stays up."""
    result = behaviour.push(PRETRAINED / "h1", seconds=3.0, n=4)
    assert result["still_up"] == 4, result


@pytest.mark.parametrize("name", [n for n in SHIPPED if n.endswith("_step")])
def test_a_shipped_stepper_still_follows_the_plans_it_was_shipped_following(name):
    """Three seconds on each plan type its checks.json records as passed: every env up and past its first
    targets (a policy that steps in place stays at the first one or two)."""
    import json

    shipped = json.loads((PRETRAINED / name / "checks.json").read_text())["checks"]["footsteps"]["plans"]
    passed = [plan for plan, r in shipped.items() if r["passed"]]
    assert passed, "a stepper is shipped for at least one plan type"
    result = behaviour.footsteps(PRETRAINED / name, steps=120, n=2)
    for plan in passed:
        r = result["plans"][plan]
        assert r["still_up"] == 2 and min(r["targets_hit"]) >= 3, (plan, r)


def test_every_shipped_policy_carries_its_env_settings_in_full_and_is_small():
    """So that a later change of an env's defaults does not change a shipped policy, `--yaml pretrained/ENV/env.yaml`
    (fine-tuning it, say) trains on the very env it was trained on; and a clone stays light."""
    import yaml

    from ppolab.envs import env_config
    from ppolab.ppo.checkpoint import load

    for folder in (PRETRAINED / name for name in SHIPPED):
        meta = load(folder / "actor.pt")["meta"]
        assert meta["env_config"] == yaml.safe_load((folder / "env.yaml").read_text()), folder.name
        # a setting added since the policy was trained resolves to the value that it was trained with (legacy)
        resolved = env_config.resolve(meta["env"], str(folder / "env.yaml")).data()
        assert resolved == env_config.restore(meta["env"], meta["env_config"]), folder.name
        assert (folder / "actor.pt").stat().st_size < 2_000_000, folder.name
        assert (folder / "checks.json").is_file(), folder.name


def test_the_checks_start_from_states_training_s_evaluation_never_uses():
    from ppolab.ppo.rollout import CHECK_STREAM, EVAL_STREAM, TRAIN_STREAM

    assert CHECK_STREAM not in (EVAL_STREAM, TRAIN_STREAM)
    env, _ = behaviour._start(Path(PRETRAINED / WALKERS[0]), 4)
    assert env.cfg.init_yaw == (-3.141592653589793, 3.141592653589793) and env.cfg.init_joint_noise >= 0.02


def test_the_commanded_checks_judge_the_trained_dynamics_unpushed_and_the_push_check_pushes():
    """A walker trained with pushes and LHW's perturbations (h1_walk's randomisation) is checked on its
    randomised dynamics and sensor noise but with no external wrench on any body, step after step, because a
    push it cannot observe decides its speed over ground; the push check alone applies them."""
    import numpy as np

    subject = behaviour.Subject.of(PRETRAINED / WALKERS[0])
    shaken = {"enabled": True, "push_force": 60.0, "push_interval": 0.1, "mass": [0.9, 1.1],
              "perturbation": {"enabled": True, "force": 10.0, "torque": 2.0, "interval": 0.1}}  # fmt: skip
    subject = subject._replace(env_config={**subject.env_config, "randomization": shaken})

    def wrenches(pushed: bool) -> float:
        env, actor = behaviour._start(subject, 2, pushed=pushed)
        largest = 0.0
        for _ in range(40):
            env.step(actor(env.observe()))
            largest = max(largest, max(float(np.abs(d.xfrc_applied).max()) for d in env.batch.datas))
        return largest

    env, _ = behaviour._start(subject, 2)
    assert env.cfg.randomization.enabled and env.cfg.randomization.mass == (0.9, 1.1)  # its dynamics still drawn
    assert wrenches(pushed=False) == 0.0
    assert wrenches(pushed=True) > 1.0


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_policy_plays_to_video_from_the_clone(name, tmp_path):
    """What the README promises a fresh clone: `ppolab eval --path pretrained/ENV --video` renders it, meshes
    and all (the robot models come from installed packages, not from this repository's files)."""
    import imageio.v3 as iio
    import numpy as np

    video = tmp_path / f"{name}.mp4"
    proc = run_ppolab("eval", "--path", str(PRETRAINED / name), "--episodes", "1", "--max-steps", "6",
                      "--video", str(video))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    frames = iio.imread(video)  # software rendering: 50-140 ms a frame here, so a few frames
    assert frames.shape[0] == 6 and frames[0].std() > 5 and not np.array_equal(frames[0], frames[-1])


def _contact(pattern: str) -> list:
    """Contact per step of one env from two strings, the right and the left foot: '#' down, '.' in the air."""
    import numpy as np

    right, left = pattern.split("/")
    return [np.array([[a == "#", b == "#"]]) for a, b in zip(right, left, strict=True)]


def test_the_walk_check_tells_a_tapping_swing_foot_from_alternating_steps():
    """Clean steps alternate and nothing taps; a right foot that lifts, taps twice and lands makes two of its
    three touchdowns taps (under 3 steps in the air) and breaks the alternation the walk check asks for."""
    clean = _contact("###.....####....../....####......####")
    touchdowns, alternating, taps = behaviour._touchdowns(clean, tap_steps=3)
    assert touchdowns.tolist() == [[1, 2]] and alternating == 1.0 and taps == 0.0
    tapping = _contact("###.....#.#.####....../....##########......##")
    touchdowns, alternating, taps = behaviour._touchdowns(tapping, tap_steps=3)
    assert touchdowns.tolist() == [[3, 2]] and taps == 2 / 5 and alternating == 2 / 4
    landing = _contact("...###/######")  # a foot landing from the first step on: no lift-off seen, no tap
    assert behaviour._touchdowns(landing, tap_steps=3)[2] == 0.0
