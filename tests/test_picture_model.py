"""Pictures show the model that was trained: a filmstrip's episode is as long, and scores the same, as the
same episode without one (a URDF walker's meshes are shown, never touched)."""

from __future__ import annotations

import re

import pytest
from conftest import REPO, run_ppolab


@pytest.mark.parametrize("walker", ["jvrc_walk", "t1_walk", "berkeley_walk", "g1_walk", "h1_walk", "jvrc_step"])
def test_a_filmstrip_plays_the_episode_eval_plays(tmp_path, walker):
    told = ["--plan", "curved"] if walker.endswith("_step") else ["--mode", "forward", "--vx", "0.3"]
    args = ["eval", str(REPO / "pretrained" / walker), "--episodes", "1", *told, "--max-steps", "80"]
    plain = run_ppolab(*args, timeout=600)
    shown = run_ppolab(*args, "--filmstrip", str(tmp_path / "f.png"), "--frames", "2", timeout=600)
    assert plain.returncode == 0 and shown.returncode == 0, plain.stderr + shown.stderr
    episode = re.compile(r"Episode 1: length (\d+), return ([\d.-]+)")
    assert episode.search(plain.stdout).groups() == episode.search(shown.stdout).groups() == ("80", episode.search(
        plain.stdout).group(2))  # fmt: skip
    assert (tmp_path / "f.png").stat().st_size > 10_000
