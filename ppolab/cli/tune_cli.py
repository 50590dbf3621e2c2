"""`ppolab tune`: search train flags with Optuna."""

from __future__ import annotations

import argparse
from pathlib import Path

from ppolab.cli.args import add_model_flags, build
from ppolab.envs import shipped_env_names
from ppolab.errors import UserError
from ppolab.runner.config import TrainConfig
from ppolab.util.seeds import SEEDS_HELP, seeds_arg

TUNE_HELP = """Search `ppolab train` flags with Optuna. Each trial trains once per seed (and per
env with --env-ids), one run at a time under the machine lock; the objective is
the mean of --metric over them. The median pruner stops a trial whose running
score falls below the median of earlier trials at the same iteration; with
time_to_pass or steps_to_pass, one still failing past the finished trials'
median time (env steps) to pass, which it can then no longer beat.

The search space is a YAML file:

  params:
    lr: {type: float, low: 1.0e-5, high: 1.0e-3, log: true}
    entropy_coeff: {type: float, low: 0.0, high: 0.01}
    epochs: {type: int, low: 2, high: 8}
    minibatch_size: {type: categorical, choices: [64, 128, 256]}
    n_itr: 60                # a plain value is fixed for every trial
  target_scores:             # with --env-ids: reward of a poor and a good policy
    cartpole: [0, 400]

The study lives in --storage (default sqlite:///experiments/tune/NAME.db) and
its runs in experiments/tune/NAME/. The same command again continues it up to
--n-trials finished trials; a trial cut off by Ctrl-C or a kill runs again and
resumes its runs from their checkpoints. After the trials: report.md (best
trials, parameter importances), history.png and confirm/sweep.yaml, a sweep of
the best values against the defaults on fresh seeds. Browse a study live with
`optuna-dashboard sqlite:///experiments/tune/NAME.db`.

example:
  ppolab tune --env cartpole --space space.yaml --n-trials 20 --study cartpole-lr --seeds 2 --n-itr 60
"""

