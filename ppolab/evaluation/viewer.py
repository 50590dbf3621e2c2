"""`ppolab play`: a policy in MuJoCo's interactive viewer, in real time, steered from the keyboard.

The viewer (`mujoco.viewer.launch_passive`) shows env 0 of a one-env batch; this loop steps it at the
control rate and paces it to the wall clock. What the policy is told is drawn over the robot (the markers
of videos) and written in the window's corner with the keys (steering.py). An ONNX export plays through
its sidecar, as a robot's controller would run it: raw observations in, the mean action out, the
normaliser inside the file.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

import numpy as np

from ppolab.envs import env_info, make_env
from ppolab.envs.protocol import BatchEnv
from ppolab.errors import UserError
from ppolab.evaluation.markers import add_marker
from ppolab.evaluation.playback import Command, shown
from ppolab.evaluation.steering import KEYS_HELP, PLAN_KEYS, WALKER_KEYS, Steer, press
from ppolab.util.files import atomic_write_bytes

Policy = Callable[[np.ndarray], np.ndarray]
MAX_CATCH_UP = 40  # control steps between two frames at most (a second at 40 Hz)


@dataclass
class Player:
    """A policy and the env it was trained on; `reset()` clears a recurrent policy's state."""

    policy: Policy
    reset: Callable[[], None]
    env_name: str
    env_config: dict | None
    source: str  # the first line play prints: which file


