"""`ppolab` command line: parses arguments and calls into the library, nothing more."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ppolab import __version__
from ppolab.cli.args import Parser, add_model_flags, build
from ppolab.errors import UserError
from ppolab.ppo.config import TrainConfig, flag

TRAIN_HELP = """Train a PPO policy. Each run gets a new folder under --logdir with its config,
command line, metrics.jsonl, TensorBoard events, train.log and checkpoints.

example:
  ppolab train --env cartpole --logdir logs --n-itr 500 --std-dev 0.15 --learn-std \\
      --entropy-coeff 0.01 --minibatch-size 256 --max-traj-len 500 --seed 1
  ppolab train --resume logs/20261130-101500-cartpole-s1     # continue an interrupted run
"""

EVAL_HELP = """Run a trained policy deterministically (the mean action), headless, and print each
episode's length and return. --video renders episode 1 offscreen to an mp4 file."""


def _add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train", help="train a policy", description=TRAIN_HELP, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_model_flags(p, TrainConfig)
    p.add_argument(
        "--resume", metavar="RUN_DIR", help="continue an interrupted run from its last checkpoint, in the same folder"
    )
    p.add_argument(
        "--sampler-procs",
        type=int,
        metavar="N",
        help="sampling processes (default: one per available core); never changes the results",
    )


def _add_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate a trained policy", description=EVAL_HELP)
    p.add_argument("--path", required=True, help="a run folder (uses its best actor.pt) or an actor .pt file")
    p.add_argument("--episodes", type=int, default=5, help="episodes to run (default: 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial states (default: 0)")
    p.add_argument("--max-steps", type=int, help="episode horizon (default: the training horizon)")
    p.add_argument("--video", metavar="FILE.mp4", help="render the first episode offscreen to this file")


SWEEP_HELP = """Plan and run a sweep: a sweep.yaml with a hypothesis and named runs (see
experiments/sweeps/example/sweep.yaml). Without a flag: validate, show the plan, ask
for approval, then run the jobs one at a time, recording state.json after every
run. Launching again resumes: done runs are skipped, interrupted ones continue
from their last checkpoint.

examples:
  ppolab sweep experiments/sweeps/example --dry-run
  ppolab sweep experiments/sweeps/example --yes
  ppolab sweep example --status          # a name is looked up under experiments/sweeps
  ppolab sweep --list
"""


def _add_launch_flags(p: argparse.ArgumentParser) -> None:
    """Flags shared by every command that launches a sweep."""
    p.add_argument("--yes", action="store_true", help="launch without asking for approval")
    p.add_argument("--detach", action="store_true", help="run in the background; follow with ppolab sweep --status")
    p.add_argument("--no-wait", action="store_true", help="refuse instead of queueing when another job runs")
    p.add_argument(
        "--max-retries",
        type=int,
        default=2,
        metavar="N",
        help="extra attempts for a failed or interrupted run (default: 2)",
    )
    p.add_argument("--root", default="experiments/sweeps", help="where sweeps live (default: experiments/sweeps)")