NOT_FLAGS = {"env", "seed", "logdir", "run_name", "continued"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune",
        help="search train flags with Optuna (pruning, seeds, resume)",
        description=TUNE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    envs = p.add_mutually_exclusive_group()
    envs.add_argument("--env", choices=shipped_env_names(), help="task to tune on")
    envs.add_argument(
        "--env-ids", nargs="+", choices=shipped_env_names(), metavar="ENV", help="several tasks (needs target_scores)"
    )
    p.add_argument("--space", metavar="FILE", help="search-space YAML file (required unless --report)")
    p.add_argument("--study", required=True, metavar="NAME", help="study name")
    p.add_argument("--n-trials", type=int, default=20, metavar="N", help="finished trials to reach (default: 20)")
    p.add_argument("--storage", metavar="URL", help="Optuna storage URL (default: sqlite:///experiments/tune/NAME.db)")
    p.add_argument(
        "--seeds", type=seeds_arg, default="1", metavar="SEEDS", help=f"one run per seed in each trial: {SEEDS_HELP} "
        "(default: 1, seed 1)",
    )  # fmt: skip
    p.add_argument(
        "--metric",
        choices=["final_reward", "peak_eval", "time_to_pass", "steps_to_pass"],
        default="final_reward",
        help="final_reward: mean episode reward over the last 10%% of iterations; "
        "peak_eval: best evaluation reward; time_to_pass, steps_to_pass: how soon the env's behaviour checks first "
        "pass (needs --check-every N; each run stops at its pass; the value is minus the seconds or env steps, and "
        "a run that never passes ranks below every one that passed, then by the most checks a round passed) "
        "(default: final_reward)",
    )
    p.add_argument(
        "--pruner",
        choices=["median", "none"],
        default="median",
        help="median: stop a trial whose running score is below the median of earlier trials at the same "
        "iteration (after 5 trials and a quarter of a run; for time or steps to pass: once it has run past the "
        "finished trials' median without passing); none: run every trial to the end (default: median)",
    )
    p.add_argument(
        "--sampler",
        choices=["tpe", "random", "grid"],
        default="tpe",
        help="tpe: Bayesian (Optuna's default); random; grid: every combination, for categorical lists and "
        "stepped ranges (default: tpe)",
    )
    p.add_argument(
        "--heartbeat-grace",
        type=int,
        default=60,
        metavar="S",
        help="a trial of another machine sharing --storage that sends no heartbeat for S seconds is failed "
        "and run again (default: 60)",
    )
    p.add_argument("--no-wait", action="store_true", help="refuse instead of queueing when another job runs")
    p.add_argument("--report", action="store_true", help="write the outputs of the study as it is; run no trial")
    p.add_argument(
        "--json", action="store_true", help="with --report: print the study (trials, best, importances) as JSON"
    )
    add_model_flags(p, TrainConfig, skip=NOT_FLAGS)


def run_tune(ns: argparse.Namespace) -> int:
    """Check the flags, then either report on a study (--report) or run its trials and report."""
    import re

    from ppolab.experiments.tune.report import write_outputs
    from ppolab.experiments.tune.study import default_storage, open_study, quiet_optuna, run_study, storage_errors

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", ns.study):
        raise UserError(f"--study {ns.study!r}: use letters, digits, '-', '_' and '.' (it names a folder and a file)")
    if ns.n_trials < 1:
        raise UserError("--n-trials: must be at least 1")
    if ns.heartbeat_grace < 3:
        raise UserError("--heartbeat-grace: at least 3 seconds")
    storage = ns.storage or default_storage(ns.study)
    root = Path("experiments/tune")
    if ns.report:
        return _report(ns, storage, root)
    if ns.json:
        raise UserError("--json goes with --report")
    settings = _settings(ns, storage, root)
    settings.say(
        f"Study {ns.study} in {storage}: {', '.join(settings.envs)}, seeds {settings.seeds}, metric {ns.metric}, "
        f"{ns.sampler} sampler, {ns.pruner} pruner"
    )
    with storage_errors(storage):
        code = run_study(settings, wait_for_lock=not ns.no_wait)
        with quiet_optuna():
            study, _ = open_study(settings)
        _print_outputs(write_outputs(study, settings.study_dir))
    return code


def _report(ns: argparse.Namespace, storage: str, root: Path) -> int:
    """--report: the study's report, history plot and best trial, from its storage, without running a trial."""
    from ppolab.experiments.tune.report import write_outputs
    from ppolab.experiments.tune.study import load_existing_study, storage_errors

    with storage_errors(storage):
        study = load_existing_study(ns.study, storage)
        out = write_outputs(study, root / ns.study)
        if ns.json:
            from ppolab.cli.args import print_json
            from ppolab.experiments.tune.report import study_data

            print_json("tune --report", study_data(study, out))
        else:
            _print_outputs(out)
    return 0


def _settings(ns: argparse.Namespace, storage: str, root: Path):
    """The study's settings from the flags, every one checked before a trial runs."""
    from ppolab.experiments.tune.search_space import load_space
    from ppolab.experiments.tune.study import TuneSettings

    if not ns.space:
        raise UserError("--space FILE is required (the search space; see ppolab tune --help)")
    envs = ns.env_ids or ([ns.env] if ns.env else None)
    if not envs:
        raise UserError("--env (or --env-ids A B ...) is required")
    if len(set(envs)) < len(envs):
        raise UserError(f"--env-ids {' '.join(envs)}: name each env once")
    given = {k: v for k, v in vars(ns).items() if k in TrainConfig.model_fields and k not in NOT_FLAGS}
    for env in envs:
        build(TrainConfig, {**given, "env": env})
    space = load_space(Path(ns.space), given, envs)
    if ns.metric in ("time_to_pass", "steps_to_pass"):
        if not {**space.fixed, **given}.get("check_every"):
            raise UserError(f"--metric {ns.metric}: the trials' runs need behaviour checks; add --check-every N "
                            "(e.g. 50)")  # fmt: skip
        if len(envs) > 1:
            raise UserError(f"--metric {ns.metric}: tune one env at a time (times to pass of different envs are "
                            "not on one scale); use --env")  # fmt: skip
        given["stop_on_pass"] = True  # the rest of a run's budget would not change its value
    if ns.sampler == "grid":
        space.grid()  # a space without a finite grid is refused before anything runs
    return TuneSettings(study=ns.study, envs=envs, space=space, n_trials=ns.n_trials, seeds=ns.seeds,
                        metric=ns.metric, train_flags=given, storage=storage, sampler=ns.sampler, pruner=ns.pruner,
                        root=root, heartbeat_grace=ns.heartbeat_grace)  # fmt: skip


def _print_outputs(out: dict) -> None:
    report = out["report"]
    print(report.read_text(), end="")
    print(f"Report: {report}")
    if out["history"]:
        print(f"History plot: {out['history']}")
    if out["confirm"]:
        print(f"Confirmation sweep: ppolab sweep {out['confirm'].parent}")