def display_problem() -> str | None:
    """Why no window can open here (None: one can): no display named on Linux, or GLFW cannot open the one
    named. Asked before the viewer starts, which on such a failure ends the process with GLFW's own error."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return "DISPLAY is unset"
    import warnings

    import glfw

    saved = os.dup(2)  # Xlib writes its complaints (an X server that refuses us) to the C stderr: quiet them
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # GLFW's own message, said below in one line
            opened = glfw.init()
        if opened:
            glfw.terminate()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    shown = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    return None if opened else f"GLFW cannot open the display {shown}"


def load_player(path: Path) -> Player:
    """A ppolab actor (a run folder or an actor .pt) or an ONNX export with its sidecar."""
    if path.suffix.lower() == ".onnx":
        return _onnx_player(path)
    from ppolab.ppo import checkpoint as ckpt
    from ppolab.ppo.policy import sampling_params
    from ppolab.ppo.sampling_policy import SamplingPolicy

    actor, meta = ckpt.load_actor(path)
    policy = SamplingPolicy(sampling_params(actor))
    return Player(policy, lambda: policy.reset(slice(None)), meta["env"], meta.get("env_config"),
                  ckpt.describe(ckpt.find_actor(path)))  # fmt: skip


def _onnx_player(path: Path) -> Player:
    """The exported file and its contract only: the env the sidecar names, raw observations in."""
    import onnxruntime

    side = path.with_name(path.name + ".json")
    if not path.is_file() or not side.is_file():
        missing = path if not path.is_file() else side
        raise UserError(f"{missing}: no such file (an ONNX policy plays with its sidecar: ppolab export RUN --onnx "
                        f"{path.name} writes both)")  # fmt: skip
    try:
        contract = json.loads(side.read_text())
        env_name, obs_dim = contract["env"], int(contract["obs_dim"])
        session = onnxruntime.InferenceSession(str(path))
    except (ValueError, KeyError, TypeError, OSError) as exc:
        raise UserError(f"{side}: not a ppolab export's sidecar ({type(exc).__name__}: {exc}); export it "
                        "again") from None  # fmt: skip
    except Exception as exc:  # onnxruntime's own errors: a file that is not an ONNX model
        raise UserError(f"{path}: onnxruntime cannot load it ({str(exc).splitlines()[0]})") from None
    widths = [(s["name"], int(s["size"])) for s in contract.get("state", {}).get("inputs", [])]
    state: dict[str, np.ndarray] = {}

    def reset() -> None:
        state.update({n: np.zeros((1, w), np.float32) for n, w in widths})

    def policy(obs: np.ndarray) -> np.ndarray:
        if obs.shape[-1] != obs_dim:
            raise UserError(f"{side}: obs_dim {obs_dim}, but {env_name} observes {obs.shape[-1]} values here; "
                            "export the policy again with this ppolab")  # fmt: skip
        action, *new = session.run(None, {"obs": obs.astype(np.float32), **state})
        state.update(zip((n for n, _ in widths), new))
        return np.asarray(action, np.float64)

    reset()
    return Player(policy, reset, env_name, contract.get("env_config"), f"Policy: {path} (ONNX, env {env_name})")


class Session:
    """One env, one policy, the keyboard's command; the viewer shows `env.datas[0]`."""

    def __init__(self, player: Player, command: Command, seed: int, horizon: int | None) -> None:
        self.info = env_info(player.env_name, player.env_config)
        if self.info.plans and command.plan is None:  # a stepper follows one kind of plan at a time, on flat ground
            command = replace(command, plan=self.info.plans[0])
        overrides = shown(player.env_name, command.overrides(player.env_name, player.env_config))
        self.env: BatchEnv = make_env(player.env_name, 1, overrides)
        self.player, self.horizon, self.episode, self.seed = player, horizon, 0, seed
        modes = self.info.modes
        mode = command.mode or ("standing" if "standing" in modes else (modes[0] if modes else None))
        self.steer = Steer(mode, command.vx, command.yaw_rate, command.plan)
        self.reset()

    def reset(self) -> None:
        """A new episode from a new start state, told what the keyboard says."""
        if self.steer.plan is not None:
            probs = [1.0 if p == self.steer.plan else 0.0 for p in self.info.plans]
            self.env.cfg = self.env.cfg.model_copy(update={"plan_probs": probs})
        self.env.reset_one(0, np.random.default_rng([self.seed, self.episode]))
        self.episode += 1
        self.player.reset()
        self.apply()
        self.obs, self.steps = self.env.observe(), 0

    def apply(self) -> None:
        if self.steer.mode is not None and self.info.modes:
            s = self.steer
            self.env.set_command(self.info.modes.index(s.mode), yaw_rate=s.yaw_rate, vx=s.vx)

    def key(self, code: int) -> None:
        before = self.steer
        self.steer, again = press(self.steer, code, self.info.modes, self.info.plans)
        if again:
            self.reset()
        elif replace(self.steer, paused=False) != replace(before, paused=False):
            self.apply()

    def step(self) -> bool:
        """One control step; True when the episode ended (fell, or the horizon) and a new one began."""
        self.obs, _, terminated = self.env.step(self.player.policy(self.obs))
        self.steps += 1
        if terminated[0] or (self.horizon is not None and self.steps >= self.horizon):
            self.reset()
            return True
        return False

    def keys(self) -> list[tuple[str, str]]:
        """The keys that do something for this task (a stepper has no speed, a walker no plans)."""
        walker, stepper = bool(self.info.modes), bool(self.info.plans)
        return [(k, v) for k, v in KEYS_HELP if (walker or k not in WALKER_KEYS) and (stepper or k not in PLAN_KEYS)]

    def overlay(self) -> tuple[str, str]:
        keys = "\n".join(k for k, _ in self.keys())
        what = "\n".join(v for _, v in self.keys())
        return (f"{self.steer.describe()}\nepisode {self.episode}, {self.steps * self.env.cfg.control_dt:.1f} s\n"
                f"{keys}", f"\n\n{what}")  # fmt: skip


