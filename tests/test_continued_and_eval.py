"""--continued starts from pretrained weights; `ppolab eval` replays a saved policy, with a video if asked."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from conftest import REPO, TINY, only_run_dir, run_ppolab


def test_continued_starts_from_the_pretrained_actor_critic_and_normaliser(trained_run, tmp_path):
    proc = run_ppolab(
        "train", *TINY, "--n-itr", "1", "--seed", "5", "--continued", str(trained_run), "--logdir", str(tmp_path)
    )
    assert proc.returncode == 0, proc.stderr
    assert f"Loaded pretrained actor from {trained_run / 'actor.pt'}" in proc.stdout
    assert f"Loaded pretrained critic from {trained_run / 'critic.pt'}" in proc.stdout
    assert "Warming up" not in proc.stdout  # the pretrained normaliser is kept, not re-estimated
    before = torch.load(trained_run / "actor.pt", weights_only=True)["state_dict"]
    after = torch.load(only_run_dir(tmp_path) / "actor_0.pt", weights_only=True)["state_dict"]
    # one iteration later: normaliser statistics continued (count grew by one batch), weights moved a little
    assert after["norm.count"].item() == before["norm.count"].item() + 100
    w0, w1 = before["net.0.weight"], after["net.0.weight"]
    assert not torch.equal(w0, w1) and torch.allclose(w0, w1, atol=0.05)


def test_continued_takes_this_runs_fixed_std(trained_run, tmp_path):
    """A fine-tune at a smaller action noise: --std-dev with --continued is the std the run samples with and
    saves (config.yaml says so), not the loaded actor's."""
    loaded = torch.load(trained_run / "actor.pt", weights_only=True)["state_dict"]["log_std"].exp()
    proc = run_ppolab("train", *TINY, "--n-itr", "1", "--seed", "5", "--continued", str(trained_run),
                      "--learn-std=false", "--std-dev", "0.05", "--logdir", str(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"Action std 0.05 (--std-dev; the loaded actor's was {float(loaded.mean()):.3g})" in proc.stdout
    saved = torch.load(only_run_dir(tmp_path) / "actor_0.pt", weights_only=True)["state_dict"]["log_std"].exp()
    assert not torch.allclose(loaded, saved) and torch.allclose(saved, torch.full_like(saved, 0.05))


def test_eval_prints_each_episode_and_the_mean(trained_run):
    proc = run_ppolab("eval", "--path", str(trained_run), "--episodes", "3")
    assert proc.returncode == 0, proc.stderr
    episodes = re.findall(r"Episode (\d): length (\d+), return (-?\d+\.\d+)", proc.stdout)
    assert [e[0] for e in episodes] == ["1", "2", "3"]
    returns = np.array([float(e[2]) for e in episodes])
    m = re.search(r"Mean return: (-?\d+\.\d+) \+- (\d+\.\d+) over 3 episodes", proc.stdout)
    assert m and abs(float(m.group(1)) - returns.mean()) < 2e-3 and abs(float(m.group(2)) - returns.std()) < 2e-3


def test_eval_is_deterministic_for_a_seed(trained_run):
    a = run_ppolab("eval", "--path", str(trained_run / "actor_2.pt"), "--episodes", "2", "--seed", "4").stdout
    b = run_ppolab("eval", "--path", str(trained_run / "actor_2.pt"), "--episodes", "2", "--seed", "4").stdout
    assert a == b and "iteration 2" in a


def test_eval_video_renders_offscreen_to_mp4(trained_run, tmp_path):
    import imageio.v3 as iio

    video = tmp_path / "episode.mp4"
    proc = run_ppolab("eval", "--path", str(trained_run), "--episodes", "1", "--max-steps", "25", "--video", str(video))
    assert proc.returncode == 0, proc.stderr
    frames = iio.imread(video)
    assert frames.shape[0] == 25 and frames.shape[1:] == (480, 640, 3)
    assert frames[0].std() > 5  # a picture, not a blank frame
    assert not np.array_equal(frames[0], frames[-1])  # things move


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--episodes", "10000000"], "--episodes: from 1 to 10000"),
        (["--seed", "-1"], "--seed: from 0 to 4294967295"),
        (["--max-steps", "99999999999999999999999"], "--max-steps: from 1 to 10000000"),
        (["--video", "episode.avi"], "name a .mp4 file"),
        (["--video", "clips.mp4"], "is a folder"),
        (["--video", "/proc/episode.mp4"], "cannot write in /proc"),
        (["--filmstrip", "strip.jpg"], "--filmstrip strip.jpg: name a .png file"),
        (["--frames", "0"], "--frames: from 1 to 100"),
        (["--mode", "forward", "--vx", "0.3"], "--mode forward: cartpole takes no velocity command"),
        (["--plan", "curved"], "--plan curved: cartpole follows no footstep plans (a NAME_step env does)"),
    ],
)
def test_eval_refuses_bad_flags_before_any_episode(trained_run, tmp_path, args, says):
    (tmp_path / "clips.mp4").mkdir()
    proc = run_ppolab("eval", "--path", str(trained_run), *args, cwd=tmp_path)
    assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Episode 1" not in proc.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["clips.mp4"]  # nothing written, not even a temp file


