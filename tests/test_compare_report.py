"""`ppolab compare` and `ppolab report`: computed analysis, seed statistics, verdicts, plots and the tracker."""

from __future__ import annotations

import json
import re
import shutil
import textwrap

import numpy as np
import pytest
from conftest import run_ppolab
from PIL import Image
from scipy import stats as sps

from ppolab.analysis import synthetic
from ppolab.analysis.compare import compare, group, verdict
from ppolab.analysis.stats import (
    bootstrap_ci,
    holm,
    iqm,
    mean_ci,
    prob_improvement,
    prob_improvement_ci,
    seeds_for_power,
    tost_p,
    welch,
)

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


def test_welch_matches_scipy_with_fractional_degrees_of_freedom():
    x, y = [10.0, 14.0, 6.0, 9.5], [9.0, 13.0, 5.0]
    d = welch(x, y)
    ref = sps.ttest_ind(x, y, equal_var=False)
    assert d.p == pytest.approx(ref.pvalue) and d.df == pytest.approx(ref.df) and d.df != int(d.df)
    ci = ref.confidence_interval(0.95)
    assert (d.low, d.high) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert welch([10.0, 10.5, 11.0], [1.0, 1.5, 2.0]).low > 0
    assert not welch([1.0], [3.0, 4.0]).testable  # one seed: no test, no interval


def test_intervals_say_only_what_the_seeds_support():
    three = np.array([300.0, 340.0, 320.0])
    m = mean_ci(three)  # a t interval, wider than the min..max of three seeds
    assert m.low < three.min() and m.high > three.max()
    assert m.high - m.low == pytest.approx(2 * sps.t.ppf(0.975, 2) * three.std(ddof=1) / np.sqrt(3))
    assert not bootstrap_ci(three, iqm).has_interval and "(estimate)" in bootstrap_ci(three, iqm).fmt()
    assert not prob_improvement_ci([3.0, 4.0, 5.0], [1.0, 2.0, 0.0]).has_interval  # never a [1.00, 1.00]
    ten = np.random.default_rng(0).normal(300, 20, 10)
    assert bootstrap_ci(ten, iqm).has_interval


def test_holm_tost_and_power_against_known_answers():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    same = welch([100.0, 101.0, 99.0, 100.5, 99.5], [100.2, 100.8, 99.1, 100.0, 99.9])
    assert tost_p(same, margin=5.0) < 0.05 and tost_p(same, margin=0.1) > 0.05
    # 320 vs 300 with sd 40: a two-sided t test at 5% needs about 64 seeds a side for 80% power
    assert 60 <= seeds_for_power(20, 40) <= 66
    assert seeds_for_power(200, 40, have=5) == 6  # never as few as the seeds already run


def run_sweep(scores: dict, **kw):
    runs = synthetic.sweep(scores, **kw)
    return runs, verdict(runs), compare(runs)


def test_clearly_better_is_supported_and_named_best():
    runs, (result, why), text = run_sweep({"control": [300, 305, 298, 302, 301], "treat": [400, 396, 405, 402, 399]})
    assert result == "supported" and why.startswith("treat beats control by +99.2")
    assert "**Significant:** treat is better than control" in text
    assert "**Decided:** best configuration: **treat**" in text


def test_clearly_worse_is_refuted():
    _, (result, _), text = run_sweep({"control": [300, 305, 298, 302, 301], "treat": [200, 196, 205, 202, 199]})
    assert result == "refuted" and "**Significant:** treat is worse than control" in text
    assert "best configuration" not in text.split("**Decided:**")[-1] or "**Decided:** best" not in text


