"""`ppolab report SWEEP_DIR`: results.md with plots, and a dated line in experiments/experiment-tracker.md.

results.md holds the hypothesis, the plan, the comparison table, the analysis, what
the behaviour checks last measured on each run (with --check-every),
and a verdict on the hypothesis, read as "the treatment improves the final
reward over the control (the sweep's first run)": supported, refuted or
inconclusive. Plots (PNG, beside it in plots/): learning curves against
iteration and wall time (mean across seeds, band = min..max), eval reward, and
diagnostics (KL, noise std, clip fraction, critic loss) with the anomaly
thresholds drawn in; for runs trained with --check-every, the share of seeds that passed every
check against training time and env steps (Kaplan-Meier, censored runs marked).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np

from ppolab.analysis.anomalies import Thresholds
from ppolab.analysis.compare import Configuration, Run, compare, fps_spread, group, load_runs, verdict
from ppolab.analysis.parse import load_run
from ppolab.analysis.time_to_pass import fmt_value, km_curve, km_median
from ppolab.errors import UserError
from ppolab.experiments.display import check_label
from ppolab.experiments.plan import RUNS_DIR, expand, plan_table
from ppolab.experiments.spec import SweepSpec, load_sweep, sweep_name
from ppolab.experiments.state import RESULTS_FILE, SweepState
from ppolab.util.figures import save_png
from ppolab.util.files import atomic_write_text, refuse_links
from ppolab.util.progress import Progress
from ppolab.util.run_folder import RunFolder
from ppolab.util.tables import table

TRACKER = "experiment-tracker.md"
READS = {  # how the verdict reads the hypothesis, by the sweep's metadata.metric
    "final_reward": "improves the final mean reward over",
    "time_to_pass": "passes its behaviour checks in less wall time than",
    "steps_to_pass": "passes its behaviour checks in fewer env steps than",
}
MARGINS = {"left": 0.08, "right": 0.98, "bottom": 0.12, "top": 0.9, "wspace": 0.25, "hspace": 0.35}


def _curves(config: Configuration, key: str, x_key: str = "iteration", evals: bool = False):
    """Per-seed series interpolated on a common x grid: (x, mean, low, high)."""
    series = []
    for run in config.judged:
        rec = load_run(run.path)
        rows = rec.evals if evals else rec.iterations
        if evals:
            xs = np.array([r["iteration"] for r in rows], float)
        else:
            xs = np.array([r.get(x_key, np.nan) for r in rows], float)
        ys = np.array([r.get(key, np.nan) for r in rows], float)
        ok = np.isfinite(xs) & np.isfinite(ys)
        if ok.sum() >= 2:
            series.append((xs[ok], ys[ok]))
    if not series:
        return None
    grid = np.linspace(max(s[0][0] for s in series), min(s[0][-1] for s in series), 200)
    ys = np.array([np.interp(grid, x, y) for x, y in series])
    return grid, ys.mean(0), ys.min(0), ys.max(0)


def run_states(sweep_dir: Path) -> dict[str, str]:
    """Each run's state from state.json ({} when there is none yet or it cannot be read)."""
    try:
        state = SweepState.read(sweep_dir)
    except UserError:  # a damaged state.json: judge by the run folders alone (--status says what is wrong)
        return {}
    return {name: state.effective_state(name) for name in state.runs} if state else {}


def plot(
    configs: list[Configuration], out_dir: Path, th: Thresholds, fps_warning: str | None = None, progress=None
) -> list[str]:
    """The three figures of results.md; `progress` (util.progress.Progress) advances by one per figure."""
    import matplotlib

    matplotlib.use("Agg")
    refuse_links(out_dir, what=", where the report's plots go")
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for draw in figures(configs):
        name, fig, axes, legend = draw(configs, th, fps_warning)
        _finish(fig, axes, out_dir / name, *legend)
        files.append(name)
        progress and progress.advance()
    return files


def figures(configs: list[Configuration]) -> list:
    """The figures' drawing functions: time to pass only for a sweep whose runs were checked."""
    checked = any(c.passing("time_to_pass").runs for c in configs)
    return [_learning_figure, _eval_figure, _diagnostics_figure, *([_passing_figure] if checked else [])]


