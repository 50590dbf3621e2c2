"""`ppolab` command line: parses arguments and calls into the library, nothing more."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import errno
import os
import signal
import sys
from pathlib import Path

from ppolab import __version__
from ppolab.cli import export_cli, habits, ops_cli, play_cli, robots_cli, runs_cli, tune_cli
from ppolab.cli.args import Parser, add_model_flags, build, policy_path, print_json
from ppolab.cli.launch import add_launch_flags, launch
from ppolab.envs import ENVS
from ppolab.errors import NO_SPACE_EXIT, NoSpace, UserError, one_line
from ppolab.runner.config import MAX_EPISODES, MAX_SEED, MAX_STEPS, TrainConfig, flag
from ppolab.util.seeds import SEEDS_HELP, seeds_arg

TRAIN_HELP = """Train a PPO policy. Each run gets a new folder under --logdir with its config,
command line, metrics.jsonl, TensorBoard events, train.log and checkpoints.

example:
  ppolab train --env cartpole --logdir logs --n-itr 500 --std-dev 0.15 --learn-std \\
      --entropy-coeff 0.01 --minibatch-size 256 --max-traj-len 500 --seed 1
  ppolab train --resume logs/20261130-101500-cartpole-s1     # continue an interrupted run
"""

EVAL_HELP = """Run a trained policy deterministically (the mean action), headless, and print each
episode's length and return. --video renders episode 1 offscreen to an mp4 file; --filmstrip
renders a strip of its frames to a PNG.

A walker (NAME_walk) switches modes at random as in training, unless told what to do:
  --mode forward --vx 0.3       walk straight ahead at 0.3 m/s (the heading held)
  --mode in_place --yaw-rate 0.3    turn on the spot
  --mode standing
A stepper (NAME_step) follows one kind of footstep plan with --plan (forward, backward, lateral,
curved, standing), on flat ground.

examples:
  ppolab eval --path pretrained/jvrc_walk --mode forward --vx 0.3 --video walk.mp4
  ppolab eval --path pretrained/jvrc_step --plan curved --filmstrip steps.png"""


def _add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train", help="train a policy", description=TRAIN_HELP, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_model_flags(p, TrainConfig)
    p.add_argument(
        "--resume", metavar="RUN_DIR", help="continue an interrupted run from its last checkpoint, in the same folder"
    )
    p.add_argument(
        "--no-lock",
        action="store_true",
        help="train without the machine lock that keeps sweeps, tuning and training runs one at a time "
        "(two jobs side by side slow each other and skew their timings)",
    )
    p.add_argument(
        "--sampler-procs",
        type=int,
        metavar="N",
        help="sampling processes (default: one per available core); never changes the results",
    )
    p.add_argument(
        "--backend",
        choices=["auto", "local", "ray"],
        default="auto",
        help="where rollout workers run: local processes, or Ray actors on the cluster at RAY_ADDRESS "
        "(a private local Ray when unset); auto: ray if RAY_ADDRESS is set and not empty, else local. "
        "Never changes the results",
    )


def _add_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval", help="evaluate a trained policy", description=EVAL_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    p.add_argument("policy", nargs="?", metavar="PATH", help="the same as --path (as export, analyze and compare "
                   "take a run)")  # fmt: skip
    p.add_argument("--path", help="a run folder (its best actor.pt), an actor .pt file, or a folder of runs "
                   "(the latest)")  # fmt: skip
    p.add_argument("--logdir", metavar="DIR", help="a folder of runs: play the most recent (LearningHumanoidWalking's)")
    p.add_argument("--episodes", type=int, default=5, help="episodes to run (default: 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial states (default: 0)")
    p.add_argument("--max-steps", type=int, help="episode horizon in steps (default: the training horizon)")
    p.add_argument("--ep-len", type=float, metavar="SECONDS", help="episode horizon in seconds (LHW's)")
    p.add_argument("--video", metavar="FILE.mp4", help="render the first episode offscreen to this file")
    p.add_argument("--out-dir", metavar="DIR", help="render the first episode to DIR/<actor>-<date-time>.mp4 (LHW's)")
    p.add_argument("--filmstrip", metavar="FILE.png", help="render frames of the first episode side by side")
    p.add_argument("--frames", type=int, default=6, help="frames in the filmstrip (default: 6)")
    p.add_argument("--mode", help="a walker: hold this mode (a NAME_walk env's: standing, in_place, forward; "
                   "`ppolab envs` lists each env's)")  # fmt: skip
    p.add_argument("--vx", type=float, default=0.0, help="a walker, forward mode: m/s ahead")
    p.add_argument("--vy", type=float, default=0.0, help="a walker, forward mode: m/s sideways")
    p.add_argument("--yaw-rate", type=float, default=0.0, help="a walker, in-place mode: rad/s")
    p.add_argument("--plan", help="a stepper: follow this kind of footstep plan, on flat ground (a NAME_step "
                   "env's: forward, backward, lateral, curved, standing)")  # fmt: skip


SWEEP_HELP = """Plan and run a sweep: a sweep.yaml with a hypothesis and named runs (see
experiments/sweeps/example/sweep.yaml). Without a flag: validate, show the plan, ask
for approval, then run the jobs one at a time, recording state.json after every
run. Launching again resumes: done runs are skipped, interrupted ones continue
from their last checkpoint.