def test_run_experiment_py_accepts_the_same_commands(tmp_path):
    import os
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "run_experiment.py", "train", *TINY, "--n-itr", "1", "--logdir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "RAY_ADDRESS": ""},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Training finished." in proc.stdout
    run_dir = only_run_dir(tmp_path)
    proc = subprocess.run(
        [sys.executable, "run_experiment.py", "eval", "--path", str(run_dir), "--episodes", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0 and "Mean return:" in proc.stdout


def test_lhw_s_eval_forms_play_the_latest_run_for_seconds_into_a_dated_video(tmp_path, trained_run):
    """`run_experiment.py eval --logdir DIR --ep-len S --out-dir V` as LearningHumanoidWalking documents it."""
    import os
    import shutil
    import subprocess
    import sys

    logdir = tmp_path / "logs"
    shutil.copytree(trained_run, logdir / "newer")
    shutil.copytree(logdir / "newer", logdir / "older")  # a run last active an hour before the newer one
    for f in (logdir / "older").iterdir():
        os.utime(f, (f.stat().st_mtime - 3600,) * 2)
    proc = subprocess.run(
        [sys.executable, "run_experiment.py", "eval", "--logdir", str(logdir), "--ep-len", "0.5", "--out-dir",
         str(tmp_path / "videos"), "--episodes", "1"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"playing the most recent, {logdir / 'newer'}" in proc.stdout
    assert re.search(r"Episode 1: length (\d+)", proc.stdout).group(1) == "25"  # 0.5 s of 50 Hz control
    videos = list((tmp_path / "videos").iterdir())
    assert len(videos) == 1 and re.fullmatch(r"actor-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.mp4", videos[0].name)
    assert videos[0].stat().st_size > 1000
    latest = run_ppolab("eval", "--path", str(logdir), "--episodes", "1")
    assert latest.returncode == 0 and f"playing the most recent, {logdir / 'newer'}" in latest.stdout
    resume = run_ppolab("train", "--resume", str(logdir))
    assert resume.returncode == 2 and f"ppolab train --resume {logdir / 'newer'}" in resume.stderr
    both = run_ppolab("eval", "--logdir", str(logdir), "--ep-len", "1", "--max-steps", "5")
    assert both.returncode == 2 and "keep one" in both.stderr


def test_a_long_step_reports_one_plain_line_when_done_where_there_is_no_terminal():
    import io

    from ppolab.util.progress import Progress

    out = io.StringIO()  # a log file or an agent reading the output: no terminal, no bar
    progress = Progress("Rendered episode 1", 300, "frames", stream=out)
    for _ in range(250):  # an episode that ended before its horizon
        progress.advance()
        assert out.getvalue() == ""
    progress.close()
    assert re.fullmatch(r"Rendered episode 1: 250 frames in \d+\.\d s\n", out.getvalue())


def test_a_video_records_the_scored_episode_and_draws_what_the_robot_is_told(tmp_path):
    """One simulation: the episode in the video is the one scored (its return is the one printed without a
    video); the command is drawn (an arrow for a walker, the targets for a stepper)."""
    from ppolab.envs import make_env

    args = ["eval", "--path", str(REPO / "pretrained" / "jvrc_walk"), "--episodes", "2", "--max-steps", "30",
            "--mode", "forward", "--vx", "0.3"]  # fmt: skip
    plain = run_ppolab(*args)
    video = run_ppolab(*args, "--video", str(tmp_path / "walk.mp4"))
    assert plain.returncode == 0 and video.returncode == 0, video.stderr
    returns = [re.findall(r"Episode \d: length \d+, return (-?[\d.]+)", p.stdout) for p in (plain, video)]
    assert returns[0] == returns[1] and len(returns[0]) == 2
    assert "Video of episode 1 (30 frames)" in video.stdout and (tmp_path / "walk.mp4").stat().st_size > 1000
    walker = make_env("jvrc_walk", 1)
    walker.reset_one(0, np.random.default_rng(0))
    walker.set_command(2, vx=0.3)
    assert [m.kind for m in walker.markers(0)] == ["arrow"]
    stepper = make_env("jvrc_step", 1)
    stepper.reset_one(0, np.random.default_rng(0))
    assert len(stepper.markers(0)) == 20 and stepper.markers(0)[0].rgba[0] > 0.8  # the current target: red
