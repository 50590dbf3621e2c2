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
