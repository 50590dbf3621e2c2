"""Learning benchmark for the humanoid tasks: does each one learn, and how soon does it do what it is told?

Trains the env (one run, sequential) and reports the mean episode length and
reward over the first and the last 10 iterations, the evaluations, and a plot of
both curves against iteration (benchmarks/results/<env>_learning.png). The run
folder is kept (--logdir) so that `ppolab eval --path RUN --video out.mp4` can
show the result.

    python benchmarks/humanoid_learning.py --env h1_walk [--n-itr 1500] [--seed 1] [--logdir DIR]

Then the behaviour checks (ppolab/evaluation/behaviour.py), since a policy can earn much of the
walking reward standing: a walker (NAME_walk) walks, walks straight at three speeds for 30 s,
stands and turns in place; a stepper (NAME_step) takes every plan type's footsteps; h1 stands 10 s
under pushes. `--check PATH` runs only the checks on a policy (a run folder or pretrained/ENV);
`--curve` adds the checks of every saved checkpoint against wall time: the time to walk.

    python benchmarks/humanoid_learning.py --env jvrc_walk          # trains to the preset's n_itr, resumable
    python benchmarks/humanoid_learning.py --env jvrc_walk --check pretrained/jvrc_walk
    python benchmarks/humanoid_learning.py --env jvrc_walk --ship 1900   # actor_1900.pt -> pretrained/jvrc_walk
    python benchmarks/humanoid_learning.py --env jvrc_step --run-name jvrc_step-from-walk-s1 \
        --warm-start pretrained/jvrc_walk   # NAME_step from the same robot's walking policy
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", metavar="ENV", help="a task (`ppolab envs`; default: jvrc_walk, or with --check the "
                    "policy's own, a robot file's env included)")  # fmt: skip
    ap.add_argument("--n-itr", type=int, help="iterations in all (default: the preset's); a resumed run goes on to it")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--logdir", default="benchmarks/runs")
    ap.add_argument("--run-name", help="the run folder's name (default: ENV-learning-sSEED)")
    ap.add_argument("--continued", metavar="PATH", help="a new run starts from this run's or actor's weights")
    ap.add_argument(
        "--warm-start",
        metavar="PATH",
        help="NAME_step: a new run starts from NAME_walk's actor and critic (actor file or run), stepping in place",
    )
    ap.add_argument(
        "--check", metavar="PATH", help="only run the behaviour checks on this policy (e.g. pretrained/ENV)"
    )
    ap.add_argument("--gated", action="store_true", help="with --check: stop at the first check that cannot pass, "
                    "as training's rounds do (a policy that falls costs seconds, not minutes)")  # fmt: skip
    ap.add_argument(
        "--curve", action="store_true", help="the walk or footstep check of every checkpoint vs wall time (no training)"
    )
    ap.add_argument(
        "--ship", type=int, metavar="ITERATION", help="ship actor_ITERATION.pt to pretrained/ENV (no training)"
    )
    return ap


def main() -> None:
    ap = _parser()
    args = ap.parse_args()
    if args.check:
        from ppolab.ppo import checkpoint as ckpt

        actor = ckpt.find_actor(Path(args.check))
        trained_on = ckpt.load(actor)["meta"]["env"]  # the run's env; a robot file's travels in the actor
        if args.env not in (None, trained_on):
            ap.error(f"--env {args.env}: {actor} was trained on {trained_on}; drop --env or name that env")
        print(ckpt.describe(actor), flush=True)  # which file and iteration is checked
        print(json.dumps(checks(trained_on, Path(args.check), gate=args.gated), indent=2))
        return
    from ppolab.envs import env_names

    args.env = args.env or "jvrc_walk"
    if args.env not in env_names():
        ap.error(f"--env {args.env}: not a task; choose from {', '.join(env_names())} (`ppolab envs`)")
    run_name = args.run_name or f"{args.env}-learning-s{args.seed}"
    run_dir = Path(args.logdir) / run_name
    if args.ship is not None:
        print(ship(args.env, run_dir, args.ship))
        return
    if args.curve:  # the curve so far, without training further
        curve = check_curve(args.env, run_dir, _records(run_dir))
        for point in curve:
            print(json.dumps(point))
        print(f"Plot: {plot_curve(curve, RESULTS / f'{_plot_name(run_dir)}_curve.png', args.env)}")
        return
    if args.warm_start and not args.env.endswith("_step"):
        ap.error("--warm-start: only a stepping task (NAME_step) starts from another env's policy (NAME_walk's)")
    cmd = _train_command(args, run_name, run_dir)
    code = train(cmd)
    if code != 0:  # stopped (Ctrl-C, SIGTERM, a full disk) or failed: the run folder keeps what was done
        print(f"Training ended with exit code {code}; run the same command again to continue {run_dir}.")
        sys.exit(code)
    summary = _summary(args.env, run_dir, cmd)
    print(json.dumps(summary, indent=2))


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]


def _train_command(args: argparse.Namespace, run_name: str, run_dir: Path) -> list[str]:
    """`ppolab train` for a new run, or `--resume` for an interrupted one (it goes on where it stopped)."""
    n_itr = ["--n-itr", str(args.n_itr)] if args.n_itr else []
    if (run_dir / "last.pt").exists():
        return [sys.executable, "-m", "ppolab", "train", "--resume", str(run_dir), *n_itr]
    cmd = [sys.executable, "-m", "ppolab", "train", "--env", args.env, "--seed", str(args.seed), *n_itr]
    cmd += ["--logdir", args.logdir, "--run-name", run_name]
    cmd += ["--continued", args.continued] if args.continued else []
    if args.warm_start:
        cmd += ["--continued", str(warm_start(Path(args.warm_start), run_dir.with_name(run_dir.name + "-init")))]
    return cmd


def _summary(env: str, run_dir: Path, cmd: list[str]) -> dict:
    """The finished run's figures, checks and check curve, written to results/ENV_learning.json with a plot."""
    rows = _records(run_dir)
    iters = [r for r in rows if r["type"] == "iteration"]
    evals = [r for r in rows if r["type"] == "eval"]
    first, last = iters[:10], iters[-10:]

    def mean(rs: list[dict], key: str) -> float:
        return sum(r[key] for r in rs) / len(rs)

    summary = {
        "env": env,
        "iterations": len(iters),
        "env_steps": iters[-1]["total_steps"],
        "train_seconds": iters[-1]["total_time"],
        "first10": {"mean_eplen": mean(first, "mean_eplen"), "mean_eprew": mean(first, "mean_eprew")},
        "last10": {"mean_eplen": mean(last, "mean_eplen"), "mean_eprew": mean(last, "mean_eprew")},
        "evals": [(e["iteration"], round(e["reward"], 1), e["length"]) for e in evals],
        "command": " ".join(cmd[2:]),
    }
    summary["checks"] = checks(env, run_dir)
    if env.endswith(("_walk", "_step")):
        summary["check_curve"] = check_curve(env, run_dir, rows)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{env}_learning.json").write_text(json.dumps(summary, indent=2) + "\n")
    plot(iters, evals, RESULTS / f"{env}_learning.png", env)
    return summary


