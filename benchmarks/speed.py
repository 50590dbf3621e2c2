"""Speed benchmark for `ppolab train` on cartpole, in the learning bar's configuration.

Reports env steps per second for sampling alone (all cores, as training samples)
and for the whole training loop, and where the time goes in one sampling
process: physics (mj_step), env Python code, policy inference and the sampler's
bookkeeping; and the minibatch update.

    python benchmarks/speed.py [--iterations 20] [--json out.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import recommended
import torch

from ppolab.envs import make_env
from ppolab.ppo.adam import FlatAdam
from ppolab.ppo.policy import sampling_params
from ppolab.ppo.rollout import Trajectories, collect
from ppolab.ppo.sampling_policy import SamplingPolicy
from ppolab.ppo.storage import RolloutStorage
from ppolab.ppo.update import choose_update
from ppolab.runner.config import TrainConfig
from ppolab.runner.sampler import LocalSampler
from ppolab.runner.trainer import build_networks, hyper
from ppolab.util.files import atomic_write_text, output_file
from ppolab.util.system import available_cores


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def sampling(cfg: TrainConfig, params: dict, repeats: int) -> dict:
    sampler = LocalSampler(cfg.env, cfg.num_slots)
    try:
        sampler.sample(params, seed=0, stream=0, iteration=0, steps=cfg.max_traj_len)  # warm up workers
        k = iter(range(1, 10**6))
        seconds = best_of(
            lambda: sampler.sample(params, seed=0, stream=0, iteration=next(k), steps=cfg.max_traj_len), repeats
        )
    finally:
        sampler.close()
    return {"processes": sampler.procs, "seconds_per_iteration": seconds, "steps_per_s": cfg.batch_size / seconds}


def breakdown(cfg: TrainConfig, params: dict, slots: int, repeats: int) -> dict:
    """One sampling process's share (`slots` envs), split into its parts, in seconds per iteration."""
    steps = cfg.max_traj_len
    env = make_env(cfg.env, slots)
    total = best_of(
        lambda: collect(
            env, params, seed=0, stream=0, iteration=0, first_slot=0, total_slots=cfg.num_slots, steps=steps
        ),
        repeats,
    )
    ctrl = np.zeros((slots, env.act_dim))
    physics = best_of(lambda: [env.physics.step(ctrl) for _ in range(steps)], repeats)
    env_step = best_of(lambda: [env.step(ctrl) for _ in range(steps)], repeats)
    policy = SamplingPolicy(params)
    padded = np.zeros((cfg.num_slots, env.obs_dim), np.float32)
    inference = best_of(lambda: [policy(padded) for _ in range(steps)], repeats)
    return {
        "slots": slots,
        "total": total,
        "physics": physics,
        "env_python": env_step - physics,
        "inference": inference,
        "sampler_bookkeeping": total - env_step - inference,
    }


def random_trajectories(steps: int, slots: int, obs_dim: int, act_dim: int) -> Trajectories:
    """An iteration's worth of random experience: the update's cost does not depend on its values."""
    rng = np.random.default_rng(0)
    ended = np.zeros((steps, slots), bool)
    ended[-1] = True
    return Trajectories(
        obs=rng.standard_normal((steps, slots, obs_dim), dtype=np.float32),
        actions=0.1 * rng.standard_normal((steps, slots, act_dim), dtype=np.float32),
        rewards=rng.standard_normal((steps, slots), dtype=np.float32),
        terminated=np.zeros((steps, slots), bool),
        ended=ended,
        final_obs=rng.standard_normal((steps, slots, obs_dim), dtype=np.float32),
        ep_return=np.full((steps, slots), np.nan),
        ep_length=np.full((steps, slots), np.nan),
    )


