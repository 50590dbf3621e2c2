"""Sweep files written from the command line: `ppolab experiment NAME --vary k=v1,v2 ...` and `ppolab matrix`."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml

from ppolab.errors import UserError
from ppolab.experiments.plan import PlannedRun, expand
from ppolab.experiments.spec import SWEEP_FILE, SweepSpec, check_folder_name, load_sweep
from ppolab.util.files import atomic_write_text


def parse_vary(items: list[str]) -> dict[str, list[Any]]:
    """['gamma=0.95,0.99', 'lr=1e-4,3e-4'] -> {'gamma': [0.95, 0.99], 'lr': [0.0001, 0.0003]}."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip().lstrip("-").replace("-", "_")
        if not sep or not key or not values.strip():
            raise UserError(f"--vary {item}: write it as FLAG=V1,V2 (e.g. --vary gamma=0.95,0.99)")
        grid[key] = [yaml.safe_load(v.strip()) for v in values.split(",") if v.strip()]
    return grid


def control_first(grid: dict[str, list[Any]], control: dict[str, Any]) -> dict[str, list[Any]]:
    """Each flag's values with its control value first (added if missing): the first configuration is the
    control that every other one is compared against."""
    return {k: [control[k], *(v for v in values if v != control[k])] for k, values in grid.items()}


def run_name(name: str, grid: dict[str, list[Any]]) -> str:
    """The base of the expanded run names: the experiment's, unless it only repeats the first flag's tag."""
    first = next(iter(grid)).replace("_", "")
    return "run" if name.replace("-", "").replace("_", "").lower() == first else name


def experiment_doc(
    name: str, defaults: dict[str, Any], grid: dict[str, list[Any]], seeds: list[int] | None, hypothesis: str
) -> dict[str, Any]:
    """The sweep file of `ppolab experiment`: one run over the grid (control first), once per seed."""
    return {
        "metadata": {
            "name": name,
            "description": "Quick experiment from the command line (ppolab experiment)",
            "hypothesis": hypothesis,
            "experiment_tag_prefix": name,
        },
        "defaults": defaults,
        **({"seeds": seeds} if seeds else {}),
        "runs": {
            "A": {
                "name": run_name(name, grid),
                "config": {"experiment_tag": "${metadata.experiment_tag_prefix}"},
                "grid": grid,
            }
        },
    }


def preview(root: Path, name: str, doc: dict[str, Any]) -> tuple[SweepSpec, list[PlannedRun]]:
    """The plan `doc` would give in ROOT/NAME, checked like a sweep file, without writing anything there."""
    path = root / name / SWEEP_FILE
    text = yaml.safe_dump(doc, sort_keys=False)
    if path.exists() and path.read_text() != text:
        raise UserError(f"{path} exists with a different plan; pick another NAME or edit that file")
    with tempfile.TemporaryDirectory(prefix="ppolab-experiment-") as tmp:
        (Path(tmp) / SWEEP_FILE).write_text(text)
        try:
            spec = load_sweep(Path(tmp))
        except UserError as exc:  # the file is ours, the mistake is in the flags: say it without file and line
            raise UserError(str(exc).split(": ", 1)[-1]) from None
    return spec, expand(spec, root / name)


def write_sweep(root: Path, name: str, doc: dict[str, Any]) -> Path:
    """Create (or find, if identical) ROOT/NAME/sweep.yaml; validate before it lands."""
    check_folder_name(name, "the sweep name")
    text = yaml.safe_dump(doc, sort_keys=False)
    sweep_dir = root / name
    path = sweep_dir / SWEEP_FILE
    if path.exists():
        if path.read_text() != text:
            raise UserError(f"{path} exists with a different plan; pick another NAME or edit that file")
        return sweep_dir
    sweep_dir.mkdir(parents=True, exist_ok=True)
    candidate = sweep_dir / f".{SWEEP_FILE}.new"
    candidate.write_text(text)
    try:
        load_sweep(candidate)
    except UserError as exc:  # the file is ours, the mistake is in the flags: say it without file and line
        candidate.unlink()
        if not any(sweep_dir.iterdir()):
            sweep_dir.rmdir()
        raise UserError(str(exc).split(": ", 1)[-1]) from None
    candidate.unlink()
    atomic_write_text(path, text)
    return sweep_dir