def train(cmd: list[str]) -> int:
    """Run the training; its console shows the progress. Ctrl-C reaches it too (the terminal signals the
    whole group): wait for it to stop cleanly at the end of its iteration rather than kill it."""
    proc = subprocess.Popen(cmd, env={**os.environ, "RAY_ADDRESS": ""})
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            continue


def warm_start(walk_actor: Path, out: Path) -> Path:
    """A NAME_walk actor and critic, remapped to NAME_step's observation, as a new run's start.

    The two observations share the robot state and the clock. The walker's mode one-hot and
    command are folded into the first layer's bias as "in place, no turn", so the policy starts
    out stepping on the spot; the stepper's eight target entries start with zero weights and a
    unit normaliser. Training from scratch needs LHW's budget (about 40 M steps); a stepping
    gait is what every plan builds on.
    """
    import torch

    from ppolab.envs import make_env
    from ppolab.envs.walk import IN_PLACE
    from ppolab.ppo import checkpoint as ckpt

    out.mkdir(parents=True, exist_ok=True)
    actor_path = ckpt.find_actor(walk_actor)
    for src, dst in ((actor_path, out / "actor.pt"), (ckpt.critic_beside(actor_path), out / "critic.pt")):
        if not src.is_file():  # a shipped policy has no critic: it starts fresh
            continue
        data = ckpt.load(src)
        sd, meta = data["state_dict"], data["meta"]
        if not str(meta.get("env", "")).endswith("_walk"):
            raise SystemExit(f"--warm-start: {src} is not a walking policy (NAME_walk)")
        walker = make_env(meta["env"], 1, meta.get("env_config"))
        stepper = make_env(meta["env"].removesuffix("_walk") + "_step", 1)
        shared = walker.layout["clock"].stop
        walk_extra = torch.zeros(walker.obs_dim - shared, dtype=torch.float64)
        walk_extra[IN_PLACE] = 1.0  # one-hot mode; the command (yaw rate, vx, vy) stays 0
        mean, var = sd["norm.mean"], sd["norm.var"]
        normed = ((walk_extra - mean[shared:]) / torch.sqrt(var[shared:] + 1e-8)).clamp(-10, 10).float()
        w = sd["net.0.weight"]
        sd["net.0.bias"] = sd["net.0.bias"] + w[:, shared:] @ normed
        pad = stepper.obs_dim - shared
        sd["net.0.weight"] = torch.cat([w[:, :shared], torch.zeros(w.shape[0], pad)], dim=1)
        sd["norm.mean"] = torch.cat([mean[:shared], torch.zeros(pad, dtype=torch.float64)])
        sd["norm.var"] = torch.cat([var[:shared], torch.ones(pad, dtype=torch.float64)])
        meta.update(env=stepper.name, obs_dim=stepper.obs_dim, env_config=None, warm_start=str(src))
        ckpt.atomic_save(data, dst)
    return out / "actor.pt"


