"""`ppolab tune`: the search-space file, and a real Optuna study (SQLite) killed mid-trial and continued."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import optuna
import pytest
from conftest import TINY, iterations_logged, run_ppolab, wait_until
from optuna.trial import TrialState
from PIL import Image

from ppolab.analysis.parse import read_jsonl
from ppolab.errors import UserError
from ppolab.experiments.tune.search_space import FloatRange, load_space

TINY_TUNE = [a for a in TINY if a not in ("--minibatch-size", "32")]  # the space searches it
SPACE = """\
params:
  lr: {type: float, low: 1.0e-4, high: 3.0e-3, log: true}
  minibatch_size: {type: categorical, choices: [32, 64]}
  n_itr: %d
"""


def drawn(png: Path) -> bool:
    """A plot was drawn there: a palette PNG (as reports write them) of a figure's size with more than a
    background's few colours."""
    with Image.open(png) as image:
        return image.mode == "P" and image.size[0] >= 500 and len(image.getcolors()) > 3


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_space_file_gives_ranges_choices_and_fixed_values(tmp_path):
    space = load_space(write(tmp_path, SPACE % 6), {"num_procs": 2}, ["cartpole"])
    assert space.fixed == {"n_itr": 6}
    assert isinstance(space.searched["lr"], FloatRange) and space.searched["lr"].log
    assert space.searched["minibatch_size"].choices == [32, 64]


