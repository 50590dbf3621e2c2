"""`ppolab compare` and `ppolab report`: computed analysis, seed statistics, verdicts, plots and the tracker."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import REPO

from ppolab.analysis.stats import iqm, mean_difference_ci, prob_improvement, seeds_needed

SWEEP = """\
metadata:
  name: "clip-epochs"
  hypothesis: "more epochs raise the final reward"
defaults: {env: cartpole, n_itr: 4, num_procs: 2, max_traj_len: 40, minibatch_size: 16, eval_freq: 2,
           eval_episodes: 2, lr: 0.003}
seeds: [1, 2, 3]
runs:
  A: {name: control}
  B: {name: epochs, grid: {epochs: [1, 6]}}
"""


def test_iqm_trims_a_quarter_each_side():
    assert iqm(np.array([0.0, 1.0, 2.0, 3.0, 100.0, -100.0, 4.0, 5.0])) == pytest.approx(2.5)
    assert iqm(np.array([1.0, 2.0, 3.0])) == 2.0


def test_probability_of_improvement_counts_pairs_and_half_ties():
    assert prob_improvement([3, 4], [1, 2]) == 1.0
    assert prob_improvement([1, 2], [1, 2]) == 0.5


def test_welch_interval_and_seed_estimate():
    strong = mean_difference_ci([10.0, 10.5, 11.0], [1.0, 1.5, 2.0])
    assert strong.low > 0
    weak = mean_difference_ci([10.0, 14.0, 6.0], [9.0, 13.0, 5.0])
    assert weak.low < 0 < weak.high
    assert mean_difference_ci([1.0, 2.0], [3.0, 4.0]).low == -np.inf  # two seeds: no claim
    assert seeds_needed([10.0, 14.0, 6.0], [9.0, 13.0, 5.0]) > 3


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp") / "experiments" / "sweeps"
    d = root / "clip-epochs"
    d.mkdir(parents=True)
    (d / "sweep.yaml").write_text(textwrap.dedent(SWEEP))
    proc = subprocess.run(
        [sys.executable, "-m", "ppolab", "sweep", str(d), "--yes"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PPOLAB_LOCK_DIR": str(root), **__import__("os").environ},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    return d


def test_compare_sweep_table_analysis_and_seed_statistics(swept):
    proc = subprocess.run(
        [sys.executable, "-m", "ppolab", "compare", str(swept)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    rows = [line for line in out.splitlines() if re.match(r"\| (control|epochs-epochs\d)-s\d \|", line)]
    assert len(rows) == 9
    assert any("epochs=6" in r for r in rows) and all("(control)" in r for r in rows if "control-s" in r)
    assert "- Best configuration: **" in out
    assert "- Effect of epochs: " in out
    table = out[out.index("| Configuration | Seeds | Mean [95% CI]") :]
    assert "| control | 3 | " in table and "| epochs-epochs6 | 3 | " in table
    assert ("not significant with 3 vs 3 seeds" in out) or (" than control by " in out)
    assert "### Recommendations" in out


def test_compare_named_runs_control_first(swept):
    runs = [str(swept / "runs" / n) for n in ("control-s1", "epochs-epochs6-s1")]
    out = subprocess.run(
        [sys.executable, "-m", "ppolab", "compare", *runs], cwd=REPO, capture_output=True, text=True, timeout=120
    ).stdout
    assert "| epochs-epochs6-s1 |" in out and "epochs=6" in out


def test_report_has_hypothesis_plan_verdict_plots_and_tracker_entry(swept):
    text = (swept / "results.md").read_text()
    for needle in (
        "**Hypothesis.** more epochs raise the final reward",
        "## Plan",
        "Key Changes",
        "## Comparison",
        "## Analysis",
        "![learning_curves.png](plots/learning_curves.png)",
    ):
        assert needle in text
    verdict = text.split("**Verdict: ")[1].split(".**")[0]
    assert verdict in {"supported", "refuted", "inconclusive"}
    tracker = (swept.parent.parent / "experiment-tracker.md").read_text()
    assert (
        f"[clip-epochs](sweeps/clip-epochs/results.md): more epochs raise the final reward - **{verdict}**" in tracker
    )
    again = subprocess.run(
        [sys.executable, "-m", "ppolab", "report", str(swept)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0
    assert (swept.parent.parent / "experiment-tracker.md").read_text().count("[clip-epochs]") == 1  # updated
