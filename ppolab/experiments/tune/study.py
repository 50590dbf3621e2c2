"""`ppolab tune`: an Optuna study over train flags, one trial at a time under the machine lock.

A trial is one `ppolab train` process per env and seed, run in turn. While a run
trains, its metrics.jsonl is read as it grows and the running score goes to
Optuna, so the pruner can stop a hopeless trial (the run gets SIGTERM and stops
cleanly). The objective is the mean over seeds (and envs, normalised by
target_scores) of the chosen metric.

Everything lives in the study's storage (default: SQLite in experiments/tune/)
and in experiments/tune/NAME/: a run folder per trial, env and seed, and the
outputs. Running the same command again continues the study until it holds
--n-trials finished (complete or pruned) trials. A trial left RUNNING by a
killed process is failed and queued again with the same values: on this machine
at once (the machine lock proves its process is gone), on other machines when
its heartbeat stops. Its retry resumes the runs from their checkpoints.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

import numpy as np
import optuna
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback, fail_stale_trials
from optuna.trial import TrialState

from ppolab.analysis.summary import RunSummary, summarize_run
from ppolab.errors import UserError
from ppolab.experiments.executors.attempt import Attempt, Stop
from ppolab.experiments.machine_lock import hold_machine
from ppolab.experiments.plan import TrainCall
from ppolab.experiments.tune.report import never_passed_value, shown
from ppolab.experiments.tune.search_space import SearchSpace
from ppolab.util.run_folder import RunFolder
from ppolab.util.run_state import RunState

optuna.logging.set_verbosity(optuna.logging.WARNING)  # ppolab prints its own line per trial

Metric = Literal["final_reward", "peak_eval", "time_to_pass", "steps_to_pass"]
PASS_KEYS = {"time_to_pass": "total_time", "steps_to_pass": "total_steps"}  # the check record's clock
GRACE_S = 60  # default: a RUNNING trial of another host that has not beaten for this long is failed and rerun
MAX_RETRIES = 3
FAILURES_IN_A_ROW = 3  # stop the study: something is wrong with every trial, not with one
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)


def default_storage(study: str) -> str:
    return f"sqlite:///experiments/tune/{study}.db"


@dataclass
class TuneSettings:
    study: str
    envs: list[str]
    space: SearchSpace
    n_trials: int
    seeds: list[int]
    metric: Metric
    train_flags: dict[str, Any]  # given on the command line, the same for every trial
    storage: str
    sampler: Literal["tpe", "random", "grid"] = "tpe"
    pruner: Literal["median", "none"] = "median"
    root: Path = Path("experiments/tune")
    heartbeat_grace: int = GRACE_S
    out: TextIO = field(default=sys.stdout)

    @property
    def study_dir(self) -> Path:
        return self.root / self.study

    @property
    def heartbeat_interval(self) -> int:
        return max(1, min(10, self.heartbeat_grace // 3))

    def say(self, line: str) -> None:
        print(line, file=self.out, flush=True)


class TrialFailed(Exception):
    pass


@contextmanager
def quiet_optuna() -> Iterator[None]:
    """Optuna warns that its retry callback is experimental and that heartbeats belong to optimize();
    ppolab relies on both on purpose (ask and tell, with heartbeats of its own): these two are muted here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")
        yield


def _unreadable(storage: str, exc: BaseException) -> UserError:
    """The one line for a storage that cannot be read, with what to do about it."""
    cause = exc.__cause__ or exc  # Optuna wraps SQLAlchemy's error, which says what is wrong
    first = str(cause).splitlines()[0]
    fix = ""
    if storage.startswith("sqlite:") and "readonly database" in first:  # replaced or made read-only meanwhile
        fix = "; the file was replaced or made read-only while the study ran: run the same command again"
    elif storage.startswith("sqlite:"):
        fix = "; restore the file from a backup, or name another --study"
    return UserError(f"--storage {storage}: cannot read it ({first}){fix}")