@pytest.mark.parametrize(
    "text, given, envs, message",
    [
        ("params:\n  lr: {type: float, low: 1.0e-3, high: 1.0e-4}\n", {}, ["cartpole"], ":2: lr: high must be above"),
        ("params:\n  gama: {type: float, low: 0.9, high: 0.99}\n", {}, ["cartpole"], "did you mean 'gamma'"),
        ("params:\n  lr: {type: real, low: 0.1, high: 0.2}\n", {}, ["cartpole"], "type must be float, int or"),
        ("params:\n  lr: {type: float, low: 0.0, high: 0.1, log: true}\n", {}, ["cartpole"], "log range needs low > 0"),
        ("params:\n  clip: {type: float, low: -0.1, high: 0.3}\n", {}, ["cartpole"], "clip=-0.1: clip: Input should"),
        (
            "params:\n  lr: {type: float, low: 1.0e-4, high: 1.0e-3}\n",
            {"lr": 1e-3},
            ["cartpole"],
            "also given as a flag",
        ),
        ("params:\n  seed: {type: int, low: 1, high: 9}\n", {}, ["cartpole"], "ppolab tune sets it per run"),
        ("params:\n  lr: {type: float, low: 1.0e-4, high: 1.0e-3}\n", {}, ["cartpole", "h1"], "add target_scores"),
        ("params:\n  lr: {type: float, low: 1.0e-4, hi: 1.0e-3}\n", {}, ["cartpole"], "unknown key 'hi'"),
        ("parms:\n  lr: 0.1\n", {}, ["cartpole"], "unknown key 'parms'; did you mean 'params'?"),
        ("params:\n  epochs: {type: float, low: 2, high: 8}\n", {}, ["cartpole"], "epochs takes whole numbers"),
    ],
)
def test_space_mistakes_are_one_line_naming_file_line_and_key(tmp_path, text, given, envs, message):
    with pytest.raises(UserError) as err:
        load_space(write(tmp_path, text), given, envs)
    assert str(err.value).startswith(str(tmp_path / "space.yaml") + ":")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_bad_space_is_refused_before_any_trial_runs(tmp_path):
    write(tmp_path, "params:\n  lr: {type: float, low: 1.0e-3, high: 1.0e-4}\n")
    proc = run_ppolab("tune", "--env", "cartpole", "--space", "space.yaml", "--study", "s", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == "ppolab tune: error: space.yaml:2: lr: high must be above low (got low=0.001, high=0.0001)\n"
    assert not (tmp_path / "experiments").exists()


def complete_trials(storage: str) -> list[optuna.trial.FrozenTrial]:
    return optuna.load_study(study_name="kill", storage=storage).get_trials(states=(TrialState.COMPLETE,))


def test_a_study_killed_mid_trial_continues_to_three_complete_trials_without_duplicates(tmp_path):
    n_itr = 12
    write(tmp_path, SPACE % n_itr)
    args = ["tune", *TINY_TUNE, "--space", "space.yaml", "--study", "kill", "--n-trials", "3"]
    env = {**os.environ, "RAY_ADDRESS": "", "PPOLAB_LOCK_DIR": str(tmp_path)}
    first = subprocess.Popen(
        [sys.executable, "-m", "ppolab", *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True
    )
    trial = tmp_path / "experiments/tune/kill/trial-0001/cartpole-s1"
    wait_until(iterations_logged(trial, 3), "three iterations of trial 1", alive=first)
    first.send_signal(signal.SIGKILL)  # no chance to tidy up: trial 1 stays RUNNING in the database
    first.wait()
    storage = "sqlite:///" + str(tmp_path / "experiments/tune/kill.db")
    assert len(complete_trials(storage)) == 1

    again = run_ppolab(*args, cwd=tmp_path, env={"PPOLAB_LOCK_DIR": str(tmp_path)})
    assert again.returncode == 0, again.stderr
    assert "Trial 1 was left running by a process that is gone; it runs again." in again.stdout
    assert "cartpole-s1: resuming" in again.stdout

    trials = optuna.load_study(study_name="kill", storage=storage).trials
    assert [t.state for t in trials].count(TrialState.COMPLETE) == 3
    assert [t.state for t in trials].count(TrialState.FAIL) == 1  # the killed one, retried once
    done = complete_trials(storage)
    assert len({tuple(sorted(t.params.items())) for t in done}) == 3  # three different configurations
    assert done[1].system_attrs["failed_trial"] == 1 and done[1].params == trials[1].params
    resumed = read_jsonl(trial / "metrics.jsonl").iterations
    assert [r["iteration"] for r in resumed] == list(range(n_itr))  # resumed: nothing lost, nothing repeated
    assert sorted(p.name for p in (tmp_path / "experiments/tune/kill").glob("trial-*")) == [
        "trial-0000",
        "trial-0001",
        "trial-0003",
    ]
    report = (tmp_path / "experiments/tune/kill/report.md").read_text()
    assert "## Best trials" in report and "ppolab sweep experiments/tune/kill/confirm" in report
    assert drawn(tmp_path / "experiments/tune/kill/history.png")
    confirm = run_ppolab("sweep", "experiments/tune/kill/confirm", "--dry-run", cwd=tmp_path)
    assert confirm.returncode == 0 and "best-s2" in confirm.stdout and "defaults-s6" in confirm.stdout

    finished = run_ppolab(*args, cwd=tmp_path, env={"PPOLAB_LOCK_DIR": str(tmp_path)})  # nothing left to do
    assert finished.returncode == 0 and "Trial" not in finished.stdout.split("# Tuning study")[0]
    assert len(optuna.load_study(study_name="kill", storage=storage).trials) == 4  # no trial added


def test_several_envs_are_normalised_by_their_target_scores_and_a_grid_ends_when_tried(tmp_path):
    write(
        tmp_path,
        """\
        params:
          lr: {type: categorical, choices: [0.0003, 0.001]}
          n_itr: 2
        target_scores:
          cartpole: [0, 450]
          h1: [10, 400]
        """,
    )
    args = ["tune", "--env-ids", "cartpole", "h1", *TINY_TUNE[2:], "--space", "space.yaml", "--study", "g"]
    proc = run_ppolab(
        *args, "--sampler", "grid", "--n-trials", "5", cwd=tmp_path, env={"PPOLAB_LOCK_DIR": str(tmp_path)}
    )
    assert proc.returncode == 0, proc.stderr
    assert "Every point of the grid has been tried." in proc.stdout
    trials = optuna.load_study(study_name="g", storage=f"sqlite:///{tmp_path}/experiments/tune/g.db").trials
    assert sorted(t.params["lr"] for t in trials) == [0.0003, 0.001] and all(
        t.state == TrialState.COMPLETE for t in trials
    )
    for t in trials:
        scores = t.user_attrs["scores"]
        expected = (min(1, max(0, scores["cartpole-s1"] / 450)) + min(1, max(0, (scores["h1-s1"] - 10) / 390))) / 2
        assert t.value == pytest.approx(expected) and 0 <= t.value <= 1
    confirm = (tmp_path / "experiments/tune/g/confirm/sweep.yaml").read_text()
    assert "best-h1" in confirm and "defaults-cartpole" in confirm


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning", "ignore:Heartbeat of storage")
def test_a_trial_of_another_machine_that_stops_beating_is_failed_and_run_again(tmp_path):
    """Through Optuna's heartbeats: a RUNNING trial of host 'node-7' in the shared storage goes silent.
    Then the study, continued, keeps its settings, and its report is rerun without a trial."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution
    from optuna.storages import RDBStorage

    write(tmp_path, SPACE % 2)
    env = {"PPOLAB_LOCK_DIR": str(tmp_path)}
    base = ["tune", *TINY_TUNE, "--space", "space.yaml", "--study", "hb", "--heartbeat-grace", "3"]
    assert run_ppolab(*base, "--n-trials", "1", cwd=tmp_path, env=env).returncode == 0
    url = f"sqlite:///{tmp_path}/experiments/tune/hb.db"
    study = optuna.load_study(study_name="hb", storage=RDBStorage(url, heartbeat_interval=1, grace_period=3))
    space = {"lr": FloatDistribution(1e-4, 3e-3, log=True), "minibatch_size": CategoricalDistribution([32, 64])}
    lost = study.ask(space)  # what a tuner on another machine would hold while it trains
    lost.set_user_attr("host", "node-7")
    study._storage.record_heartbeat(lost._trial_id)
    # ... and then its machine is gone: no more heartbeats; wait until its last one is past the grace period
    db = tmp_path / "experiments/tune/hb.db"
    wait_until(lambda: _heartbeat_age(db) > 3.5, "the lost trial's heartbeat to expire", every=0.1)

    proc = run_ppolab(*base, "--n-trials", "2", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Trial 1 on node-7 stopped sending heartbeats; it runs again." in proc.stdout
    trials = optuna.load_study(study_name="hb", storage=url).trials
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.COMPLETE]
    assert trials[2].params == trials[1].params and trials[2].system_attrs["failed_trial"] == 1

    # the study continues only with its own settings; its report is written again without running a trial
    other = run_ppolab(*base, "--n-trials", "3", "--seeds", "2", cwd=tmp_path, env=env)
    assert other.returncode == 2
    assert other.stderr.startswith("ppolab tune: error: study 'hb' was started with other seeds ([1])")
    shutil.rmtree(tmp_path / "experiments/tune/hb")  # the database alone, as on another machine's checkout
    as_json = run_ppolab("tune", "--study", "hb", "--report", "--json", cwd=tmp_path, env=env)
    assert as_json.returncode == 0, as_json.stderr
    assert (tmp_path / "experiments/tune/hb/report.md").exists() and (tmp_path / "experiments/tune/hb/confirm").is_dir()
    assert "2 complete" in (tmp_path / "experiments/tune/hb/report.md").read_text()
    assert len(optuna.load_study(study_name="hb", storage=url).trials) == 3  # no trial added
    data = json.loads(as_json.stdout)
    assert data["schema_version"] == 1 and data["command"] == "tune --report" and data["counts"]["complete"] == 2
    assert data["best"]["state"] == "complete" and set(data["best"]["params"]) and data["seeds"] == [1]
    missing = run_ppolab("tune", "--study", "nope", "--report", cwd=tmp_path, env=env)
    assert missing.returncode == 2 and "no such study" in missing.stderr


def test_peak_eval_scores_a_trial_by_its_best_evaluation_and_reports_the_best_so_far(tmp_path):
    write(tmp_path, "params:\n  lr: {type: categorical, choices: [0.001]}\n  n_itr: 6\n")
    args = ["tune", *TINY_TUNE, "--space", "space.yaml", "--study", "pe", "--metric", "peak_eval", "--n-trials", "1"]
    proc = run_ppolab(*args, cwd=tmp_path, env={"PPOLAB_LOCK_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    (trial,) = optuna.load_study(study_name="pe", storage=f"sqlite:///{tmp_path}/experiments/tune/pe.db").trials
    evals = read_jsonl(tmp_path / "experiments/tune/pe/trial-0000/cartpole-s1/metrics.jsonl").evals
    assert len(evals) == 4  # iterations 0, 2, 4 and the last, 5
    assert trial.value == pytest.approx(max(e["reward"] for e in evals))  # the best evaluation, not the last
    steps = sorted(trial.intermediate_values)
    reported = [trial.intermediate_values[k] for k in steps]
    assert reported == sorted(reported) and reported[-1] == pytest.approx(trial.value)  # the best so far, rising


def test_a_trial_far_below_the_median_is_pruned_and_its_run_stopped(tmp_path):
    """The median pruner at work, deterministically: after one real trial, five finished trials that
    scored 10^6 at every step are added to the study through Optuna's public API; the next real trial
    is then below their median from its first report past the warm-up, so it is pruned there."""
    n_itr = 120  # tiny cartpole, 10-40 ms an iteration: pruned at 30, 1-3.6 s before its end (polled every 0.5 s)
    write(tmp_path, f"params:\n  lr: {{type: categorical, choices: [0.001]}}\n  n_itr: {n_itr}\n")
    args = ["tune", *TINY, "--space", "space.yaml", "--study", "p", "--sampler", "random"]
    first = run_ppolab(*args, "--n-trials", "1", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    storage = "sqlite:///" + str(tmp_path / "experiments/tune/p.db")
    study = optuna.load_study(study_name="p", storage=storage)
    lr = optuna.distributions.CategoricalDistribution([0.001])
    for _ in range(5):
        study.add_trial(optuna.trial.create_trial(
            params={"lr": 0.001}, distributions={"lr": lr}, value=1e6,
            intermediate_values={step: 1e6 for step in range(n_itr)},
        ))  # fmt: skip
    again = run_ppolab(*args, "--n-trials", "7", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    trials = optuna.load_study(study_name="p", storage=storage).trials
    assert trials[6].state == TrialState.PRUNED and "Trial 6: pruned (cartpole-s1 at iteration" in again.stdout
    assert max(trials[6].intermediate_values) == n_itr // 4  # pruned at the first step past the warm-up
    run = tmp_path / "experiments/tune/p/trial-0006/cartpole-s1"
    assert len(read_jsonl(run / "metrics.jsonl").iterations) < n_itr  # the run was stopped, not finished


@pytest.mark.parametrize("damage", ["torn", "not a database"])
def test_a_damaged_study_file_is_one_line_for_the_report_and_for_more_trials(tmp_path, damage):
    db = tmp_path / "experiments/tune/d.db"
    db.parent.mkdir(parents=True)
    study = optuna.create_study(study_name="d", storage=f"sqlite:///{db}", direction="maximize")
    lr = optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)
    for value in (1.0, 2.0, 3.0):
        study.add_trial(optuna.trial.create_trial(params={"lr": 1e-3}, distributions={"lr": lr}, value=value))
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2] if damage == "torn" else b"not a database" * 100)
    write(tmp_path, "params:\n  lr: {type: float, low: 1.0e-4, high: 1.0e-2, log: true}\n  n_itr: 2\n")
    for args in (["--report"], [*TINY, "--space", "space.yaml", "--n-trials", "4"]):
        proc = run_ppolab("tune", "--study", "d", *args, cwd=tmp_path)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
        assert "experiments/tune/d.db: cannot read it" in proc.stderr and "restore the file" in proc.stderr
    assert not (tmp_path / "experiments/tune/d/trial-0003").exists()


def test_the_pruner_s_reader_skips_records_without_their_fields(tmp_path):
    from ppolab.experiments.tune.study import RunningScore

    path = tmp_path / "metrics.jsonl"
    lines = [
        '{"type": "eval", "iteration": 0}',
        '{"type": "eval", "iteration": 1, "reward": 5.0, "length": 9}',
        '{"type": "iteration", "iteration": 2}',
        '{"type": "eval", "iteration": 3, "reward": 7.0, "length": 9}',
    ]
    path.write_text("\n".join(lines) + "\n")
    from ppolab.util.run_folder import RunFolder

    assert RunningScore("peak_eval", RunFolder(tmp_path)).new_points() == [(1, 5.0), (3, 7.0)]
    assert RunningScore("final_reward", RunFolder(tmp_path)).new_points() == []


def _heartbeat_age(db) -> float:
    """Seconds since the newest heartbeat in an Optuna SQLite study, by the database's own clock."""
    import sqlite3

    with sqlite3.connect(db) as con:
        (age,) = con.execute(
            "SELECT (julianday('now') - julianday(MAX(heartbeat))) * 86400 FROM trial_heartbeats"
        ).fetchone()
    return age or 0.0


def _finished(study: optuna.Study, seconds_per_iteration: float, passed_at: int) -> None:
    """A finished trial of a time-to-pass study as the tune reports one: minus its clock at every iteration
    until its checks passed, then minus the clock at the pass."""
    lr = optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)
    values = {i: -seconds_per_iteration * i for i in range(passed_at + 1)}
    study.add_trial(optuna.trial.create_trial(params={"lr": 1e-3}, distributions={"lr": lr},
                                              value=values[passed_at], intermediate_values=values))  # fmt: skip


def _pruned_at(study: optuna.Study, seconds_per_iteration: float, iterations: int) -> int | None:
    """The iteration at which a running trial costing `seconds_per_iteration`, never passing, is pruned."""
    trial = study.ask({"lr": optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)})
    for i in range(iterations):
        trial.report(-seconds_per_iteration * i, i)
        if trial.should_prune():
            study.tell(trial, state=TrialState.PRUNED)
            return i
    study.tell(trial, -seconds_per_iteration * iterations)
    return None


