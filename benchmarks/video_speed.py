"""Video speed: `ppolab eval --video` of a shipped policy, 400 frames at 640 x 480, timed end to end.

    python benchmarks/video_speed.py [--env jvrc_walk] [--frames 400] [--runs 3]

Goal: at most 30 s for 400 frames of any shipped robot on the 2-core machine. Also printed: the same evaluation
without a video (what the recording adds), and one frame's render time with each costly feature on
(shadows, multisampling), the measurements behind recording.py's choices.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ppolab.util.files import atomic_write_text, output_file

os.environ.setdefault("MUJOCO_GL", "egl")
REPO = Path(__file__).resolve().parent.parent


def timed(args: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ppolab", "eval", *args], cwd=REPO, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - t


def frame_costs(env_name: str, frames: int = 30) -> dict[str, float]:
    """ms per 640 x 480 frame of the robot's scene, with shadows and multisampling off or on."""
    import mujoco
    import numpy as np

    from ppolab.envs import make_env

    env = make_env(env_name, 1, {"visuals": True})
    env.reset_one(0, np.random.default_rng(0))
    out = {}
    for label, shadow, samples in (("as recorded", 0, 0), ("with shadows", 1, 0), ("with 4x multisampling", 0, 4),
                                   ("with both (MuJoCo's defaults)", 1, 4)):  # fmt: skip
        env.model.vis.quality.offsamples = samples
        r = mujoco.Renderer(env.model, height=480, width=640)
        r.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = shadow
        r.update_scene(env.datas[0], camera=0)
        r.render()
        t = time.perf_counter()
        for _ in range(frames):
            r.update_scene(env.datas[0], camera=0)
            r.render()
        out[label] = 1000 * (time.perf_counter() - t) / frames
        r.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default="jvrc_walk", help="a shipped policy (pretrained/ENV)")
    ap.add_argument("--frames", type=int, default=400)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=output_file, help="also write the figures to this file")
    args = ap.parse_args()
    policy = str(REPO / "pretrained" / args.env)
    common = ["--path", policy, "--episodes", "1", "--max-steps", str(args.frames)]
    if args.env.endswith("_walk"):
        common += ["--mode", "forward", "--vx", "0.3"]
    with_video, without = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.runs):  # interleaved: the host's noise falls on both alike
            without.append(timed(common))
            with_video.append(timed([*common, "--video", str(Path(tmp) / f"v{k}.mp4")]))
    costs = frame_costs(args.env)
    result = {"env": args.env, "frames": args.frames, "seconds_with_video": with_video, "seconds_without": without,
              "ms_per_frame_render": costs}  # fmt: skip
    print(f"{args.env}: {args.frames} frames at 640 x 480: {min(with_video):.1f}-{max(with_video):.1f} s with the "
          f"video, {min(without):.1f}-{max(without):.1f} s without (goal: <= 30 s)")  # fmt: skip
    for label, ms in costs.items():
        print(f"  one frame {label}: {ms:.0f} ms")
    if args.json:
        atomic_write_text(args.json, json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
