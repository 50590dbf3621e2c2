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


def make_parser() -> Parser:
    parser = Parser(prog="ppolab", description="Fast PPO for MuJoCo robot tasks, and experiment tooling.")
    parser.add_argument("--version", action="version", version=f"ppolab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    _add_train(sub)
    _add_eval(sub)
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


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    ns = parser.parse_args(argv)
    try:
        return {"train": run_train, "eval": run_eval}[ns.command](ns)
    except UserError as exc:
        sys.stderr.write(f"ppolab {ns.command}: error: {exc}\n")
        return 2
    except KeyboardInterrupt:  # before training started, or during eval: nothing to save
        sys.stderr.write(f"ppolab {ns.command}: interrupted\n")
        return 130


def entry() -> None:
    sys.exit(main())
