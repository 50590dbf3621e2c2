"""`ppolab analyze PATH`: a run folder, a sweep folder (every run in it) or a plain stdout log."""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import ValidationError

from ppolab.analysis.anomalies import Thresholds
from ppolab.analysis.parse import load_run
from ppolab.analysis.summary import RunSummary, summarize
from ppolab.errors import UserError
from ppolab.util import strict_json, yaml_file
from ppolab.util.run_folder import RunFolder
from ppolab.util.validation import first_problem


def load_thresholds(config: Path | None, overrides: dict) -> Thresholds:
    values: dict = {}
    if config is not None:
        try:
            values = yaml_file.load(config)[0] or {}
        except (FileNotFoundError, IsADirectoryError):
            raise UserError(f"--config: {config}: no such file") from None
        except yaml_file.YamlFileError as exc:
            raise UserError(f"--config: {exc}") from None
        if not isinstance(values, dict):
            raise UserError(f"--config: {config}: expected a mapping of threshold names to numbers")
    try:
        return Thresholds(**{**values, **overrides})
    except ValidationError as exc:
        err = first_problem(exc)
        key = str(err["loc"][0])
        valid = ", ".join(Thresholds.model_fields)
        msg = err["msg"] + (f"; valid keys: {valid}" if err["type"] == "extra_forbidden" else "")
        where = f"--{key.replace('_', '-')}" if key in overrides else f"--config: {config}: {key}"
        raise UserError(f"{where}: {msg} (got {err['input']!r})") from None


def run_paths(path: Path) -> list[tuple[str, Path]]:
    """(name, run) pairs: one for a run folder or log file, every run of a sweep folder."""
    if path.is_dir() and (path / "sweep.yaml").exists():
        runs = sorted(p for p in (path / "runs").glob("*") if p.is_dir() and RunFolder(p).has_metrics())
        if not runs:
            raise UserError(f"{path}: no run of this sweep has recorded an iteration yet")
        return [(p.name, p) for p in runs]
    return [(path.name, path)]


def analyze(path: Path, thresholds: Thresholds) -> list[tuple[str, RunSummary]]:
    out = []
    for name, run in run_paths(path):
        summary = summarize(load_run(run), thresholds)
        if summary is not None:
            out.append((name, summary))
    return out


def to_json(results: list[tuple[str, RunSummary]], sweep: bool) -> str:
    if sweep:
        return strict_json.dumps([{"run": name, **s.as_dict()} for name, s in results], indent=2)
    return strict_json.dumps(results[0][1].as_dict(), indent=2)


def _num(v, fmt: str = ".1f") -> str:
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, fmt)


def to_text(results: list[tuple[str, RunSummary]]) -> str:
    blocks = []
    for name, s in results:
        lines = [
            f"Run: {name}  ({s.source})",
            f"Iterations: {s.iterations} ({s.total_steps:,} env steps) in {_num(s.total_time_s)} s "
            f"({_num(s.fps, ',.0f')} steps/s)"
            + (f"; {s.incomplete_iterations} cut off" if s.incomplete_iterations else ""),
            f"Final mean reward (last 10% of iterations): {_num(s.final_mean_reward)}",
            f"Peak eval reward: {_num(s.peak_eval_reward)} at iteration {s.peak_eval_iteration}"
            if s.peak_eval_reward is not None
            else "Peak eval reward: no evaluation",
            "Evals: " + (", ".join(f"{e['iteration']}: {_num(e['reward'])}" for e in s.evals) or "-"),
            "Stable: yes" if s.stable else "Stable: no",
        ]
        if (p := s.time_to_pass) is not None:
            when = f"{p['seconds'] / 60:.1f} min, {p['env_steps']:,} env steps, iteration {p['iteration']}"
            lines.append(f"Checks: passed after {when}" if p["passed"] else
                         f"Checks: not passed in {p['rounds']} rounds (censored at {when})")  # fmt: skip
        if s.reward_terms:
            lines.append("Reward terms, mean per env step (first 10% -> last 10% of iterations; share of the last):")
            width = max(map(len, s.reward_terms))
            lines += [f"  {name:<{width}}  {_num(t['first'], '8.4f')} -> {_num(t['last'], '8.4f')}  "
                      f"{_num(100 * t['share'], '4.0f')}%" for name, t in s.reward_terms.items()]  # fmt: skip
        for a in s.anomalies:
            lines.append(f"  - {a['rule']}: {a['count']} iterations from {a['first_iteration']}: {a['detail']}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
