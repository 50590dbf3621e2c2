"""`ppolab compare`: a table of runs and an analysis computed from their configs and metrics.

Runs that differ only in seed (flags and env settings alike) form one configuration. The control is the first
configuration (the sweep file's first run, or the first run named). Only finished
runs are judged: a run is finished when it completed every iteration its config
asks for (and, in a sweep, state.json says "done"); the others are listed and kept
out of the statistics. Every statement comes from the numbers, and says which kind
it is: a decided result (a significant difference, Holm-corrected across
treatments, or an equivalence shown by TOST) or an estimate that decides nothing.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from ppolab.analysis.anomalies import FAILED_RULES, still_improving
from ppolab.analysis.parse import RunRecords, load_run
from ppolab.analysis.stats import (
    ALPHA,
    BOOTSTRAP_MIN_SEEDS,
    MIN_SEEDS,
    Difference,
    bootstrap_ci,
    holm,
    iqm,
    mean_ci,
    pooled_sd,
    prob_improvement_ci,
    seeds_for_power,
    tost_interval,
    tost_p,
    two_groups,
    welch,
)
from ppolab.analysis.summary import RunSummary, summarize
from ppolab.analysis.time_to_pass import (
    PASS_METRICS,
    Group,
    Passing,
    PassMetric,
    describe_pass_test,
    fisher_p,
    fmt_value,
    km_median,
    measure_name,
    outcome,
    pass_tests,
    solve_rate,
)
from ppolab.errors import UserError
from ppolab.runner.config import TrainConfig
from ppolab.runner.run_files import read_config
from ppolab.util import tables
from ppolab.util.run_folder import CONFIG, ENV, RunFolder
from ppolab.util.run_state import RunState
from ppolab.util.tables import count

NOT_HYPERPARAMETERS = {"seed", "logdir", "run_name", "experiment_tag", "imitate_sha256"}  # a start from
# pretrained weights (`continued`) is a treatment: it stays
DEFAULT_MIN_EFFECT = 0.1  # of the control's mean |final reward|, when the sweep gives no metadata.min_effect
FPS_SPREAD = 0.2  # runs whose throughput differs more than this: wall-time comparisons are confounded
ADVICE = {
    "kl_high": "lower --lr or --epochs (KL above the threshold: the policy moves too far per update)",
    "clip_high": "lower --lr or --epochs, or raise --minibatch-size (a large clipped fraction wastes samples)",
    "critic_divergence": "lower --lr or --max-grad-norm (critic loss diverging)",
    "entropy_collapse": "raise --entropy-coeff or --std-dev (exploration collapsed)",
    "nan_inf": "lower --lr and check the reward for nan/inf (the run produced non-finite values)",
    "reward_decline": "lower --lr or keep the best checkpoint (reward declining at the end)",
    "reward_collapse": "lower --lr or --max-grad-norm, and keep the best checkpoint (the reward fell and stayed down)",
    "never_learned": "look at the seeds that never learned (their reward stayed at its start: too little action "
    "noise or learning rate, or a start the policy cannot leave); they count as failed seeds",
}


@dataclass
class Run:
    name: str
    path: Path
    config: dict | None
    summary: RunSummary | None
    status: str = "finished"  # or why the run is not judged
    improving: str | None = None  # why it had not levelled off, if it had not
    env: dict | None = None  # the env settings it trained with, flattened (env_settings); None without env.yaml

    @property
    def finished(self) -> bool:
        return self.status == "finished"

    @property
    def score(self) -> float:
        s = self.summary
        return s.final_mean_reward if s and s.final_mean_reward is not None else math.nan

    @property
    def failure(self) -> str | None:
        """Why a finished run failed as a seed (diverged to nan/inf, or never learned), else None: a result
        that counts against its configuration, not a run to leave out."""
        if not self.finished or self.summary is None:
            return None
        rules = [a["rule"] for a in self.summary.anomalies if a["rule"] in FAILED_RULES]
        if rules:
            return rules[0]
        return None if math.isfinite(self.score) else "nan_inf"

    def passing(self, metric: PassMetric) -> Passing | None:
        """When its checks first passed, or where it is censored; None for a run never checked."""
        return outcome(self.summary.time_to_pass if self.summary else None, metric)


@dataclass
class Configuration:
    label: str
    params: dict
    runs: list[Run] = field(default_factory=list)

    @property
    def judged(self) -> list[Run]:
        return [r for r in self.runs if r.finished and math.isfinite(r.score)]

    @property
    def scores(self) -> np.ndarray:
        return np.array([r.score for r in self.judged])

    @property
    def finished(self) -> list[Run]:
        return [r for r in self.runs if r.finished]

    @property
    def failed(self) -> list[Run]:
        return [r for r in self.runs if r.failure]

    def split(self) -> tuple[list[float], list[float]] | None:
        """Its scores as two groups, when its seeds split (stats.two_groups): a mean and a t interval then
        describe neither."""
        return two_groups(self.scores)

    def passing(self, metric: PassMetric) -> Group:
        """Every run that was checked, as passed or censored: one stopped early (interrupted, or still going)
        is censored at its last round, never dropped (dropping it would keep only the runs that got further)."""
        runs = [r.passing(metric) for r in self.runs]
        return Group(self.label, [p for p in runs if p is not None])


def _status(cfg: dict, summary: RunSummary | None, state: str | None) -> str:
    planned = cfg.get("n_itr")
    done = summary.iterations if summary else 0
    if state not in (None, RunState.DONE):
        return f"{state} after {done} of {planned} iterations"
    if summary is None:
        return "no completed iteration"
    if (
        isinstance(planned, int)
        and done < planned
        and not _stopped_on_pass(cfg, summary)
        and not _time_up(cfg, summary)
    ):
        return f"stopped at iteration {done} of {planned}"
    return "finished"


def _time_up(cfg: dict, summary: RunSummary) -> bool:
    """The run ended at its --time-limit: one more iteration at its pace would have passed it."""
    limit = cfg.get("time_limit")
    if not limit or not summary.iterations:
        return False
    return summary.total_time_s * (1 + 1 / summary.iterations) >= 60 * limit


def budget(cfg: dict | None) -> str:
    """The setting that sets how long a run trains: the one to raise for a run still improving."""
    return "time_limit" if cfg and cfg.get("time_limit") else "n_itr"


def climbing_at_end(cfg: dict, summary: RunSummary, rec: RunRecords) -> str | None:
    """Why the run had not levelled off when it ended, if it had not; never for a run that ended at its first
    passing round: it stopped by passing, not at a budget that more iterations would extend."""
    return None if _stopped_on_pass(cfg, summary) else still_improving(rec.iterations, rec.evals)


def _stopped_on_pass(cfg: dict, summary: RunSummary) -> bool:
    """The run ended at its first passing round (`--stop-on-pass`): done by design, wherever its reward was."""
    return bool(cfg.get("stop_on_pass") and summary.time_to_pass and summary.time_to_pass["passed"])


def named(paths: list[Path]) -> list[tuple[str, Path]]:
    """Run folders with the names a report gives them: the folder's own name, or, when the folders sit in
    different places, the place too ("t1_walk-clock/preset-s2", a sweep's `runs/` skipped), so that two
    sweeps' `preset-s2` or their two "preset" configurations never read alike. Paths are made absolute
    without following links: a link is named as the user named it."""
    full = [Path(os.path.abspath(p)) for p in paths]

    def place(path: Path) -> str:
        return path.parent.parent.name if path.parent.name == "runs" else path.parent.name

    if len({f.parent for f in full}) <= 1:
        return [(f.name, p) for f, p in zip(full, paths)]
    return [(f"{place(f)}/{f.name}", p) for f, p in zip(full, paths)]


def load_runs(paths: list[tuple[str, Path]], states: dict[str, str] | None = None) -> list[Run]:
    """The runs named (control first), each with whether it finished. `states` (a sweep's state.json)
    may say a run failed or is still running; a planned run without a folder is "not started"."""
    runs = []
    for name, path in paths:
        state = (states or {}).get(name)
        if not (path / CONFIG).exists() and states is not None:  # a sweep's run not begun (or lost)
            runs.append(Run(name, path, None, None, "not started" if state in (None, RunState.PENDING) else state))
            continue
        cfg = read_config(path)
        rec = load_run(path) if RunFolder(path).has_metrics() or RunFolder(path).log.exists() else None
        summary = summarize(rec) if rec is not None else None
        run = Run(name, path, cfg, summary, _status(cfg, summary, state), env=env_settings(path, cfg))
        if rec is not None and summary:
            run.improving = climbing_at_end(cfg, summary, rec)
        runs.append(run)
    if not any(r.summary for r in runs):
        raise UserError("no run with a completed iteration to compare")
    return runs


def hyperparameters(config: dict) -> dict:
    """A run's settings, over TrainConfig's defaults: a config.yaml written before a setting existed ran with
    its default, and must group with runs that record it (else a sweep resumed by a newer ppolab splits
    each configuration in two). Without the settings that are not hyperparameters (seed, folders)."""
    defaults = {k: f.default for k, f in TrainConfig.model_fields.items() if not f.is_required()}
    full = json.loads(json.dumps({**defaults, **config}, default=str))  # tuples as the lists YAML reads back
    return {k: v for k, v in full.items() if k not in NOT_HYPERPARAMETERS}


def _label(name: str) -> str:
    return name.rsplit("-s", 1)[0] if name.rsplit("-s", 1)[-1].isdigit() else name


def env_settings(path: Path, config: dict) -> dict | None:
    """The env settings a run trained with, flattened ("physics_dt": 0.004, "robot.gains.kp.Hip": 150.0): its
    env.yaml, a setting added since filled as it was (env_config.restore). Why: a preset or robot file that
    changed between two sweeps changes no config.yaml key, and two sweeps' "preset" runs must not pool. None
    without an env.yaml (a folder from before runs kept one)."""
    from ppolab.envs import env_config

    file = path / ENV
    if not file.is_file():
        return None
    saved = yaml.safe_load(file.read_text())
    try:
        saved = env_config.restore(str(config.get("env")), saved)
    except (UserError, KeyError, ValueError, TypeError):  # an env this ppolab cannot name: the file as it is
        pass
    return _flat(saved) if isinstance(saved, dict) else None


def _flat(data: dict, prefix: str = "") -> dict:
    out: dict = {}
    for k, v in data.items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        elif v is not None:  # a null setting reads as one not written (a field added since, not in its legacy)
            out[f"{prefix}{k}"] = v
    return out


def group(runs: list[Run]) -> list[Configuration]:
    """Configurations in the order of their first run; runs without a config join theirs by name. Runs with
    equal hyperparameters split by the env settings they trained with (a run without env.yaml joins the first
    of them), and each such configuration's params then hold the env settings that tell them apart."""
    by_params: dict[str, list[Run]] = {}
    for run in runs:
        if run.config is not None:
            by_params.setdefault(yaml.safe_dump(hyperparameters(run.config), sort_keys=True), []).append(run)
    out: list[Configuration] = []
    for members in by_params.values():
        out.extend(_split_by_env(members))
    out.sort(key=lambda c: next(i for i, r in enumerate(runs) if r is c.runs[0]))
    by_label = {c.label: c for c in out}
    for run in runs:
        if run.config is None:
            c = by_label.get(_label(run.name))
            if c is None:
                c = by_label[_label(run.name)] = Configuration(_label(run.name), {})
                out.append(c)
            c.runs.append(run)
    return out


def _split_by_env(members: list[Run]) -> list[Configuration]:
    """Runs of equal hyperparameters as one configuration per env settings they trained with."""
    parts: dict[str, list[Run]] = {}
    for run in members:
        if run.env is not None:
            parts.setdefault(yaml.safe_dump(run.env, sort_keys=True, default_flow_style=True), []).append(run)
    groups = list(parts.values()) or [[]]
    groups[0].extend(r for r in members if r.env is None)
    groups.sort(key=lambda g: next(i for i, r in enumerate(members) if r is g[0]))
    params = hyperparameters(members[0].config or {})
    envs = [g[0].env or {} for g in groups]
    differ = sorted({k for e in envs for k in e if len({json.dumps(x.get(k), default=str) for x in envs}) > 1})
    return [
        Configuration(_label(g[0].name), {**params, **{f"env.{k}": e.get(k) for k in differ}}, list(g))
        for g, e in zip(groups, envs)
    ]


def diffs(params: dict, control: dict) -> dict:
    return {k: v for k, v in params.items() if control.get(k) != v}


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.1f}"


def _passed_cell(r: Run) -> str:
    p = r.summary.time_to_pass if r.summary else None
    if p is None:
        return "-"
    when = f"{p['seconds'] / 60:.1f} min, {p['env_steps'] / 1e6:.2f} M steps"
    return when if p["passed"] else f"no (checked to {when})"


def params_of(run: Run, configs: list[Configuration]) -> dict:
    """A run's hyperparameters: its configuration's, so that a planned run not begun (no config.yaml yet) shows
    what it will change, not "(control)"."""
    return next((c.params for c in configs if any(r is run for r in c.runs)), {})


def table(runs: list[Run], configs: list[Configuration]) -> str:
    checked = any(r.summary and r.summary.time_to_pass for r in runs)
    control = configs[0].params
    rows = []
    for r in runs:
        s = r.summary
        d = ", ".join(f"{k}={v}" for k, v in diffs(params_of(r, configs), control).items()) or "(control)"
        stable = "-" if s is None else "yes" if s.stable else "no: " + ", ".join(a["rule"] for a in s.anomalies)
        name = r.name if r.finished else f"{r.name} ({r.status}: not judged)"
        peak_iter = "-" if s is None or s.peak_eval_iteration is None else str(s.peak_eval_iteration)
        final = _fmt(s.final_mean_reward) if s else "-"
        peak = _fmt(s.peak_eval_reward) if s else "-"
        rows.append([name, final, peak, peak_iter, *([_passed_cell(r)] if checked else []), stable, d])
    header = ["Run", "Final Reward", "Peak Eval Reward", "Peak Iter", *(["Passed Checks"] if checked else []),
              "Stable?", "Key Hyperparam Diffs"]  # fmt: skip
    return tables.table(header, rows)


@dataclass
class Test:
    """One treatment against the control: Welch's test, Holm-adjusted, and TOST against the margin."""

    config: Configuration
    diff: Difference
    p_holm: float
    p_tost: float

    @property
    def significant(self) -> bool:
        return self.diff.testable and self.p_holm < ALPHA

    @property
    def equivalent(self) -> bool:
        return self.p_tost < ALPHA


def min_effect(configs: list[Configuration], given: float | None) -> tuple[float, str]:
    """The smallest effect of interest and where it comes from."""
    if given is not None:
        return given, f"{given:g} (metadata.min_effect)"
    control = configs[0].scores
    if len(control) and control.mean() != 0:
        value = DEFAULT_MIN_EFFECT * abs(float(control.mean()))
        return value, f"{value:.1f} (default: {DEFAULT_MIN_EFFECT:.0%} of the control's mean; set metadata.min_effect)"
    sd = pooled_sd([c.scores for c in configs])
    value = 0.5 * sd if math.isfinite(sd) and sd > 0 else 1.0
    return value, f"{value:.1f} (default: half the seed-to-seed sd; set metadata.min_effect)"


def tests(configs: list[Configuration], margin: float) -> list[Test]:
    control = configs[0]
    treated = [c for c in configs[1:] if len(c.scores)]
    diffs_ = [welch(c.scores, control.scores) for c in treated]
    adjusted = holm([d.p for d in diffs_]) if diffs_ else []
    return [Test(c, d, p, tost_p(d, margin)) for c, d, p in zip(treated, diffs_, adjusted)]


def missing_seeds(configs: list[Configuration]) -> list[str]:
    """What keeps the verdict from deciding: configurations with fewer finished seeds than planned."""
    out = []
    for c in configs:
        pending = [r for r in c.runs if not r.finished]
        if pending:
            why = "; ".join(f"{r.name}: {r.status}" for r in pending)
            out.append(f"{c.label} has {len(c.judged)} of {len(c.runs)} planned seeds finished, "
                       f"{len(pending)} missing ({why})")  # fmt: skip
    return out


def too_few_seeds(configs: list[Configuration]) -> list[str]:
    """Configurations whose seeds, all finished, are too few for any test."""
    return [f"{c.label} has {count(len(c.judged), 'finished seed')} (a test needs {MIN_SEEDS})"
            for c in configs if len(c.judged) < MIN_SEEDS and all(r.finished for r in c.runs)]  # fmt: skip


def describe_test(t: Test, control: Configuration, margin_text: str, k: int) -> str:
    d, c = t.diff, t.config
    n = f"{len(c.scores)} vs {count(len(control.scores), 'seed')}"
    if not d.testable:
        why = "no seed-to-seed variance on either side: no test is possible" if d.se == 0 else "too few seeds to test"
        return f"*Estimate:* {c.label} vs {control.label}: {d.value:+.1f} final reward ({n}: {why})."
    ci = f"95% CI [{d.low:+.1f}, {d.high:+.1f}]"
    ps = f"Welch t, p = {d.p:.3g}" + (f", Holm-adjusted p = {t.p_holm:.3g} over {k} comparisons" if k > 1 else "")
    if t.significant:
        word = "better" if d.value > 0 else "worse"
        return (
            f"**Significant:** {c.label} is {word} than {control.label} by {d.value:+.1f} final reward "
            f"({ci}; {ps}; {n})."
        )
    if t.equivalent:
        low, high = tost_interval(d)
        return (
            f"**Equivalent:** {c.label} and {control.label} differ by {d.value:+.1f} (90% CI [{low:+.1f}, "
            f"{high:+.1f}], the interval TOST decides on; {n}); TOST shows the difference is within "
            f"+-{margin_text} (p = {t.p_tost:.3g})."
        )
    return (
        f"**Inconclusive:** {c.label} vs {control.label}: {d.value:+.1f} final reward, not significant ({ci}; {ps}; "
        f"{n}). Not significant is not equal: the data rule out only that {c.label} is more than "
        f"{d.high:+.1f} better or more than {-d.low:.1f} worse."
    )


def solve_cell(c: Configuration) -> str:
    """'4 of 5 (80%, 95% CI 28%-99%)': the finished seeds that did not fail (diverge or never learn)."""
    n = len(c.finished)
    if n == 0:
        return "-"
    k = n - len(c.failed)
    _, _, low, high = solve_rate([Passing(0.0, True)] * k + [Passing(0.0, False)] * (n - k))
    return f"{k} of {n} ({k / n:.0%}, 95% CI {low:.0%}-{high:.0%})"


def seed_statistics(configs: list[Configuration], margin: float, margin_text: str) -> tuple[str, list[str]]:
    """The per-configuration table and one statement per treatment against the control; with failed seeds,
    the solve rates (Clopper-Pearson) compared by Fisher's exact test; seeds that split into two groups."""
    control = configs[0]
    failures = any(c.failed for c in configs)
    rows = []
    for c in configs:
        x = c.scores
        solved = [solve_cell(c)] if failures else []
        if len(x) == 0:
            rows.append([c.label, f"0 of {len(c.runs)}", *solved, "-", "-", "-"])
            continue
        poi = prob_improvement_ci(x, control.scores) if c is not control and len(control.scores) else None
        cells = [mean_ci(x).fmt(), bootstrap_ci(x, iqm).fmt(), poi.fmt(2) if poi else "-"]
        rows.append([c.label, f"{len(x)} of {len(c.runs)}", *solved, *cells])
    header = ["Configuration", "Finished seeds", *(["Solved seeds"] if failures else []), "Mean [95% t CI]", "IQM",
              "P(better than control)"]  # fmt: skip
    lines = [
        tables.table(header, rows),
        "",
        f"Means: Student t intervals. IQM and P(better): percentile-bootstrap intervals from {BOOTSTRAP_MIN_SEEDS} "
        "seeds a side; with fewer, a bootstrap is far too narrow, and the value is an estimate only."
        + (" Solved seeds: finished and neither diverged (nan_inf) nor never learned; Clopper-Pearson intervals."
           if failures else ""),
    ]  # fmt: skip
    ts = tests(configs, margin)
    statements = [describe_test(t, control, margin_text, len(ts)) for t in ts]
    if failures:
        for c in configs[1:]:
            statements.append(solve_statement(c, control))
    for c in configs:
        solved = len(c.finished) - len(c.failed)
        if c.failed and solved:
            statements.append(
                f"**Split:** {c.label}'s seeds fall into two groups, {solved} that learned and {len(c.failed)} that "
                f"failed ({_failed_text(c)}): its mean and interval describe neither; read its solve rate."
            )
        elif parts := c.split():
            low, high = parts
            statements.append(
                f"**Split:** {c.label}'s seeds fall into two groups, {len(low)} at {min(low):.1f}-{max(low):.1f} and "
                f"{len(high)} at {min(high):.1f}-{max(high):.1f}: its mean and interval describe neither group; "
                "read its solve rate and look at the low seeds."
            )
    return "\n".join(lines), statements


def solve_statement(c: Configuration, control: Configuration) -> str:
    a, n_a = len(c.finished) - len(c.failed), len(c.finished)
    b, n_b = len(control.finished) - len(control.failed), len(control.finished)
    p = fisher_p([Passing(0.0, True)] * a + [Passing(0.0, False)] * (n_a - a),
                 [Passing(0.0, True)] * b + [Passing(0.0, False)] * (n_b - b))  # fmt: skip
    why = ", ".join(f"{r.name}: {r.failure}" for r in c.failed + control.failed)
    word = "**Significant:**" if p < ALPHA else "*Estimate:*"
    verb = "differ" if p < ALPHA else "do not differ significantly"
    return (f"{word} solve rates {c.label} {a}/{n_a} vs {control.label} {b}/{n_b} {verb} (Fisher's exact p = {p:.3g}; "
            f"failed: {why or 'none'}).")  # fmt: skip


def passing_statistics(configs: list[Configuration], metric: PassMetric) -> tuple[str, list[str]]:
    """Per configuration: runs checked, solve rate, Kaplan-Meier medians of time and of env steps; one
    statement per treatment on `metric`, then the other measure as a second view that decides nothing (a
    treatment that changes the cost of a step moves one and not the other)."""
    other: PassMetric = "steps_to_pass" if metric == "time_to_pass" else "time_to_pass"
    groups, seconds = [c.passing(metric) for c in configs], [c.passing(other) for c in configs]
    header = [
        "Configuration",
        "Checked runs",
        "Passed (solve rate)",
        f"Median {measure_name(metric)} to pass (Kaplan-Meier)",
        f"Median {measure_name(other)} to pass",
    ]
    rows = [g.describe(metric) + g2.describe(other)[3:] for g, g2 in zip(groups, seconds)]
    ts = pass_tests(groups)
    how = ("A run that never passed is censored at its last round of checks (it passes later, if ever), not dropped. "
           "Solve rates: Clopper-Pearson intervals")  # fmt: skip
    if ts:  # name only the tests that were run
        how += (", compared by Fisher's exact test. Times: the log-rank statistic with a permutation p-value (exact "
                "over every assignment of runs to the two sides up to 1,000 of them).")  # fmt: skip
    else:
        how += "; medians: Kaplan-Meier. One configuration: nothing is compared."
    lines = [tables.table(header, rows), "", how]
    statements = [describe_pass_test(t, groups[0], metric, len(ts)) for t in ts]
    for t in pass_tests(seconds):
        if t.testable and t.group.runs and any(r.passed for r in t.group.runs + seconds[0].runs):
            statements.append(
                f"*Second view, not the verdict's measure:* {measure_name(other)} to pass, {t.group.label} vs "
                f"{seconds[0].label}: log-rank z = {t.z:+.2f} (positive: sooner), permutation p = {t.p:.3g}, "
                "unadjusted."
            )
    return "\n".join(lines), statements


def _value(v):
    """A parameter's value as a dict key (a list of layer widths becomes a tuple)."""
    return tuple(v) if isinstance(v, list) else v


def parameter_effects(configs: list[Configuration]) -> list[tuple[str, dict, float]]:
    """For each parameter that varies: mean final reward per value (estimates), and their spread."""
    keys = sorted({k for c in configs for k in c.params if len({str(x.params.get(k)) for x in configs}) > 1})
    effects = []
    for k in keys:
        by_value: dict = {}
        for c in configs:
            by_value.setdefault(_value(c.params.get(k)), []).extend(c.scores.tolist())
        means = {v: float(np.mean(s)) for v, s in by_value.items() if s}
        if len(means) > 1:
            effects.append((k, means, max(means.values()) - min(means.values())))
    return sorted(effects, key=lambda e: -e[2])


def effect_lines(configs: list[Configuration]) -> list[str]:
    """parameter_effects as sentences. Parameters that vary together (the same split of the configurations:
    a treatment that changes lr, epochs and schedule at once) make one line, named by the configurations,
    since their separate means would repeat one comparison once per parameter, and the values of a
    parameter that the treatment did not use (desired_kl under a fixed schedule) would read as a finding."""
    together: dict[tuple, list[tuple[str, dict, float]]] = {}
    for effect in parameter_effects(configs):
        split = [_value(c.params.get(effect[0])) for c in configs]
        together.setdefault(tuple(split.index(v) for v in split), []).append(effect)
    lines = []
    for effects in together.values():
        k, means, spread = effects[0]
        if len(effects) == 1:  # a value shared by several configurations says which it pools
            holders: dict = {}
            for c in configs:
                holders.setdefault(_value(c.params.get(k)), []).append(c.label)
            per = {("unset" if v is None else str(v)) + (f" ({'/'.join(holders[v])})" if len(holders.get(v, [])) > 1
                   else ""): m for v, m in means.items()}  # fmt: skip
            by = k
        else:
            labels: dict = {}
            for c in configs:
                labels.setdefault(_value(c.params.get(k)), []).append(c.label)
            per = {"/".join(labels[v]): m for v, m in means.items()}
            names = [e[0] for e in effects]
            by = f"{', '.join(names[:-1])} and {names[-1]}, which vary together"
        listed = ", ".join(f"{v}: {m:.1f}" for v, m in sorted(per.items()))
        lines.append(f"mean final reward by {by}: {listed} (spread {spread:.1f}).")
    return lines


def fps_spread(configs: list[Configuration]) -> str | None:
    """A warning when the finished runs of one configuration differ in throughput by more than FPS_SPREAD:
    the same settings ran at different speeds, so the machine's load moved. Across configurations throughput
    may differ by design (a physics step, a batch size, a network's width), so that is not compared."""
    worst = None
    for c in configs:
        fps = [r.summary.fps for r in c.finished if r.summary and math.isfinite(r.summary.fps) and r.summary.fps > 0]
        if len(fps) >= 2 and (worst is None or max(fps) / min(fps) > worst[0]):
            worst = (max(fps) / min(fps), min(fps), max(fps), c.label)
    if worst is None or worst[0] <= 1 + FPS_SPREAD:
        return None
    ratio, low, high, label = worst
    return (
        f"Throughput differed by {ratio - 1:.0%} between runs of the same configuration ({label}: {low:,.0f} to "
        f"{high:,.0f} env steps/s): wall-time comparisons reflect the machine's load as much as the configurations."
    )


def _anomaly_advice(runs: list[Run]) -> list[str]:
    """Each rule's advice once, with how many runs it fired on and the one where it fired most: naming only
    the first run read as if one seed were affected when every seed was. Under `--schedule adaptive` the rate
    follows the KL, so `--lr` is only where it starts: the advice names `--desired-kl` instead."""
    fired: dict[str, list[tuple[Run, dict]]] = {}
    for r in runs:
        for a in r.summary.anomalies if r.summary else []:
            fired.setdefault(a["rule"], []).append((r, a))
    recs = []
    for rule, hits in fired.items():
        r, a = max(hits, key=lambda hit: hit[1]["count"])
        adaptive = (r.config or {}).get("schedule") == "adaptive"
        advice = ADVICE[rule].replace("--lr", "--desired-kl") if adaptive else ADVICE[rule]
        where = f"{a['count']} iterations from {a['first_iteration']}"
        if len(hits) == 1:
            recs.append(f"{advice}: {r.name} shows {rule} ({where}).")
        else:
            recs.append(f"{advice}: {len(hits)} of {len(runs)} finished runs show {rule} (most: {r.name}, {where}).")
    return recs


def _edge_advice(configs: list[Configuration], ts: list[Test]) -> list[str]:
    """Extend a range only where its edge value is significantly better than the control."""
    winners = {id(t.config) for t in ts if t.significant and t.diff.value > 0}
    recs = []
    for k, means, _ in parameter_effects(configs):
        numeric = {v: m for v, m in means.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if len(numeric) < 2:
            continue
        best = max(numeric, key=numeric.get)
        at_edge = best in (min(numeric), max(numeric))
        if at_edge and any(id(c) in winners for c in configs if c.params.get(k) == best):
            side = "above" if best == max(numeric) else "below"
            recs.append(
                f"extend the range of {k} {side} {best}: the best value tried is at the edge and significantly "
                "better than the control."
            )
    return recs


def _seed_advice(configs: list[Configuration], ts: list[Test], margin: float, margin_text: str) -> list[str]:
    undecided = [t for t in ts if not t.significant and not t.equivalent]
    if not undecided:
        return []
    sd = pooled_sd([c.scores for c in configs])
    have = max(len(c.scores) for c in configs)
    if not math.isfinite(sd):
        return [f"run at least {MIN_SEEDS} seeds per configuration: with fewer no test can decide."]
    n = seeds_for_power(margin, sd, have)
    assumption = (
        f"to detect a difference of {margin_text} with 80% power (two-sided t test at 5%), assuming the "
        f"seed-to-seed sd of {sd:.1f} seen here"
    )
    if n is None:
        return [f"more than 1000 seeds per configuration would be needed {assumption}: test a larger effect."]
    return [f"run about {n} seeds per configuration {assumption} (this sweep ran {have})."]


def recommendations(configs, runs, ts, margin, margin_text, metric: str = "final_reward") -> list[str]:
    judged = [r for c in configs for r in c.judged]
    recs = _anomaly_advice([r for r in runs if r.finished])  # a diverged run included: its anomaly is named
    improving = [r for r in judged if r.improving]
    if improving:
        what = "the comparison is" if len(configs) > 1 else "its figures are"
        recs.append(
            f"raise {budget(improving[0].config)}: {len(improving)} of {len(judged)} finished runs had not levelled "
            f"off ({improving[0].name}: {improving[0].improving}), so {what} of curves still climbing."
        )
    if metric in PASS_METRICS:  # the range and seed advice below reads final rewards
        return recs + _pass_seed_advice(configs, metric)
    return recs + _edge_advice(configs, ts) + _seed_advice(configs, ts, margin, margin_text)


def _pass_seed_advice(configs: list[Configuration], metric: PassMetric) -> list[str]:
    """More seeds where a log-rank did not decide. No number is given: a power calculation for censored times
    needs an effect and a censoring pattern that a handful of seeds cannot estimate."""
    groups = [c.passing(metric) for c in configs]
    undecided = [t for t in pass_tests(groups) if not t.significant]
    if not undecided:
        return []
    names = ", ".join(f"{t.group.label} ({len(t.group.runs)} vs {len(groups[0].runs)} runs)" for t in undecided)
    return [f"run more seeds per configuration: {measure_name(metric)} to pass was not decided for {names}."]


def _best(configs: list[Configuration], ts: list[Test], margin: float, margin_text: str) -> str | None:
    control = configs[0]
    _, _, t = decide(configs, ts, margin, margin_text)
    if t is not None:
        why = ", ".join(f"{k}={v}" for k, v in diffs(t.config.params, control.params).items())
        rivals = [c for c in configs[1:] if c is not t.config]
        if beats_every_other(t.config, rivals):  # "best" only against every other configuration, tested
            return (f"**Decided:** best configuration: **{t.config.label}**, significantly better than every other "
                    f"({control.label} by {t.diff.value:+.1f} final reward). What it changes: {why}.")  # fmt: skip
        return (f"**Decided:** {t.config.label} is significantly better than {control.label} by "
                f"{t.diff.value:+.1f} final reward (what it changes: {why}); it is not shown better than "
                f"{', '.join(c.label for c in rivals)}, so no configuration is named best.")  # fmt: skip
    scored = [c for c in configs if len(c.scores)]
    if len(scored) < 2:
        return None
    top = max(scored, key=lambda c: c.scores.mean())
    return (
        f"*Estimate:* the highest mean final reward is {top.label}'s ({top.scores.mean():.1f} over "
        f"{count(len(top.scores), 'seed')}); no configuration is shown better than the control, so this "
        "ranks noise as much as configurations and decides nothing."
    )


def beats_every_other(best: Configuration, rivals: list[Configuration]) -> bool:
    """Welch tests of `best` against each other treatment, Holm-corrected: significantly better than all."""
    if not rivals:
        return True
    diffs_ = [welch(best.scores, c.scores) for c in rivals]
    adjusted = holm([d.p for d in diffs_])
    return all(d.testable and d.value > 0 and p < ALPHA for d, p in zip(diffs_, adjusted))


def _best_passing(configs: list[Configuration], metric: PassMetric) -> str | None:
    groups = [c.passing(metric) for c in configs]
    ts = pass_tests(groups)
    winners = [t for t in ts if t.significant and t.sooner]
    if winners:
        t = min(winners, key=lambda t: t.p_holm)
        return f"**Decided:** {t.group.label} passes its checks significantly sooner than {groups[0].label}."
    medians = [(km_median(g.runs), g) for g in groups if g.runs]
    reached = [(m, g) for m, g in medians if m is not None]
    if len(medians) < 2 or not reached:
        return None
    if len(reached) < len(medians):  # a median not reached is only a bound: no ranking of the medians
        listed = ", ".join(f"{g.label} {g.describe(metric)[3]}" for _, g in medians)
        return (f"*Estimate:* median to pass: {listed}; a median not reached is a lower bound, and no configuration "
                "passes significantly sooner or later than the control, so this decides nothing.")  # fmt: skip
    m, g = min(reached, key=lambda mg: mg[0])
    return (
        f"*Estimate:* the shortest median to pass is {g.label}'s ({fmt_value(m, metric)}); no configuration passes "
        "significantly sooner or later than the control, so this decides nothing."
    )


def compare(runs: list[Run], min_effect_value: float | None = None, metric: str = "final_reward") -> str:
    """The comparison in Markdown: the runs' table, then the analysis of `metric` (final_reward, or
    time_to_pass / steps_to_pass for runs trained with --check-every)."""
    configs = group(runs)
    margin, margin_text = min_effect(configs, min_effect_value)
    ts = tests(configs, margin)
    passing = metric in PASS_METRICS
    out = ["## Comparison", "", table(runs, configs), "", "## Analysis", ""]
    judged = [r for c in configs for r in c.judged]
    finished = [r for r in runs if r.finished]
    failed = [r for r in finished if r.failure]
    out.append(f"- Judged: {len(finished)} of {count(len(runs), 'run')}, the finished ones"
               + (f"; {len(failed)} of them failed as seeds ({', '.join(f'{r.name}: {r.failure}' for r in failed)}) "
                  "and count against their configuration's solve rate" if failed else "") + ".")  # fmt: skip
    for r in runs:
        if not r.finished:
            out.append(f"- Not judged: {r.name}: {r.status}. Kept out of every statistic below.")
    best = _best_passing(configs, metric) if passing else _best(configs, ts, margin, margin_text)
    if best:
        out.append(f"- {best}")
    out += [f"- *Estimate:* {line}" for line in effect_lines(configs)]
    unstable = [r for r in finished if r.summary and not r.summary.stable]
    for r in unstable:
        found = "; ".join(
            f"{a['rule']} x{a['count']} from iteration {a['first_iteration']}" for a in r.summary.anomalies
        )
        out.append(f"- Unstable: {r.name}: {found}.")
    if finished and not unstable:
        out.append("- Every finished run was stable (no anomaly rule fired).")
    for r in judged:
        if r.improving:
            out.append(f"- Still improving at the end: {r.name}: {r.improving}.")
    warning = fps_spread(configs)
    if warning:
        out.append(f"- {warning}")
    if passing:
        stats_table, statements = passing_statistics(configs, metric)
    else:
        stats_table, statements = seed_statistics(configs, margin, margin_text)
    out += ["", "### Across seeds", "", stats_table, ""]
    out += [f"- {s}" for s in statements]
    if not passing:
        out.append(f"- Smallest effect of interest: {margin_text}.")
    recs = recommendations(configs, runs, ts, margin, margin_text, metric)
    out += ["", "### Recommendations", ""]
    none = "- None: no anomaly fired, no run ended while still climbing, and every test decided."
    out += [f"- {r}" for r in recs] if recs else [none]
    return "\n".join(out)


def pass_verdict(configs: list[Configuration], metric: PassMetric) -> tuple[str, str]:
    """On time to pass: supported if a treatment passes significantly sooner (log-rank, permutation p,
    Holm across treatments), refuted if every treatment passes significantly later, else inconclusive."""
    groups = [c.passing(metric) for c in configs]
    if not groups[0].runs:
        return "inconclusive", f"the control has no run trained with --check-every: no {metric} to compare"
    ts = pass_tests(groups)
    k = f"{len(ts)} comparison{'s' if len(ts) > 1 else ''}" + (", Holm-corrected" if len(ts) > 1 else "")
    sooner = [t for t in ts if t.significant and t.sooner]
    if sooner:
        t = min(sooner, key=lambda t: t.p_holm)
        return "supported", (f"{t.group.label} passes its checks sooner than {groups[0].label} (log-rank, "
                             f"permutation p = {t.p_holm:.3g}; {k}; runs that never passed censored)")  # fmt: skip
    if ts and all(t.significant and not t.sooner for t in ts):
        return "refuted", f"every treatment passes its checks significantly later than the control ({k})"
    return "inconclusive", f"no treatment passes its checks significantly sooner or later than the control ({k})"


def _failed_text(c: Configuration) -> str:
    return ", ".join(f"{r.name}: {r.failure}" for r in c.failed)


def decide(
    configs: list[Configuration], ts: list[Test], margin: float, margin_text: str
) -> tuple[str, str, Test | None]:
    """The verdict on final reward, one function of the tests (and of the seeds that failed): the result,
    why, and the winning test (None unless supported). A treatment significantly better on its scored seeds
    is not an improvement when more of its seeds failed (diverged or never learned) than the control's."""
    control = configs[0]
    k = f"{len(ts)} comparison{'s' if len(ts) > 1 else ''}" + (", Holm-corrected" if len(ts) > 1 else "")
    better = [t for t in ts if t.significant and t.diff.value > 0]
    worse = [t for t in ts if t.significant and t.diff.value < 0]
    if better:
        t = max(better, key=lambda t: t.diff.value)
        d, label = t.diff, t.config.label
        ci = f"95% CI [{d.low:+.1f}, {d.high:+.1f}]"
        gain = f"{label} beats {control.label} by {d.value:+.1f} ({ci}, p = {t.p_holm:.3g}; {k})"
        if len(t.config.failed) > len(control.failed):
            return "inconclusive", (
                f"{gain} on the seeds it finished with a score, but {len(t.config.failed)} of its "
                f"{len(t.config.finished)} seeds failed ({_failed_text(t.config)}) against the control's "
                f"{len(control.failed)}: a configuration that fails more often is not shown to be better"
            ), None  # fmt: skip
        if d.value < margin:  # significant, but smaller than the sweep said is worth finding
            return "inconclusive", (f"{gain}: significant but below the smallest effect of interest, "
                                    f"{margin_text}"), None  # fmt: skip
        return "supported", gain, t
    failed = [c for c in configs[1:] if len(c.failed) > len(control.failed)]
    note = "".join(f"; {len(c.failed)} of {c.label}'s seeds failed ({_failed_text(c)})" for c in failed)
    if ts and len(worse) == len(ts):
        return "refuted", f"every treatment is significantly worse than the control ({k}){note}", None
    if ts and all(t.equivalent for t in ts) and not failed:
        return "inconclusive", (f"no treatment improves on the control: each is equivalent to it within "
                                f"+-{margin_text} (TOST; {k})"), None  # fmt: skip
    if worse:
        names = ", ".join(t.config.label for t in worse)
        verb = "is" if len(worse) == 1 else "are"
        return "inconclusive", (f"no treatment is significantly better than the control; {names} {verb} "
                                f"significantly worse ({k}){note}"), None  # fmt: skip
    return (
        "inconclusive",
        f"no treatment differs significantly from the control with the seeds at hand ({k}){note}",
        None,
    )


def _measured_only(only: Configuration, metric: str) -> str:
    """One configuration tests no comparison; on time to pass it still measures something worth the
    verdict line: how many seeds passed and the Kaplan-Meier median (censored seeds counted)."""
    passing = only.passing(metric) if metric in PASS_METRICS else None
    if passing is None or not passing.runs:
        return "no treatment to compare with the control"
    rate, median = passing.describe(metric)[2:]
    missing = missing_seeds([only])
    return (f"one configuration, nothing to compare it with: {only.label} passed its checks on {rate} of its "
            f"checked seeds; median {measure_name(metric)} to pass {median} "
            "(Kaplan-Meier, censored seeds counted)" + (f"; {missing[0]}" if missing else ""))  # fmt: skip


def verdict(runs: list[Run], min_effect_value: float | None = None, metric: str = "final_reward") -> tuple[str, str]:
    """Supported if a treatment beats the control significantly (Holm across treatments), refuted if every
    treatment is significantly worse, else inconclusive; never decided with planned seeds unfinished.
    `metric`: final_reward (Welch t), or time_to_pass / steps_to_pass (log-rank, censored; `pass_verdict`)."""
    configs = group(runs)
    treatments = configs[1:]
    if not treatments:
        return "inconclusive", _measured_only(configs[0], metric)
    missing = missing_seeds(configs)
    if missing:
        return "inconclusive", "not decided, runs are missing: " + "; ".join(missing)
    if metric not in PASS_METRICS and (few := too_few_seeds(configs)):
        return "inconclusive", "not decided, too few seeds to test: " + "; ".join(few)
    if metric in PASS_METRICS:
        return pass_verdict(configs, metric)
    margin, margin_text = min_effect(configs, min_effect_value)
    result, why, _ = decide(configs, tests(configs, margin), margin, margin_text)
    judged = [r for c in configs for r in c.judged]
    improving = [r for r in judged if r.improving]
    if improving and 2 * len(improving) >= len(judged):
        why += (
            f". Compared at a budget where the runs had not levelled off ({len(improving)} of {len(judged)} still "
            f"improving): raise {budget(improving[0].config)} before relying on it"
        )
    return result, why


def _interval(iv) -> list[float] | None:
    return [iv.low, iv.high] if iv.has_interval else None


def _decision(t: Test) -> str:
    if not t.diff.testable:
        return "untestable"
    return "significant" if t.significant else "equivalent" if t.equivalent else "inconclusive"


def comparison_data(runs: list[Run], min_effect_value: float | None = None, metric: str = "final_reward") -> dict:
    """What `compare` says, as data for `--json` (schema_version 1, documented in the README)."""
    configs = group(runs)
    control = configs[0]
    margin, margin_text = min_effect(configs, min_effect_value)
    ts = tests(configs, margin)
    result, why = verdict(runs, min_effect_value, metric)
    by_pass = metric in PASS_METRICS
    passing = [c.passing(metric) for c in configs] if by_pass else []
    return {
        "control": control.label,
        "min_effect": margin,
        "min_effect_source": margin_text,
        "runs": [_run_row(r, configs) for r in runs],
        "configurations": [_config_row(c, control) for c in configs],
        "tests": [_test_row(t) for t in ts],
        "metric": metric,
        "passing": [_pass_row(c, metric) for c in configs] if by_pass else None,
        "pass_tests": [_pass_test_row(t) for t in pass_tests(passing)] if by_pass else None,
        "verdict": {"result": result, "why": why},
        "recommendations": recommendations(configs, runs, ts, margin, margin_text, metric),
        "warnings": [w for w in [fps_spread(configs)] if w],
    }


def _run_row(r: Run, configs: list[Configuration]) -> dict:
    s = r.summary
    return {
        "name": r.name, "path": str(r.path), "finished": r.finished, "status": r.status,
        "final_reward": s.final_mean_reward if s else None, "peak_eval_reward": s.peak_eval_reward if s else None,
        "peak_eval_iteration": s.peak_eval_iteration if s else None, "stable": s.stable if s else None,
        "anomalies": s.anomalies if s else [], "still_improving": r.improving, "fps": s.fps if s else None,
        "time_to_pass": s.time_to_pass if s else None,
        "changes": diffs(params_of(r, configs), configs[0].params),
    }  # fmt: skip


def _config_row(c: Configuration, control: Configuration) -> dict:
    x = c.scores
    out = {"label": c.label, "changes": diffs(c.params, control.params), "seeds_finished": len(x),
           "seeds_planned": len(c.runs), "mean": None, "mean_ci": None, "iqm": None, "iqm_ci": None,
           "p_better": None, "p_better_ci": None}  # fmt: skip
    if len(x):
        m, q = mean_ci(x), bootstrap_ci(x, iqm)
        out.update(mean=m.value, mean_ci=_interval(m), iqm=q.value, iqm_ci=_interval(q))
        if c is not control and len(control.scores):
            p = prob_improvement_ci(x, control.scores)
            out.update(p_better=p.value, p_better_ci=_interval(p))
    return out


def _test_row(t) -> dict:
    return {"treatment": t.config.label, "difference": t.diff.value,
            "ci": [t.diff.low, t.diff.high] if t.diff.testable else None, "p": t.diff.p, "p_holm": t.p_holm,
            "df": t.diff.df, "p_tost": t.p_tost, "decision": _decision(t)}  # fmt: skip


def _pass_row(c: Configuration, metric: str) -> dict:
    g = c.passing(metric)
    k, n, low, high = solve_rate(g.runs)
    return {"label": c.label, "checked": n, "passed": k, "solve_rate_ci": [low, high] if n else None,
            "median": km_median(g.runs)}  # fmt: skip


def _pass_test_row(t) -> dict:
    decision = ("sooner" if t.sooner else "later") if t.significant else "inconclusive"
    return {"treatment": t.group.label, "z": t.z, "p": t.p, "p_holm": t.p_holm, "p_fisher": t.p_fisher,
            "decision": decision}  # fmt: skip