def _add_sweep(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="plan, run and follow a series of training runs",
        description=SWEEP_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("sweep_dir", nargs="?", metavar="SWEEP_DIR", help="sweep folder (or its name under --root)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--info", action="store_true", help="show metadata, hypothesis, run count, estimated steps")
    mode.add_argument("--dry-run", action="store_true", help="validate and print the plan; change nothing")
    mode.add_argument("--status", action="store_true", help="one row per run: state, iteration, elapsed, ETA")
    mode.add_argument("--list", action="store_true", help="every sweep under --root with done/total")
    _add_launch_flags(p)


EXPERIMENT_HELP = """A quick experiment from the command line: writes the equivalent sweep.yaml under
experiments/sweeps/NAME/, then the same plan, approval and launch as ppolab sweep.
Running the same command again resumes it.

example:
  ppolab experiment gamma --env cartpole --vary gamma=0.95,0.99,0.999 --seeds 3 --n-itr 300
"""


def _add_experiment(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "experiment",
        help="vary train flags from the command line (writes a sweep)",
        description=EXPERIMENT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("name", metavar="NAME", help="sweep name: experiments/sweeps/NAME")
    p.add_argument(
        "--vary",
        action="append",
        required=True,
        metavar="FLAG=V1,V2",
        help="values to try for a train flag; repeat for a grid over several flags",
    )
    p.add_argument("--seeds", type=int, metavar="N", help="run every configuration with seeds 1..N")
    p.add_argument("--hypothesis", default="", help="what the experiment should show")
    _add_launch_flags(p)
    add_model_flags(p, TrainConfig, skip={"logdir", "run_name", "continued", "experiment_tag"})


ANALYZE_HELP = """Read a run and report: final mean reward, peak eval, and stable or the anomalies
found (nan/inf, critic divergence, high KL, high clip fraction, collapsed action
noise, declining reward). PATH is a run folder (metrics.jsonl preferred), a sweep
folder (every run), or a plain stdout log of ppolab or another PPO trainer that
prints the same table. Thresholds: defaults, then --config FILE (YAML, same keys),
then the flags below."""


def _add_analyze(sub: argparse._SubParsersAction) -> None:
    from ppolab.analysis.anomalies import Thresholds

    p = sub.add_parser("analyze", help="report on a run, a sweep or a log file", description=ANALYZE_HELP)
    p.add_argument("path", metavar="PATH", help="run folder, sweep folder or log file")
    p.add_argument("--json", action="store_true", help="print JSON for scripts (a list for a sweep)")
    p.add_argument("--config", metavar="FILE", help="YAML file of anomaly thresholds")
    add_model_flags(p, Thresholds)


def _add_compare_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="compare runs: table, analysis, seed statistics",
        description="Compare a sweep's runs, or the run folders given: a table, then an analysis computed "
        "from their configs and metrics (best run, effect per parameter, instability, mean and IQM across "
        "seeds with 95%% intervals, probability of improvement, recommendations).",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a sweep folder, or run folders (control first)")
    p = sub.add_parser(
        "report",
        help="write results.md and plots for a sweep",
        description="Write SWEEP_DIR/results.md (hypothesis, plan, comparison, analysis, verdict) with PNG "
        "plots in SWEEP_DIR/plots, and a dated entry in experiments/experiment-tracker.md.",
    )
    p.add_argument("sweep_dir", metavar="SWEEP_DIR")


def _add_ops(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor",
        help="machine readiness and credentials (never their values)",
        description="Report versions, cores, GPU, Slurm and Docker, and whether W&B, AWS and Hugging Face "
        "credentials are set, missing or placeholder-like. Secret values are never printed.",
    )
    p.add_argument(
        "--require",
        default="",
        metavar="LIST",
        help="comma-separated credentials that must be ready (wandb,aws,hf); exit 1 if not",
    )
    p = sub.add_parser(
        "repro",
        help="how to reproduce a run (--run: do it)",
        description="Print a run's exact command, git commit (with a warning and the saved diff "
        "if the tree was dirty), package versions, seed and device. --run re-executes it into a "
        "new run folder.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--run", action="store_true", help="train again with the same command, into a new folder")
    p.add_argument("--logdir", help="where the new run folder goes (default: the original --logdir)")


def make_parser() -> Parser:
    parser = Parser(prog="ppolab", description="Fast PPO for MuJoCo robot tasks, and experiment tooling.")
    parser.add_argument("--version", action="version", version=f"ppolab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    _add_train(sub)
    _add_eval(sub)
    _add_sweep(sub)
    _add_experiment(sub)
    _add_analyze(sub)
    _add_compare_report(sub)
    _add_ops(sub)
    return parser


def run_train(ns: argparse.Namespace) -> int:
    from ppolab.ppo.run_files import load_config
    from ppolab.ppo.trainer import train

    given = {k: v for k, v in vars(ns).items() if k in TrainConfig.model_fields}
    if ns.sampler_procs is not None and ns.sampler_procs < 1:
        raise UserError("--sampler-procs: must be at least 1")
    resume_dir = None
    if ns.resume:
        resume_dir = Path(ns.resume)
        extra = sorted(set(given) - {"n_itr"})
        if extra:
            raise UserError(
                f"--resume continues a run with its saved configuration; drop {flag(extra[0])} "
                "(only --n-itr may change)"
            )
        if not resume_dir.is_dir():
            raise UserError(f"--resume: {resume_dir} is not a folder")
        if not (resume_dir / "last.pt").is_file():
            raise UserError(f"--resume: {resume_dir / 'last.pt'} is missing; no completed iteration to resume from")
        cfg = load_config(resume_dir)
        if "n_itr" in given:
            cfg = build(TrainConfig, {**cfg.model_dump(), "n_itr": given["n_itr"]})
    else:
        if "env" not in given:
            raise UserError("--env is required (or --resume RUN_DIR)")
        cfg = build(TrainConfig, given)
        if cfg.continued:
            _check_policy_file("--continued", Path(cfg.continued))
    _, completed = train(cfg, resume_dir=resume_dir, sampler_procs=ns.sampler_procs)
    return 0 if completed else 130


def _check_policy_file(option: str, path: Path) -> None:
    """Fail early, naming the flag, when a policy path is missing or unreadable."""
    from ppolab.ppo import checkpoint as ckpt

    try:
        ckpt.load(ckpt.find_actor(path))
    except UserError as exc:
        raise UserError(f"{option}: {exc}") from None


def run_eval(ns: argparse.Namespace) -> int:
    from ppolab.ppo.playback import play

    if ns.episodes < 1:
        raise UserError("--episodes: must be at least 1")
    _check_policy_file("--path", Path(ns.path))
    play(Path(ns.path), episodes=ns.episodes, seed=ns.seed, max_steps=ns.max_steps, video=ns.video)
    return 0


def _find_sweep(ns: argparse.Namespace) -> Path:
    if not ns.sweep_dir:
        raise UserError("SWEEP_DIR is required (or --list)")
    path = Path(ns.sweep_dir)
    if not path.exists() and (Path(ns.root) / ns.sweep_dir).exists():
        path = Path(ns.root) / ns.sweep_dir
    if not path.is_dir():
        raise UserError(f"{path}: no such sweep folder (see ppolab sweep --list)")
    return path


def run_sweep_cmd(ns: argparse.Namespace) -> int:
    import subprocess

    from ppolab.experiments import display
    from ppolab.experiments.plan import duplicate_names, expand
    from ppolab.experiments.runner import run_sweep
    from ppolab.experiments.spec import load_sweep

    if ns.list:
        print(display.sweep_list(Path(ns.root)))
        return 0
    sweep_dir = _find_sweep(ns)
    spec = load_sweep(sweep_dir)
    planned = expand(spec, sweep_dir)
    dupes = duplicate_names(planned)
    if dupes:
        raise UserError(f"{sweep_dir}: runs expand to the same name '{dupes[0]}'; rename a run")
    if ns.max_retries < 0:
        raise UserError("--max-retries: must be 0 or more")
    if ns.info:
        print(display.info(spec, planned, sweep_dir))
        return 0
    if ns.status:
        print(display.status(sweep_dir, planned))
        return 0
    print(display.info(spec, planned, sweep_dir))
    print(display.plan_table(planned))
    if ns.dry_run:
        return 0
    if not ns.yes:
        if not sys.stdin.isatty():
            raise UserError("no terminal to approve the plan; pass --yes to launch without asking")
        answer = input(f"Launch {len(planned)} runs, one at a time? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("Not launched.")
            return 1
    if ns.detach:
        log = open(sweep_dir / "sweep.log", "a")
        argv = [sys.executable, "-m", "ppolab", "sweep", str(sweep_dir), "--yes", "--max-retries", str(ns.max_retries)]
        proc = subprocess.Popen(
            argv + (["--no-wait"] if ns.no_wait else []),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        print(f"Sweep running in the background (pid {proc.pid}); it goes on after this terminal closes.")
        print(f"Follow it: ppolab sweep {sweep_dir} --status   (log: {sweep_dir / 'sweep.log'})")
        return 0
    return run_sweep(sweep_dir, spec.metadata.name, planned, wait_for_lock=not ns.no_wait, max_retries=ns.max_retries)


def run_experiment_cmd(ns: argparse.Namespace) -> int:
    from ppolab.experiments.quick import parse_vary, write_sweep

    if ns.seeds is not None and ns.seeds < 1:
        raise UserError("--seeds: must be at least 1")
    defaults = {k: v for k, v in vars(ns).items() if k in TrainConfig.model_fields}
    if "env" not in defaults:
        raise UserError("--env is required")
    sweep_dir = write_sweep(Path(ns.root), ns.name, defaults, parse_vary(ns.vary), ns.seeds, ns.hypothesis)
    print(f"Sweep file: {sweep_dir / 'sweep.yaml'}")
    return run_sweep_cmd(
        argparse.Namespace(
            sweep_dir=str(sweep_dir),
            list=False,
            info=False,
            dry_run=False,
            status=False,
            yes=ns.yes,
            detach=ns.detach,
            no_wait=ns.no_wait,
            max_retries=ns.max_retries,
            root=ns.root,
        )
    )


def run_analyze(ns: argparse.Namespace) -> int:
    from ppolab.analysis.analyze import analyze, load_thresholds, run_paths, to_json, to_text
    from ppolab.analysis.anomalies import Thresholds

    overrides = {k: v for k, v in vars(ns).items() if k in Thresholds.model_fields}
    thresholds = load_thresholds(Path(ns.config) if ns.config else None, overrides)
    path = Path(ns.path)
    if not path.exists():
        raise UserError(f"{path}: no such file or folder")
    results = analyze(path, thresholds)
    if not results:
        raise UserError(f"{path}: no complete training iteration found")
    sweep = len(run_paths(path)) > 1 or (path / "sweep.yaml").exists()
    print(to_json(results, sweep) if ns.json else to_text(results))
    return 0


def run_compare(ns: argparse.Namespace) -> int:
    from ppolab.analysis.analyze import run_paths
    from ppolab.analysis.compare import compare, load_runs

    paths = [Path(p) for p in ns.paths]
    for p in paths:
        if not p.exists():
            raise UserError(f"{p}: no such folder")
    if len(paths) == 1 and (paths[0] / "sweep.yaml").exists():
        from ppolab.experiments.plan import expand
        from ppolab.experiments.spec import load_sweep

        order = [p.name for p in expand(load_sweep(paths[0]), paths[0])]
        found = dict(run_paths(paths[0]))
        named = [(n, found[n]) for n in order if n in found]
    else:
        named = [(p.name, p) for p in paths]
    print(compare(load_runs(named)))
    return 0


def run_report(ns: argparse.Namespace) -> int:
    from ppolab.analysis.report import write_report

    sweep_dir = Path(ns.sweep_dir)
    if not (sweep_dir / "sweep.yaml").exists():
        raise UserError(f"{sweep_dir}: not a sweep folder (no sweep.yaml)")
    print(f"Report written: {write_report(sweep_dir)}")
    return 0


def run_doctor(ns: argparse.Namespace) -> int:
    from ppolab.ops.doctor import CREDENTIALS, report

    required = [r.strip() for r in ns.require.split(",") if r.strip()]
    unknown = [r for r in required if r not in CREDENTIALS]
    if unknown:
        raise UserError(f"--require: unknown credential '{unknown[0]}'; choose from {', '.join(CREDENTIALS)}")
    text, ready = report(required)
    print(text)
    return 0 if ready else 1


def run_repro(ns: argparse.Namespace) -> int:
    from ppolab.ops.repro import describe, rerun

    run_dir = Path(ns.run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run folder")
    text, args = describe(run_dir)
    print(text)
    if not ns.run:
        return 0
    print("Reproducing into a new run folder...", flush=True)
    return rerun(args, ns.logdir)


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    ns = parser.parse_args(argv)
    try:
        return {
            "train": run_train,
            "eval": run_eval,
            "sweep": run_sweep_cmd,
            "experiment": run_experiment_cmd,
            "analyze": run_analyze,
            "compare": run_compare,
            "report": run_report,
            "doctor": run_doctor,
            "repro": run_repro,
        }[ns.command](ns)
    except UserError as exc:
        sys.stderr.write(f"ppolab {ns.command}: error: {exc}\n")
        return 2
    except KeyboardInterrupt:  # before training started, or during eval: nothing to save
        sys.stderr.write(f"ppolab {ns.command}: interrupted\n")
        return 130


def entry() -> None:
    sys.exit(main())
