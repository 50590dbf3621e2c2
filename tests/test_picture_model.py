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


def test_a_filmstrip_alone_renders_only_the_frames_it_shows(tmp_path):
    """A 6-frame strip of a 60-step episode renders 6 frames, not 60: the others are simulated, not drawn."""
    import numpy as np

    from ppolab.envs import make_env
    from ppolab.evaluation.recording import Recorder

    env = make_env("jvrc_walk", 1)
    env.reset_one(0, np.random.default_rng(0))
    strip = tmp_path / "strip.png"
    recorder = Recorder(env, video=None, filmstrip=strip, frames=6, steps=60, fps=40)
    rendered = []
    render = recorder.renderer.render
    recorder.renderer.render = lambda: rendered.append(1) or render()  # counts, and renders as ever
    try:
        for _ in range(60):
            env.step(np.zeros((1, env.act_dim)))
            recorder(env, np.ones(1, bool))
        assert recorder.finish() == 60
    finally:
        recorder.close()
    assert len(rendered) == 6 and strip.is_file()
