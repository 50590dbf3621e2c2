"""From a sweep file to the ordered list of training jobs it asks for.

Each run of the file expands to the product of its grid, then once per seed.
Expanded names encode their values: run `gamma0995` with seeds [1, 2] gives
`gamma0995-s1` and `gamma0995-s2`; a grid over lr adds `-lr00003`.
"""

from __future__ import annotations

import itertools
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppolab.errors import UserError
from ppolab.experiments.spec import NAME, SweepSpec, load_sweep, sweep_name
from ppolab.runner.config import TrainConfig, to_args
from ppolab.runner.entry import settings
from ppolab.util.tables import table

RUNS_DIR = "runs"
LOGS_DIR = "logs"


@dataclass(frozen=True)
class TrainCall:
    """One training: `config`, a new run's settings validated once, when the call is made (`fresh`), with
    `given`, the names of the settings the sweep gave (its command line shows those); or a run folder to resume."""

    config: TrainConfig | None = None
    given: tuple[str, ...] = ()
    resume: Path | None = None

    @classmethod
    def fresh(cls, config: dict[str, Any], logdir: str | Path, run_name: str) -> TrainCall:
        """A new run named `run_name` under `logdir`, whatever folder `config` named; a UserError names a
        setting that cannot be."""
        rest = {k: v for k, v in config.items() if k not in ("logdir", "run_name")}
        values = {**rest, "logdir": str(logdir), "run_name": run_name}
        return cls(settings(values), tuple(values))

    @property
    def argv(self) -> list[str]:
        """The same training as a `ppolab train` command line: shown in logs, exec'd on Ray workers."""
        if self.resume is not None:
            return ["ppolab", "train", "--resume", str(self.resume)]
        given = self.given if self.config is not None else ()
        return ["ppolab", "train", *(a for name in given for a in to_args(name, getattr(self.config, name)))]


@dataclass
class PlannedRun:
    name: str
    key: str  # the run's key in the sweep file (A, B, ...)
    description: str
    config: dict[str, Any]  # train flags (snake_case), defaults applied
    changes: dict[str, Any]  # flags that differ from the sweep's defaults
    timeout: float | None = None
    call: TrainCall = field(default_factory=TrainCall)
    resources: dict[str, float] = field(default_factory=lambda: {"num_cpus": 1.0, "num_gpus": 0.0})

    @property
    def argv(self) -> list[str]:
        return self.call.argv

    @property
    def command(self) -> str:
        return shlex.join(self.argv)


def _tag(value: Any) -> str:
    if isinstance(value, list):
        return "x".join(_tag(v) for v in value)  # hidden_sizes [256, 256] -> 256x256
    return str(value).replace(".", "").replace("-", "m").replace(" ", "")


def expand(spec: SweepSpec, sweep_dir: Path) -> list[PlannedRun]:
    """Every job of the sweep, in file order, grid values then seeds innermost; with `order: seeds`, seed by
    seed (the same order within each seed)."""
    planned: list[PlannedRun] = []
    for key, run in spec.runs.items():
        seeds = run.seeds if run.seeds is not None else spec.seeds
        grid_names = list(run.grid)
        for values in itertools.product(*(run.grid[n] for n in grid_names)):
            point = dict(zip(grid_names, values))
            base = run.name + "".join(f"-{n.replace('_', '')}{_tag(v)}" for n, v in point.items())
            for seed in seeds if seeds else [None]:
                config = {**spec.defaults, **run.config, **point}
                if seed is not None:
                    config["seed"] = seed
                name = f"{base}-s{seed}" if seed is not None else base
                changes = {k: v for k, v in config.items() if k not in spec.defaults or spec.defaults[k] != v}
                changes.pop("experiment_tag", None)
                if config.get("track") and not config.get("wandb_group"):
                    config["wandb_group"] = sweep_name(sweep_dir)  # W&B groups a sweep's runs together
                planned.append(
                    PlannedRun(
                        name=name,
                        key=key,
                        description=run.description,
                        config=config,
                        changes=changes,
                        timeout=run.timeout or spec.timeout,
                        call=TrainCall.fresh(config, sweep_dir / RUNS_DIR, name),
                        resources=(run.resources or spec.resources).model_dump(),
                    )
                )
    if spec.order == "seeds":
        rank: dict[Any, int] = {}
        for r in planned:  # seeds in the order the file first names them
            rank.setdefault(r.config.get("seed"), len(rank))
        planned.sort(key=lambda r: rank[r.config.get("seed")])  # stable: file order within a seed
    return planned


def duplicate_names(planned: list[PlannedRun]) -> list[str]:
    seen: set[str] = set()
    return [p.name for p in planned if p.name in seen or seen.add(p.name)]


def total_steps(planned: list[PlannedRun]) -> int:
    steps = 0
    for p in planned:
        cfg = TrainConfig(**p.config)
        steps += cfg.n_itr * cfg.batch_size
    return steps


def load_plan(sweep_dir: Path) -> tuple[SweepSpec, list[PlannedRun]]:
    """The validated sweep file and its expanded runs."""
    spec = load_sweep(sweep_dir)
    planned = expand(spec, sweep_dir)
    dupes = duplicate_names(planned)
    if dupes:
        raise UserError(f"{sweep_dir}: runs expand to the same name '{dupes[0]}'; rename a run")
    bad = next((p for p in planned if not NAME.fullmatch(p.name)), None)
    if bad:
        raise UserError(
            f"{sweep_dir}: run {bad.key} expands to the name {bad.name!r}, which cannot name a folder; "
            "use grid values made of letters, digits and _ . + = -"
        )
    return spec, planned


def _changes(run: PlannedRun) -> str:
    return ", ".join(f"{k}={v}" for k, v in run.changes.items()) or "(defaults)"


def plan_data(planned: list[PlannedRun]) -> list[dict]:
    return [
        {"run": i, "name": p.name, "key": p.key, "changes": p.changes, "command": p.command, "config": p.config}
        for i, p in enumerate(planned, start=1)
    ]


def plan_table(planned: list[PlannedRun]) -> str:
    """The plan as a table whose Command column holds each run's own flags; what every run shares is said
    once above it (a full command per row made the table too wide to read; each run's command.txt, and
    `--dry-run --json`, have it whole)."""
    flags = [_flag_pairs(p.command) for p in planned]
    shared = [pair for pair in flags[0] if all(pair in f for f in flags[1:]) and pair[0] != "--run-name"]
    rows = [[str(i), p.name, _changes(p), shlex.join(_tokens([x for x in f if x not in shared]))]
            for i, (p, f) in enumerate(zip(planned, flags), start=1)]  # fmt: skip
    base = shlex.split(planned[0].command)[:2] if planned else ["ppolab", "train"]
    head = f"Every run: {shlex.join([*base, *_tokens(shared)])} + the run's Command flags below"
    return head + "\n" + table(["Run", "Name", "Key Changes", "Command"], rows)


def _flag_pairs(command: str) -> list[tuple[str, ...]]:
    """A train command's flags as (flag, value) or (flag,) for a switch, in order."""
    tokens, out = shlex.split(command)[2:], []
    for k, tok in enumerate(tokens):
        if tok.startswith("--"):
            value = tokens[k + 1] if k + 1 < len(tokens) and not tokens[k + 1].startswith("--") else None
            out.append((tok, value) if value is not None else (tok,))
    return out


def _tokens(pairs: list[tuple[str, ...]]) -> list[str]:
    return [t for pair in pairs for t in pair]
