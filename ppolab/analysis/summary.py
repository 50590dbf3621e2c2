"""A run's headline numbers, read from its `metrics.jsonl`."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from ppolab.analysis.anomalies import find_anomalies


@dataclass
class RunSummary:
    iterations: int
    total_steps: int
    total_time_s: float
    final_mean_reward: float | None  # mean of Mean Eprew over the last 10% of iterations, nan ignored
    peak_eval_reward: float | None
    peak_eval_iteration: int | None
    latest_reward: float | None
    stable: bool
    anomalies: list[dict]

    def as_dict(self) -> dict:
        return asdict(self)


def read_metrics(path: Path) -> tuple[list[dict], list[dict]]:
    """(iteration records, eval records); a line cut off by a crash is skipped."""
    iters, evals = [], []
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return iters, evals
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        (evals if rec.get("type") == "eval" else iters).append(rec)
    return iters, evals


def summarize(run_dir: Path) -> RunSummary | None:
    iters, evals = read_metrics(run_dir / "metrics.jsonl")
    if not iters:
        return None
    anomalies = find_anomalies(iters)
    tail = iters[-max(1, len(iters) // 10) :]
    rewards = [r["mean_eprew"] for r in tail if r["mean_eprew"] is not None and not math.isnan(r["mean_eprew"])]
    peak = max(evals, key=lambda e: e["reward"]) if evals else None
    latest = next((r["mean_eprew"] for r in reversed(iters) if not math.isnan(r["mean_eprew"])), None)
    return RunSummary(
        iterations=len(iters),
        total_steps=iters[-1]["total_steps"],
        total_time_s=iters[-1]["total_time"],
        final_mean_reward=sum(rewards) / len(rewards) if rewards else None,
        peak_eval_reward=peak["reward"] if peak else None,
        peak_eval_iteration=peak["iteration"] if peak else None,
        latest_reward=latest,
        stable=not anomalies,
        anomalies=anomalies,
    )
