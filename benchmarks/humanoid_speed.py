"""Humanoid sampling speed against the raw physics ceiling of the same model.

For each humanoid env: the ceiling is `mj_step(model, data, substeps)` in a bare
loop (one control period per call, a fallen robot put back on its feet), run in
one process per core, all cores at once. Sampling is `ppolab train`'s sampler
with a trained-size policy (256 x 256) over 12 batched envs on all cores. The
ratio is the share of the machine's physics throughput that sampling keeps. A second ceiling
replays the very states sampling visits (`replay_ceiling`): the same ratio without guessing how
much a stumbling robot costs the solver against a standing one, measured in pairs (`paired_share`:
each round an iteration of sampling, then the replay of that iteration; the median of the rounds),
the figure the bar is judged by.

Two more figures per env: sampling with the shipped policy (pretrained/ENV: a robot that
walks, the workload once training has learned, where the untrained one falls every second or
two), and where one sampling process's time goes: mj_step timed inside the step loop, against
the same model standing (falls and stumbles cost the solver more), and everything else.

    python benchmarks/humanoid_speed.py [--envs h1 jvrc_walk ...] [--envs-per-worker 1] [--json out.json]

The default envs are every shipped policy's (pretrained/*).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mujoco
import numpy as np

from ppolab.envs import make_env
from ppolab.ppo.checkpoint import load_actor
from ppolab.ppo.policy import sampling_params
from ppolab.runner.config import TrainConfig
from ppolab.runner.sampler import LocalSampler, split_slots
from ppolab.runner.trainer import build_networks
from ppolab.util.files import atomic_write_text, output_file
from ppolab.util.system import available_cores

HIDDEN = [256, 256]
PRETRAINED = Path(__file__).parent.parent / "pretrained"


def _ceiling_worker(env_name: str, control_steps: int, queue) -> None:
    env = make_env(env_name, 1)
    b = env.batch
    m, d = b.base, mujoco.MjData(b.base)
    home = b.nominal_qpos
    ctrl = home[b._act_qpos]
    low = 0.6 * home[2]  # fallen: the root below 60% of its standing height

    def reset() -> None:
        mujoco.mj_resetData(m, d)
        d.qpos[:] = home
        d.ctrl[:] = ctrl
        mujoco.mj_forward(m, d)

    reset()
    height = b.layout.root_body
    start = time.perf_counter()
    for _ in range(control_steps):
        mujoco.mj_step(m, d, b.substeps)
        if d.xpos[height, 2] < low:
            reset()
    queue.put(control_steps / (time.perf_counter() - start))


def ceiling(env_name: str, control_steps: int, procs: int) -> float:
    return _summed_rates(_ceiling_worker, [(env_name, control_steps)] * procs)


def _summed_rates(target, args: list[tuple], barrier: bool = False) -> float:
    """Run target(*a, [barrier,] queue) in one forked process per entry of `args`, all at once; the sum of
    the rates they put on the queue (with `barrier`, they wait for each other before timing)."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    extra = (ctx.Barrier(len(args)), queue) if barrier else (queue,)
    workers = [ctx.Process(target=target, args=(*a, *extra)) for a in args]
    for w in workers:
        w.start()
    rates = [queue.get() for _ in workers]
    for w in workers:
        w.join()
    return float(sum(rates))


def _policy(env_name: str, trained: Path | None) -> tuple[object, dict | None]:
    """The sampling policy's parameters and the env settings it runs on: an untrained 256 x 256 actor on
    the env's defaults, or the `trained` one on the settings it was trained with."""
    if trained is None:
        probe = make_env(env_name, 1)
        actor, _ = build_networks(TrainConfig(env=env_name, hidden_sizes=HIDDEN), probe.obs_dim, probe.act_dim)
        return sampling_params(actor), None
    actor, meta = load_actor(trained)
    return sampling_params(actor), meta.get("env_config")


