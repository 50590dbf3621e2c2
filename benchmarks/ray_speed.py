"""Ray backend against the local one: sampling env steps/s on this machine, 2 workers each.

For each batch size (12 slots x --steps per slot), one iteration's sampling is timed
(best of --repeats) with the local backend (the driver and one forked process) and with
the Ray backend (two actors on a private local Ray, the driver only waiting). The
difference is what Ray costs per iteration: shipping the policy through the object
store, task dispatch and returning the trajectories.

    python benchmarks/ray_speed.py [--env cartpole] [--steps 50 100 200 500 1000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from humanoid_speed import best_time

from ppolab.envs import make_env
from ppolab.ppo.policy import sampling_params
from ppolab.runner.config import TrainConfig
from ppolab.runner.sampler import LocalSampler
from ppolab.runner.trainer import build_networks
from ppolab.util.files import atomic_write_text, output_file


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default="cartpole")
    ap.add_argument("--steps", type=int, nargs="+", default=[50, 100, 200, 500, 1000])
    ap.add_argument("--hidden-sizes", type=int, nargs="+", default=[64, 64])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--json", type=output_file, help="also write the figures to this file")
    args = ap.parse_args()

    import ray

    from ppolab.runner.ray_sampler import RaySampler

    os.environ.pop("RAY_ADDRESS", None)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    probe = make_env(args.env, 1)
    rows = []
    for steps in args.steps:
        cfg = TrainConfig(env=args.env, num_procs=12, max_traj_len=steps, hidden_sizes=args.hidden_sizes)
        actor, _ = build_networks(cfg, probe.obs_dim, probe.act_dim)
        params = sampling_params(actor)
        local = LocalSampler(args.env, cfg.num_slots, 2)
        try:
            t_local = best_time(local, params, steps, args.repeats)
        finally:
            local.close()
        remote = RaySampler(args.env, cfg.num_slots, 2)
        try:
            t_ray = best_time(remote, params, steps, args.repeats)
        finally:
            remote.close()
        row = {
            "batch": cfg.batch_size,
            "local_steps_per_s": cfg.batch_size / t_local,
            "ray_steps_per_s": cfg.batch_size / t_ray,
            "local_ms": 1000 * t_local,
            "ray_ms": 1000 * t_ray,
            "ray_cost_ms": 1000 * (t_ray - t_local),
            "ray_overhead": t_ray / t_local - 1,
        }
        rows.append(row)
        print(
            f"{args.env} batch {cfg.batch_size:>6,}: local {row['local_steps_per_s']:>8,.0f} steps/s "
            f"({row['local_ms']:.1f} ms), Ray {row['ray_steps_per_s']:>8,.0f} steps/s ({row['ray_ms']:.1f} ms); "
            f"Ray costs {row['ray_cost_ms']:+.1f} ms per iteration ({100 * row['ray_overhead']:+.0f}%)"
        )
    ray.shutdown()
    # the smallest batch from which on (it and every larger one) Ray costs less than 10%
    below = next((r["batch"] for k, r in enumerate(rows) if all(x["ray_overhead"] < 0.10 for x in rows[k:])), None)
    print(f"Ray's overhead is below 10% from a batch of {below:,} steps" if below else "Ray's overhead stays >= 10%")
    if args.json:
        out = {"date": time.strftime("%Y-%m-%d"), "machine": os.uname().nodename, "env": args.env, "rows": rows}
        atomic_write_text(args.json, json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