def test_time_to_pass_prunes_a_trial_only_once_it_cannot_reach_the_median_whatever_an_iteration_costs():
    """Five finished trials passed after 600 s (1 s an iteration). A trial costing 2 s an iteration is not
    pruned at iteration 200 for being behind them there (it may need fewer iterations), but at 301, past
    600 s without passing; with fewer than five finished trials nothing is pruned."""
    from ppolab.experiments.tune.study import BoundPruner

    study = optuna.create_study(direction="maximize", pruner=BoundPruner(n_startup_trials=5))
    for _ in range(4):
        _finished(study, 1.0, 600)
    assert _pruned_at(study, 2.0, 400) is None  # four finished: too few to judge
    _finished(study, 1.0, 600)
    assert _pruned_at(study, 2.0, 400) == 301
    assert _pruned_at(study, 0.5, 1100) is None  # cheaper per iteration: 550 s at iteration 1,100
    median = optuna.create_study(direction="maximize", pruner=optuna.pruners.MedianPruner(n_startup_trials=5))
    for _ in range(5):
        _finished(median, 1.0, 600)
    # Optuna's median rule judges a trial by its best value so far: for a score that only falls, its first
    assert _pruned_at(median, 2.0, 1100) is None  # so a trial 2,200 s without passing runs on


