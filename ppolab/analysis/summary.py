"""A run's headline numbers and anomalies: what `ppolab analyze` prints and the sweep runner records.

JSON keys (`ppolab analyze --json`): iterations, total_steps, total_time_s, fps,
final_mean_reward (mean of Mean Eprew over the last 10% of iterations, nan
ignored), peak_eval_reward, peak_eval_iteration, evals (iteration, reward,
length), latest_reward, stable, anomalies (rule, first_iteration, count, detail),
incomplete_iterations, source, and time_to_pass (a run trained with --check-every: passed, seconds,
env_steps and iteration of its first passing round of behaviour checks, else of its last round, where
it is censored; rounds; checks_passed, the most checks one round passed; null for a run never checked), and
reward_terms (each reward term's mean contribution per env step over the first and the last 10% of
iterations, and its share of the last; null for a run recorded before the terms were).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

from ppolab.analysis.anomalies import Thresholds, find_anomalies
from ppolab.analysis.parse import RunRecords, load_run
from ppolab.analysis.time_to_pass import first_pass
from ppolab.errors import UserError
from ppolab.util.run_folder import TERM_PREFIX, RunFolder


@dataclass
class RunSummary:
    iterations: int
    total_steps: int
    total_time_s: float
    fps: float
    final_mean_reward: float | None
    peak_eval_reward: float | None
    peak_eval_iteration: int | None
    evals: list[dict]
    latest_reward: float | None
    stable: bool
    anomalies: list[dict]
    incomplete_iterations: int
    source: str
    time_to_pass: dict | None = None
    reward_terms: dict | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def _finite(v) -> bool:
    return v is not None and math.isfinite(v)


def summarize(rec: RunRecords, thresholds: Thresholds | None = None) -> RunSummary | None:
    iters = rec.iterations
    if not iters:
        return None
    anomalies = find_anomalies(iters, thresholds, rec.fine_tune)
    tail = iters[-max(1, len(iters) // 10) :]
    rewards = [r["mean_eprew"] for r in tail if _finite(r.get("mean_eprew"))]
    evals = [{"iteration": e["iteration"], "reward": e["reward"], "length": e["length"]} for e in rec.evals]
    finite_evals = [e for e in evals if _finite(e["reward"])]
    peak = max(finite_evals, key=lambda e: e["reward"]) if finite_evals else None
    latest = next((r["mean_eprew"] for r in reversed(iters) if _finite(r.get("mean_eprew"))), None)
    total_time = rec.final_time if rec.final_time is not None else iters[-1].get("total_time", math.nan)
    total_steps = int(iters[-1].get("total_steps", 0))
    return RunSummary(
        iterations=len(iters),
        total_steps=total_steps,
        total_time_s=total_time,
        fps=total_steps / total_time if total_time and total_time > 0 else math.nan,
        final_mean_reward=sum(rewards) / len(rewards) if rewards else None,
        peak_eval_reward=peak["reward"] if peak else None,
        peak_eval_iteration=peak["iteration"] if peak else None,
        evals=evals,
        latest_reward=latest,
        stable=not anomalies,
        anomalies=anomalies,
        incomplete_iterations=rec.incomplete,
        source=rec.source,
        time_to_pass=first_pass(rec.checks),
        reward_terms=reward_terms(iters),
    )


def reward_terms(iters: list[dict]) -> dict | None:
    """Each reward term (`rewards/<term>` in the iteration records): its mean over the first and the last 10%
    of iterations, and its share of the last 10%'s sum (which term the policy earns its reward from)."""
    names = [k[len(TERM_PREFIX) :] for k in iters[-1] if k.startswith(TERM_PREFIX)]
    if not names:
        return None
    tenth = max(1, len(iters) // 10)

    def mean(rows: list[dict], name: str) -> float:
        values = [r[TERM_PREFIX + name] for r in rows if _finite(r.get(TERM_PREFIX + name))]
        return sum(values) / len(values) if values else math.nan

    out = {n: {"first": mean(iters[:tenth], n), "last": mean(iters[-tenth:], n)} for n in names}
    total = sum(abs(v["last"]) for v in out.values() if math.isfinite(v["last"]))
    for v in out.values():
        v["share"] = v["last"] / total if total > 0 and math.isfinite(v["last"]) else math.nan
    return out


def summarize_run(run_dir: Path, thresholds: Thresholds | None = None) -> RunSummary | None:
    """The summary of a run folder, or None when it has not finished an iteration yet."""
    if not RunFolder(run_dir).has_metrics() and not RunFolder(run_dir).log.exists():
        return None
    try:
        return summarize(load_run(run_dir), thresholds)
    except (UserError, OSError):  # nothing readable yet
        return None
