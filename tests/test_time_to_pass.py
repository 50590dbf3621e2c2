"""Time to pass as a metric: censored runs are kept, compared by log-rank with a permutation p, and solve
rates by Fisher's exact test; analyze, compare, report and tune read it."""

from __future__ import annotations

import json
import re

import pytest
from conftest import run_ppolab

from ppolab.analysis import synthetic
from ppolab.analysis.compare import compare, verdict
from ppolab.analysis.synthetic import NEVER
from ppolab.analysis.time_to_pass import Passing, km_curve, km_median, logrank_permutation, solve_rate


def test_kaplan_meier_median_and_solve_rate_count_censored_runs():
    runs = [Passing(10, True), Passing(20, True), Passing(30, False), Passing(30, False)]
    assert km_median(runs) == 20  # S(20) = (1 - 1/4)(1 - 1/3) = 0.5
    assert km_median(runs + [Passing(25, True)]) == 25  # S(20) = 0.6, S(25) = 0.6 (1 - 1/3) = 0.4
    assert km_median([Passing(10, True)] + [Passing(30, False)] * 3) is None  # S stays 0.75: not reached
    times, surviving = zip(*km_curve(runs + [Passing(25, True)]))  # (time, share not yet passed) at each pass
    assert times == (10, 20, 25) and surviving == pytest.approx([0.8, 0.6, 0.4])
    k, n, low, high = solve_rate(runs)
    assert (k, n) == (2, 4) and 0.06 < low < 0.07 and 0.93 < high < 0.94  # Clopper-Pearson, exact


def test_the_permutation_log_rank_is_exact_and_signed_by_who_passes_sooner():
    sooner = [Passing(t, True) for t in (1, 2, 3, 4, 5)]
    later = [Passing(t, True) for t in (6, 7, 8)] + [Passing(10, False), Passing(10, False)]
    z, p = logrank_permutation(sooner, later)
    assert z > 0 and p == pytest.approx(2 / 252)  # only the observed split and its mirror are as extreme
    z2, p2 = logrank_permutation(later, sooner)
    assert z2 == pytest.approx(-z) and p2 == p
    assert logrank_permutation([Passing(9, False)] * 3, [Passing(9, False)] * 3) == (0.0, 1.0)  # nothing passed


def _runs(passes: dict[str, list[int]], n_itr: int = 100):
    runs = []
    for k, (label, seeds) in enumerate(passes.items()):
        for s, at in enumerate(seeds, start=1):
            params = {"lr": 1e-3 * (k + 1), "seed": s, "check_every": 10}
            runs.append(synthetic.run(f"{label}-s{s}", 300, params, n_itr, passes_at=at))
    return runs


def test_a_treatment_that_passes_sooner_is_supported_with_a_never_passing_control_run_kept():
    runs = _runs({"control": [49, 59, 69, 79, NEVER], "fast": [9, 9, 19, 19, 29]})
    result, why = verdict(runs, metric="time_to_pass")
    assert result == "supported" and "fast passes its checks sooner" in why and "censored" in why
    text = compare(runs, metric="time_to_pass")
    assert re.search(r"\| control +\| 5 +\| 4 of 5 \(80%", text)  # the run that never passed counts
    assert "Kaplan-Meier" in text and "log-rank" in text and "Fisher" in text
    assert "**Decided:** fast passes its checks significantly sooner" in text
    assert verdict(runs)[0] == "inconclusive"  # on final reward the two are the same


def test_the_same_pass_times_decide_nothing_and_a_slower_treatment_is_refuted():
    same = _runs({"control": [19, 29, 39, 49, NEVER], "other": [29, 19, 49, 39, NEVER]})
    assert verdict(same, metric="time_to_pass")[0] == "inconclusive"
    slow = _runs({"control": [9, 9, 19, 19, 29], "slow": [59, 69, 79, NEVER, NEVER]})
    assert verdict(slow, metric="steps_to_pass")[0] == "refuted"


def test_a_cheaper_step_shows_in_time_not_in_steps_and_a_run_stopped_on_passing_is_not_still_climbing():
    runs = [  # the same passing iterations; the treatment's steps cost half as much wall time
        synthetic.run(f"{label}-s{s}", 300, {"lr": lr, "seed": s, "check_every": 10, "stop_on_pass": True}, 100,
                      stop_at=at + 1, passes_at=at, fps=fps, climbing=True)
        for label, lr, fps in (("control", 1e-3, 1e4), ("fast", 2e-3, 2e4))
        for s, at in enumerate([19, 29, 39, 49, 59], start=1)
    ]  # fmt: skip
    assert all(r.finished and r.improving is None for r in runs)  # still rising, but ended by passing
    text = compare(runs, metric="time_to_pass")
    assert "Still improving" not in text and "raise n_itr" not in text and "Throughput differed" not in text
    cells = re.sub(r" +", " ", text)
    assert "| control | 5 | 5 of 5 (100%, 95% CI 48%-100%) | 4 s | 0.04 M steps |" in cells
    assert "| fast | 5 | 5 of 5 (100%, 95% CI 48%-100%) | 2 s | 0.04 M steps |" in cells
    second = next(line for line in text.splitlines() if "Second view" in line)
    assert "env steps to pass, fast vs control: log-rank z = +0.00" in second and "p = 1," in second
    assert "run more seeds per configuration: time to pass was not decided for fast (5 vs 5 runs)" in text