@contextmanager
def storage_errors(storage: str) -> Iterator[None]:
    """A damaged storage found at any read becomes one line, not a traceback (finished runs stay on disk)."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        yield
    except (optuna.exceptions.StorageInternalError, SQLAlchemyError) as exc:
        raise _unreadable(storage, exc) from None


def load_existing_study(name: str, storage: str) -> optuna.Study:
    """A study that must exist already (for --report); one line when it or its storage is missing or damaged."""
    if storage.startswith("sqlite:///") and not Path(storage.removeprefix("sqlite:///")).is_file():
        raise UserError(f"--study {name}: no such study ({storage.removeprefix('sqlite:///')} is missing)")
    try:
        return optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        raise UserError(f"--study {name}: no such study in {storage}") from None
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy raises many kinds; all mean "cannot read it"
        raise _unreadable(storage, exc) from None


class BoundPruner(optuna.pruners.BasePruner):
    """The median rule for a score that can only fall: time (env steps) to pass, where a trial's running
    value, minus its clock until it passes, bounds its final value from above. A trial is pruned once that
    bound is below the median final value of the finished trials: it can no longer reach the median.

    Optuna's MedianPruner judges a trial by its best value so far, which for a falling score is its first:
    it never pruned such a study. Nor does this rule compare trials at the same iteration, where a setting
    that costs more per iteration (more envs, more epochs) is behind before it can show that it needs fewer."""

    def __init__(self, n_startup_trials: int = 5) -> None:
        self.n_startup_trials = n_startup_trials

    def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
        step = trial.last_step
        if step is None:
            return False
        finished = [t.value for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))]
        finished = [v for v in finished if v is not None and math.isfinite(v)]
        if len(finished) < self.n_startup_trials:
            return False
        return trial.intermediate_values[step] < float(np.median(finished))


def open_study(s: TuneSettings) -> tuple[optuna.Study, RDBStorage]:
    """Create or load the study, and its storage; the same settings continue it, others are refused."""
    if s.storage.startswith("sqlite:///") and not s.storage.startswith("sqlite:////"):
        Path(s.storage.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    try:
        storage = RDBStorage(
            s.storage,
            heartbeat_interval=s.heartbeat_interval,
            grace_period=s.heartbeat_grace,
            heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRIES),
        )
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy raises many kinds; all mean "cannot read it"
        raise _unreadable(s.storage, exc) from None
    n_itr = int({**s.space.fixed, **s.train_flags}.get("n_itr", 20000))
    if s.pruner != "median":
        pruner: optuna.pruners.BasePruner = optuna.pruners.NopPruner()
    elif s.metric in PASS_KEYS:
        pruner = BoundPruner(n_startup_trials=5)
    else:
        pruner = optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=max(1, n_itr // 4))
    study = optuna.create_study(
        study_name=s.study, storage=storage, pruner=pruner, direction="maximize", load_if_exists=True
    )
    study.sampler = _sampler(s, len(study.trials))
    settings = {
        "envs": s.envs,
        "seeds": s.seeds,
        "metric": s.metric,
        "train_flags": s.train_flags,
        "fixed": s.space.fixed,
    }
    recorded = study.user_attrs.get("settings")
    if recorded is None:
        study.set_user_attr("settings", settings)
    elif recorded != _jsonable(settings):
        changed = next(k for k in settings if recorded.get(k) != _jsonable(settings)[k])
        raise UserError(
            f"study '{s.study}' was started with other {changed.replace('_', ' ')} ({recorded.get(changed)}); "
            "use the same command to continue it, or a new --study NAME"
        )
    return study, storage


def _sampler(s: TuneSettings, n_before: int) -> optuna.samplers.BaseSampler:
    """Seeded for reproducibility, and by the trials already run, so a continued study draws new values."""
    seed = int(np.random.SeedSequence([s.seeds[0], n_before]).generate_state(1)[0])
    if s.sampler == "grid":
        return optuna.samplers.GridSampler(s.space.grid(), seed=seed)
    if s.sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed)


def _jsonable(value: Any) -> Any:
    """As the storage gives it back (tuples become lists)."""
    return json.loads(json.dumps(value))


def finished_trials(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    return study.get_trials(deepcopy=False, states=FINISHED)


def recover_dead_trials(study: optuna.Study, say: Callable[[str], None]) -> None:
    """RUNNING trials of this host are dead (we hold the machine lock): fail them and queue a retry.

    Trials of other hosts sharing the storage are judged by their heartbeats (fail_stale_trials).
    """
    host = socket.gethostname()
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if t.user_attrs.get("host") == host and _fail_and_requeue(study, t.number):
            say(f"Trial {t.number} was left running by a process that is gone; it runs again.")
    fail_stale(study, say)


def _fail_and_requeue(study: optuna.Study, number: int) -> bool:
    """Mark a cut-off trial failed and queue its values again, as Optuna's callback does for a stale heartbeat."""
    try:
        study.tell(number, state=TrialState.FAIL)
    except (ValueError, optuna.exceptions.UpdateFinishedTrialError):  # no longer running: another process did it
        return False
    RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRIES)(study, study.get_trials(deepcopy=False)[number])
    return True


