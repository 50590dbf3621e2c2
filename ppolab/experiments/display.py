"""What `ppolab sweep` prints: the plan, --info, --status and --list.

Each is computed as plain data first (`*_data`), which `--json` prints as it is
(schemas in the README, `schema_version` 1), and then as Markdown-style tables.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from ppolab.experiments.plan import PlannedRun, total_steps
from ppolab.experiments.spec import SWEEP_FILE, SweepSpec, sweep_name
from ppolab.experiments.state import RESULTS_FILE, STATE_FILE, SweepState
from ppolab.runner.config import seconds_left
from ppolab.util.run_folder import Records, RunFolder, check_passes
from ppolab.util.run_state import RunState
from ppolab.util.tables import count, table


def info_data(spec: SweepSpec, planned: list[PlannedRun], sweep_dir: Path) -> dict:
    m = spec.metadata
    return {
        "sweep": sweep_name(sweep_dir), "title": m.name, "file": str(sweep_dir / SWEEP_FILE),
        "description": m.description, "hypothesis": m.hypothesis, "min_effect": m.min_effect, "runs": len(planned),
        "runs_in_file": len(spec.runs),
        "env_steps": total_steps(planned), "time_limit_min": time_budget(planned), "defaults": spec.defaults,
    }  # fmt: skip


def time_budget(planned: list[PlannedRun]) -> float | None:
    """Minutes of training the runs may take at most when every run has a time_limit, else None."""
    limits = [p.config.get("time_limit") for p in planned]
    return float(sum(limits)) if limits and all(limits) else None


def info(spec: SweepSpec, planned: list[PlannedRun], sweep_dir: Path) -> str:
    d = info_data(spec, planned, sweep_dir)
    lines = [
        f"Sweep: {d['sweep']}" + (f" - {d['title']}" if d["title"] != d["sweep"] else "") + f"  ({d['file']})",
        f"Description: {d['description'] or '-'}",
        f"Hypothesis: {d['hypothesis'] or '-'}",
        f"Runs: {d['runs']} ({d['runs_in_file']} in the file, expanded over seeds and grids)",
        f"Estimated env steps: {d['env_steps']:,}"
        + (
            f", or {duration(60 * d['time_limit_min'])} of training "
            "(the runs' time_limit), whichever ends each run first"
            if d["time_limit_min"]
            else ""
        ),
        f"Defaults: {', '.join(f'{k}={v}' for k, v in d['defaults'].items()) or '-'}",
    ]
    return "\n".join(lines)


def _parse_time(stamp: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(stamp) if stamp else None


def status_data(sweep_dir: Path, planned: list[PlannedRun], ask_slurm: bool = True) -> list[dict]:
    """One record per planned run: state, iterations done of planned, elapsed and ETA (s), latest reward;
    for a sweep submitted to Slurm (and `ask_slurm`), each array task's Slurm state."""
    state = SweepState.read(sweep_dir)
    now = dt.datetime.now().astimezone()
    slurm_job = (state.data.get("slurm") or {}).get("job_id") if state and ask_slurm else None
    slurm_states: dict[int, str] = {}
    if slurm_job:
        from ppolab.experiments.slurm_queue import task_states

        slurm_states = task_states(slurm_job)
    rows = []
    for i, p in enumerate(planned, start=1):
        entry = state.runs.get(p.name) if state else None
        n_itr, limit = p.config.get("n_itr", 20000), p.config.get("time_limit")
        row = {"run": i, "name": p.name, "state": RunState.PENDING, "reason": None, "iteration": 0, "n_itr": n_itr,
               "time_limit": limit, "elapsed_s": None, "eta_s": None, "latest_reward": None, "attempts": 0}  # fmt: skip
        if slurm_job:
            row["slurm_task"] = f"{slurm_job}_{i - 1} {slurm_states.get(i - 1, 'gone')}"
        if entry is not None:
            row.update(_progress(sweep_dir, state, p.name, entry, (n_itr, limit), now))
        rows.append(row)
    return rows


def check_label(records: Records) -> str | None:
    """A run's behaviour checks (--check-every) in a few words: 'passed at 349', or the latest round's
    first failing check, 'walk fails (at 200)'; None when the run is not checked."""
    if not records.checks:
        return None
    if first := records.first_pass():
        return f"passed at {first['iteration']}"
    last = max(records.checks, key=lambda r: r["iteration"])
    failed = [name for name, passed in check_passes(last).items() if not passed]
    return f"{failed[0] if failed else 'a check'} fails (at {last['iteration']})"


def _progress(sweep_dir: Path, state: SweepState, name: str, entry: dict, budget: tuple, now: dt.datetime) -> dict:
    """A started run's progress from its folder; `budget` is its (n_itr, time_limit)."""
    records = RunFolder(sweep_dir / entry.get("run_dir", f"runs/{name}")).records()
    iters = records.iterations
    done_itr = iters[-1]["iteration"] + 1 if iters else 0
    started, ended = _parse_time(entry.get("started")), _parse_time(entry.get("ended"))
    run_state = state.effective_state(name)
    eta = None
    if run_state == RunState.RUNNING and done_itr:
        total = iters[-1]["total_time"]
        eta = seconds_left(total / done_itr, done_itr, budget[0], total, budget[1])
    latest = next((r["mean_eprew"] for r in reversed(iters) if r["mean_eprew"] == r["mean_eprew"]), None)
    return {
        "state": run_state, "reason": entry.get("reason") if run_state != RunState.DONE else None,
        "iteration": done_itr,
        "elapsed_s": _elapsed(iters, started, ended, now), "eta_s": eta,
        "latest_reward": latest, "attempts": entry.get("attempts", 0), "ray_worker": entry.get("ray_worker"),
        "s_per_iteration": iters[-1]["total_time"] / done_itr if done_itr else None, "checks": check_label(records),
    }  # fmt: skip