def update(cfg: TrainConfig, repeats: int) -> dict:
    """One iteration's update on one thread, for each minibatch step (`--update exact`: autograd's
    gradients; `fused`, the default: written out), interleaved so that both see the same machine."""
    torch.set_num_threads(1)
    n = cfg.batch_size
    runs = {}
    for path in ("exact", "fused"):
        actor, critic = build_networks(cfg, 5, 1)
        opt = FlatAdam(actor, critic, cfg.lr, cfg.eps)
        storage = RolloutStorage(
            random_trajectories(cfg.max_traj_len, cfg.num_slots, 5, 1), actor, critic, gamma=cfg.gamma, lam=cfg.lam,
            recurrent=False, device=torch.device("cpu"),
        )  # fmt: skip
        kernel = choose_update(actor, critic, opt, hyper(cfg.model_copy(update={"update": path})), None)
        runs[path] = functools.partial(kernel, storage, np.random.default_rng(0))
    times: dict[str, list[float]] = {path: [] for path in runs}
    for _ in range(repeats):  # interleaved: exact, fused, exact, fused, ...
        for path, fn in runs.items():
            times[path].append(best_of(fn, 1))
    best = {path: min(t) for path, t in times.items()}
    minibatches = cfg.epochs * -(-n // cfg.minibatch_size)
    return {
        "seconds_per_iteration": best["fused"],
        "exact_seconds_per_iteration": best["exact"],
        "minibatches": minibatches,
        "ms_per_minibatch": 1e3 * best["fused"] / minibatches,
    }


def update_gflop(cfg: TrainConfig, obs_dim: int, act_dim: int) -> float:
    """Arithmetic of one update, GFLOP: per minibatch row, each linear layer's forward (2 in x out)
    and backward (twice that) for actor and critic; Adam and the elementwise ops are left out."""
    widths = [obs_dim, *cfg.hidden_sizes]
    per_row = sum(2 * a * b for a, b in zip(widths, widths[1:])) * 2 + 2 * widths[-1] * (act_dim + 1)
    return 3 * per_row * cfg.epochs * cfg.batch_size / 1e9


def matmul_gflops(n: int = 256, repeats: int = 200) -> float:
    """This machine's single-thread float32 matmul rate (n x n by n x n), GFLOP/s."""
    torch.set_num_threads(1)
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(20):
        a @ b
    return 2 * n**3 / best_of(lambda: a @ b, repeats) / 1e9


def end_to_end(iterations: int) -> dict:
    with tempfile.TemporaryDirectory() as logdir:
        cmd = recommended.train_command(iterations, 1, 10**6, logdir)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "RAY_ADDRESS": ""})
        path = next(Path(logdir).glob("*/metrics.jsonl"))
        recs = [json.loads(line) for line in path.read_text().splitlines()]
    its = [r for r in recs if r["type"] == "iteration"][2:]  # skip start-up iterations
    wall = (its[-1]["total_time"] - its[0]["total_time"]) / (len(its) - 1)
    sample = float(np.mean([r["sample_time"] for r in its[1:]]))
    optim = float(np.mean([r["optimizer_time"] for r in its[1:]]))
    return {
        "mean_sample_s": sample,
        "mean_optimizer_s": optim,
        "other_s": wall - sample - optim,  # logging, checkpoint, policy export
        "seconds_per_iteration": wall,
        "steps_per_s": its[0]["steps"] / wall,
        "fps_as_logged_at_end": its[-1]["fps"],  # includes start-up, normaliser warm-up and evaluation
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=20, help="training iterations for the end-to-end figure")
    ap.add_argument("--repeats", type=int, default=5, help="repeats per micro-measurement (best is kept)")
    ap.add_argument("--runs", type=int, default=5, help="interleaved sampling-alone / end-to-end pairs (bars)")
    ap.add_argument("--json", type=output_file, help="also write the figures to this file")
    args = ap.parse_args()

    cfg = recommended.config()
    actor, _ = build_networks(cfg, 5, 1)
    params = sampling_params(actor)
    cores = available_cores()
    result = {
        "machine": {"cores": cores, "date": time.strftime("%Y-%m-%d")},
        "sampling": sampling(cfg, params, args.repeats),
        "breakdown_one_process": breakdown(cfg, params, -(-cfg.num_slots // min(cores, cfg.num_slots)), args.repeats),
        "update": update(cfg, args.repeats),
        "end_to_end": end_to_end(args.iterations),
    }
    s, e, b, u = result["sampling"], result["end_to_end"], result["breakdown_one_process"], result["update"]
    print(f"cartpole, batch {cfg.batch_size} ({cfg.num_procs} workers x {cfg.max_traj_len} steps), {cores} cores")
    print(
        f"sampling alone : {s['steps_per_s']:>9,.0f} env steps/s ({s['processes']} processes, "
        f"{s['seconds_per_iteration'] * 1e3:.0f} ms per iteration)"
    )
    print(
        f"end to end     : {e['steps_per_s']:>9,.0f} env steps/s ({e['seconds_per_iteration'] * 1e3:.0f} ms per "
        f"iteration: sampling {e['mean_sample_s'] * 1e3:.0f}, update {e['mean_optimizer_s'] * 1e3:.0f}, "
        f"other {e['other_s'] * 1e3:.0f})"
    )
    print(f"one sampling process, {b['slots']} envs x {cfg.max_traj_len} steps, ms per iteration:")
    for key in ("physics", "env_python", "inference", "sampler_bookkeeping", "total"):
        print(f"  {key:<20} {b[key] * 1e3:7.1f}")
    print(
        f"update: {u['seconds_per_iteration'] * 1e3:.0f} ms per iteration, {u['minibatches']} minibatches, "
        f"{u['ms_per_minibatch']:.2f} ms each (--update exact: {u['exact_seconds_per_iteration'] * 1e3:.0f} ms, "
        f"{u['exact_seconds_per_iteration'] / u['seconds_per_iteration']:.2f}x)"
    )
    env = make_env(cfg.env, 1)
    gflop, peak = update_gflop(cfg, env.obs_dim, env.act_dim), matmul_gflops()
    print(f"update arithmetic: {gflop:.2f} GFLOP, {gflop / u['seconds_per_iteration']:.1f} GFLOP/s achieved; "
          f"this machine's 256 x 256 matmul: {peak:.1f} GFLOP/s on one thread")  # fmt: skip
    result["update"].update(gflop=gflop, matmul_gflops=peak)
    result["bars"] = bars(cfg, params, args)
    if args.json:
        atomic_write_text(args.json, json.dumps(result, indent=2) + "\n")


def bars(cfg: TrainConfig, params: dict, args) -> list[dict]:
    """Issue 17's two bars as ratios within each run, sampling alone and end to end interleaved:
    the update's share of an iteration (bar <= 1/3) and end to end over sampling alone (bar >= 50%)."""
    runs = []
    for k in range(args.runs):
        s, e = sampling(cfg, params, args.repeats), end_to_end(args.iterations)
        runs.append({"update_share": e["mean_optimizer_s"] / e["seconds_per_iteration"],
                     "end_to_end_over_sampling": e["steps_per_s"] / s["steps_per_s"]})  # fmt: skip
        share, ratio = runs[-1]["update_share"], runs[-1]["end_to_end_over_sampling"]
        print(f"run {k + 1}/{args.runs}: update {100 * share:.1f}% of the iteration (bar <= 33.3%); "
              f"end to end {100 * ratio:.0f}% of sampling alone (bar >= 50%)")  # fmt: skip
    shares = [r["update_share"] for r in runs]
    ratios = [r["end_to_end_over_sampling"] for r in runs]
    print(f"over {len(runs)} runs: update share median {100 * statistics.median(shares):.1f}% "
          f"(met in {sum(x <= 1 / 3 for x in shares)}/{len(runs)}); end to end median "
          f"{100 * statistics.median(ratios):.0f}% (met in {sum(x >= 0.5 for x in ratios)}/{len(runs)})")  # fmt: skip
    return runs


if __name__ == "__main__":
    main()