def heartbeat(storage: RDBStorage, study: optuna.Study, number: int) -> Callable[[], None]:
    """Record that trial `number` is alive: Optuna beats only inside optimize(), so an ask/tell loop beats itself."""
    trial_id = storage.get_trial_id_from_study_id_trial_number(storage.get_study_id_from_name(study.study_name), number)
    return lambda: storage.record_heartbeat(trial_id)


def fail_stale(study: optuna.Study, say: Callable[[str], None]) -> None:
    """Fail (and queue again) the trials of other hosts whose heartbeat stopped."""
    running = {t.number: t.user_attrs.get("host", "?") for t in study.get_trials(states=(TrialState.RUNNING,))}
    if not running:
        return
    fail_stale_trials(study)
    for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
        if t.number in running:
            say(f"Trial {t.number} on {running[t.number]} stopped sending heartbeats; it runs again.")


def run_study(s: TuneSettings, wait_for_lock: bool = True) -> int:
    """Run trials until the study holds n_trials finished ones. 0 done, 1 failed, 130 interrupted."""
    lock = hold_machine({"sweep": f"tune {s.study}", "dir": str(s.study_dir.resolve())}, wait_for_lock, s.say)
    try:
        with quiet_optuna():
            return _trials(s)
    finally:
        lock.release()


def _trials(s: TuneSettings) -> int:
    """The ask/run/tell loop, until n_trials finish, the grid is exhausted or trials keep failing."""
    study, storage = open_study(s)
    s.study_dir.mkdir(parents=True, exist_ok=True)
    recover_dead_trials(study, s.say)
    failures = 0
    while len(finished_trials(study)) < s.n_trials:
        if s.sampler == "grid" and _grid_exhausted(study, s.space):
            s.say("Every point of the grid has been tried.")
            break
        fail_stale(study, s.say)  # a trial of another host may have died since the last one
        trial = study.ask()
        done = len(finished_trials(study))
        try:
            value = _run_trial(s, study, trial, done, heartbeat(storage, study, trial.number))
        except optuna.TrialPruned as pruned:
            _tell(study, trial, state=TrialState.PRUNED)
            s.say(f"Trial {trial.number}: pruned ({pruned})")
            failures = 0
        except TrialFailed as exc:
            _tell(study, trial, state=TrialState.FAIL)
            s.say(f"Trial {trial.number}: failed ({exc})")
            failures += 1
            if failures >= FAILURES_IN_A_ROW:
                s.say(f"Stopping: {failures} trials failed in a row; read their logs in {s.study_dir}.")
                return 1
        except KeyboardInterrupt:
            _fail_and_requeue(study, trial.number)
            s.say(f"Interrupted: trial {trial.number} runs again (from its checkpoints) when you continue.")
            return 130
        else:
            _tell(study, trial, values=value)
            failures = 0
            best = study.best_trial
            s.say(f"Trial {trial.number}: {shown(value)}  (best: trial {best.number}, {shown(best.value)})")
    return 0


def _tell(study: optuna.Study, trial: optuna.Trial, **kwargs) -> None:
    """study.tell; the grid sampler's `study.stop()` on its last point only works inside optimize(),
    and the trial is stored before it is called: the loop's own grid check ends the study."""
    try:
        study.tell(trial, **kwargs)
    except RuntimeError as exc:
        if "Study.stop" not in str(exc):
            raise


def _grid_exhausted(study: optuna.Study, space: SearchSpace) -> bool:
    tried = {tuple(sorted(t.params.items())) for t in finished_trials(study)}
    return len(tried) >= space.grid_size()


def _trial_dir(s: TuneSettings, trial: optuna.Trial) -> Path:
    """A retry works in its original trial's folder, so its runs resume from their checkpoints."""
    frozen = trial.study.get_trials(deepcopy=False)[trial.number]
    number = frozen.system_attrs.get("failed_trial", trial.number)  # set by Optuna's retry callback
    return s.study_dir / f"trial-{number:04d}"


