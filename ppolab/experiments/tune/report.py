"""What a study leaves for its user: best trials, importances, a history plot and a confirmation sweep.

Written to experiments/tune/NAME/ after every `ppolab tune` (and by `--report`):
report.md, history.png and confirm/sweep.yaml. One lucky trial proves little, so
the confirmation sweep runs the best values and the defaults on fresh seeds.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, get_args

import optuna
import yaml
from optuna.trial import TrialState

from ppolab.errors import UserError
from ppolab.experiments.quick import write_sweep
from ppolab.experiments.spec import SweepMetric
from ppolab.util.figures import save_png
from ppolab.util.files import atomic_write_text
from ppolab.util.tables import table

CONFIRM_SEEDS = 5
CONFIRMABLE = get_args(SweepMetric)  # the metrics a sweep judges by
MIN_TRIALS, MIN_OUTCOMES = 5, 3  # complete trials, and different values among them, to judge importances
NEVER_PASSED = 1e9  # a time (steps) to pass study: every run that never passed scores below -NEVER_PASSED


def never_passed_value(checks_passed: float) -> float:
    """The score of a run that never passed: below every pass (whose scores are minus seconds or env steps,
    far above -NEVER_PASSED), higher the more checks its best round passed: -2e9 for none, -1.5e9 for one..."""
    return -NEVER_PASSED * (1.0 + 1.0 / (1.0 + checks_passed))


def checks_passed(value: float) -> float | None:
    """How many checks a never-passing trial's best round passed (a mean over seeds need not be whole);
    None for a trial that passed, or a metric that is not a time to pass."""
    if value > -NEVER_PASSED / 2:
        return None
    share = -value / NEVER_PASSED - 1.0  # 1 / (1 + checks passed)
    return 1.0 / share - 1.0 if share > 0 else 0.0


def shown(value: float) -> str:
    k = checks_passed(value)
    return f"{value:.4g}" if k is None else f"never passed (best round: {k:.2g} checks passed)"


def best_table(study: optuna.Study, n: int = 5) -> str:
    done = sorted(study.get_trials(states=(TrialState.COMPLETE,)), key=lambda t: -t.value)[:n]
    names = sorted({k for t in done for k in t.params})
    rows = [[str(t.number), shown(t.value), *(_fmt(t.params.get(k)) for k in names)] for t in done]
    return table(["trial", "value", *names], rows)


def importances(study: optuna.Study) -> dict[str, float] | None:
    """Optuna's parameter importances (PED-ANOVA), or None with too few complete trials to judge: fewer than
    MIN_TRIALS, or fewer than MIN_OUTCOMES different values among them (failures of a time-to-pass study tie,
    and one trial apart from four ties makes whatever it set look all-important)."""
    complete = study.get_trials(states=(TrialState.COMPLETE,))
    if len(complete) < MIN_TRIALS or len({tuple(sorted(t.params.items())) for t in complete}) < 2:
        return None
    if len({t.value for t in complete}) < MIN_OUTCOMES:
        return None
    try:
        return optuna.importance.get_param_importances(study)
    except (RuntimeError, ValueError, ZeroDivisionError):
        return None


def plot_history(study: optuna.Study, path: Path) -> Path:
    """Each finished trial's value (pruned ones at their last report) and the best so far."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    complete = [t for t in study.trials if t.state == TrialState.COMPLETE]
    pruned = [t for t in study.trials if t.state == TrialState.PRUNED and t.intermediate_values]
    passed = [t for t in complete if checks_passed(t.value) is None]
    failed = [t.number for t in complete if checks_passed(t.value) is not None]  # a time to pass study's
    if passed:
        ax.scatter([t.number for t in passed], [t.value for t in passed], label="complete", color="tab:blue")
    if pruned:
        last = [t.intermediate_values[max(t.intermediate_values)] for t in pruned]
        ax.scatter([t.number for t in pruned], last, label="pruned (last report)", marker="x", color="tab:gray")
    best, xs, ys = -math.inf, [], []
    for t in sorted(passed, key=lambda t: t.number):
        best = max(best, t.value)
        xs.append(t.number)
        ys.append(best)
    if xs:
        ax.step(xs, ys, where="post", color="tab:red", label="best so far")
    if failed:  # below every pass, along the plot's bottom edge (x in data, y in axes)
        low = ax.get_xaxis_transform()
        ax.scatter(failed, [0.03] * len(failed), transform=low, label="never passed", marker="v", color="tab:orange")
    if not passed and not pruned:
        ax.set_yticks([])  # nothing has a value on this axis yet
    numbers = [t.number for t in [*complete, *pruned]]
    if numbers:  # points drawn in axes coordinates do not widen the data limits
        ax.set_xlim(min(numbers) - 0.5, max(numbers) + 0.5)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.ticklabel_format(axis="y", useOffset=False)  # objective values as they are, not "+1.355e1" offsets
    ax.set_xlabel("trial")
    ax.set_ylabel("objective")
    ax.set_title(f"Study {study.study_name}")
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_png(fig, path, dpi=100)
    plt.close(fig)
    return path