def best_time(sampler, params: dict, steps: int, repeats: int) -> float:
    """Seconds of one iteration's sampling, best of `repeats` after a warm-up iteration."""
    sampler.sample(params, seed=0, stream=0, iteration=0, steps=steps)
    best = float("inf")
    for k in range(1, repeats + 1):
        t = time.perf_counter()
        sampler.sample(params, seed=0, stream=0, iteration=k, steps=steps)
        best = min(best, time.perf_counter() - t)
    return best


def sampling(
    env_name: str, steps: int, repeats: int, envs_per_worker: int, trained: Path | None = None
) -> tuple[float, int]:
    """Env steps per second of the trainer's sampler: an untrained 256 x 256 policy (a robot that stumbles
    and falls, as at the start of training), or the `trained` policy (a robot that walks, as later on)."""
    cfg = TrainConfig(
        env=env_name, num_procs=12, num_envs_per_worker=envs_per_worker, max_traj_len=steps, hidden_sizes=HIDDEN
    )
    params, overrides = _policy(env_name, trained)
    sampler = LocalSampler(env_name, cfg.num_slots, overrides=overrides)
    try:
        best = best_time(sampler, params, steps, repeats)
    finally:
        sampler.close()
    return cfg.batch_size / best, sampler.procs


def replay_ceiling(
    env_name: str, steps: int, procs: int, params, overrides: dict | None, iteration: int, slots: int = 12
) -> float:
    """The ceiling on the very states sampling visits: control steps per second of bare `mj_step`, all
    processes at once. Each process samples its share of the slots exactly as a sampling worker does in
    `iteration` (the same policy and seed: the same states, step for step), recording each env's whole
    integration state (positions, velocities, controls, applied forces, warm start) before every control
    step; then, with every process ready, it sets each recorded state and steps it again in a bare loop, and
    takes away the time of setting them (a loop that only sets). Falls, contacts and randomised models are
    the sampled ones: none of the standing ceiling's guesswork about what sampling steps."""
    args = [(first, env_name, overrides, params, n, steps, iteration, slots) for first, n in split_slots(slots, procs)]
    return _summed_rates(_replay_worker, args, barrier=True)


def paired_share(env_name: str, steps: int, rounds: int, slots: int = 12, trained: Path | None = None) -> dict:
    """Sampling's share of the replayed ceiling, measured in pairs: each round times one iteration of the
    trainer's sampler, then replays that very iteration's states in bare `mj_step` loops, seconds later on
    the same cores; the share is the median of the rounds' ratios. Both sides of each ratio see the same
    states and nearly the same moment of this host's noise, which moved unpaired figures by 20 points
    between runs."""
    params, overrides = _policy(env_name, trained)
    sampler = LocalSampler(env_name, slots, overrides=overrides)
    pairs = []
    try:
        sampler.sample(params, seed=0, stream=0, iteration=0, steps=steps)  # warm-up
        for k in range(1, rounds + 1):
            t = time.perf_counter()
            sampler.sample(params, seed=0, stream=0, iteration=k, steps=steps)
            rate = slots * steps / (time.perf_counter() - t)
            replay = replay_ceiling(env_name, steps, sampler.procs, params, overrides, k, slots)
            pairs.append((rate, replay))
    finally:
        sampler.close()
    ratios = [rate / replay for rate, replay in pairs]
    return {"share": float(np.median(ratios)), "shares": ratios, "sampling_steps_per_s": [r for r, _ in pairs],
            "replay_steps_per_s": [c for _, c in pairs], "processes": sampler.procs}  # fmt: skip


def _replay_worker(first: int, env_name, overrides, params, envs: int, steps: int, iteration: int, slots: int,
                   ready, queue) -> None:  # fmt: skip
    from ppolab.envs import humanoid
    from ppolab.ppo.rollout import collect

    env = make_env(env_name, envs, overrides)
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    records, step = [], mujoco.mj_step

    def recorded(m, d, n=1):
        state = np.empty(mujoco.mj_stateSize(m, spec))
        mujoco.mj_getState(m, d, state, spec)
        records.append((m, d, state, n))
        step(m, d, n)

    humanoid.mujoco.mj_step = recorded  # the batch (and BatchPhysics) look mj_step up at every step
    collect(env, params, seed=0, stream=0, iteration=iteration, first_slot=first, total_slots=slots, steps=steps)
    humanoid.mujoco.mj_step = step
    set_state = mujoco.mj_setState
    ready.wait()
    t = time.perf_counter()
    for m, d, state, n in records:
        set_state(m, d, state, spec)
        step(m, d, n)
    both = time.perf_counter() - t
    t = time.perf_counter()
    for m, d, state, _ in records:
        set_state(m, d, state, spec)
    setting = time.perf_counter() - t
    queue.put(len(records) / (both - setting))