def _elapsed(iters: list[dict], started: dt.datetime | None, ended: dt.datetime | None, now: dt.datetime):
    """A run's training time so far: its own clock, summed over every resume (the ETA's pace comes from it
    too); before its first iteration, the wall time since it started."""
    if iters:
        return iters[-1]["total_time"]
    return ((ended or now) - started).total_seconds() if started else None


def status(sweep_dir: Path, planned: list[PlannedRun]) -> str:
    rows = status_data(sweep_dir, planned)
    slurm, ray = any("slurm_task" in r for r in rows), any(r.get("ray_worker") for r in rows)
    checked = any(r.get("checks") for r in rows)
    cells = []
    for r in rows:
        label = r["state"] + (f" ({r['reason']})" if r["reason"] else "")
        latest = f"{r['latest_reward']:.1f}" if r["latest_reward"] is not None else "-"
        extra = ([r.get("checks") or "-"] if checked else []) + ([r.get("slurm_task", "-")] if slurm else [])
        extra += [r.get("ray_worker") or "-"] if ray else []
        cells.append([str(r["run"]), r["name"], label, f"{r['iteration']}/{r['n_itr']}", duration(r["elapsed_s"]),
                      duration(r["eta_s"]), latest, *extra])  # fmt: skip
    header = ["Run", "Name", "State", "Iteration", "Elapsed", "ETA", "Latest Reward"]
    header += (["Checks"] if checked else []) + (["Slurm"] if slurm else []) + (["Ray worker"] if ray else [])
    head = table(header, cells)
    return head + "\n" + sweep_line(rows)


def sweep_line(rows: list[dict]) -> str:
    """Runs done of planned, and the sweep's ETA: each run's iterations left at the pace measured so far, or its
    minutes left to its time limit, whichever ends it first."""
    done = sum(r["state"] == RunState.DONE for r in rows)
    paces = [r["s_per_iteration"] for r in rows if r.get("s_per_iteration")]
    going = [r for r in rows if r["state"] not in (RunState.DONE, RunState.FAILED)]
    left = sum(r["n_itr"] - r["iteration"] for r in going)
    eta = "-" if not left else "unknown until a run starts"
    if left and paces:
        pace = sum(paces) / len(paces)
        left_s = [seconds_left(pace, r["iteration"], r["n_itr"], r.get("elapsed_s") or 0.0, r.get("time_limit"))
                  for r in going]  # fmt: skip
        eta = duration(sum(left_s))
    timed = bool(going) and all(r.get("time_limit") for r in going)  # then iterations left say nothing
    left_text = "" if timed else f", {count(left, 'iteration')} left"
    return f"Sweep: {done}/{len(rows)} runs done{left_text}, ETA {eta}"


def progress(row: dict) -> float:
    """How far along a run is, 0..1: its iterations of n_itr, or its minutes of time_limit, whichever is
    further (the one that will end it)."""
    return min(1.0, max(row["iteration"] / max(1, row["n_itr"]), time_share(row)))


def time_share(row: dict) -> float:
    """The share of its time limit a run has trained (0 without one, or before its first iteration)."""
    if row.get("time_limit") and row.get("elapsed_s") and row["iteration"]:
        return row["elapsed_s"] / (60 * row["time_limit"])
    return 0.0


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return str(dt.timedelta(seconds=int(round(seconds))))


def list_data(root: Path) -> list[dict]:
    from ppolab.errors import UserError
    from ppolab.experiments.plan import expand
    from ppolab.experiments.spec import load_sweep

    rows = []
    for sweep_file in sorted(root.glob(f"*/{SWEEP_FILE}")):
        sweep_dir = sweep_file.parent
        try:
            spec = load_sweep(sweep_dir)
            planned, title = expand(spec, sweep_dir), spec.metadata.name
            total: int | None = len(planned)
        except UserError:
            planned, total, title = [], None, None
        try:
            state, damaged = SweepState.read(sweep_dir), None
        except UserError as exc:  # one damaged sweep does not hide the others
            state, damaged = None, str(exc)
        done = sum(1 for p in planned if state and state.runs.get(p.name, {}).get("state") == RunState.DONE)
        running = bool(state) and any(state.effective_state(n) == RunState.RUNNING for n in state.runs)
        rows.append({"sweep": sweep_dir.name, "title": title, "path": str(sweep_dir), "done": done, "total": total,
                     "valid": total is not None, "running": running, "state_error": damaged,
                     "last_activity": state.data.get("updated") if state else None,
                     "verdict": _verdict(sweep_dir)})  # fmt: skip
    return rows


def _verdict(sweep_dir: Path) -> str | None:
    """The verdict of the sweep's last report (results.md), if it has one."""
    try:
        found = re.search(r"\*\*Verdict: ([^.*]+)\.?\*\*", (sweep_dir / RESULTS_FILE).read_text(errors="replace"))
    except OSError:
        return None
    return found.group(1) if found else None


def sweep_list(root: Path) -> str:
    rows = list_data(root)
    if not rows:
        return f"No sweeps under {root} (each is a folder with a {SWEEP_FILE}; state in {STATE_FILE})."
    cells = [
        [r["sweep"], r["title"] or "-", f"{r['done']}/{r['total'] if r['valid'] else 'invalid'}",
         "running" if r["running"] else "", r["verdict"] or "-",
         "state.json damaged" if r["state_error"] else r["last_activity"] or "never launched"]
        for r in rows
    ]  # fmt: skip
    return table(["Sweep", "Title", "Done", "Now", "Verdict", "Last Activity"], cells)
