"""`ppolab eval`: run a saved actor deterministically, optionally rendering a video offscreen."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

import numpy as np

from ppolab.envs import env_config, make_env
from ppolab.errors import UserError
from ppolab.ppo import checkpoint as ckpt
from ppolab.ppo.policy import Actor, ObsNormalizer, RecurrentActor, sampling_params
from ppolab.ppo.rollout import evaluate
from ppolab.util.progress import Progress


def load_actor(path: Path) -> tuple[Actor, dict]:
    """Rebuild an actor from `actor*.pt` (state dict + meta), no pickled code involved."""
    actor_path = ckpt.find_actor(path)
    data = ckpt.load(actor_path)
    meta = data.get("meta") if isinstance(data, dict) else None
    if not meta or meta.get("kind") != "actor":
        raise UserError(f"{actor_path}: not a ppolab actor checkpoint")
    args = (ObsNormalizer(meta["obs_dim"]), meta["obs_dim"], meta["act_dim"], meta["hidden_sizes"])
    if meta.get("recurrent"):
        actor = RecurrentActor(*args, meta["std_dev"], meta["learn_std"])
    else:
        actor = Actor(*args, meta["std_dev"], meta["learn_std"], meta.get("activation", "tanh"))
    actor.load_state_dict(data["state_dict"])
    if meta.get("env_config") is None and meta.get("env"):  # an actor saved before policies carried it in full
        meta["env_config"] = env_config.load_saved(actor_path.parent, meta["env"])  # its run's env.yaml, if any
    return actor, meta


def play(
    path: Path, *, episodes: int, seed: int, max_steps: int | None, video: str | None, out: TextIO = sys.stdout
) -> tuple[np.ndarray, np.ndarray]:
    actor, meta = load_actor(path)
    steps = max_steps or meta["max_traj_len"]
    params = sampling_params(actor)
    env = make_env(meta["env"], episodes, meta.get("env_config"))
    returns, lengths = evaluate(env, params, seed=seed, steps=steps)
    out.write(f"Policy: {ckpt.find_actor(path)} (env {meta['env']}, iteration {meta['iteration']})\n")
    for i, (r, n) in enumerate(zip(returns, lengths), start=1):
        out.write(f"Episode {i}: length {int(n)}, return {r:.3f}\n")
    out.write(
        f"Mean return: {returns.mean():.3f} +- {returns.std():.3f} over {episodes} episodes "
        f"(mean length {lengths.mean():.1f})\n"
    )
    if video:
        n = render_video(
            Path(video), meta["env"], params, seed=seed, steps=steps, fps=round(1.0 / env.cfg.control_dt),
            overrides=meta.get("env_config"),
        )  # fmt: skip
        out.write(f"Video of episode 1 ({n} frames) written to {video}\n")
    return returns, lengths


def check_video_path(video: str) -> None:
    """Refuse a --video path that could not be written, before any episode runs."""
    path = Path(video)
    if path.suffix.lower() != ".mp4":
        raise UserError(f"--video {video}: name an .mp4 file (it is encoded with H.264)")
    if path.is_dir():
        raise UserError(f"--video {video}: is a folder; name an .mp4 file inside it")
    parent = next(p for p in path.absolute().parents if p.exists())  # the folders below it are made
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise UserError(f"--video {video}: cannot write in {parent}; choose another place")
    if parent == path.absolute().parent:  # some folders (/proc, read-only mounts) say yes and then refuse
        probe = _temp_path(path)
        try:
            probe.open("ab").close()  # a stale one is ours, from a killed eval
        except OSError as exc:
            reason = f"cannot write in {parent} ({exc.strerror})"
            raise UserError(f"--video {video}: {reason}; choose another place") from None
        probe.unlink()


def _temp_path(path: Path) -> Path:
    """Where the video is encoded before it is renamed into place."""
    return path.with_name(f".{path.stem}.tmp{path.suffix}")


def render_video(
    path: Path,
    env_name: str,
    params: dict,
    *,
    seed: int,
    steps: int,
    fps: int,
    size: tuple[int, int] = (480, 640),
    overrides: dict | None = None,
) -> int:
    """Render episode 1 (same initial state as in `play`) headless into an mp4; the frame count.

    Frames go to the encoder as they are rendered, so a long episode needs no memory for
    them, and the file appears whole (temp file, then rename) or not at all.
    """
    import imageio.v2 as imageio
    import mujoco

    from ppolab.envs import env_class

    if "visuals" in env_class(env_name, overrides).Config.model_fields:  # the robot's meshes: same physics, real looks
        overrides = {**(overrides or {}), "visuals": True}
    env = make_env(env_name, 1, overrides)
    try:
        renderer = mujoco.Renderer(env.model, height=size[0], width=size[1])
    except Exception as exc:  # no GL: say which packages give one
        raise UserError(
            f"--video: offscreen rendering is unavailable ({exc}); install Debian's libegl1 and "
            "libgl1-mesa-dri (MUJOCO_GL=egl) or libosmesa6 (MUJOCO_GL=osmesa)"
        ) from None
    tmp = _temp_path(path)
    progress = Progress(f"Rendering episode 1 to {path.name}", steps, "frames (at most)")
    frames = 0
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with imageio.get_writer(tmp, fps=fps, codec="libx264", macro_block_size=8) as writer:

            def grab(e) -> None:
                nonlocal frames
                renderer.update_scene(e.datas[0], camera=0)
                writer.append_data(renderer.render())
                frames += 1
                progress.advance()

            evaluate(env, params, seed=seed, steps=steps, on_step=grab)
        os.replace(tmp, path)
    except OSError as exc:
        reason = exc.strerror or str(exc).splitlines()[0]
        raise UserError(f"--video {path}: cannot write it ({reason})") from None
    finally:
        progress.close()
        renderer.close()
        tmp.unlink(missing_ok=True)
    return frames