def _color(i: int) -> str:
    """The i-th configuration's colour, the same in every figure."""
    import matplotlib.pyplot as plt

    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return colors[i % len(colors)]


def _band(ax, c: Configuration, i: int, curve) -> None:
    """A configuration's median curve over its seeds, with its spread as a shaded band."""
    if curve is None:
        return
    x, m, lo, hi = curve
    color = _color(i)
    ax.plot(x, m, color=color, label=f"{c.label} (n={len(c.judged)})")
    ax.fill_between(x, lo, hi, color=color, alpha=0.2, linewidth=0)


def _finish(fig, axes, path: Path, legend_at: str, legend_size: int) -> None:
    import matplotlib.pyplot as plt

    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(loc=legend_at, fontsize=legend_size)
    save_png(fig, path)
    plt.close(fig)


def _learning_figure(configs: list[Configuration], th: Thresholds, fps_warning: str | None):
    import matplotlib.pyplot as plt

    # fixed margins: constrained layout measured every label again and took half of each figure's time
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw=MARGINS)
    for i, c in enumerate(configs):
        _band(axes[0], c, i, _curves(c, "mean_eprew"))
        _band(axes[1], c, i, _curves(c, "mean_eprew", x_key="total_time"))
    axes[0].set(xlabel="iteration", ylabel="mean episode reward (training)", title="Learning curve")
    axes[1].set(xlabel="wall time (s)", ylabel="mean episode reward (training)", title="Against wall time")
    if fps_warning:  # the machine's load differed between runs: say so on the plot itself
        axes[1].set_title("Against wall time\n(throughput differed between runs: confounded by machine load)")
    return "learning_curves.png", fig, axes, ("lower right", 8)


def _eval_figure(configs: list[Configuration], th: Thresholds, fps_warning: str | None):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), gridspec_kw=MARGINS)
    for i, c in enumerate(configs):
        _band(ax, c, i, _curves(c, "reward", evals=True))
    ax.set(xlabel="iteration", ylabel="eval reward (deterministic policy)", title="Evaluation")
    return "eval_reward.png", fig, [ax], ("lower right", 8)


def _diagnostics_figure(configs: list[Configuration], th: Thresholds, fps_warning: str | None):
    """KL, action noise, clip fraction and critic loss, each with the anomaly rule's threshold."""
    import matplotlib.pyplot as plt

    panels = [
        ("kl", "mean KL divergence", th.kl, "linear"),
        ("noise_std", "action noise std", th.min_noise_std, "linear"),
        ("clip_fraction", "clip fraction", th.clip_fraction, "linear"),
        ("critic_loss", "critic loss", th.critic_loss, "log"),
    ]
    fig, axes = plt.subplots(2, 2, figsize=(12, 7), gridspec_kw={**MARGINS, "bottom": 0.08, "top": 0.95})
    for ax, (key, label, limit, scale) in zip(axes.flat, panels):
        for i, c in enumerate(configs):
            _band(ax, c, i, _curves(c, key))
        ax.set(xlabel="iteration", ylabel=label, yscale=scale, title=label[0].upper() + label[1:])
        low, high = ax.get_ylim()
        where = "" if low <= limit <= high else " (above the data)" if limit > high else " (below the data)"
        ax.axhline(limit, color="crimson", linestyle="--", linewidth=1, label=f"threshold {limit:g}{where}")
        if where:  # a far-away threshold would squash the curves into a line: keep the data's own range
            ax.set_ylim(low, high)
    return "diagnostics.png", fig, list(axes.flat), ("best", 7)