def confirm_doc(study: optuna.Study, settings: dict[str, Any]) -> dict[str, Any]:
    """A sweep: defaults against the best values, on fresh seeds, for every env of the study, judged by the
    study's metric where a sweep can judge by it (peak_eval: a sweep compares final reward)."""
    best = study.best_trial
    envs: list[str] = settings["envs"]
    first = max(settings["seeds"]) + 1
    seeds = list(range(first, first + max(CONFIRM_SEEDS, 2 * len(settings["seeds"]))))
    shown = ", ".join(f"{k}={_fmt(v)}" for k, v in best.params.items())
    runs: dict[str, Any] = {}
    for env in envs:
        suffix = f"-{env}" if len(envs) > 1 else ""
        env_cfg = {"env": env} if len(envs) > 1 else {}
        runs[f"defaults{suffix}"] = {"name": f"defaults{suffix}", "config": env_cfg}
        runs[f"best{suffix}"] = {"name": f"best{suffix}", "config": {**env_cfg, **best.params}}
    return {
        "metadata": {
            "name": f"{study.study_name}-confirm",
            "description": f"Confirms trial {best.number} of tuning study {study.study_name} ({shown})",
            "hypothesis": f"the tuned values beat the defaults on fresh seeds {seeds[0]}-{seeds[-1]}",
            "experiment_tag_prefix": f"{study.study_name}-confirm",
            **({"metric": settings["metric"]} if settings["metric"] in CONFIRMABLE else {}),
        },
        "defaults": {"env": envs[0], **settings["fixed"], **settings["train_flags"]},
        "seeds": seeds,
        "order": "seeds",  # each seed's defaults and best run one after the other: the machine's drift hits both
        "runs": runs,
    }


def write_outputs(study: optuna.Study, study_dir: Path) -> dict[str, Path | None]:
    """report.md, history.png and confirm/sweep.yaml; the confirm sweep is kept once it has run. The folder
    is made if missing: a study's database may come without it (shared storage, a fresh checkout)."""
    study_dir.mkdir(parents=True, exist_ok=True)
    settings = study.user_attrs["settings"]
    counts = {s.name.lower(): len(study.get_trials(deepcopy=False, states=(s,))) for s in TrialState}
    lines = [
        f"# Tuning study {study.study_name}",
        "",
        f"Envs: {', '.join(settings['envs'])}; seeds per trial: {settings['seeds']}; metric: {settings['metric']}"
        + (" (normalised by target_scores, then averaged)" if len(settings["envs"]) > 1 else " (mean over seeds)"),
        "Trials: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n),
        "",
    ]
    out: dict[str, Path | None] = {"report": study_dir / "report.md", "history": None, "confirm": None}
    if not study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        lines.append("No complete trial yet.")
    else:
        lines += ["## Best trials", "", best_table(study), ""]
        imp = importances(study)
        lines += ["## Parameter importances (PED-ANOVA)", ""]
        if imp is None:
            lines.append("Too few complete trials with different values or outcomes to judge.")
        else:
            lines += [table(["parameter", "importance"], [[k, f"{v:.3f}"] for k, v in imp.items()])]
        out["history"] = plot_history(study, study_dir / "history.png")
        lines += ["", "## History", "", "![history](history.png)", ""]
        confirm_dir = study_dir / "confirm"
        doc = confirm_doc(study, settings)
        if (confirm_dir / "state.json").exists() and (confirm_dir / "sweep.yaml").exists():
            if yaml.safe_load((confirm_dir / "sweep.yaml").read_text()) != doc:
                lines.append(f"The confirmation sweep in {confirm_dir} has run with an earlier best; it is kept.")
        else:
            if (confirm_dir / "sweep.yaml").exists():
                (confirm_dir / "sweep.yaml").unlink()
            try:
                write_sweep(study_dir, "confirm", doc)
            except UserError as exc:
                raise UserError(f"confirmation sweep: {exc}") from None
        out["confirm"] = confirm_dir / "sweep.yaml"
        lines += [
            "## Confirm it",
            "",
            "The best trial may be a lucky one. Run the best values against the defaults on fresh seeds:",
            "",
            f"    ppolab sweep {confirm_dir}",
        ]
    atomic_write_text(out["report"], "\n".join(lines) + "\n")
    return out


def study_data(study: optuna.Study, out: dict[str, Path | None]) -> dict[str, Any]:
    """`tune --report --json`: the study's settings, trial counts, best trials and importances."""
    settings = study.user_attrs["settings"]
    trials = [
        {"number": t.number, "state": t.state.name.lower(), "value": t.value, "params": t.params}
        for t in study.get_trials(deepcopy=False)
    ]
    complete = [t for t in trials if t["state"] == "complete"]
    best = max(complete, key=lambda t: t["value"]) if complete else None
    return {
        "study": study.study_name, "envs": settings["envs"], "seeds": settings["seeds"], "metric": settings["metric"],
        "counts": {s.name.lower(): sum(t["state"] == s.name.lower() for t in trials) for s in TrialState},
        "best": best, "trials": trials, "importances": importances(study) if complete else None,
        "files": {k: str(v) if v else None for k, v in out.items()},
    }  # fmt: skip


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    return f"{v:.3g}" if isinstance(v, float) else str(v)