def play_live(path: Path, *, command: Command, seed: int, seconds: float | None, horizon_s: float | None,
              screenshot: Path | None, out: TextIO = sys.stdout) -> int:  # fmt: skip
    """Open the viewer and play until its window closes (or `seconds` of wall time); the episodes played."""
    player = load_player(path)  # a missing or broken policy is said first, display or not
    problem = display_problem()
    if problem is not None:
        raise UserError(f"no display to open the viewer on ({problem}); run it under `xvfb-run -a`, or write a "
                        "video instead: `ppolab eval RUN --video out.mp4` (LHW's eval: --out-dir DIR)")  # fmt: skip
    import mujoco
    import mujoco.viewer

    out.write(player.source + "\n")
    session = Session(player, command, seed, None)
    dt = session.env.cfg.control_dt
    if horizon_s is not None:
        session.horizon = max(1, round(horizon_s / dt))
    keys: queue.Queue[int] = queue.Queue()
    before = set(threading.enumerate())
    try:
        handle = mujoco.viewer.launch_passive(session.env.model, session.env.datas[0], key_callback=keys.put,
                                              show_left_ui=False, show_right_ui=False)  # fmt: skip
    except Exception as exc:  # GLFW cannot open a window: no usable display
        raise UserError(f"the viewer cannot open a window ({str(exc).splitlines()[0]}); run it under `xvfb-run "
                        "-a`, or write a video instead: ppolab eval RUN --video out.mp4") from None  # fmt: skip
    out.write("Keys: " + "; ".join(f"{k}: {v}" for k, v in session.keys()) + ". Close the window to stop.\n")
    out.flush()
    try:
        _follow(handle, session)
        wall = time.perf_counter()
        simulated = _loop(handle, session, keys, seconds, mujoco)
        out.write(
            f"Played {simulated * dt:.1f} s of simulated time in {time.perf_counter() - wall:.1f} s, "
            f"{session.episode} episode(s)\n"
        )
        if screenshot is not None and not handle.is_running():
            raise UserError(f"--screenshot {screenshot}: the window was closed before --seconds had passed")
        if screenshot is not None:
            _screenshot(screenshot)
            out.write(f"Screenshot written to {screenshot}\n")
    finally:
        handle.close()
        for thread in set(threading.enumerate()) - before:  # the window's thread: let it tear down its GL
            thread.join(timeout=10)  # before the interpreter's exit does (else a crash at exit)
    return session.episode


def _follow(handle, session: Session) -> None:
    """The camera tracks the robot's root body, a little above and to the side."""
    import mujoco

    with handle.lock():
        handle.cam.type = mujoco.mjtCamera.mjCAMERA_TRACKING
        model = session.env.model
        handle.cam.trackbodyid = int(model.jnt_bodyid[0]) if model.njnt else 0
        handle.cam.distance, handle.cam.elevation, handle.cam.azimuth = 3.0, -15.0, 135.0


def _loop(handle, session: Session, keys: queue.Queue, seconds: float | None, mujoco) -> int:
    """Step in real time and show the latest state: as many control steps as the wall clock asks for between
    two frames (a slow display drops frames, never the policy's rate). Keys apply between steps; the steps."""
    dt = session.env.cfg.control_dt
    start = time.perf_counter()
    steps = due = 0
    while handle.is_running() and (seconds is None or time.perf_counter() - start < seconds):
        while not keys.empty():
            session.key(keys.get())
        behind = int((time.perf_counter() - start) / dt) - due
        for _ in range(min(behind, MAX_CATCH_UP)):  # beyond it, the simulation slows rather than jumps
            if not session.steer.paused:
                session.step()
                steps += 1
        due += behind
        with handle.lock():
            handle.user_scn.ngeom = 0
            for marker in session.env.markers(0):
                add_marker(handle.user_scn, marker)
        handle.set_texts(
            (mujoco.mjtFontScale.mjFONTSCALE_150, mujoco.mjtGridPos.mjGRID_TOPLEFT, *session.overlay())
        )  # fmt: skip (outside the lock: it takes the viewer's own)
        handle.sync()
        time.sleep(max(0.0, start + (due + 1) * dt - time.perf_counter()))  # until the next step is due
    return steps


def _screenshot(dest: Path) -> None:
    """The screen, where the viewer's window is (under xvfb-run, the window alone on its screen)."""
    import mss
    import mss.tools

    with mss.MSS() as screen:
        shot = screen.grab(screen.monitors[1])
        atomic_write_bytes(dest, mss.tools.to_png(shot.rgb, shot.size))