def test_equal_is_inconclusive_and_equivalent_only_by_tost():
    scores = {"control": [300, 301, 299, 300.5, 299.5], "treat": [300.2, 300.8, 299.1, 300, 299.9]}
    _, (result, why), text = run_sweep(scores)
    assert result == "inconclusive" and "equivalent to it within" in why
    assert "**Equivalent:**" in text and "TOST" in text
    import re

    import numpy as np
    from scipy import stats

    line = next(ln for ln in text.splitlines() if "**Equivalent:**" in ln)
    low, high = map(float, re.search(r"90% CI \[([-+.\d]+), ([-+.\d]+)\]", line).groups())
    t, c = np.array(scores["treat"]), np.array(scores["control"])  # the interval TOST decides on, by scipy
    welch = stats.ttest_ind(t, c, equal_var=False).confidence_interval(0.90)
    assert abs(low - welch.low) < 0.06 and abs(high - welch.high) < 0.06 and "95% CI" not in line
    assert "(Read as" not in text and "over the control, control" not in text
    noisy = {"control": [250, 350, 300], "treat": [240, 360, 310]}  # same means, far too noisy to show it
    _, (result, why), text = run_sweep(noisy)
    assert result == "inconclusive" and "equivalent" not in why.lower() and "**Equivalent:**" not in text
    assert "**Inconclusive:**" in text and "Not significant is not equal" in text


def test_null_sweeps_rarely_decide_and_never_advise_from_noise():
    """A fixed-seed handful of null sweeps (benchmarks/conclusions.py measures the rates over many)."""
    rng = np.random.default_rng(7)
    decided = 0
    for _ in range(20):
        scores = {f"c{k}": list(rng.normal(300, 40, 3)) for k in range(4)}  # control and 3 treatments
        _, (result, _), text = run_sweep(scores)
        decided += result != "inconclusive"
        if result == "inconclusive":
            assert "**Decided:**" not in text and "extend the range" not in text
        for line in text.splitlines():  # "equivalent" only where TOST passes
            assert "**Equivalent:**" not in line or "TOST" in line
    assert decided <= 1


def test_several_treatments_are_holm_corrected():
    scores = {"control": [300, 310, 290], "a": [330, 340, 320], "b": [305, 315, 295], "c": [300, 310, 291]}
    _, (_, why), text = run_sweep(scores)
    assert "3 comparisons, Holm-corrected" in why and "Holm-adjusted p" in text


def test_seed_advice_comes_from_a_power_calculation_and_says_its_assumption():
    _, _, text = run_sweep({"control": [300, 340, 260], "treat": [320, 360, 280]})
    advice = next(line for line in text.splitlines() if line.startswith("- run about"))
    n = int(advice.split("run about ")[1].split()[0])
    assert n > 3 and "80% power" in advice and "assuming the seed-to-seed sd" in advice


def test_unfinished_runs_are_listed_and_the_verdict_waits_for_them():
    runs = synthetic.sweep({"control": [300, 305, 310]}, n_itr=120)
    runs += [synthetic.run(f"treat-s{s}", 250, {"lr": 2e-3, "seed": s}, 120, stop_at=40) for s in (1, 2, 3)]
    result, why = verdict(runs)
    assert result == "inconclusive" and why.startswith("not decided") and "treat has 0 of 3" in why
    text = compare(runs)
    assert "Judged: 3 of 6 runs" in text and "treat-s1: stopped at iteration 40 of 120" in text


def test_runs_still_climbing_are_flagged_and_qualify_the_verdict():
    runs = [
        synthetic.run(f"{label}-s{s}", score + s, {"lr": lr, "seed": s}, climbing=True)
        for label, score, lr in (("control", 300, 1e-3), ("treat", 400, 2e-3))
        for s in (1, 2, 3)
    ]
    _, why = verdict(runs)
    assert "had not levelled off" in why
    text = compare(runs)
    assert "Still improving at the end: control-s1" in text and "raise n_itr" in text


def test_throughput_differences_within_a_configuration_are_called_out_and_by_design_between_them_are_not():
    runs = [synthetic.run(f"c-s{s}", 300 + s, {"lr": 1e-3, "seed": s}, fps=f) for s, f in ((1, 2e4), (2, 3e4))]
    assert "Throughput differed by 50% between runs of the same configuration (c: 20,000" in compare(runs)
    by_design = [  # a treatment that halves the cost of a step (a physics step, a batch size): not the load
        synthetic.run(f"{label}-s{s}", 300 + s, {"lr": lr, "seed": s}, fps=f)
        for label, lr, f in (("c", 1e-3, 1e4), ("fast", 2e-3, 2e4))
        for s in (1, 2)
    ]
    assert "Throughput differed" not in compare(by_design)