def test_one_configuration_measures_its_solve_rate_and_median_in_the_verdict_and_compares_nothing():
    result, why = verdict(_runs({"preset": [19, 29, 39, NEVER, NEVER]}), metric="time_to_pass")
    assert result == "inconclusive" and why.startswith("one configuration, nothing to compare it with")
    assert "3 of 5 (60%, 95% CI 15%-95%)" in why and "median time to pass" in why and "censored" in why
    assert verdict(_runs({"preset": [19, 29]}))[1] == "no treatment to compare with the control"  # on reward


def test_a_median_not_reached_is_a_bound_not_ranked_below_one_reached():
    runs = _runs({"control": [59, 69, 79, NEVER, NEVER], "capped": [9, 19, NEVER, NEVER, NEVER]}, n_itr=100)
    text = compare(runs, metric="steps_to_pass")
    assert "shortest median" not in text
    assert "median to pass: control 0.08 M steps, capped not reached (> 0.10 M steps); a median not reached" in text


def test_a_sweep_on_time_to_pass_reports_it_and_the_tracker_gives_the_median(tmp_path):
    folder = tmp_path / "experiments" / "sweeps" / "ttp"
    synthetic.write_sweep(folder, {"control": {}, "fast": {"lr": 1e-3}}, [1, 2, 3, 4, 5],
                          {"control": [300] * 5, "fast": [300] * 5},
                          passes_at={"control": [49, 59, 69, 79, NEVER], "fast": [9, 9, 19, 19, 29]})  # fmt: skip
    proc = run_ppolab("report", str(folder))
    assert proc.returncode == 0, proc.stderr
    results = (folder / "results.md").read_text()
    assert "**Verdict: supported.**" in results and "passes its behaviour checks in less wall time" in results
    assert "Median time to pass (Kaplan-Meier)" in results and "Passed Checks" in results
    rows = [re.sub(r" +", " ", line) for line in results.split("## Behaviour checks")[1].splitlines()]
    assert "| control-s5 | 99 | walk fails (at 99) | walk 0.50 | walk - |" in rows  # the censored run: what it last did
    assert "| fast-s1 | 99 | passed at 9 | walk 0.95 | walk 9 |" in rows
    assert "![time_to_pass.png](plots/time_to_pass.png)" in results and "a + marks a run that ended" in results
    assert (folder / "plots" / "time_to_pass.png").read_bytes().startswith(b"\x89PNG")
    tracker = (tmp_path / "experiments" / "experiment-tracker.md").read_text()
    assert "median time to pass: control" in tracker and "(4 of 5 passed)" in tracker
    data = json.loads(run_ppolab("compare", str(folder), "--json").stdout)
    assert data["metric"] == "time_to_pass" and data["passing"][0]["passed"] == 4
    assert data["pass_tests"][0]["decision"] == "sooner"


def test_time_metrics_without_checks_are_refused_in_one_line(tmp_path):
    folder = tmp_path / "plain"
    synthetic.write_sweep(folder, {"control": {}, "b": {"lr": 1e-3}}, [1, 2], {"control": [1, 2], "b": [1, 2]})
    proc = run_ppolab("compare", str(folder), "--metric", "time_to_pass")
    assert proc.returncode == 2 and "--check-every" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    spec = (folder / "sweep.yaml").read_text().replace("metadata:\n", "metadata:\n  metric: time_to_pass\n")
    (folder / "sweep.yaml").write_text(spec)
    proc = run_ppolab("sweep", str(folder), "--dry-run")
    assert proc.returncode == 2 and "metric" in proc.stderr and "check_every" in proc.stderr, proc.stderr


