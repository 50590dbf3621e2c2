"""`ppolab play`: the keyboard's commands reach the policy, an ONNX export plays through its sidecar, and the
viewer's window under Xvfb shows the robot."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO, run_ppolab

from ppolab.evaluation.playback import Command
from ppolab.evaluation.steering import BACKSPACE, DOWN, ENTER, LEFT, PAGE_DOWN, RIGHT, SPACE, UP, Steer, press
from ppolab.evaluation.viewer import Session, load_player

WALK = ("standing", "in_place", "forward")


def test_the_keys_move_a_walker_s_command_through_its_modes():
    s = Steer("standing")
    s, again = press(s, UP, WALK, ())
    assert (s.mode, s.vx, again) == ("forward", 0.1, False)
    s, _ = press(press(s, UP, WALK, ())[0], UP, WALK, ())
    assert s.vx == pytest.approx(0.2)
    for _ in range(3):
        s, _ = press(s, DOWN, WALK, ())
    assert (s.mode, s.vx) == ("in_place", 0.0)  # below the slowest walk: stepping in place
    s, _ = press(press(s, LEFT, WALK, ())[0], LEFT, WALK, ())
    assert (s.mode, s.yaw_rate) == ("in_place", pytest.approx(0.2))
    s, _ = press(s, RIGHT, WALK, ())
    assert s.yaw_rate == pytest.approx(0.1)
    s, _ = press(s, DOWN, WALK, ())
    assert s.mode == "standing"
    s, _ = press(s, ENTER, WALK, ())
    assert s.mode == "forward" and s.vx > 0
    s, _ = press(s, ENTER, WALK, ())
    assert s.mode == "standing"
    s, again = press(s, SPACE, WALK, ())
    assert s.paused and not again
    assert press(s, BACKSPACE, WALK, ())[1]
    assert press(Steer(None, plan="forward"), PAGE_DOWN, (), ("forward", "curved"))[0].plan == "curved"
    assert press(Steer(None), UP, (), ()) == (Steer(None), False)  # a task without commands: nothing to steer


def _walked(session: Session, seconds: float) -> float:
    """Metres the root moved along its heading at the start, over `seconds` of the session's steps."""
    env = session.env
    start = env.datas[0].qpos[:2].copy()
    for _ in range(round(seconds / env.cfg.control_dt)):
        assert not session.step(), "the robot fell"
    return float(np.linalg.norm(env.datas[0].qpos[:2] - start))


def test_keys_reach_the_policy_and_the_robot_does_as_told():
    session = Session(load_player(REPO / "pretrained" / "t1_walk"), Command(), seed=3, horizon=None)
    assert session.steer.mode == "standing"
    assert _walked(session, 3.0) < 0.15
    for _ in range(5):
        session.key(UP)  # 0.1, then up to 0.3 m/s
    assert session.steer.vx == pytest.approx(0.3)
    _walked(session, 2.0)  # get going
    assert 0.3 * 4.0 * 0.7 < _walked(session, 4.0) < 0.3 * 4.0 * 1.3
    session.key(SPACE)
    assert session.steer.paused
    session.key(BACKSPACE)
    assert session.episode == 2 and session.steps == 0
    assert "Page Down" not in dict(session.keys()) and "Up / Down" in dict(session.keys())


def test_a_stepper_cycles_its_footstep_plans_and_shows_only_its_keys():
    session = Session(load_player(REPO / "pretrained" / "jvrc_step"), Command(), seed=1, horizon=None)
    plans = session.info.plans
    assert session.steer.plan == plans[0] and session.env.cfg.plan_probs[0] == 1.0
    session.key(PAGE_DOWN)
    assert session.steer.plan == plans[1] and session.env.cfg.plan_probs[1] == 1.0 and session.episode == 2
    assert "Page Down" in dict(session.keys()) and "Up / Down" not in dict(session.keys())


def test_an_onnx_export_plays_through_its_sidecar(tmp_path):
    onnx = tmp_path / "walk.onnx"
    proc = run_ppolab("export", str(REPO / "pretrained" / "t1_walk"), "--onnx", str(onnx))
    assert proc.returncode == 0, proc.stderr
    player = load_player(onnx)
    assert player.env_name == "t1_walk" and "ONNX" in player.source
    session = Session(player, Command("forward", vx=0.3), seed=5, horizon=None)
    _walked(session, 2.0)
    assert 0.3 * 4.0 * 0.7 < _walked(session, 4.0) < 0.3 * 4.0 * 1.3
    (tmp_path / "walk.onnx.json").unlink()
    proc = run_ppolab("play", str(onnx), env={"DISPLAY": ":99"})
    assert proc.returncode == 2 and "walk.onnx.json: no such file" in proc.stderr, proc.stderr


def test_without_a_display_play_says_so_in_one_line_and_names_video(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = run_ppolab("play", str(REPO / "pretrained" / "t1_walk"), base_env=env)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no display" in proc.stderr and "--video" in proc.stderr
    nowhere = run_ppolab("play", str(REPO / "pretrained" / "t1_walk"), base_env={**env, "DISPLAY": ":250"})
    assert nowhere.returncode == 2 and nowhere.stderr.count("\n") == 1, nowhere.stderr  # named, but no X server
    assert "cannot open the display :250" in nowhere.stderr
    lhw = subprocess.run([sys.executable, "run_experiment.py", "eval", "--path", str(REPO / "pretrained" / "t1_walk")],
                         cwd=REPO, capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert lhw.returncode == 2 and "no display" in lhw.stderr and "--out-dir" in lhw.stderr  # LHW's eval: the viewer


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="xvfb-run is not installed (scripts/setup.sh installs it)")
def test_the_viewer_window_under_xvfb_shows_the_robot_walking(tmp_path):
    policy = tmp_path / "t1_walk"
    shutil.copytree(REPO / "pretrained" / "t1_walk", policy)
    shot = tmp_path / "shot.png"
    play = ["play", str(policy), "--seconds", "4", "--screenshot", str(shot), "--mode", "forward", "--vx", "0.3"]
    proc = subprocess.run(["xvfb-run", "-a", sys.executable, "-m", "ppolab", *play], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Screenshot written" in proc.stdout and "Played" in proc.stdout
    import imageio.v2 as imageio

    image = np.asarray(imageio.imread(shot))[..., :3].astype(int)
    window = robot_pixels(image)
    assert window.sum() > 8000, f"{window.sum()} grey pixels where the robot stands in the window"  # floor: ~300


def robot_pixels(image: np.ndarray) -> np.ndarray:
    """The robot's pixels: grey (its metal), in the middle of the window, where the tracking camera keeps it;
    the floor and the sky are blue, its lines white, the screen around the window black. The robot in the
    middle of a 4 s walk: 19,000 of them; the same middle showing floor only: 300."""
    lit = image.sum(-1) > 60
    rows, cols = np.nonzero(lit)
    top, bottom, left, right = rows.min(), rows.max(), cols.min(), cols.max()
    h, w = bottom - top, right - left
    middle = image[top + h // 5 : bottom - h // 5, left + w // 3 : right - w // 3]
    r, g, b = middle[..., 0], middle[..., 1], middle[..., 2]
    return (abs(r - b) < 10) & (abs(r - g) < 10) & (middle.sum(-1) > 90) & (middle.sum(-1) < 600)