def _run_trial(s: TuneSettings, study: optuna.Study, trial: optuna.Trial, done: int, beat: Callable[[], None]) -> float:
    values = s.space.suggest(trial)
    trial.set_user_attr("host", socket.gethostname())
    trial.set_user_attr("pid", os.getpid())
    shown = ", ".join(f"{k}={_fmt(v)}" for k, v in values.items())
    s.say(f"Trial {trial.number} ({done + 1}/{s.n_trials}): {shown}")
    config = {**s.space.fixed, **s.train_flags, **values}
    n_itr = int(config.get("n_itr", 20000))
    trial_dir = _trial_dir(s, trial)
    scores: dict[str, float] = {}  # by run name, for people
    results: list[tuple[str, float]] = []  # (env, raw score), for the objective
    runs = [(env, seed) for env in s.envs for seed in s.seeds]
    for k, (env, seed) in enumerate(runs):
        name = f"{env}-s{seed}"
        try:
            call = TrainCall.fresh({**config, "env": env, "seed": seed}, trial_dir, name)
        except UserError as exc:  # settings that cannot go together: the trial fails, the study goes on
            raise TrialFailed(f"{name}: {exc}") from None
        raw = _train(s, trial, beat, call, trial_dir / name, offset=k * n_itr, n_itr=n_itr, env=env, prior=results)
        scores[name] = raw
        results.append((env, raw))
        trial.set_user_attr("scores", scores)
    return _objective(s, results)