examples:
  ppolab sweep experiments/sweeps/example --dry-run
  ppolab sweep experiments/sweeps/example --yes
  ppolab sweep example --status          # a name is looked up under experiments/sweeps
  ppolab sweep example --watch           # the live view of a detached sweep, until it ends
  ppolab sweep --list

While it runs, the terminal shows a live view: each run's iteration, reward, steps/s
and ETA, the sweep's done/total and ETA, and the last anomaly. Training output goes
to SWEEP_DIR/logs/<run>.log (--verbose streams it too).
"""


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
    mode.add_argument(
        "--watch", action="store_true", help="the live view of a running sweep until it ends (Ctrl-C: stop watching)"
    )
    p.add_argument("--json", action="store_true", help="with --info, --dry-run, --status or --list: print JSON")
    add_launch_flags(p)


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
    p.add_argument(
        "--seeds", type=seeds_arg, metavar="SEEDS", help=f"run every configuration once per seed: {SEEDS_HELP}"
    )
    p.add_argument(
        "--control",
        action="append",
        metavar="FLAG=VALUE",
        help="the control's value of a varied flag (default: the flag's default for the env); compared first",
    )
    p.add_argument("--hypothesis", default="", help="what the experiment should show (default: one is written)")
    p.add_argument("--dry-run", action="store_true", help="show the plan; write and run nothing")
    add_launch_flags(p)
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
        "from their configs and metrics. Only finished runs are judged. Welch t tests against the control "
        "(Holm-corrected across treatments), TOST for equivalence, t intervals for means, bootstrap intervals "
        "for IQM and P(better) from 10 seeds, instability, runs still improving, and recommendations.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a sweep folder, or run folders (control first)")
    p.add_argument(
        "--min-effect",
        type=float,
        metavar="X",
        help="smallest difference in final reward worth finding, for the power and equivalence tests "
        "(default: the sweep's metadata.min_effect, else 10%% of the control's mean)",
    )
    p.add_argument(
        "--metric",
        choices=["final_reward", "time_to_pass", "steps_to_pass"],
        help="what the analysis compares: final_reward (Welch t), or how soon the runs' behaviour checks first "
        "passed, in wall time or env steps (runs trained with --check-every; a run that never passed is censored: "
        "log-rank with a permutation p, solve rates by Fisher's exact test). Default: the sweep's metadata.metric, "
        "else final_reward",
    )
    p.add_argument("--json", action="store_true", help="print the table, statistics, tests and verdict as JSON")
    p = sub.add_parser(
        "report",
        help="write results.md and plots for a sweep",
        description="Write SWEEP_DIR/results.md (hypothesis, plan, comparison, analysis, verdict) with PNG "
        "plots in SWEEP_DIR/plots, and a dated entry in experiments/experiment-tracker.md.",
    )
    p.add_argument("sweep_dir", metavar="SWEEP_DIR")


def make_parser() -> Parser:
    parser = Parser(prog="ppolab", description="Fast PPO for MuJoCo robot tasks, and experiment tooling.")
    parser.add_argument("--version", action="version", version=f"ppolab {__version__}")
    sub = parser.add_subparsers(dest="subcommand", required=True, parser_class=Parser)
    _add_train(sub)
    sub.add_parser(
        "envs",
        help="the tasks, and the training settings each one uses by default (its preset)",
        description="Each env's observation and action sizes, what it asks of the robot, and its preset: the "
        "train settings `ppolab train --env ENV` uses for flags not given. Flags given win.",
    )
    _add_eval(sub)
    play_cli.add(sub)
    _add_sweep(sub)
    _add_experiment(sub)
    _add_analyze(sub)
    _add_compare_report(sub)
    tune_cli.add_parser(sub)
    robots_cli.add_parser(sub)
    runs_cli.add_parser(sub)
    export_cli.add_parser(sub)
    ops_cli.add_parsers(sub)
    return parser


def run_train(ns: argparse.Namespace) -> int:
    """Every check and the training itself are ppo.entry's (a sweep's jobs go the same way); here only the
    flags are gathered and the machine lock is offered."""
    from ppolab.runner.entry import TrainRequest, run

    given = {k: v for k, v in vars(ns).items() if k in TrainConfig.model_fields}
    try:
        req = TrainRequest.of(given, resume=Path(ns.resume) if ns.resume else None, sampler_procs=ns.sampler_procs,
                              backend=ns.backend)  # fmt: skip
    except UserError as exc:
        print(f"ppolab train: error: {one_line(exc)}", file=sys.stderr)
        return 2
    return run(req, lock=None if ns.no_lock else _machine_lock)


@contextlib.contextmanager
def _machine_lock(cfg: TrainConfig, resume_dir: Path | None):
    """The machine lock sweeps and tuning take: one training job at a time, unless a holder started us."""
    from ppolab.experiments.machine_lock import HELD, MachineLock

    if os.environ.get(HELD):
        yield
        return
    lock = MachineLock({"run": str(resume_dir or cfg.run_name or cfg.env)})
    lock.acquire(
        wait=True, on_wait=lambda who: print(f"Waiting for the machine lock, held by {who} (--no-lock: don't)")
    )
    try:
        yield
    finally:
        lock.release()


def run_eval(ns: argparse.Namespace) -> int:
    if not 1 <= ns.episodes <= MAX_EPISODES:
        raise UserError(f"--episodes: from 1 to {MAX_EPISODES}")
    if not 0 <= ns.seed <= MAX_SEED:
        raise UserError(f"--seed: from 0 to {MAX_SEED}")
    if ns.max_steps is not None and not 1 <= ns.max_steps <= MAX_STEPS:
        raise UserError(f"--max-steps: from 1 to {MAX_STEPS} (the steps of one episode)")
    if not 1 <= ns.frames <= 100:
        raise UserError("--frames: from 1 to 100")
    if ns.ep_len is not None and not (0 < ns.ep_len <= 3600):
        raise UserError("--ep-len: seconds of one episode, above 0 and at most 3600")
    if ns.ep_len is not None and ns.max_steps is not None:
        raise UserError("--ep-len and --max-steps both set the horizon; keep one")
    if ns.video and ns.out_dir:
        raise UserError("--video and --out-dir both name the video; keep one")
    from ppolab.util.files import check_output_file

    if ns.video:  # before torch, the policy and the env are loaded: a mistake costs a moment
        check_output_file("--video", ns.video, ".mp4", "it is encoded with H.264", make_folders=True)
    if ns.filmstrip:
        check_output_file("--filmstrip", ns.filmstrip, ".png", "a PNG image", make_folders=True)
    path = policy_path(ns)
    from ppolab.runner.entry import check_policy_file

    check_policy_file(path[0], path[1])
    from ppolab.evaluation.playback import Command, play, video_in

    video = str(video_in(Path(ns.out_dir), path[1])) if ns.out_dir else ns.video
    if ns.out_dir:
        check_output_file("--out-dir", video, ".mp4", make_folders=True)
    command = Command(ns.mode, ns.vx, ns.vy, ns.yaw_rate, ns.plan)
    play(path[1], episodes=ns.episodes, seed=ns.seed, max_steps=ns.max_steps, seconds=ns.ep_len, video=video,
         filmstrip=ns.filmstrip, frames=ns.frames, command=command)  # fmt: skip
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
    from ppolab.experiments import display, plan

    if ns.json and not (ns.list or ns.info or ns.status or ns.dry_run):
        raise UserError("--json goes with --info, --dry-run, --status or --list")
    if ns.list:
        if ns.json:
            print_json("sweep --list", {"root": ns.root, "sweeps": display.list_data(Path(ns.root))})
        else:
            print(display.sweep_list(Path(ns.root)))
        return 0
    sweep_dir = _find_sweep(ns)
    if ns.watch:
        from ppolab.experiments.live import watch

        return watch(sweep_dir, plan.load_plan(sweep_dir)[1])
    if ns.info or ns.status or (ns.dry_run and ns.json):
        spec, planned = plan.load_plan(sweep_dir)
        if not ns.json:
            print(display.info(spec, planned, sweep_dir) if ns.info else display.status(sweep_dir, planned))
        elif ns.info:
            print_json("sweep --info", display.info_data(spec, planned, sweep_dir))
        elif ns.status:
            print_json("sweep --status", {"sweep": sweep_dir.name, "runs": display.status_data(sweep_dir, planned)})
        else:
            info = display.info_data(spec, planned, sweep_dir)
            print_json("sweep --dry-run", {"sweep": sweep_dir.name, "info": info, "plan": plan.plan_data(planned)})
        return 0
    return launch(sweep_dir, ns, dry_run=ns.dry_run)


def run_experiment_cmd(ns: argparse.Namespace) -> int:
    from ppolab.experiments.quick import control_first, experiment_doc, parse_vary, preview, write_sweep

    defaults = {k: v for k, v in vars(ns).items() if k in TrainConfig.model_fields}
    if "env" not in defaults:
        raise UserError("--env is required")
    grid = parse_vary(ns.vary)
    control = _experiment_control(defaults, grid, parse_vary(ns.control or []))
    shown = ", ".join(f"{k}={v}" for k, v in control.items())
    hypothesis = ns.hypothesis or f"{', '.join(grid)} other than the control ({shown}) changes the final reward"
    doc = experiment_doc(ns.name, defaults, control_first(grid, control), ns.seeds, hypothesis)
    root = Path(ns.root)
    prepared = preview(root, ns.name, doc)
    print(f"Control: {shown}")
    return launch(
        root / ns.name,
        ns,
        dry_run=ns.dry_run,
        prepared=prepared,
        write=lambda: write_sweep(root, ns.name, doc) / "sweep.yaml",
    )


def _experiment_control(defaults: dict, grid: dict, given: dict) -> dict:
    """The control configuration: each varied flag at its --control value, else at its default (presets applied)."""
    extra = sorted(set(given) - set(grid))
    if extra:
        raise UserError(f"--control {extra[0]}: not a varied flag; --control names the value of a --vary flag")
    bad = next((k for k, v in given.items() if len(v) != 1), None)
    if bad:
        raise UserError(f"--control {bad}: give one value (e.g. --control {bad}={given[bad][0]})")
    base = build(TrainConfig, {k: v for k, v in defaults.items() if k not in grid}).model_dump()
    return {k: given[k][0] if k in given else base.get(k, grid[k][0]) for k in grid}  # unknown flags: preview says


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
    from ppolab.analysis.compare import compare, load_runs, named

    paths = [Path(p) for p in ns.paths]
    for p in paths:
        if not p.exists():
            raise UserError(f"{p}: no such folder")
    min_effect = ns.min_effect
    if len(paths) == 1 and (paths[0] / "sweep.yaml").exists():
        from ppolab.experiments.report import sweep_runs

        spec, runs = sweep_runs(paths[0])
        min_effect = min_effect if min_effect is not None else spec.metadata.min_effect
        metric = ns.metric or spec.metadata.metric
    else:
        runs = load_runs(named(paths))
        metric = ns.metric or "final_reward"
    if metric != "final_reward" and not any(r.summary and r.summary.time_to_pass for r in runs):
        raise UserError(f"--metric {metric}: none of these runs ran behaviour checks; train them with --check-every N")
    if ns.json:
        from ppolab.analysis.compare import comparison_data

        print_json("compare", comparison_data(runs, min_effect, metric))
    else:
        print(compare(runs, min_effect, metric))
    return 0


def run_envs(ns: argparse.Namespace) -> int:
    from ppolab.envs import make_env
    from ppolab.runner.presets import preset

    for name in sorted(ENVS):
        cls = ENVS[name]
        doc = (cls.__doc__ or "").strip().splitlines()[0]
        env = make_env(name, 1)  # sizes follow from the robot file and the task's settings
        print(f"{name}: {doc} (obs {env.obs_dim}, actions {env.act_dim})")
        settings = preset(name)
        flags = " ".join(
            f"{flag(k)} {' '.join(map(str, v)) if isinstance(v, list) else v}" if not isinstance(v, bool) else flag(k)
            for k, v in settings.items()
            if v is not False
        )
        print(f"  preset: {flags or '(the defaults)'}")
        info = cls.info
        if info.checks:
            print(f"  behaviour checks: {', '.join(info.checks)}")
        if info.modes or info.plans:
            what = f"eval --mode {'|'.join(info.modes)}" if info.modes else f"eval --plan {'|'.join(info.plans)}"
            print(f"  commands: {what}")
    return 0


def run_report(ns: argparse.Namespace) -> int:
    from ppolab.experiments.report import write_report

    sweep_dir = Path(ns.sweep_dir)
    if not (sweep_dir / "sweep.yaml").exists():
        raise UserError(f"{sweep_dir}: not a sweep folder (no sweep.yaml)")
    print(f"Report written: {write_report(sweep_dir, show_progress=True)}")
    return 0


def normalise(argv: list[str]) -> list[str]:
    """LearningHumanoidWalking's spellings (`--n_itr`, `--num_procs`) as ppolab's (`--n-itr`)."""
    out = []
    for arg in argv:
        if arg.startswith("--") and "_" in arg.split("=", 1)[0]:
            name, sep, value = arg.partition("=")
            arg = name.replace("_", "-") + sep + value
        out.append(arg)
    return out


HEADLESS_EVAL = ("--out-dir", "--video", "--filmstrip", "--episodes", "--max-steps", "--help", "-h")


def lhw_argv(argv: list[str]) -> list[str]:
    """`run_experiment.py`'s command line: LearningHumanoidWalking's `eval` without `--out-dir` opens the
    interactive viewer (`ppolab play`); with it, or any of ppolab's scoring flags, it renders or scores."""
    argv = normalise(argv)
    if argv[:1] == ["eval"] and not any(a.split("=", 1)[0] in HEADLESS_EVAL for a in argv[1:]):
        return ["play", *argv[1:]]
    return argv