def test_a_run_that_never_passed_ranks_below_every_pass_and_by_how_far_it_got_not_by_its_cost():
    """A cheap setting failing after 1,000 s of checks must not outrank a costly one passing at 2,000 s; among
    failures, one whose best round passed the walk check outranks one that never walked, whatever either
    cost (scored by its clock, a 24-env failure ranked below a 12-env one); the report says how far it got."""
    from types import SimpleNamespace

    from ppolab.experiments.tune.report import shown
    from ppolab.experiments.tune.study import trial_value

    def value(seconds: float, passed: bool, checks: int = 0) -> float:
        p = {"passed": passed, "seconds": seconds, "env_steps": 100 * seconds, "checks_passed": checks}
        return trial_value(SimpleNamespace(time_to_pass=p), "time_to_pass")

    assert value(2000.0, True, 4) > value(1000.0, False, 3) and value(2000.0, True, 4) > value(2136.0, False)
    assert value(600.0, True, 4) > value(2000.0, True, 4)
    assert value(2136.0, False, 1) > value(1291.0, False, 0)  # walked, failed standing > never walked
    assert value(2136.0, False, 1) == value(500.0, False, 1)  # the same progress: its cost does not rank it
    assert value(10.0, False, 2) > value(10.0, False, 1)
    assert shown(value(600.0, True, 4)) == "-600"
    assert shown(value(1000.0, False, 1)) == "never passed (best round: 1 checks passed)"