def checks(env: str, path: Path, gate: bool = False) -> dict:
    """The behaviour checks of the env's policy at `path` (a run folder, a pretrained folder or an actor file);
    `gate`: stop at the first check that cannot pass."""
    from ppolab.evaluation import behaviour

    return behaviour.checks(env, path, gate=gate)


def ship(env: str, run_dir: Path, iteration: int) -> Path:
    """pretrained/ENV: the actor of `iteration` (its metadata names the env and its settings), the run's
    config.yaml, the env's full settings as env.yaml (`--yaml` takes it), and the checks' figures."""
    import shutil

    import yaml

    from ppolab.envs import env_config, make_env
    from ppolab.ppo import checkpoint as ckpt

    out = Path("pretrained") / env
    out.mkdir(parents=True, exist_ok=True)
    data = ckpt.load(run_dir / f"actor_{iteration}.pt")
    saved = env_config.load_saved(run_dir, env)  # the run's env.yaml; older actors may not carry it
    trained = env_config.restore(env, data["meta"].get("env_config")) or (saved.data() if saved else None)
    cfg = make_env(env, 1, trained).cfg.model_dump(mode="json")
    data["meta"]["env_config"] = cfg  # in full: a later change of the env's defaults does not change it
    ckpt.atomic_save(data, out / "actor.pt")
    shutil.copyfile(run_dir / "config.yaml", out / "config.yaml")
    (out / "env.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    figures = {"run": str(run_dir), "iteration": iteration, "checks": checks(env, out)}
    (out / "checks.json").write_text(json.dumps(figures, indent=2) + "\n")
    return out


def _plot_name(run_dir: Path) -> str:
    """The run's name, or SWEEP-RUN for a sweep's run (every sweep has a preset-s1)."""
    sweep = run_dir.parent.parent
    return f"{sweep.name}-{run_dir.name}" if (sweep / "sweep.yaml").is_file() else run_dir.name


def check_curve(env: str, run_dir: Path, rows: list[dict]) -> list[dict]:
    """The env's checks of every saved actor_<itr>.pt, against the env steps and wall time of its iteration:
    a walker passes when walk, straight, stand and turn all pass; a stepper when every plan type does.

    Results are kept in RUN_DIR/checks_curve.jsonl, so each checkpoint is checked once, also across
    invocations (the checkpoints themselves need not be kept). A run trained with `--check-every` checked
    itself: its own rounds (metrics.jsonl's check records) are the points, and no checkpoint is checked again.
    """
    own = {r["iteration"]: _from_training(r) for r in rows if r["type"] == "check"}
    if own:
        return [own[k] for k in sorted(own)]
    cache = run_dir / "checks_curve.jsonl"
    curve = {r["iteration"]: r for r in map(json.loads, cache.read_text().splitlines())} if cache.exists() else {}
    its = {r["iteration"]: r for r in rows if r["type"] == "iteration"}
    for path in sorted(run_dir.glob("actor_*.pt"), key=lambda p: int(p.stem.split("_")[1])):
        itr = int(path.stem.split("_")[1])
        if itr in curve:
            continue
        result, row = checks(env, path), its.get(itr, {})
        score = result["walk"]["score"] if "walk" in result else result["footsteps"]["min_share"]
        curve[itr] = {"iteration": itr, "env_steps": row.get("total_steps"), "wall_s": row.get("total_time"),
                      "passed": all(r["passed"] for r in result.values()), "score": score,
                      **{name: r["passed"] for name, r in result.items()}}  # fmt: skip
        with cache.open("a") as f:
            f.write(json.dumps(curve[itr]) + "\n")
    return [curve[k] for k in sorted(curve)]


def _from_training(row: dict) -> dict:
    """A curve point from one of training's own check rounds (`--check-every`; a round stops at its first
    failure, so a check it did not reach is absent, not failed)."""
    names = sorted({k.split(".")[0] for k in row if k.endswith(".passed") and k.count(".") == 1})
    score = row.get("walk.score", row.get("footsteps.min_share"))
    return {"iteration": row["iteration"], "env_steps": row.get("total_steps"), "wall_s": row.get("total_time"),
            "passed": bool(row["passed"]), "score": score, **{n: bool(row[f"{n}.passed"]) for n in names}}  # fmt: skip


def plot_curve(curve: list[dict], path: Path, env: str) -> Path:
    """The check's score against wall time (minutes), with the bar and the 30 min goal: the time to walk."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ppolab.util.figures import save_png

    key, bar = "score", 0.8
    hours = [(r["wall_s"] or 0) / 60 for r in curve]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    what = "walk" if env.endswith("_walk") else "footstep"
    ax.plot(hours, [r[key] for r in curve], "o-", label=f"{what} check score")
    passed = [(h, r[key]) for h, r in zip(hours, curve) if r["passed"]]
    if passed:
        ax.plot(*zip(*passed), "o", color="green", markersize=9, label="every check passed")
    ax.axhline(bar, color="crimson", linestyle="--", linewidth=1, label=f"bar {bar:g}")
    ax.axvline(30.0, color="gray", linestyle=":", linewidth=1, label="30 min goal")
    ax.set(xlabel="wall time of training (minutes)", ylabel="score", ylim=(0, 1.05), title=f"{env}: check vs wall time")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)
    return path


def plot(iters: list[dict], evals: list[dict], path: Path, env: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ppolab.util.figures import save_png

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
    save_png(fig, path)
    plt.close(fig)


if __name__ == "__main__":
    main()