def _passing_figure(configs: list[Configuration], th: Thresholds, fps_warning: str | None):
    """Each configuration's share of checked seeds that had passed every check, against training time and env
    steps: the Kaplan-Meier estimate, in which a run that never passed counts up to its last round of checks
    (a "+" where it ends) and no further."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw=MARGINS)
    for ax, metric, scale, unit in ((axes[0], "time_to_pass", 60.0, "training time (min)"),
                                    (axes[1], "steps_to_pass", 1e6, "env steps (M)")):  # fmt: skip
        for i, c in enumerate(configs):
            runs = c.passing(metric).runs
            if not runs:
                continue
            steps = [(0.0, 0.0)] + [(t / scale, 1.0 - s) for t, s in km_curve(runs)]
            xs, ys = zip(*steps, (max(r.value for r in runs) / scale, steps[-1][1]))
            label = f"{c.label} ({sum(r.passed for r in runs)} of {len(runs)} passed)"
            ax.step(xs, ys, where="post", color=_color(i), label=label)
            ends = [r.value / scale for r in runs if not r.passed]
            heights = [max(y for x, y in steps if x <= end) for end in ends]
            ax.plot(ends, heights, "+", color=_color(i), markersize=12, markeredgewidth=2)
        ax.set(xlabel=unit, ylabel="share of seeds passed (Kaplan-Meier)", ylim=(-0.03, 1.03))
    axes[0].set_title("Time to pass every check" + ("\n(throughput differed between runs)" if fps_warning else ""))
    axes[1].set_title("Env steps to pass every check")
    return "time_to_pass.png", fig, list(axes), ("upper left", 8)


def sweep_runs(sweep_dir: Path) -> tuple[SweepSpec, list[Run]]:
    """The sweep file and every planned run, with the state the sweep recorded for it (finished or not)."""
    spec = load_sweep(sweep_dir)
    named = [(p.name, sweep_dir / RUNS_DIR / p.name) for p in expand(spec, sweep_dir)]
    return spec, load_runs(named, run_states(sweep_dir))


def _named(label: str) -> str:
    """', NAME' after 'the control', unless its name is 'control' itself."""
    return "" if label.lower() == "control" else f", {label}"


def _sentence(why: str, configs: list[Configuration]) -> str:
    """`why` as a sentence: capitalised, unless it starts with a configuration's label (kept as the sweep file
    spells it: "learnstd", not "Learnstd")."""
    first = why.split(" ", 1)[0]
    return why if first in {c.label for c in configs} else why[0].upper() + why[1:]


def _reading(metric: str, configs: list[Configuration]) -> str:
    """How the verdict reads the hypothesis: as a comparison with the control, which a sweep of one
    configuration cannot make (its verdict says what it measured instead)."""
    if len(configs) < 2:
        return ""
    return f" (The hypothesis is read as: a treatment {READS[metric]} the control{_named(configs[0].label)}.)"


def write_report(sweep_dir: Path, th: Thresholds | None = None, show_progress: bool = False) -> Path:
    """results.md, its plots and the tracker entry. `show_progress`: a progress bar (or lines) on stderr
    while the plots are drawn (a few seconds), for `ppolab report`; a sweep's runner has its own view."""
    th = th or Thresholds()
    refuse_links(sweep_dir, [RESULTS_FILE, "plots"], ", in the sweep folder")
    spec, runs = sweep_runs(sweep_dir)
    planned = expand(spec, sweep_dir)
    configs = group(runs)
    m = spec.metadata
    result, why = verdict(runs, m.min_effect, m.metric)
    progress = Progress("Drew the report's plots", len(figures(configs)), "plots") if show_progress else None
    try:
        images, plots_note = plot(configs, sweep_dir / "plots", th, fps_spread(configs), progress), ""
    except OSError as exc:  # a full disk: results.md without plots rather than nothing
        images, plots_note = [], f"The plots could not be written ({exc.strerror}); `ppolab report` writes them again."
    finally:
        progress and progress.close()
    today = dt.date.today().isoformat()
    finished = sum(r.finished for r in runs)
    lines = [
        f"# {sweep_name(sweep_dir)}: {m.name}" if m.name != sweep_name(sweep_dir) else f"# {m.name}",
        "",
        f"Written {today} by `ppolab report` from {finished} finished of {len(planned)} planned runs.",
        "",
        f"**Hypothesis.** {m.hypothesis or '(none given)'}",
        "",
        f"**Verdict: {result}.** {_sentence(why, configs)}.{_reading(m.metric, configs)}",
        "",
        m.description,
        "",
        "## Plan",
        "",
        plan_table(planned),
        "",
        compare(runs, m.min_effect, m.metric),
        "",
        *checks_section(runs),
        "## Plots",
        "",
        "Lines: mean across a configuration's finished seeds; shaded: from the lowest to the highest seed (a "
        "range, not a confidence interval). Dashed red: the anomaly thresholds."
        + (
            " Time to pass: the share of a configuration's seeds that had passed every check (Kaplan-Meier); a + "
            "marks a run that ended without passing."
            if "time_to_pass.png" in images
            else ""
        ),
        "",
        *[f"![{name}](plots/{name})" for name in images],
        plots_note,
        "",
    ]
    path = sweep_dir / RESULTS_FILE
    atomic_write_text(path, "\n".join(lines))
    track(sweep_dir, sweep_name(sweep_dir), m.hypothesis, result, today, median_to_pass(configs))
    return path


