"""Pictures show the model that was trained: a filmstrip's episode is as long, and scores the same, as the
same episode without one (a URDF walker's meshes are shown, never touched)."""

from __future__ import annotations

import re

import pytest
from conftest import REPO, run_ppolab


@pytest.mark.parametrize("walker", ["jvrc_walk", "t1_walk"])
def test_a_filmstrip_plays_the_episode_eval_plays(tmp_path, walker):
    args = ["eval", str(REPO / "pretrained" / walker), "--episodes", "1", "--mode", "forward", "--vx", "0.3",
            "--max-steps", "80"]  # fmt: skip
    plain = run_ppolab(*args, timeout=600)
    shown = run_ppolab(*args, "--filmstrip", str(tmp_path / "f.png"), "--frames", "2", timeout=600)
    assert plain.returncode == 0 and shown.returncode == 0, plain.stderr + shown.stderr
    episode = re.compile(r"Episode 1: length (\d+), return ([\d.-]+)")
    assert episode.search(plain.stdout).groups() == episode.search(shown.stdout).groups() == ("80", episode.search(
        plain.stdout).group(2))  # fmt: skip
    assert (tmp_path / "f.png").stat().st_size > 10_000