def parse(parser: Parser, argv: list[str]) -> argparse.Namespace:
    """Parse; an unknown flag is one line naming the closest real one and the subcommand's --help."""
    ns, extra = parser.parse_known_args(argv)
    if extra:
        sub = parser._subparsers._group_actions[0].choices[ns.subcommand]
        habit = habits.hint(extra[0].split("=", 1)[0])
        if habit:  # another tool's flag: what ppolab says instead, rather than a neighbour by spelling
            sub.error(habit + " (the table: docs/cli.md)")
        flags = [s for a in sub._actions for s in a.option_strings]
        guess = difflib.get_close_matches(extra[0].split("=", 1)[0], flags, n=1, cutoff=0.6)
        hint = f"; did you mean {guess[0]}?" if guess else ""
        sub.error(f"unknown argument {extra[0]}{hint}")
    return ns


def main(argv: list[str] | None = None) -> int:
    # Ctrl-C means stop, even where an inherited "ignore SIGINT" (a shell's background job, nohup) says not
    signal.signal(signal.SIGINT, signal.default_int_handler)
    parser = make_parser()
    ns = parse(parser, normalise(sys.argv[1:] if argv is None else argv))
    try:
        return {
            "train": run_train,
            "eval": run_eval,
            "play": play_cli.run,
            "sweep": run_sweep_cmd,
            "experiment": run_experiment_cmd,
            "analyze": run_analyze,
            "compare": run_compare,
            "report": run_report,
            "envs": run_envs,
            "tune": tune_cli.run_tune,
            "robots": robots_cli.run_robots,
            "runs": runs_cli.run_runs,
            "export": export_cli.run_export,
            **ops_cli.COMMANDS,
        }[ns.subcommand](ns)
    except UserError as exc:
        sys.stderr.write(f"ppolab {ns.subcommand}: error: {one_line(exc)}\n")
        return 2
    except NoSpace as exc:
        sys.stderr.write(f"ppolab {ns.subcommand}: {one_line(exc)}\n")
        return NO_SPACE_EXIT
    except BrokenPipeError:  # output piped into `head` or `grep -q`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # (after BrokenPipeError, one of its kind)
        if exc.errno != errno.ENOSPC:
            raise
        sys.stderr.write(f"ppolab {ns.subcommand}: {NoSpace(exc.filename)}\n")
        return NO_SPACE_EXIT
    except KeyboardInterrupt:  # before training started, or during eval: nothing to save
        sys.stderr.write(f"ppolab {ns.subcommand}: interrupted\n")
        return 130


def entry() -> None:
    sys.exit(main())
