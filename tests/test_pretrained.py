"""The shipped policies still play: a change that breaks a task or the checkpoint format is caught here."""

from __future__ import annotations

from pathlib import Path

from conftest import REPO

from ppolab.ppo import behaviour

PRETRAINED = REPO / "pretrained"


def test_the_shipped_jvrc_walk_policy_stays_up_and_moves_forward():
    """Three seconds at 0.3 m/s from the evaluation start states: every env up, every env forward."""
    result = behaviour.walk(Path(PRETRAINED / "jvrc_walk"), speed=0.3, seconds=3.0, n=4)
    assert result["still_up"] == 4
    assert result["min_distance_share"] >= 0.25, result  # at least a quarter of the commanded 0.9 m, each env
    assert result["min_touchdowns"] >= 1 and result["alternating"] >= 0.5, result  # steps, not a slide


def test_the_shipped_h1_policy_stands_under_pushes():
    """Three seconds with the env's pushes, masses and friction randomised: every env stays up."""
    result = behaviour.push(Path(PRETRAINED / "h1"), seconds=3.0, n=4)
    assert result["still_up"] == 4, result


def test_the_shipped_jvrc_step_policy_follows_forward_and_lateral_footsteps():
    """Three seconds on a forward and on a lateral plan: every env up and past its first targets (a policy
    that steps in place stays at the first one or two)."""
    result = behaviour.footsteps(Path(PRETRAINED / "jvrc_step"), steps=120, n=4)
    assert result["still_up"] == 4
    assert min(result["targets_hit"]) >= 3, result


def test_every_shipped_policy_carries_its_env_settings_in_full():
    """So that a later change of an env's defaults does not change a shipped policy."""
    import yaml

    from ppolab.ppo.checkpoint import load

    for folder in sorted(p for p in PRETRAINED.iterdir() if p.is_dir()):
        meta = load(folder / "actor.pt")["meta"]
        assert meta["env_config"] == yaml.safe_load((folder / "env.yaml").read_text()), folder.name
