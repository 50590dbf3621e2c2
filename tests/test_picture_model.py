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


@pytest.mark.parametrize("walker", ["berkeley_walk", "g1_walk"])
def test_shown_meshes_are_decimated_copies_that_keep_their_outline_and_leave_collisions_alone(walker):
    """The shown meshes of a heavy robot (393,000-544,000 faces) are lighter copies: each copy's size within
    5 mm of its original's, the collision geoms on the original meshes, as many as without the robot's looks."""
    import mujoco

    from ppolab.envs import make_env
    from ppolab.envs.visual_meshes import SHOWN, VISUAL_FACES

    def diameter(m, mesh: int) -> float:
        """The largest distance between two of a mesh's vertices: MuJoCo moves and turns each mesh to its own
        inertial frame (a copy's differs), which this ignores."""
        from scipy.spatial import ConvexHull
        from scipy.spatial.distance import pdist

        points = m.mesh_vert[m.mesh_vertadr[mesh] : m.mesh_vertadr[mesh] + m.mesh_vertnum[mesh]]
        return float(pdist(points[ConvexHull(points).vertices]).max())

    shown, plain = make_env(walker, 1, {"visuals": True}).model, make_env(walker, 1).model
    geoms = [g for g in range(shown.ngeom) if shown.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH]
    drawn = [g for g in geoms if shown.geom_group[g] < 3]  # what a camera shows by default
    faces = sum(int(shown.mesh_facenum[shown.geom_dataid[g]]) for g in drawn)
    assert faces < 2 * VISUAL_FACES, f"{faces} faces shown"
    copies = {shown.mesh(shown.geom_dataid[g]).name for g in drawn} - {shown.mesh(i).name for i in range(plain.nmesh)}
    assert copies and all(c.endswith(SHOWN.format("")) for c in copies)
    for name in copies:
        original = name.removesuffix(SHOWN.format(""))
        assert abs(diameter(shown, shown.mesh(name).id) - diameter(shown, shown.mesh(original).id)) < 0.005, name
    touching = [g for g in geoms if shown.geom_contype[g] or shown.geom_conaffinity[g]]
    assert all(not shown.mesh(shown.geom_dataid[g]).name.endswith(SHOWN.format("")) for g in touching)
    assert len(touching) == sum(1 for g in range(plain.ngeom) if plain.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH
                                and (plain.geom_contype[g] or plain.geom_conaffinity[g]))  # fmt: skip
