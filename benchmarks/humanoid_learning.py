"""Learning benchmark for the humanoid tasks: does each one learn?

Trains the env (one run, sequential) and reports the mean episode length and
reward over the first and the last 10 iterations, the evaluations, and a plot of
both curves against iteration (benchmarks/results/<env>_learning.png). The run
folder is kept (--logdir) so that `ppolab eval --path RUN --video out.mp4` can
show the result.

    python benchmarks/humanoid_learning.py --env h1 [--n-itr 300] [--seed 1] [--logdir DIR]

For jvrc_walk it also checks for a gait, since a policy can earn much of the reward by
standing: 8 envs held in the forward mode at 0.4 m/s for 10 s with the trained policy
(mean action), reporting the distance walked and the touchdowns of each foot.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ENVS = ("h1", "jvrc_walk", "jvrc_step")  # each trains with its preset (`ppolab envs`)
RESULTS = Path(__file__).parent / "results"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default="h1", choices=ENVS)
    ap.add_argument("--n-itr", type=int, help="iterations in all (default: the preset's); a resumed run goes on to it")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--logdir", default="benchmarks/runs")
    args = ap.parse_args()
    run_name = f"{args.env}-learning-s{args.seed}"
    run_dir = Path(args.logdir) / run_name
    n_itr = ["--n-itr", str(args.n_itr)] if args.n_itr else []
    cmd = [sys.executable, "-m", "ppolab", "train", "--env", args.env, "--seed", str(args.seed), *n_itr]
    cmd += ["--logdir", args.logdir, "--run-name", run_name]
    if (run_dir / "last.pt").exists():  # an interrupted run goes on where it stopped
        cmd = [sys.executable, "-m", "ppolab", "train", "--resume", str(run_dir), *n_itr]
    subprocess.run(cmd, check=True, env={**os.environ, "RAY_ADDRESS": ""})  # its console shows the progress

    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    iters = [r for r in rows if r["type"] == "iteration"]
    evals = [r for r in rows if r["type"] == "eval"]
    first, last = iters[:10], iters[-10:]

    def mean(rs: list[dict], key: str) -> float:
        return sum(r[key] for r in rs) / len(rs)

    summary = {
        "env": args.env,
        "iterations": len(iters),
        "env_steps": iters[-1]["total_steps"],
        "train_seconds": iters[-1]["total_time"],
        "first10": {"mean_eplen": mean(first, "mean_eplen"), "mean_eprew": mean(first, "mean_eprew")},
        "last10": {"mean_eplen": mean(last, "mean_eplen"), "mean_eprew": mean(last, "mean_eprew")},
        "evals": [(e["iteration"], round(e["reward"], 1), e["length"]) for e in evals],
        "command": " ".join(cmd[2:]),
    }
    if args.env == "jvrc_walk":
        summary["gait"] = gait_check(run_dir)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.env}_learning.json").write_text(json.dumps(summary, indent=2) + "\n")
    plot(iters, evals, RESULTS / f"{args.env}_learning.png", args.env)
    print(json.dumps(summary, indent=2))


def gait_check(run_dir: Path, speed: float = 0.4, steps: int = 400, n: int = 8) -> dict:
    """Forward distance and foot touchdowns of the trained policy under a held forward command."""
    import numpy as np

    from ppolab.envs import make_env
    from ppolab.ppo.playback import load_actor
    from ppolab.ppo.policy import sampling_params
    from ppolab.ppo.rollout import EVAL_STREAM, slot_rng
    from ppolab.ppo.sampling_policy import SamplingPolicy

    actor, _ = load_actor(run_dir)
    policy = SamplingPolicy(sampling_params(actor))
    env = make_env("jvrc_walk", n)
    for i in range(n):
        env.reset_one(i, slot_rng(0, EVAL_STREAM, 0, i))
    start = env.batch.qpos[:, 0].copy()
    alive = np.ones(n, bool)
    on_ground = []
    obs = None
    for _ in range(steps):
        env.mode[:] = 2  # forward, straight, held for the whole episode
        env.command[:] = [0.0, speed, 0.0]
        obs = env.observe() if obs is None else obs
        obs, _, terminated = env.step(policy(obs))
        alive &= ~terminated
        on_ground.append(env.batch.sensors[:, 0:2] > 0.05 * env.weight)  # right, left
    contact = np.array(on_ground, dtype=int)  # steps, envs, feet
    touchdowns = (np.diff(contact, axis=0) == 1).sum(axis=0)  # envs, feet
    return {
        "command_vx": speed,
        "seconds": steps * env.cfg.control_dt,
        "still_up": int(alive.sum()),
        "distance_m": round(float(np.mean(env.batch.qpos[:, 0] - start)), 2),
        "touchdowns_per_foot": round(float(touchdowns.mean()), 1),
    }


def plot(iters: list[dict], evals: list[dict], path: Path, env: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    x = [r["iteration"] for r in iters]
    ax1.plot(x, [r["mean_eplen"] for r in iters], lw=1, label="train")
    ax1.plot([e["iteration"] for e in evals], [e["length"] for e in evals], "o-", label="eval")
    ax1.set(xlabel="iteration", ylabel="mean episode length (steps)", title=f"{env}: episode length")
    ax2.plot(x, [r["mean_eprew"] for r in iters], lw=1, label="train")
    ax2.plot([e["iteration"] for e in evals], [e["reward"] for e in evals], "o-", label="eval")
    ax2.set(xlabel="iteration", ylabel="mean episode reward", title=f"{env}: reward")
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
