"""The live view of a sweep: the runs under way, the sweep's progress and ETA, and the last anomaly.

It is computed from the sweep folder alone (state.json and each run's metrics.jsonl), so the
runner shows it in the foreground and `ppolab sweep NAME --watch` shows the same for a detached
sweep. On a terminal it is a rich live view that redraws in place; elsewhere (a log file, CI, a
coding agent reading the output) it is one plain line per run at each tenth of its iterations,
so the output stays short. Training output itself goes to logs/<run>.log (`--verbose` streams it).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TextIO

from ppolab.analysis.anomalies import describe, find_anomalies
from ppolab.experiments.display import duration, progress, status_data, sweep_line, time_share
from ppolab.experiments.plan import PlannedRun
from ppolab.experiments.state import SweepState, pid_alive
from ppolab.util.run_folder import RunFolder
from ppolab.util.run_state import RunState


def snapshot(sweep_dir: Path, planned: list[PlannedRun]) -> dict:
    """The view's figures: every run's status row, the runs under way (with steps/s), the sweep line and
    the most recent anomaly (a running run's, else that of the last finished run that had one)."""
    rows = status_data(sweep_dir, planned, ask_slurm=False)  # refreshed every few seconds: no squeue
    state = SweepState.read(sweep_dir)
    active, live_found, done_found = [], [], []
    for row in rows:
        entry = state.runs.get(row["name"], {}) if state else {}
        if row["state"] == RunState.RUNNING:
            iters = RunFolder(sweep_dir / entry.get("run_dir", "")).records().iterations
            active.append({**row, "fps": iters[-1]["fps"] if iters else None})
            if found := find_anomalies(iters) if iters else []:
                live_found.append(f"{row['name']}: {describe(found)}")
        elif found := (entry.get("summary") or {}).get("anomalies"):
            done_found.append(f"{row['name']}: {describe(found)}")
    anomaly = (live_found or done_found or [None])[-1]
    return {"rows": rows, "active": active, "sweep": sweep_line(rows), "anomaly": anomaly}


def run_line(r: dict, total: int) -> str:
    """One run's progress as plain text."""
    reward = f"{r['latest_reward']:.1f}" if r["latest_reward"] is not None else "-"
    fps = f"{r['fps']:,.0f}" if r.get("fps") else "-"
    share = f" ({int(100 * progress(r) + 1e-9)}%)"  # the epsilon: 29/100 is 28.999... in floating point
    checks = f", checks: {r['checks']}" if r.get("checks") else ""
    budget = f"/{r['n_itr']}"
    if time_share(r) > r["iteration"] / max(1, r["n_itr"]):  # the time limit ends it: say so, not 51/100000
        budget = f", {duration(r['elapsed_s'])} of {r['time_limit']:g} min"
    return (
        f"Run {r['run']}/{total} {r['name']}: iteration {r['iteration']}{budget}{share}, reward {reward}, "
        f"{fps} steps/s, ETA {duration(r['eta_s'])}{checks}"
    )


def render(snap: dict):
    """The rich renderable: a table of the runs under way, then the sweep line and the last anomaly."""
    from rich.console import Group
    from rich.progress_bar import ProgressBar
    from rich.table import Table
    from rich.text import Text

    total = len(snap["rows"])
    grid = Table(box=None, pad_edge=False, header_style="bold")
    checked = any(r.get("checks") for r in snap["active"])
    for col in ("Run", "Name", "Progress", "Iteration", "Reward", "Steps/s", "ETA", *(["Checks"] if checked else [])):
        grid.add_column(col, justify="left" if col in ("Name", "Progress", "Checks") else "right")
    for r in snap["active"]:
        grid.add_row(
            f"{r['run']}/{total}", r["name"], ProgressBar(total=1000, completed=round(1000 * progress(r)), width=24),
            f"{r['iteration']}/{r['n_itr']}", f"{r['latest_reward']:.1f}" if r["latest_reward"] is not None else "-",
            f"{r['fps']:,.0f}" if r.get("fps") else "-", duration(r["eta_s"]),
            *([r.get("checks") or "-"] if checked else []),
        )  # fmt: skip
    parts = [grid] if snap["active"] else [Text("No run under way.", style="dim")]
    parts.append(Text(snap["sweep"], style="bold"))
    parts.append(Text(f"Last anomaly: {snap['anomaly'] or 'none'}", style="yellow" if snap["anomaly"] else "dim"))
    return Group(*parts)


class SweepView:
    """The view, refreshed at most every `every_s` by `tick()`; `say()` prints a line above it. Not on a
    terminal (a log file), a run's line is printed at each tenth of its budget (iterations or time limit)
    and whenever its checks move on (walk fails -> stand fails -> passed): a log shows the milestones.

    No thread: the runner calls `tick()` from its loop, so forking a job never copies a live thread.
    """

    def __init__(self, sweep_dir: Path, planned: list[PlannedRun], out: TextIO, every_s: float = 2.0) -> None:
        self.sweep_dir, self.planned, self.out, self.every_s = sweep_dir, planned, out, every_s
        self.last = 0.0
        self.tenths: dict[str, int] = {}  # plain mode: the last tenth of each run's budget printed
        self.stages: dict[str, str] = {}  # plain mode: each run's checks as last printed, without their round
        self.live = None
        if out.isatty():
            from rich.console import Console
            from rich.live import Live

            self.live = Live(console=Console(file=out), auto_refresh=False, redirect_stdout=False,
                             redirect_stderr=False)  # fmt: skip
            self.live.start()

    def say(self, line: str) -> None:
        if self.live is not None:
            self.live.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            print(line, file=self.out, flush=True)

    def tick(self, force: bool = False) -> None:
        if not force and time.monotonic() - self.last < self.every_s:
            return
        self.last = time.monotonic()
        snap = snapshot(self.sweep_dir, self.planned)
        if self.live is not None:
            self.live.update(render(snap), refresh=True)
            return
        for r in snap["active"]:
            tenth = int(10 * progress(r))  # of its iterations or its time limit, whichever ends it
            stage = (r.get("checks") or "").split(" (at ")[0]  # 'walk fails', 'stand fails', 'passed at 949'
            if r["iteration"] and (
                tenth > self.tenths.get(r["name"], -1) or stage != self.stages.get(r["name"], stage)
            ):
                self.tenths[r["name"]], self.stages[r["name"]] = tenth, stage
                self.say(f"{run_line(r, len(snap['rows']))} | {snap['sweep']}")

    def close(self) -> None:
        if self.live is not None:
            self.tick(force=True)
            self.live.stop()
            self.live = None


RUNNER_PID_FILE = "runner.pid"  # written by `--detach`: the runner's pid, before it has written state.json


def _detached_runner_alive(sweep_dir: Path) -> bool:
    try:
        pid = int((sweep_dir / RUNNER_PID_FILE).read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return False
    return b"ppolab" in cmdline and b"sweep" in cmdline and pid_alive(pid)  # not a reused pid


def sweep_active(sweep_dir: Path) -> bool:
    """The sweep's runner lives (it may still be starting, or queued for the machine), or a run is under
    way (on this host, or recorded so by another)."""
    if _detached_runner_alive(sweep_dir):
        return True
    state = SweepState.read(sweep_dir)
    if state is None:
        return False
    running = any(state.effective_state(n) == RunState.RUNNING for n in state.runs)
    return pid_alive(state.data.get("runner_pid")) or running


def watch(sweep_dir: Path, planned: list[PlannedRun], out: TextIO = sys.stdout, every_s: float = 2.0) -> int:
    """`ppolab sweep NAME --watch`: the live view until the sweep ends; Ctrl-C stops watching only."""
    view = SweepView(sweep_dir, planned, out, every_s)
    view.say(f"Watching {sweep_dir} (Ctrl-C stops watching; the sweep goes on)")
    try:
        while sweep_active(sweep_dir):
            view.tick()
            time.sleep(min(0.5, every_s))
    except KeyboardInterrupt:
        view.close()
        print(f"Stopped watching. The sweep goes on: ppolab sweep {sweep_dir} --status", file=out)
        return 0
    view.close()
    snap = snapshot(sweep_dir, planned)
    ended = "has finished" if all(r["state"] == RunState.DONE for r in snap["rows"]) else "is not running"
    print(f"The sweep {ended}. {snap['sweep']}", file=out)
    if snap["anomaly"]:
        print(f"Last anomaly: {snap['anomaly']}", file=out)
    return 0
