"""What `ppolab sweep` prints: the plan, --info, --status and --list (Markdown-style tables)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from ppolab.analysis.parse import read_jsonl
from ppolab.experiments.plan import PlannedRun, total_steps
from ppolab.experiments.spec import SWEEP_FILE, SweepSpec
from ppolab.experiments.state import STATE_FILE, SweepState


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def _changes(run: PlannedRun) -> str:
    return ", ".join(f"{k}={v}" for k, v in run.changes.items()) or "(defaults)"


def plan_table(planned: list[PlannedRun]) -> str:
    rows = [[str(i), p.name, _changes(p), p.command] for i, p in enumerate(planned, start=1)]
    return table(["Run", "Name", "Key Changes", "Command"], rows)


def info(spec: SweepSpec, planned: list[PlannedRun], sweep_dir: Path) -> str:
    m = spec.metadata
    steps = total_steps(planned)
    lines = [
        f"Sweep: {m.name}  ({sweep_dir / SWEEP_FILE})",
        f"Description: {m.description or '-'}",
        f"Hypothesis: {m.hypothesis or '-'}",
        f"Runs: {len(planned)} ({len(spec.runs)} in the file, expanded over seeds and grids)",
        f"Estimated env steps: {steps:,}",
        f"Defaults: {', '.join(f'{k}={v}' for k, v in spec.defaults.items()) or '-'}",
    ]
    return "\n".join(lines)


def _parse_time(stamp: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(stamp) if stamp else None


def status(sweep_dir: Path, planned: list[PlannedRun]) -> str:
    state = SweepState.read(sweep_dir)
    now = dt.datetime.now().astimezone()
    slurm_job = (state.data.get("slurm") or {}).get("job_id") if state else None
    slurm_states: dict[int, str] = {}
    if slurm_job:
        from ppolab.ops.slurm import task_states

        slurm_states = task_states(slurm_job)
    on_ray = bool(state) and any("ray_worker" in e for e in state.runs.values())
    rows = []
    for i, p in enumerate(planned, start=1):
        entry = state.runs.get(p.name) if state else None
        slurm_cell = [f"{slurm_job}_{i - 1} {slurm_states.get(i - 1, 'gone')}"] if slurm_job else []
        slurm_cell += [(entry or {}).get("ray_worker", "-")] if on_ray else []
        if entry is None:
            rows.append([str(i), p.name, "pending", f"0/{p.config.get('n_itr', 20000)}", "-", "-", "-", *slurm_cell])
            continue
        n_itr = p.config.get("n_itr", 20000)
        metrics = sweep_dir / entry["run_dir"] / "metrics.jsonl"
        iters = read_jsonl(metrics).iterations if metrics.exists() else []
        done_itr = iters[-1]["iteration"] + 1 if iters else 0
        started, ended = _parse_time(entry["started"]), _parse_time(entry["ended"])
        run_state = state.effective_state(p.name)
        elapsed = ((ended or now) - started).total_seconds() if started else None
        eta = "-"
        if run_state == "running" and done_itr and iters:
            per_itr = iters[-1]["total_time"] / done_itr
            eta = _duration(per_itr * (n_itr - done_itr))
        latest = next((r["mean_eprew"] for r in reversed(iters) if r["mean_eprew"] == r["mean_eprew"]), None)
        label = run_state + (f" ({entry['reason']})" if entry.get("reason") and run_state != "done" else "")
        rows.append(
            [
                str(i),
                p.name,
                label,
                f"{done_itr}/{n_itr}",
                _duration(elapsed) if elapsed else "-",
                eta,
                f"{latest:.1f}" if latest is not None else "-",
                *slurm_cell,
            ]
        )
    header = ["Run", "Name", "State", "Iteration", "Elapsed", "ETA", "Latest Reward"]
    return table(header + (["Slurm"] if slurm_job else []) + (["Ray worker"] if on_ray else []), rows)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return str(dt.timedelta(seconds=int(round(seconds))))


def sweep_list(root: Path) -> str:
    from ppolab.errors import UserError
    from ppolab.experiments.plan import expand
    from ppolab.experiments.spec import load_sweep

    rows = []
    for sweep_file in sorted(root.glob(f"*/{SWEEP_FILE}")):
        sweep_dir = sweep_file.parent
        try:
            planned = expand(load_sweep(sweep_dir), sweep_dir)
            total = str(len(planned))
        except UserError:
            planned, total = [], "invalid"
        state = SweepState.read(sweep_dir)
        done = sum(1 for p in planned if state and state.runs.get(p.name, {}).get("state") == "done")
        activity = state.data.get("updated", "-") if state else "never launched"
        running = state and any(state.effective_state(n) == "running" for n in state.runs)
        rows.append([sweep_dir.name, f"{done}/{total}", "running" if running else "", activity])
    if not rows:
        return f"No sweeps under {root} (each is a folder with a {SWEEP_FILE}; state in {STATE_FILE})."
    return table(["Sweep", "Done", "Now", "Last Activity"], rows)