def _fmt(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def _normalise(s: TuneSettings, env: str, raw: float) -> float:
    if len(s.envs) == 1:
        return raw
    low, high = s.space.target_scores[env]
    return min(1.0, max(0.0, (raw - low) / (high - low)))


def _objective(s: TuneSettings, results: list[tuple[str, float]]) -> float:
    """The mean over the trial's runs of each one's score, normalised per env when there are several."""
    vals = [_normalise(s, env, raw) for env, raw in results]
    return sum(vals) / len(vals)


class RunningScore:
    """The metric of a run so far, from its growing metrics.jsonl, read incrementally.

    Each call to `new_points` reads only the lines written since the last call and returns
    (iteration, score so far): for final_reward the mean of the finite Mean Eprew over the last
    10% of iterations (what the run's final reward would be if it stopped there, in O(1) from
    prefix sums), for peak_eval the best evaluation so far; for time_to_pass (steps_to_pass) minus
    the seconds (env steps) so far until the checks pass, then minus those at the pass (Optuna
    maximises: a trial still failing at a step where others passed, or slower there, ranks below them).
    """

    def __init__(self, metric: Metric, run: RunFolder) -> None:
        self.metric, self.tail = metric, run.follow()  # the run folder's reader: its one rule for damaged lines
        self.sums, self.counts = [0.0], [0]  # prefix sums of finite rewards and their count
        self.best = -math.inf
        self.passed_at: float | None = None  # minus the clock at the first passing checks

    def new_points(self) -> list[tuple[int, float]]:
        points = []
        for rec in self.tail():
            if self.metric == "peak_eval" and rec.get("type") == "eval" and math.isfinite(rec["reward"]):
                self.best = max(self.best, rec["reward"])
                points.append((rec["iteration"], self.best))
            elif self.metric in PASS_KEYS:
                clock = -float(rec[PASS_KEYS[self.metric]]) if PASS_KEYS[self.metric] in rec else None
                if rec.get("type") == "check" and rec["passed"] and self.passed_at is None:
                    self.passed_at = clock
                    points.append((rec["iteration"], clock))
                elif rec.get("type") == "iteration" and clock is not None:
                    points.append((rec["iteration"], self.passed_at if self.passed_at is not None else clock))
            elif self.metric == "final_reward" and rec.get("type") == "iteration":
                r = rec["mean_eprew"]
                finite = r is not None and math.isfinite(r)
                self.sums.append(self.sums[-1] + (r if finite else 0.0))
                self.counts.append(self.counts[-1] + finite)
                n = len(self.sums) - 1
                start = n - max(1, n // 10)
                count = self.counts[n] - self.counts[start]
                if count:
                    points.append((rec["iteration"], (self.sums[n] - self.sums[start]) / count))
        return points


def _train(
    s: TuneSettings,
    trial: optuna.Trial,
    beat: Callable[[], None],
    call: TrainCall,
    run_dir: Path,
    *,
    offset: int,
    n_itr: int,
    env: str,
    prior: list[tuple[str, float]],
) -> float:
    """Run (or resume, or reuse) one training run, reporting its running score; its final score."""
    summary = summarize_run(run_dir) if RunFolder(run_dir).holds_work() else None
    if summary is None or summary.iterations < n_itr:
        log = run_dir.parent / f"{run_dir.name}.log"
        attempt = Attempt(run_dir, call, log)  # the sweep's own attempt; the study's database records it
        s.say(f"  {run_dir.name}: {'resuming' if attempt.resumed else 'training'} (log: {log})")
        score = RunningScore(s.metric, RunFolder(run_dir))
        watch = {"reported": -1, "tenths": 0, "beat": 0.0}

        def should_stop() -> Stop | None:
            """Between polls: the heartbeat, the running score to Optuna, a progress line each tenth, pruning."""
            if time.monotonic() - watch["beat"] > s.heartbeat_interval:
                beat()
                watch["beat"] = time.monotonic()
            watch["reported"], prune = _report(s, trial, score, offset, watch["reported"], env, prior)
            done = watch["reported"] - offset + 1
            if done > 0 and 10 * done // n_itr > watch["tenths"]:
                watch["tenths"] = 10 * done // n_itr
                s.say(f"  {run_dir.name}: iteration {done}/{n_itr}")
            return Stop("pruned") if prune else None

        try:
            stop = attempt.supervise(should_stop, every=0.5)
        except BaseException:  # the study stopped (Ctrl-C), or Optuna failed: the run has stopped cleanly
            attempt.end(Stop("stopped"))
            raise
        outcome = attempt.end(stop)
        if stop is not None:
            raise optuna.TrialPruned(f"{run_dir.name} at iteration {watch['reported'] - offset}")
        _report(s, trial, score, offset, watch["reported"], env, prior, ask_pruner=False)
        if outcome.state != RunState.DONE:
            raise TrialFailed(f"{run_dir.name} ended {outcome.state} ({outcome.reason}); see {log}")
    else:
        s.say(f"  {run_dir.name}: done before, reused")
    summary = summarize_run(run_dir)
    raw = None
    if summary is not None:
        raw = trial_value(summary, s.metric)
    if raw is None or not math.isfinite(raw):
        raise TrialFailed(f"{run_dir.name} has no finite {s.metric.replace('_', ' ')}")
    return raw


def trial_value(summary: RunSummary, metric: Metric) -> float | None:
    """A finished run's value for Optuna (higher is better). Time (steps) to pass: minus the seconds
    (env steps) to the first passing checks. A run that never passed scores `never_passed_value` of how far
    it got: below every run that passed, and, among runs that never passed, by the most checks one round
    passed, never by what its budget cost (the same iterations take a setting with more envs longer: scored
    by its clock, a costly failure would rank below a cheap one, and the sampler would learn cost, not skill)."""
    if metric == "final_reward":
        return summary.final_mean_reward
    if metric == "peak_eval":
        return summary.peak_eval_reward
    p = summary.time_to_pass
    if p is None:
        return None
    if not p["passed"]:
        return never_passed_value(p["checks_passed"])
    return -float(p["seconds" if metric == "time_to_pass" else "env_steps"])


def _report(
    s: TuneSettings,
    trial: optuna.Trial,
    score: RunningScore,
    offset: int,
    reported: int,
    env: str,
    prior: list[tuple[str, float]],
    *,
    ask_pruner: bool = True,
) -> tuple[int, bool]:
    """Send the new points of the running score to Optuna; the last step sent, and whether to prune.

    The value is the objective as it would be if this run ended now: the mean with
    the runs already finished in this trial, so that steps of different trials compare.
    The pruner is asked after each point, so a run that got several iterations ahead of
    the poll is pruned at the first step the pruner would have stopped, not at the last.
    """
    for itr, value in score.new_points():
        step = offset + itr
        if step > reported:
            trial.report(_objective(s, [*prior, (env, value)]), step)
            reported = step
            if ask_pruner and trial.should_prune():
                return reported, True
    return reported, False