def where_time_goes(env_name: str, envs: int = 6, steps: int = 400) -> dict:
    """One process, as one sampling worker: mj_step's time per env step (timed inside the step loop)
    against the same model standing still, and the time left to everything else (rewards, observations,
    the policy, bookkeeping)."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_split_worker, args=(env_name, envs, steps, queue))
    proc.start()
    out = queue.get()
    proc.join()
    return out


def _split_worker(env_name: str, envs: int, steps: int, queue) -> None:
    from ppolab.envs import humanoid
    from ppolab.ppo.rollout import collect

    env = make_env(env_name, envs)
    params, _ = _policy(env_name, None)
    collect(env, params, seed=0, stream=0, iteration=0, first_slot=0, total_slots=12, steps=50)
    physics, step = [0.0], mujoco.mj_step

    def timed(m, d, k=1):
        t = time.perf_counter()
        step(m, d, k)
        physics[0] += time.perf_counter() - t

    humanoid.mujoco.mj_step = timed  # the batch looks mj_step up at every apply()
    t = time.perf_counter()
    collect(env, params, seed=0, stream=0, iteration=1, first_slot=0, total_slots=12, steps=steps)
    total = time.perf_counter() - t
    humanoid.mujoco.mj_step = step
    stand = 1.0 / _standing_rate(env_name, 2000)
    n = envs * steps
    queue.put({"mj_step_us": 1e6 * physics[0] / n, "other_us": 1e6 * (total - physics[0]) / n,
               "physics_share": physics[0] / total, "mj_step_over_ceiling": physics[0] / n / stand})  # fmt: skip


def _standing_rate(env_name: str, control_steps: int) -> float:
    """Control steps per second of the model standing (the ceiling's loop), in this process."""
    queue: list[float] = []

    class Box:
        def put(self, x: float) -> None:
            queue.append(x)

    _ceiling_worker(env_name, control_steps, Box())
    return queue[0]


def end_to_end(env_name: str, iterations: int) -> dict:
    """`ppolab train --env NAME` with its preset (LHW's settings for the JVRC tasks) for a few iterations:
    env steps per second over whole iterations (sampling, update, logging), the first two left out."""
    with tempfile.TemporaryDirectory() as logdir:
        cmd = [sys.executable, "-m", "ppolab", "train", "--env", env_name, "--n-itr", str(iterations),
               "--eval-freq", str(10**6), "--logdir", logdir]  # fmt: skip
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "RAY_ADDRESS": ""})
        path = next(Path(logdir).glob("*/metrics.jsonl"))
        its = [r for r in map(json.loads, path.read_text().splitlines()) if r["type"] == "iteration"][2:]
    wall = (its[-1]["total_time"] - its[0]["total_time"]) / (len(its) - 1)
    update = float(np.mean([r["optimizer_time"] for r in its[1:]]))
    return {"steps_per_s": its[0]["steps"] / wall, "seconds_per_iteration": wall, "update_s": update,
            "steps_per_iteration": its[0]["steps"]}  # fmt: skip


