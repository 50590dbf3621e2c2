"""A strip of frames of a humanoid policy, rendered by ppolab's own renderer, for the README.

    python benchmarks/filmstrip.py PATH OUT.png [--mode forward|standing] [--speed 0.3] [--seconds 8] [--frames 6]
    python benchmarks/filmstrip.py pretrained/h1 docs/h1.png --pushes
    python benchmarks/filmstrip.py pretrained/jvrc_step docs/jvrc_step.png --plan lateral

jvrc_walk's command is held (forward at --speed, or standing) so the strip shows that behaviour;
jvrc_step follows one kind of footstep plan (--plan), on flat ground.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path")
    ap.add_argument("out")
    ap.add_argument("--mode", choices=["forward", "standing"], default="forward")
    ap.add_argument("--speed", type=float, default=0.3)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--frames", type=int, default=6)
    ap.add_argument("--plan", default="forward", help="jvrc_step: forward, backward, lateral, curved or standing")
    ap.add_argument("--pushes", action="store_true", help="the env's randomisation on: pushes, masses, friction (h1)")
    args = ap.parse_args()

    os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering, chosen before MuJoCo loads
    import imageio.v2 as imageio
    import mujoco

    from ppolab.envs import env_class, make_env
    from ppolab.envs.jvrc import FORWARD, STANDING
    from ppolab.ppo.playback import load_actor
    from ppolab.ppo.policy import sampling_params
    from ppolab.ppo.rollout import EVAL_STREAM, slot_rng
    from ppolab.ppo.sampling_policy import SamplingPolicy

    actor, meta = load_actor(Path(args.path))
    fields = env_class(meta["env"]).Config.model_fields
    wanted = {"visuals": True, "stand_switch_prob": 0.0, "walk_switch_prob": 0.0}  # meshes on, the command held
    if meta["env"] == "jvrc_step":
        from ppolab.envs.jvrc_step import PLANS

        if args.plan not in PLANS:
            ap.error(f"--plan: choose one of {', '.join(PLANS)}")
        wanted["plan_probs"] = [1.0 if p == args.plan else 0.0 for p in PLANS]
        wanted["stair_ramp_start"] = 10**9
    if args.pushes:
        wanted["randomization"] = {**(meta.get("env_config") or {}).get("randomization", {}), "enabled": True}
    overrides = {**(meta.get("env_config") or {}), **{k: v for k, v in wanted.items() if k in fields}}
    env = make_env(meta["env"], 1, overrides)
    env.reset_one(0, slot_rng(0, EVAL_STREAM, 0, 0))
    policy = SamplingPolicy(sampling_params(actor))
    renderer = mujoco.Renderer(env.model, height=360, width=300)
    steps = round(args.seconds / env.cfg.control_dt)
    keep = set(np.linspace(0, steps - 1, args.frames).round().astype(int))
    frames = []
    for t in range(steps):
        if hasattr(env, "mode"):  # jvrc_walk: hold the command
            env.mode[:] = FORWARD if args.mode == "forward" else STANDING
            env.command[:] = [0.0, args.speed if args.mode == "forward" else 0.0, 0.0]
        env.step(policy(env.observe()))
        if t in keep:
            renderer.update_scene(env.batch.datas[0], camera="track")
            frames.append(renderer.render().copy())
    renderer.close()
    imageio.imwrite(args.out, np.concatenate(frames, axis=1))
    x, y = env.batch.qpos[0, 0], env.batch.qpos[0, 1]
    print(f"{args.out}: {len(frames)} frames over {args.seconds:g} s, at x = {x:.2f} m, y = {y:.2f} m at the end")


if __name__ == "__main__":
    main()