def test_a_run_recorded_before_a_setting_existed_groups_with_runs_that_record_its_default():
    """A sweep resumed by a newer ppolab: its older runs' config.yaml lack a setting the newer ones write
    (steps_per_env: null). They ran with its default, so they are one configuration, not two."""
    runs = synthetic.sweep({"control": [300, 310, 320], "treat": [400, 410, 420]})
    for r in runs[1::2]:
        r.config = {**r.config, "steps_per_env": None}
    configs = group(runs)
    assert [c.label for c in configs] == ["control", "treat"] and all(len(c.runs) == 3 for c in configs)
    changed = [r for r in runs if r.name == "treat-s2"][0]
    changed.config = {**changed.config, "steps_per_env": 100}  # a real change still tells
    assert len(group(runs)) == 3


def test_a_planned_run_not_begun_shows_the_changes_it_will_make(tmp_path):
    from ppolab.experiments.report import sweep_runs

    folder = tmp_path / "s"
    synthetic.write_sweep(folder, {"control": {}, "fast": {"lr": 2e-3}}, [1, 2], {"control": [1, 2], "fast": [1, 2]})
    shutil.rmtree(folder / "runs" / "fast-s2")
    state = json.loads((folder / "state.json").read_text())
    state["runs"]["fast-s2"] |= {"state": "pending", "run_dir": None}
    (folder / "state.json").write_text(json.dumps(state))
    _, runs = sweep_runs(folder)
    row = next(line for line in compare(runs).splitlines() if line.startswith("| fast-s2 "))
    assert "not started: not judged" in row and "lr=0.002" in row and "(control)" not in row


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp") / "experiments" / "sweeps"
    d = root / "clip-epochs"
    d.mkdir(parents=True)
    (d / "sweep.yaml").write_text(textwrap.dedent(SWEEP))
    proc = run_ppolab("sweep", str(d), "--yes", timeout=600, env={"PPOLAB_LOCK_DIR": str(root)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    return d


def test_compare_sweep_table_analysis_and_seed_statistics(swept):
    proc = run_ppolab("compare", str(swept), timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    rows = [line for line in out.splitlines() if re.match(r"\| (control|epochs-epochs\d)-s\d +\|", line)]
    assert len(rows) == 9
    assert any("epochs=6" in r for r in rows) and all("(control)" in r for r in rows if "control-s" in r)
    assert "mean final reward by epochs: " in out
    cells = re.sub(r" +", " ", out)  # columns are padded to their widest cell
    cells = cells[cells.index("| Configuration | Finished seeds | Mean [95% t CI]") :]
    assert "| control | 3 of 3 | " in cells and "| epochs-epochs6 | 3 of 3 | " in cells
    # each treatment's statement is the one Welch's test (Holm over the two treatments) decides
    finals = {}
    for row in rows:
        cells = [c.strip() for c in row.split("|")]
        finals.setdefault(cells[1].rsplit("-s", 1)[0], []).append(float(cells[2]))
    pvals = [
        sps.ttest_ind(finals[t], finals["control"], equal_var=False).pvalue
        for t in ("epochs-epochs1", "epochs-epochs6")
    ]
    for t, p in zip(("epochs-epochs1", "epochs-epochs6"), holm(pvals)):
        line = next(x for x in out.splitlines() if f"{t} vs control" in x or f"{t} is " in x or f"{t} and control" in x)
        assert line.startswith("- **Significant:**") == (p < 0.05)
    assert "### Recommendations" in out


def test_compare_named_runs_control_first(swept):
    runs = [str(swept / "runs" / n) for n in ("control-s1", "epochs-epochs6-s1")]
    out = run_ppolab("compare", *runs, timeout=120).stdout
    assert re.search(r"\| epochs-epochs6-s1 +\|", out) and "epochs=6" in out


def test_compare_names_runs_from_two_places_by_their_place(swept, tmp_path):
    """Two sweeps' runs share names ("preset-s2"): the report names each with its sweep, so that neither two
    rows nor two configurations read alike ("control vs control")."""
    other = tmp_path / "other" / "runs" / "control-s1"
    shutil.copytree(swept / "runs" / "epochs-epochs6-s1", other)
    out = run_ppolab("compare", str(swept / "runs" / "control-s1"), str(other), timeout=120).stdout
    assert re.search(r"\| clip-epochs/control-s1 +\|", out) and re.search(r"\| other/control-s1 +\|", out), out
    assert "other/control vs clip-epochs/control" in out and "control vs control" not in out, out


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
    assert verdict in {"supported", "refuted", "inconclusive"}  # which one: the synthetic tests pin it down
    assert not (swept / "plots" / "time_to_pass.png").exists()  # no --check-every: nothing to draw
    with Image.open(swept / "plots" / "learning_curves.png") as image:  # committed with the records: a palette PNG
        assert image.mode == "P" and image.size[0] >= 800, (image.mode, image.size)
    tracker = (swept.parent.parent / "experiment-tracker.md").read_text()
    assert (
        f"[clip-epochs](sweeps/clip-epochs/results.md): more epochs raise the final reward - **{verdict}**" in tracker
    )
    again = run_ppolab("report", str(swept), timeout=120)
    assert again.returncode == 0
    assert (swept.parent.parent / "experiment-tracker.md").read_text().count("[clip-epochs]") == 1  # updated


def test_compare_and_report_read_state_and_take_list_valued_flags(tmp_path):
    sweep = tmp_path / "experiments" / "sweeps" / "widths"
    synthetic.write_sweep(
        sweep,
        {"control": {"hidden_sizes": [64, 64]}, "wide": {"hidden_sizes": [128, 128]}},
        seeds=[1, 2, 3],
        scores={"control": [300, 310, 305], "wide": [350, 340, 345]},
        stopped={"wide-s2": 40},
        min_effect=20,
    )
    out = run_ppolab("compare", str(sweep), timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Not judged: wide-s2: interrupted after 40 of 100 iterations" in out.stdout
    assert "hidden_sizes=[128, 128]" in out.stdout and "Smallest effect of interest: 20" in out.stdout
    rep = run_ppolab("report", str(sweep), timeout=120)
    assert rep.returncode == 0, rep.stderr
    text = (sweep / "results.md").read_text()
    assert "from 5 finished of 6 planned runs" in text
    assert "**Verdict: inconclusive.** Not decided, runs are missing: wide has 2 of 3 planned seeds finished" in text


def test_runs_alike_but_for_the_env_they_trained_split_by_it(swept, tmp_path):
    """Two sweeps of one command (`--env X`, nothing else) either side of a preset or robot-file change: their
    config.yaml agree, their env.yaml do not. They are two configurations, told apart by the env setting; runs
    whose env.yaml agree still pool."""
    before, after = tmp_path / "before" / "runs", tmp_path / "after" / "runs"
    for seed in (1, 2, 3):
        shutil.copytree(swept / "runs" / f"control-s{seed}", before / f"preset-s{seed}")
        shutil.copytree(swept / "runs" / f"control-s{seed}", after / f"preset-s{seed}")
        env = after / f"preset-s{seed}" / "env.yaml"
        env.write_text(env.read_text().replace("pole_mass: 0.1", "pole_mass: 0.2"))
    runs = [str(p) for p in sorted(before.iterdir()) + sorted(after.iterdir())]
    out = run_ppolab("compare", *runs, timeout=120).stdout
    assert re.search(r"\| after/preset-s1 +\|.*env\.pole_mass=0\.2", out), out
    assert re.search(r"after/preset (vs|is|and) ", out) and "| after/preset " in out, out
    pooled = run_ppolab("compare", *[str(p) for p in sorted(before.iterdir())], timeout=120).stdout
    assert "| preset | 3 of 3 |" in re.sub(r" +", " ", pooled), pooled