def checks_section(runs: list[Run]) -> list[str]:
    """What the behaviour checks (--check-every) last measured on each run: passed or the first failing
    check, and the worst env's share in that round (of the commanded distance or turn, of each footstep
    plan's targets); and the iteration each check first passed, which says where a run's time went (a
    walker that walks from 1,400 and passes straight at 2,650 spent its last 1,250 iterations on speed). A
    round stops at its first failure, so a check after it has no figure. Nothing when no run was checked."""
    rows = []
    for run in runs:
        records = RunFolder(run.path).records()
        label = check_label(records)
        if label is None:
            continue
        last = max(records.checks, key=lambda r: r["iteration"])
        shares = [f"{name} {last[key]:.2f}" for key, name in _worst_shares(last)]
        firsts = [f"{name} {'-' if it is None else f'{it:,}'}" for name, it in records.check_firsts().items()]
        rows.append([run.name, str(last["iteration"]), label, ", ".join(shares) or "-", ", ".join(firsts)])
    if not rows:
        return []
    header = ["Run", "Last round (iteration)", "Checks", "Worst env's share in it", "Each check first passed at"]
    return ["## Behaviour checks", "", table(header, rows), ""]


def _worst_shares(record: dict) -> list[tuple[str, str]]:
    """(key, name) of a check record's worst-env shares: 'walk.min_distance_share' is 'walk',
    'footsteps.plans.forward.min_share' is 'forward' (a check's own 'min_share' over its plans is left out)."""
    out = []
    for key in record:
        parts = key.split(".")
        if len(parts) < 2 or not (parts[-1].startswith("min_") and parts[-1].endswith("share")):
            continue
        if parts[-1] == "min_share":
            if len(parts) > 2:
                out.append((key, parts[-2]))
        else:
            out.append((key, parts[0]))
    return out


def median_to_pass(configs: list[Configuration]) -> str:
    """'; median time to pass: control 12.1 min (4 of 5 passed), lr3e-4 ...' for runs trained with
    --check-every (Kaplan-Meier, runs that never passed censored), else ''."""
    parts = []
    for c in configs:
        g = c.passing("time_to_pass")
        if g.runs:
            med = km_median(g.runs)
            when = fmt_value(med, "time_to_pass") if med is not None else "not reached"
            parts.append(f"{c.label} {when} ({sum(r.passed for r in g.runs)} of {len(g.runs)} passed)")
    return f"; median time to pass: {', '.join(parts)}" if parts else ""


def track(sweep_dir: Path, name: str, hypothesis: str, result: str, today: str, extra: str = "") -> None:
    """Add (or update) the sweep's dated entry in experiments/experiment-tracker.md."""
    tracker = sweep_dir.resolve().parent.parent / TRACKER
    link = (sweep_dir.resolve() / RESULTS_FILE).relative_to(tracker.parent)
    entry = f"- {today} [{name}]({link}): {hypothesis or '(no hypothesis)'} - **{result}**{extra}"
    lines = tracker.read_text().splitlines() if tracker.exists() else ["# Experiment tracker", ""]
    lines = [line for line in lines if f"]({link})" not in line]
    atomic_write_text(tracker, "\n".join([*lines, entry]) + "\n")