def test_a_time_to_pass_report_lists_passes_by_speed_then_failures_by_how_far_they_got(tmp_path):
    """The report's table: the fastest pass first, then the failures, the furthest first and said so; the
    history plot is drawn with failures and no pass at all, and with both."""
    from ppolab.experiments.tune.report import best_table, never_passed_value, plot_history

    lr = optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)
    study = optuna.create_study(direction="maximize")

    def add(value: float, x: float) -> None:
        study.add_trial(optuna.trial.create_trial(params={"lr": x}, distributions={"lr": lr}, value=value))

    add(never_passed_value(0), 1e-4)
    add(never_passed_value(3), 2e-4)
    plot_history(study, tmp_path / "none.png")  # no trial passed yet
    add(-900.0, 3e-4)
    add(-600.0, 4e-4)
    rows = [line.split("|")[2].strip() for line in best_table(study).splitlines()[2:]]
    assert rows == ["-600", "-900", "never passed (best round: 3 checks passed)",
                    "never passed (best round: 0 checks passed)"]  # fmt: skip
    assert drawn(plot_history(study, tmp_path / "both.png")) and drawn(tmp_path / "none.png")


def test_importances_wait_for_trials_that_differ_in_outcome_not_only_in_settings():
    """Five failures that tie and one that got further: PED-ANOVA would make that one trial's settings
    all-important; the report says it cannot judge until the outcomes differ."""
    from ppolab.experiments.tune.report import importances, never_passed_value

    dists = {"lr": optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True),
             "epochs": optuna.distributions.IntDistribution(2, 6)}  # fmt: skip
    study = optuna.create_study(direction="maximize")

    def add(value: float, k: int) -> None:
        params = {"lr": 1e-4 * 1.5**k, "epochs": 2 + k % 5}
        study.add_trial(optuna.trial.create_trial(params=params, distributions=dists, value=value))

    for k in range(5):
        add(never_passed_value(0), k)
    add(never_passed_value(3), 5)
    assert importances(study) is None
    for k in range(6, 10):
        add(-100.0 * k, k)
    assert set(importances(study)) == {"lr", "epochs"}


