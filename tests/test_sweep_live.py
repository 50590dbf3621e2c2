"""The live view of a sweep: in the foreground (terminal and plain text) and `ppolab sweep NAME --watch`."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time

from conftest import REPO, make_sweep, on_pty, run_ppolab, state_of


def test_the_view_reads_the_sweep_folder_and_shows_runs_under_way(tmp_path):
    """A real finished sweep whose second run is then recorded as running in this (live) process."""
    from rich.console import Console

    from ppolab.experiments.live import SweepView, render, snapshot
    from ppolab.experiments.plan import load_plan

    d = make_sweep(tmp_path)
    assert run_ppolab("sweep", str(d), "--yes").returncode == 0
    state = json.loads((d / "state.json").read_text())
    state["runs"]["clip03-s1"].update(state="running", pid=os.getpid(), host=None)
    (d / "state.json").write_text(json.dumps(state))
    planned = load_plan(d)[1]

    snap = snapshot(d, planned)
    assert [r["name"] for r in snap["active"]] == ["clip03-s1"] and snap["active"][0]["fps"] > 0
    assert snap["sweep"].startswith("Sweep: 1/2 runs done, 0 iterations left")
    out = io.StringIO()  # not a terminal: plain lines
    view = SweepView(d, planned, out)
    view.tick(force=True)
    view.tick(force=True)  # the same tenth of the run is not printed twice
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Run 2/2 clip03-s1: iteration 3/3 (100%), reward ")
    assert "steps/s, ETA 0:00:00 | Sweep: 1/2 runs done" in lines[0]

    def check_round(iteration: int, walk: bool, stand: bool) -> None:  # as --check-every writes one
        row = {"type": "check", "iteration": iteration, "passed": float(walk and stand), "walk.passed": float(walk),
               "stand.passed": float(stand), "total_steps": 0, "total_time": 1.0}  # fmt: skip
        with open(d / "runs" / "clip03-s1" / "metrics.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        view.tick(force=True)

    check_round(0, walk=False, stand=False)  # the checks move on within a tenth: each milestone is a line
    check_round(1, walk=False, stand=False)  # the same failing check a round later: no line
    check_round(2, walk=True, stand=False)
    lines = out.getvalue().splitlines()[1:]
    assert [line.split("checks: ")[1].split(" | ")[0] for line in lines] == ["walk fails (at 0)", "stand fails (at 2)"]

    console = Console(record=True, width=120, file=io.StringIO())
    console.print(render(snap))
    text = console.export_text()
    for part in ("Steps/s", "2/2", "clip03-s1", "3/3", "Sweep: 1/2 runs done", "Last anomaly: "):
        assert part in text, text


def test_foreground_sweep_on_a_terminal_draws_the_live_view(tmp_path):
    d = make_sweep(tmp_path)
    code, seen = on_pty("sweep", str(d), "--yes")
    assert code == 0, seen.decode(errors="replace")
    text = seen.decode(errors="replace")
    assert "Steps/s" in text and "control-s1" in text  # the table of the run under way
    assert "Sweep: 2/2 runs done, 0 iterations left" in text and "Sweep finished: 2/2 runs done" in text
    assert "Total time elapsed" not in text  # training output is in the logs
    assert "Total time elapsed" in (d / "logs" / "control-s1.log").read_text()


def test_watch_follows_a_detached_sweep_and_ctrl_c_stops_only_the_watching(tmp_path):
    d = make_sweep(tmp_path, n_itr=300)  # long enough that the watcher, starting in ~1 s, finds it under way
    detach = run_ppolab("sweep", str(d), "--yes", "--detach")
    assert detach.returncode == 0 and f"ppolab sweep {d} --watch" in detach.stdout
    watcher = subprocess.Popen(
        [sys.executable, "-m", "ppolab", "sweep", str(d), "--watch"],
        cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert watcher.stdout.readline().startswith(f"Watching {d} ")
    line = watcher.stdout.readline()  # the first progress line: a run under way (run 1 on a busy machine)
    assert line.startswith(("Run 1/2 control-s1: iteration ", "Run 2/2 clip03-s1: iteration ")), line
    assert "/300 (" in line and "| Sweep: " in line, line
    watcher.send_signal(signal.SIGINT)
    rest = watcher.communicate(timeout=60)[0]
    assert watcher.returncode == 0 and "Stopped watching. The sweep goes on" in rest
    again = run_ppolab("sweep", str(d), "--watch", timeout=300)  # a second watch, to the sweep's end
    assert again.returncode == 0
    assert "The sweep has finished. Sweep: 2/2 runs done, 0 iterations left" in again.stdout
    assert {name: run["state"] for name, run in state_of(d).items()} == {"control-s1": "done", "clip03-s1": "done"}


def test_watch_of_a_sweep_that_is_not_running_says_so_at_once(tmp_path):
    d = make_sweep(tmp_path)
    started = time.monotonic()
    proc = run_ppolab("sweep", str(d), "--watch")
    assert proc.returncode == 0 and time.monotonic() - started < 60
    assert "The sweep is not running. Sweep: 0/2 runs done, 6 iterations left" in proc.stdout