def _share_line(paired: dict) -> str:
    shares = sorted(paired["shares"])
    return (
        f"{100 * paired['share']:.0f}% (rounds {100 * shares[0]:.0f}-{100 * shares[-1]:.0f}%; sampling "
        f"{np.median(paired['sampling_steps_per_s']):,.0f} env steps/s)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    shipped = sorted(p.name for p in PRETRAINED.iterdir() if p.is_dir())
    ap.add_argument("--envs", nargs="+", default=shipped, help=f"default: {' '.join(shipped)}")
    ap.add_argument("--steps", type=int, default=400, help="steps per env per iteration (default: 400)")
    ap.add_argument("--repeats", type=int, default=3, help="best of, for the standing ceiling and sampling alone")
    ap.add_argument("--rounds", type=int, default=5, help="paired sampling/replay rounds per policy (default: 5)")
    ap.add_argument("--envs-per-worker", type=int, default=1, help="envs per logical worker (12 workers; default: 1)")
    ap.add_argument("--end-to-end", nargs="*", default=["jvrc_walk"], metavar="ENV",
                    help="envs whose preset also trains, end to end against sampling alone")  # fmt: skip
    ap.add_argument("--iterations", type=int, default=8, help="iterations of each end-to-end run (default: 8)")
    ap.add_argument("--runs", type=int, default=3, help="interleaved sampling-alone / end-to-end pairs")
    ap.add_argument("--json", type=output_file, help="also write the figures to this file")
    args = ap.parse_args()
    cores = available_cores()
    results = {}
    for name in args.envs:
        make_env(name, 1)  # build the model cache outside the timings
        # best of --repeats for both figures: the same treatment of noise on each side of the ratio
        raw = max(ceiling(name, 12 * args.envs_per_worker * args.steps // cores, cores) for _ in range(args.repeats))
        rate, procs = sampling(name, args.steps, args.repeats, args.envs_per_worker)
        results[name] = {
            "ceiling_steps_per_s": raw,
            "sampling_steps_per_s": rate,
            "ratio": rate / raw,
            "processes": procs,
            "cores": cores,
            "envs": 12 * args.envs_per_worker,
        }
        print(
            f"{name}: sampling {rate:,.0f} env steps/s ({12 * args.envs_per_worker} envs) on {procs} processes; "
            f"raw mj_step ceiling {raw:,.0f} control steps/s on {cores} cores; {100 * rate / raw:.0f}% of the ceiling"
        )
        slots = 12 * args.envs_per_worker
        paired = paired_share(name, args.steps, args.rounds, slots)
        results[name] |= {"replay": paired, "ratio_replay": paired["share"]}
        print(f"  share of the ceiling on the sampled states (replayed, {procs} processes at once; median of "
              f"{args.rounds} paired rounds): {_share_line(paired)}")  # fmt: skip
        shipped = PRETRAINED / name
        if shipped.is_dir():  # the robot walking (the shipped policy): the workload once training has learned
            walking = paired_share(name, args.steps, args.rounds, slots, trained=shipped)
            results[name] |= {"replay_trained": walking, "ratio_trained_replay": walking["share"]}
            print(f"  the same with the shipped policy: {_share_line(walking)}")
        split = where_time_goes(name)
        results[name]["split"] = split
        print(f"  where the time goes (one core, 6 envs, untrained policy): mj_step {split['mj_step_us']:.0f} us "
              f"per env step, {split['mj_step_over_ceiling']:.2f}x the standing robot's; the rest "
              f"{split['other_us']:.0f} us ({100 * split['physics_share']:.0f}% physics)")  # fmt: skip
    for name in args.end_to_end:  # bar: end to end >= 60% of sampling alone, the preset's settings
        pairs = []
        for k in range(args.runs):
            alone, _ = sampling(name, args.steps, args.repeats, args.envs_per_worker)
            e = end_to_end(name, args.iterations)
            pairs.append({"sampling_steps_per_s": alone, **e, "ratio": e["steps_per_s"] / alone})
            print(f"{name} end to end, run {k + 1}/{args.runs}: {e['steps_per_s']:,.0f} env steps/s "
                  f"({e['seconds_per_iteration']:.2f} s per iteration, update {e['update_s']:.2f} s) = "
                  f"{100 * pairs[-1]['ratio']:.0f}% of sampling alone ({alone:,.0f}); bar >= 60%")  # fmt: skip
        results.setdefault(name, {})["end_to_end"] = pairs
    if args.json:
        record = {"date": time.strftime("%Y-%m-%d"), "machine": os.uname().nodename, **results}
        atomic_write_text(args.json, json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
