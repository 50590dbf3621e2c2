"""`ppolab play`: watch a policy live in MuJoCo's viewer and steer it from the keyboard."""

from __future__ import annotations

import argparse

from ppolab.cli.args import policy_path
from ppolab.errors import UserError

PLAY_HELP = """Play a policy in MuJoCo's interactive viewer, in real time, and steer it from the keyboard:
Up / Down faster / slower, Left / Right turn in place, Enter stand / walk, Page Down the next footstep
plan, Space pause, Backspace reset. The command is drawn over the robot (blue arrow: walk, yellow:
turn in place, grey ball: stand) and written in the window's corner. An episode that falls starts again.

POLICY is a run folder, an actor .pt, a folder of runs (the latest), or an ONNX export (played through
its sidecar, as a robot's controller runs it). With no display it says so; under `xvfb-run -a` it runs
headless, and --screenshot keeps a picture of the window.

examples:
  ppolab play pretrained/t1_walk
  ppolab play pretrained/jvrc_walk --mode forward --vx 0.3
  ppolab play walk.onnx
  xvfb-run -a ppolab play pretrained/t1_walk --seconds 5 --screenshot shot.png"""


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("play", help="watch a policy in MuJoCo's viewer and steer it from the keyboard",
                       description=PLAY_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("policy", nargs="?", metavar="POLICY", help="a run folder, an actor .pt, or an .onnx export")
    p.add_argument("--path", help="the same as POLICY (LearningHumanoidWalking's)")
    p.add_argument("--logdir", metavar="DIR", help="a folder of runs: play the most recent (LearningHumanoidWalking's)")
    p.add_argument("--seconds", type=float, help="close after this many seconds of wall time (default: when the "
                   "window is closed)")  # fmt: skip
    p.add_argument("--screenshot", metavar="FILE.png", help="when --seconds have passed, save the screen (under "
                   "xvfb-run: the viewer's window) to this PNG")  # fmt: skip
    p.add_argument("--ep-len", type=float, metavar="SECONDS", help="start a new episode after this many simulated "
                   "seconds (default: only when the robot falls)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="seed of the start states (default: 0)")
    p.add_argument("--mode", help="a walker: the mode to start in (standing, in_place, forward; default: standing)")
    p.add_argument("--vx", type=float, default=0.0, help="a walker, forward mode: m/s ahead to start with")
    p.add_argument("--yaw-rate", type=float, default=0.0, help="a walker, in-place mode: rad/s to start with")
    p.add_argument("--plan", help="a stepper: the footstep plan kind to start with (Page Down: the next)")


def run(ns: argparse.Namespace) -> int:
    from ppolab.runner.config import MAX_SEED
    from ppolab.util.files import check_output_file

    if ns.seconds is not None and not 0 < ns.seconds <= 86400:
        raise UserError("--seconds: wall-clock seconds to play, above 0 and at most 86400")
    if ns.ep_len is not None and not 0 < ns.ep_len <= 3600:
        raise UserError("--ep-len: simulated seconds of one episode, above 0 and at most 3600")
    if not 0 <= ns.seed <= MAX_SEED:
        raise UserError(f"--seed: from 0 to {MAX_SEED}")
    for flag, value, limit in (("--vx", ns.vx, 2.0), ("--yaw-rate", ns.yaw_rate, 2.0)):
        if not abs(value) <= limit:
            raise UserError(f"{flag}: from {-limit} to {limit}")
    screenshot = None
    if ns.screenshot:
        if ns.seconds is None:
            raise UserError("--screenshot is taken when --seconds have passed; give --seconds too")
        screenshot = check_output_file("--screenshot", ns.screenshot, ".png", "a PNG image", make_folders=True)
    flag, path = policy_path(ns)
    if path.suffix.lower() != ".onnx":
        from ppolab.runner.entry import check_policy_file

        check_policy_file(flag, path)
    from ppolab.evaluation.playback import Command
    from ppolab.evaluation.viewer import play_live

    command = Command(ns.mode, ns.vx, 0.0, ns.yaw_rate, ns.plan)
    play_live(path, command=command, seed=ns.seed, seconds=ns.seconds, horizon_s=ns.ep_len, screenshot=screenshot)
    return 0