def test_tune_scores_a_run_by_minus_its_time_to_pass_and_a_censored_one_below_every_pass(tmp_path):
    from ppolab.analysis.summary import summarize
    from ppolab.experiments.tune.report import shown
    from ppolab.experiments.tune.study import RunningScore, trial_value
    from ppolab.util.run_folder import RunFolder

    passed = summarize(synthetic.records(300, 100, passes_at=39, fps=100.0))
    never = summarize(synthetic.records(300, 100, passes_at=NEVER, fps=100.0))
    assert trial_value(passed, "time_to_pass") == pytest.approx(-400.0)  # iteration 39: 40,000 steps at 100/s
    assert trial_value(never, "steps_to_pass") < trial_value(passed, "steps_to_pass") - 1e8  # below every pass
    assert shown(trial_value(never, "steps_to_pass")) == "never passed (best round: 0 checks passed)"
    rec = synthetic.records(300, 40, passes_at=19, fps=100.0)
    in_order = sorted(rec.iterations + rec.checks, key=lambda r: (r["iteration"], r["type"] == "check"))
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in in_order))
    points = dict(RunningScore("time_to_pass", RunFolder(tmp_path)).new_points())
    assert points[5] == pytest.approx(-60.0) and points[19] == pytest.approx(-200.0)
    assert points[39] == points[19]  # once passed, the value holds


def test_the_committed_time_to_pass_study_is_valid_and_tune_asks_for_checks(tmp_path):
    from conftest import REPO

    from ppolab.experiments.tune.search_space import load_space

    space = REPO / "experiments" / "tune" / "jvrc_walk-ttp.space.yaml"
    assert load_space(space, {"check_every": 50}, ["jvrc_walk"]).fixed == {"n_itr": 800}
    proc = run_ppolab("tune", "--env", "jvrc_walk", "--space", str(space), "--study", "t", "--metric",
                      "time_to_pass", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2 and "add --check-every N" in proc.stderr, proc.stderr
    assert not (tmp_path / "experiments").exists()  # refused before any study or run was made


def test_how_far_a_run_got_is_the_most_top_level_checks_one_round_passed():
    """A never-passing run's progress counts whole checks (walk, stand...), not their parts (each straight
    speed), and its best round, not its last (a policy can forget how to stand)."""
    from ppolab.analysis.time_to_pass import first_pass

    def rnd(itr: int, **passed: int) -> dict:
        figures = {k.replace("__", "."): float(v) for k, v in passed.items()}
        return {"iteration": itr, "passed": 0, "total_time": 10.0 * itr, "total_steps": 100 * itr, **figures}

    best = rnd(99, walk__passed=1, stand__passed=1, straight__speeds__0__passed=1, straight__passed=0)
    rounds = [rnd(49, walk__passed=0), best, rnd(149, walk__passed=1, stand__passed=0)]
    figures = first_pass(rounds)
    assert figures["checks_passed"] == 2 and not figures["passed"] and figures["iteration"] == 149


def test_a_run_ended_by_its_time_limit_is_judged_censored_there_and_the_advice_names_the_time_limit():
    """`--time-limit`: a run that never passed and ran out of minutes is a result (censored at its last round),
    not an unfinished run; one still climbing asks for more minutes, not more iterations. A run stopped short
    of both budgets (Ctrl-C) is still left out."""
    fps = 1e4  # 0.1 s an iteration: 1 min is 600 iterations
    timed = {"lr": 1e-3, "check_every": 10, "time_limit": 1.0}
    out_of_time = synthetic.run("control-s1", 300, {**timed, "seed": 1}, 100_000, stop_at=600, passes_at=NEVER,
                                fps=fps, climbing=True)  # fmt: skip
    assert out_of_time.finished and out_of_time.improving
    assert out_of_time.passing("time_to_pass") == Passing(60.0, False)
    cut_short = synthetic.run("control-s2", 300, {**timed, "seed": 2}, 100_000, stop_at=300, passes_at=NEVER, fps=fps)
    assert not cut_short.finished and cut_short.status == "stopped at iteration 300 of 100000"
    passed = [synthetic.run(f"control-s{s}", 300, {**timed, "seed": s, "stop_on_pass": True}, 100_000,
                            stop_at=at + 1, passes_at=at, fps=fps) for s, at in ((3, 99), (4, 199))]  # fmt: skip
    text = compare([out_of_time, *passed], metric="time_to_pass")
    assert "raise time_limit" in text and "raise n_itr" not in text


def test_each_check_first_passes_where_a_round_first_got_past_it_and_a_check_never_passed_says_so():
    from ppolab.util.run_folder import Records

    def round_(it: int, **passed: int) -> dict:
        return {
            "type": "check",
            "iteration": it,
            "passed": int(all(passed.values()) and len(passed) == 3),
            **{f"{name}.passed": v for name, v in passed.items()},
            "straight.speeds.0.passed": 0,
        }

    records = Records(checks=[round_(99, walk=0), round_(49, walk=0), round_(149, walk=1, stand=1, turn=0),
                              round_(199, walk=0), round_(249, walk=1, stand=1, turn=1)])  # fmt: skip
    assert records.check_firsts() == {"walk": 149, "stand": 149, "turn": 249}  # a failure after a pass keeps it
    assert Records(checks=[round_(49, walk=0)]).check_firsts() == {"walk": None}
    assert Records().check_firsts() == {}
