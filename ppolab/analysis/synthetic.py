"""Synthetic runs of known truth, never trained: to measure what `compare` and the verdict conclude.

A run learns linearly over the first half of its iterations, then holds its score
exactly (no noise, so no anomaly fires and nothing looks still improving); its
final reward is that score. `stop_at` cuts a run short, as a crash or a timeout would.
`write_sweep` puts such runs on disk as a sweep folder (sweep.yaml, state.json, run
folders) for the commands themselves. `passes_at` adds rounds of behaviour checks (`train
--check-every`) every `check_every` iterations, the first passing one at or after that iteration
(None: checked, never passing: censored).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from ppolab.analysis.compare import Run, _status, climbing_at_end
from ppolab.analysis.parse import RunRecords
from ppolab.analysis.summary import summarize
from ppolab.util.run_folder import CONFIG, RunFolder
from ppolab.util.run_state import RunState

NEVER = -1  # passes_at for a run that is checked and never passes


def records(
    score: float, n_itr: int, stop_at: int | None = None, eval_freq: int = 10, climbing: bool = False, fps: float = 1e4,
    passes_at: int | None = None, check_every: int = 10, flat: bool = False, diverge_at: int | None = None,
) -> RunRecords:  # fmt: skip
    """A run's metrics; `climbing`: it learns until its last iteration instead of levelling off halfway;
    `flat`: it never learns (its reward stays at `score` from the start); `diverge_at`: from that iteration
    on its losses and rewards are nan (a run that diverged)."""
    last = n_itr if stop_at is None else stop_at
    rows, evals, checks = [], [], []
    for i in range(last):
        reward = score if flat else score * min(1.0, (1.0 if climbing else 2.0) * (i + 1) / n_itr)
        loss = 1.0
        if diverge_at is not None and i >= diverge_at:
            reward = loss = float("nan")
        rows.append({
            "type": "iteration", "iteration": i, "mean_eprew": reward, "mean_eplen": 400.0, "actor_loss": -0.01,
            "critic_loss": loss, "kl": 0.01, "entropy": -0.5, "clip_fraction": 0.1, "noise_std": 0.2,
            "total_steps": 1000 * (i + 1), "total_time": 1000 * (i + 1) / fps,
        })  # fmt: skip
        if i % eval_freq == 0 or i == n_itr - 1:
            evals.append({"type": "eval", "iteration": i, "reward": reward, "length": 400.0})
        if passes_at is not None and ((i + 1) % check_every == 0 or i == n_itr - 1):
            passed = int(passes_at != NEVER and i >= passes_at)
            checks.append({"type": "check", "iteration": i, "passed": passed, "total_steps": rows[-1]["total_steps"],
                           "total_time": rows[-1]["total_time"], "seconds": 0.1, "walk.passed": passed,
                           "walk.min_distance_share": 0.95 if passed else 0.5})  # fmt: skip
    return RunRecords(source="synthetic", iterations=rows, evals=evals, checks=checks)


def run(name: str, score: float, params: dict, n_itr: int = 100, stop_at: int | None = None, **kw) -> Run:
    """An in-memory run, as `compare.load_runs` would have read it (`kw`: see `records`)."""
    rec = records(score, n_itr, stop_at, **kw)
    config = {"env": "cartpole", "n_itr": n_itr, **params}
    summary = summarize(rec)
    out = Run(name, Path("synthetic") / name, config, summary, _status(config, summary, None))
    out.improving = climbing_at_end(config, summary, rec)
    return out


def sweep(scores: dict[str, list[float]], param: str = "lr", n_itr: int = 100) -> list[Run]:
    """Runs of several configurations, the first the control: `scores[label]` holds one score per seed."""
    runs = []
    for k, (label, seeds) in enumerate(scores.items()):
        for s, score in enumerate(seeds, start=1):
            runs.append(run(f"{label}-s{s}", score, {param: 1e-3 * (k + 1), "seed": s}, n_itr))
    return runs


def write_sweep(
    folder: Path,
    configs: dict[str, dict],
    seeds: list[int],
    scores: dict[str, list[float]],
    n_itr: int = 100,
    stopped: dict[str, int] | None = None,
    min_effect: float | None = None,
    passes_at: dict[str, list[int]] | None = None,
) -> None:
    """A sweep folder whose runs score as given; `stopped[run name]`: the iteration that run was cut at;
    `passes_at[label]`: per seed, the iteration its checks first pass (NEVER: censored), with the sweep's
    metadata.metric time_to_pass."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"name": folder.name, "hypothesis": "the treatment raises the final reward"}
    defaults = {"env": "cartpole", "n_itr": n_itr}
    if min_effect is not None:
        meta["min_effect"] = min_effect
    if passes_at is not None:
        meta |= {"metric": "time_to_pass", "hypothesis": "the treatment passes its checks sooner"}
        defaults = {"env": "jvrc_walk", "n_itr": n_itr, "check_every": 10}
    runs = {chr(65 + k): {"name": label, "config": cfg} for k, (label, cfg) in enumerate(configs.items())}
    spec = {"metadata": meta, "defaults": defaults, "seeds": seeds, "runs": runs}
    (folder / "sweep.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    state = {"sweep": folder.name, "updated": "2026-11-30T00:00:00+00:00", "runner_pid": None, "runs": {}}
    for label, cfg in configs.items():
        for seed, score in zip(seeds, scores[label]):
            name = f"{label}-s{seed}"
            stop = (stopped or {}).get(name)
            run_dir = folder / "runs" / name
            run_dir.mkdir(parents=True, exist_ok=True)
            config = {**defaults, **cfg, "seed": seed, "run_name": name}
            (run_dir / CONFIG).write_text(yaml.safe_dump(config))
            at = passes_at[label][seeds.index(seed)] if passes_at else None
            rec = records(score, n_itr, stop, passes_at=at)
            lines = [json.dumps(r) for r in rec.iterations + rec.evals + rec.checks]
            RunFolder(run_dir).metrics.write_text("\n".join(lines) + "\n")
            state["runs"][name] = {
                "state": RunState.DONE if stop is None else RunState.INTERRUPTED, "pid": None, "host": None,
                "started": "2026-11-30T00:00:00+00:00", "ended": "2026-11-30T00:01:00+00:00",
                "exit_code": 0 if stop is None else None, "attempts": 1, "run_dir": f"runs/{name}",
                "reason": None, "summary": None,
            }  # fmt: skip
    (folder / "state.json").write_text(json.dumps(state, indent=2))
