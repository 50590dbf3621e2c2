"""No statistical claim without its test: no variance is no test, "best" needs a win over every other
configuration, a report names only the tests it ran, censored seeds count, and missing seeds are said."""

from __future__ import annotations

import re

from ppolab.analysis import synthetic
from ppolab.analysis.compare import compare, verdict
from ppolab.analysis.synthetic import NEVER
from ppolab.analysis.time_to_pass import Passing, logrank_permutation


def _runs(passes: dict[str, list[int]], n_itr: int = 100, status: dict | None = None):
    runs = []
    for k, (label, seeds) in enumerate(passes.items()):
        for s, at in enumerate(seeds, start=1):
            params = {"lr": 1e-3 * (k + 1), "seed": s, "check_every": 10}
            run = synthetic.run(f"{label}-s{s}", 300, params, n_itr, passes_at=at)
            if status and run.name in status:
                run.status = status[run.name]
            runs.append(run)
    return runs


def test_a_log_rank_with_no_variance_is_no_test_and_decides_nothing():
    z, p = logrank_permutation([Passing(9, True)] * 3, [Passing(9, True)] * 3)
    assert z != z and p != p  # NaN: no test, never "p = 0"
    runs = _runs({"control": [9, 9, 9], "treat": [9, 9, 9]})
    text = compare(runs, metric="time_to_pass")
    assert "**No test possible:** treat vs control" in text and "**Significant" not in text
    assert verdict(runs, metric="time_to_pass")[0] == "inconclusive"


def test_a_welch_test_with_no_variance_is_no_test():
    runs = synthetic.sweep({"control": [300, 300, 300], "treat": [320, 320, 320]})
    text = compare(runs)
    assert "no seed-to-seed variance on either side: no test is possible" in text and "**Significant" not in text
    assert verdict(runs)[0] == "inconclusive"


def test_best_is_said_only_of_a_configuration_tested_better_than_every_other():
    beaten_control = synthetic.sweep({"control": [300, 301, 299, 300, 302], "a": [340, 341, 339, 342, 340],
                                      "b": [338, 343, 341, 337, 340]})  # fmt: skip
    text = compare(beaten_control)
    assert "best configuration" not in text and "so no configuration is named best" in text
    clear = synthetic.sweep({"control": [300, 301, 299, 300, 302], "a": [400, 401, 399, 402, 400],
                             "b": [340, 341, 339, 342, 340]})  # fmt: skip
    assert "**Decided:** best configuration: **a**, significantly better than every other" in compare(clear)


def test_one_configuration_names_no_comparison_and_counts_an_interrupted_checked_seed():
    runs = _runs({"preset": [19, 29, NEVER, NEVER]}, status={"preset-s4": "interrupted after 60 of 100 iterations"})
    text = compare(runs, metric="time_to_pass")
    assert "Fisher" not in text and "log-rank" not in text and "comparison is of curves" not in text
    assert "One configuration: nothing is compared." in text
    assert re.search(r"\| preset +\| 4 +\| 2 of 4", text)  # four checked runs, the interrupted one among them
    result, why = verdict(runs, metric="time_to_pass")
    assert result == "inconclusive" and "2 of 4 (50%" in why  # the interrupted seed censored, not dropped
    assert "3 of 4 planned seeds finished, 1 missing (preset-s4: interrupted" in why


def test_a_one_seed_experiment_has_too_few_seeds_not_missing_runs():
    runs = synthetic.sweep({"control": [300], "treat": [320]})
    result, why = verdict(runs)
    assert result == "inconclusive" and "missing" not in why and why.startswith("not decided, too few seeds")


def test_an_estimate_says_which_configurations_a_shared_value_pools():
    runs = [synthetic.run(f"{label}-s{s}", score + s, {**params, "seed": s}, 120)
            for label, score, params in (("scratch", 200, {}), ("imitate", 220, {"imitate": "expert"}),
                                         ("warm", 210, {"warm_start": "w"}))
            for s in (1, 2, 3)]  # fmt: skip
    line = next(x for x in compare(runs).splitlines() if "mean final reward by imitate" in x)
    assert "unset (scratch/warm)" in line
