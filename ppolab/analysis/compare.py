"""`ppolab compare`: a table of runs and an analysis computed from their configs and metrics.

Runs that differ only in seed form one configuration. The control is the first
configuration (the sweep file's first run, or the first run named). Every
statement in the analysis comes from the numbers: the best configuration and its
differences from the control, the effect of each varied parameter, the unstable
runs, seed statistics (mean and IQM with 95% bootstrap intervals, probability of
improvement) and recommendations tied to the evidence that triggered them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from ppolab.analysis.parse import load_run
from ppolab.analysis.stats import (
    MIN_SEEDS,
    bootstrap_ci,
    iqm,
    mean_difference_ci,
    prob_improvement_ci,
    seeds_needed,
)
from ppolab.analysis.summary import RunSummary, summarize
from ppolab.errors import UserError

MAX_PRACTICAL_SEEDS = 50
NOT_HYPERPARAMETERS = {"seed", "logdir", "run_name", "experiment_tag", "continued"}
ADVICE = {
    "kl_high": "lower --lr or --epochs (KL above the threshold: the policy moves too far per update)",
    "clip_high": "lower --lr or --epochs, or raise --minibatch-size (a large clipped fraction wastes samples)",
    "critic_divergence": "lower --lr or --max-grad-norm (critic loss diverging)",
    "entropy_collapse": "raise --entropy-coeff or --std-dev (exploration collapsed)",
    "nan_inf": "lower --lr and check the reward for nan/inf (the run produced non-finite values)",
    "reward_decline": "lower --lr or keep the best checkpoint (reward declining at the end)",
}


@dataclass
class Run:
    name: str
    path: Path
    config: dict
    summary: RunSummary

    @property
    def score(self) -> float:
        return self.summary.final_mean_reward if self.summary.final_mean_reward is not None else float("nan")


@dataclass
class Configuration:
    label: str
    params: dict
    runs: list[Run] = field(default_factory=list)

    @property
    def scores(self) -> np.ndarray:
        return np.array([r.score for r in self.runs if np.isfinite(r.score)])


def load_runs(paths: list[tuple[str, Path]]) -> list[Run]:
    runs = []
    for name, path in paths:
        cfg_path = path / "config.yaml"
        if not cfg_path.exists():
            raise UserError(f"{path}: no config.yaml; compare needs ppolab run folders")
        summary = summarize(load_run(path))
        if summary is None:
            continue
        runs.append(Run(name, path, yaml.safe_load(cfg_path.read_text()), summary))
    if not runs:
        raise UserError("no run with a completed iteration to compare")
    return runs


def group(runs: list[Run]) -> list[Configuration]:
    configs: dict[str, Configuration] = {}
    for run in runs:
        params = {k: v for k, v in run.config.items() if k not in NOT_HYPERPARAMETERS}
        key = yaml.safe_dump(params, sort_keys=True)
        if key not in configs:
            label = run.name.rsplit("-s", 1)[0] if run.name.rsplit("-s", 1)[-1].isdigit() else run.name
            configs[key] = Configuration(label, params)
        configs[key].runs.append(run)
    return list(configs.values())


def diffs(params: dict, control: dict) -> dict:
    return {k: v for k, v in params.items() if control.get(k) != v}


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.1f}"


def table(runs: list[Run], control: dict) -> str:
    lines = [
        "| Run | Final Reward | Peak Eval Reward | Peak Iter | Stable? | Key Hyperparam Diffs |",
        "|-----|--------------|------------------|-----------|---------|----------------------|",
    ]
    for r in runs:
        params = {k: v for k, v in r.config.items() if k not in NOT_HYPERPARAMETERS}
        d = ", ".join(f"{k}={v}" for k, v in diffs(params, control).items()) or "(control)"
        stable = "yes" if r.summary.stable else "no: " + ", ".join(a["rule"] for a in r.summary.anomalies)
        peak_iter = "-" if r.summary.peak_eval_iteration is None else str(r.summary.peak_eval_iteration)
        lines.append(
            f"| {r.name} | {_fmt(r.summary.final_mean_reward)} | {_fmt(r.summary.peak_eval_reward)} | "
            f"{peak_iter} | {stable} | {d} |"
        )
    return "\n".join(lines)


def seed_statistics(configs: list[Configuration]) -> tuple[str, list[str], list[int]]:
    """The per-configuration table, the significance statements against the control, and the seeds
    each non-significant comparison would need."""
    control = configs[0]
    lines = [
        "| Configuration | Seeds | Mean [95% CI] | IQM [95% CI] | P(better than control) [95% CI] |",
        "|---------------|-------|---------------|--------------|----------------------------------|",
    ]
    statements, needs = [], []
    for c in configs:
        x = c.scores
        if len(x) == 0:
            continue
        mean, mid = bootstrap_ci(x, lambda a: float(a.mean())), bootstrap_ci(x, iqm)
        poi = prob_improvement_ci(x, control.scores) if c is not control and len(control.scores) else None
        if len(x) >= MIN_SEEDS:
            cells = [mean.fmt(), mid.fmt(), poi.fmt(2) if poi else "-"]
        else:  # too few seeds for an interval to mean anything
            cells = [
                f"{mean.value:.1f} (n<{MIN_SEEDS})",
                f"{mid.value:.1f} (n<{MIN_SEEDS})",
                f"{poi.value:.2f} (n<{MIN_SEEDS})" if poi else "-",
            ]
        lines.append(f"| {c.label} | {len(x)} | " + " | ".join(cells) + " |")
        if c is control or len(control.scores) == 0:
            continue
        d = mean_difference_ci(x, control.scores)
        if d.low > 0 or d.high < 0:
            word = "better" if d.value > 0 else "worse"
            statements.append(
                f"{c.label} is {word} than {control.label} by {d.value:+.1f} final reward "
                f"(95% CI [{d.low:.1f}, {d.high:.1f}], {len(x)} vs {len(control.scores)} seeds)."
            )
        else:
            need = seeds_needed(x, control.scores)
            if need and need <= MAX_PRACTICAL_SEEDS:
                needs.append(need)
                more = f" About {need} seeds per configuration would detect a difference of this size (80% power)."
            elif need:
                more = (
                    " A difference this small next to the seed-to-seed spread would take more than "
                    f"{MAX_PRACTICAL_SEEDS} seeds to detect: treat the two as equivalent."
                )
            else:
                more = " Run more seeds."
            ci = (
                f"95% CI [{d.low:.1f}, {d.high:.1f}]"
                if np.isfinite(d.low)
                else f"fewer than {MIN_SEEDS} seeds a side: no interval"
            )
            statements.append(
                f"{c.label} vs {control.label}: {d.value:+.1f} final reward, not significant with "
                f"{len(x)} vs {len(control.scores)} seeds ({ci}).{more}"
            )
    return "\n".join(lines), statements, needs


def parameter_effects(configs: list[Configuration]) -> list[tuple[str, dict, float]]:
    """For each parameter that varies: mean final reward per value, and the spread (the effect)."""
    keys = sorted({k for c in configs for k in c.params if len({str(x.params.get(k)) for x in configs}) > 1})
    effects = []
    for k in keys:
        by_value: dict = {}
        for c in configs:
            by_value.setdefault(c.params.get(k), []).extend(c.scores.tolist())
        means = {v: float(np.mean(s)) for v, s in by_value.items() if s}
        if len(means) > 1:
            effects.append((k, means, max(means.values()) - min(means.values())))
    return sorted(effects, key=lambda e: -e[2])


def recommendations(configs: list[Configuration], effects, statements_needing_seeds: list[int]) -> list[str]:
    recs = []
    seen: set[str] = set()
    for c in configs:
        for r in c.runs:
            for a in r.summary.anomalies:
                if a["rule"] in seen:
                    continue
                seen.add(a["rule"])
                recs.append(
                    f"{ADVICE[a['rule']]}: {r.name} shows {a['rule']} "
                    f"({a['count']} iterations from {a['first_iteration']})."
                )
    for k, means, _ in effects:
        numeric = {v: m for v, m in means.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if len(numeric) >= 2:
            best = max(numeric, key=numeric.get)
            if best in (min(numeric), max(numeric)):
                side = "above" if best == max(numeric) else "below"
                recs.append(
                    f"extend the range of {k} {side} {best}: the best value tried is at the edge "
                    f"(mean final reward {numeric[best]:.1f})."
                )
    if statements_needing_seeds:
        recs.append(
            f"run about {max(statements_needing_seeds)} seeds per configuration: with the seeds at hand "
            "the differences are within noise."
        )
    return recs


def compare(runs: list[Run]) -> str:
    configs = group(runs)
    control = configs[0]
    out = ["## Comparison", "", table(runs, control.params), "", "## Analysis", ""]
    ranked = sorted(configs, key=lambda c: -(c.scores.mean() if len(c.scores) else -np.inf))
    best = ranked[0]
    if len(configs) > 1 and best is control:
        out.append(
            f"- Best configuration: **{best.label}**, the control itself (mean final reward "
            f"{best.scores.mean():.1f} over {len(best.scores)} seed(s)): no change tried here improved on it."
        )
    elif len(configs) > 1:
        why = ", ".join(f"{k}={v}" for k, v in diffs(best.params, control.params).items())
        out.append(
            f"- Best configuration: **{best.label}**, mean final reward {best.scores.mean():.1f} over "
            f"{len(best.scores)} seed(s) against {control.scores.mean():.1f} for the control "
            f"({control.label}). What it changes: {why}."
        )
    effects = parameter_effects(configs)
    for k, means, spread in effects:
        per = ", ".join(f"{v}: {m:.1f}" for v, m in sorted(means.items(), key=lambda kv: str(kv[0])))
        out.append(f"- Effect of {k}: {spread:.1f} final reward between its values ({per}).")
    unstable = [r for r in runs if not r.summary.stable]
    if unstable:
        for r in unstable:
            found = "; ".join(
                f"{a['rule']} x{a['count']} from iteration {a['first_iteration']}" for a in r.summary.anomalies
            )
            out.append(f"- Unstable: {r.name}: {found}.")
    else:
        out.append("- Every run was stable (no anomaly rule fired).")
    stats_table, statements, needs = seed_statistics(configs)
    out += ["", "### Across seeds", "", stats_table, ""]
    out += [f"- {s}" for s in statements]
    recs = recommendations(configs, effects, needs)
    out += ["", "### Recommendations", ""]
    out += [f"- {r}" for r in recs] if recs else ["- No anomaly and no edge effect: the plan can stand as it is."]
    return "\n".join(out)


def verdict(runs: list[Run]) -> tuple[str, str]:
    """Supported if a treatment beats the control significantly, refuted if all are significantly not better."""
    configs = group(runs)
    control, treatments = configs[0], configs[1:]
    if not treatments or len(control.scores) == 0:
        return "inconclusive", "no treatment to compare with the control"
    intervals = [(c, mean_difference_ci(c.scores, control.scores)) for c in treatments if len(c.scores)]
    better = [(c, d) for c, d in intervals if d.low > 0]
    if better:
        c, d = max(better, key=lambda cd: cd[1].value)
        return "supported", f"{c.label} beats {control.label} by {d.value:+.1f} (95% CI [{d.low:.1f}, {d.high:.1f}])"
    if intervals and all(d.high < 0 for _, d in intervals):
        return "refuted", "every treatment is significantly worse than the control"
    return "inconclusive", "no treatment differs significantly from the control with the seeds at hand"