def test_a_study_file_replaced_while_the_study_runs_is_one_line_that_says_to_run_again(tmp_path):
    """What `git stash` or a sync tool does to a study's database under a running `ppolab tune`: the file is
    replaced by a copy. SQLite refuses the next write through the old connection; that is one line saying to
    run the same command again (which reads the new file: nothing written before is lost)."""

    from ppolab.experiments.tune.study import storage_errors

    db = tmp_path / "s.db"
    storage = f"sqlite:///{db}"
    lr = optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)
    study = optuna.create_study(study_name="s", storage=storage, direction="maximize")
    study.add_trial(optuna.trial.create_trial(params={"lr": 1e-3}, distributions={"lr": lr}, value=1.0))
    shutil.copy(db, tmp_path / "copy.db")
    os.replace(tmp_path / "copy.db", db)
    with pytest.raises(UserError) as err, storage_errors(storage):
        study.add_trial(optuna.trial.create_trial(params={"lr": 2e-3}, distributions={"lr": lr}, value=2.0))
    assert str(err.value).startswith(f"--storage {storage}: cannot read it (")
    assert str(err.value).endswith(
        "the file was replaced or made read-only while the study ran: run the same command again"
    )
    assert [t.value for t in optuna.load_study(study_name="s", storage=storage).trials] == [1.0]


@pytest.mark.parametrize("metric, judged_by", [("time_to_pass", "time_to_pass"), ("peak_eval", "final_reward")])
def test_the_confirmation_sweep_judges_by_the_study_s_metric_seed_by_seed(tmp_path, metric, judged_by):
    """A study that ranked trials by time to pass is confirmed on time to pass (not on final reward), its
    defaults and best runs alternating seed by seed; a metric a sweep cannot judge by falls back to its own."""
    from ppolab.experiments.plan import expand
    from ppolab.experiments.quick import write_sweep
    from ppolab.experiments.spec import load_sweep
    from ppolab.experiments.tune.report import confirm_doc

    lr = optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)
    study = optuna.create_study(direction="maximize")
    study.add_trial(optuna.trial.create_trial(params={"lr": 1e-3}, distributions={"lr": lr}, value=-600.0))
    settings = {"envs": ["h1"], "seeds": [1], "fixed": {"n_itr": 5}, "train_flags": {"check_every": 1},
                "metric": metric}  # fmt: skip
    confirm = write_sweep(tmp_path, "confirm", confirm_doc(study, settings))  # as the study writes it
    spec = load_sweep(confirm)
    assert spec.metadata.metric == judged_by
    names = [p.name for p in expand(spec, confirm)]
    assert names[:4] == ["defaults-s2", "best-s2", "defaults-s3", "best-s3"]
