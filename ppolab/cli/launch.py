"""Launching a sweep: the shared flags, the plan shown for approval, then the executor that runs it."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from ppolab.errors import UserError
from ppolab.experiments.executors import EXECUTORS
from ppolab.util.tables import count


def add_launch_flags(p: argparse.ArgumentParser, workers: int = 1) -> None:
    """Flags shared by every command that launches a sweep."""
    p.add_argument("--yes", action="store_true", help="launch without asking for approval")
    p.add_argument("--detach", action="store_true", help="run in the background; follow with ppolab sweep --status")
    p.add_argument("--no-wait", action="store_true", help="refuse instead of queueing when another job runs")
    p.add_argument(
        "--verbose", action="store_true", help="stream every run's training output (always in SWEEP_DIR/logs/RUN.log)"
    )
    p.add_argument(
        "--max-retries",
        type=int,
        default=2,
        metavar="N",
        help="failures of a run itself (an error, a timeout) a launch retries, on every executor (default: 2); "
        "interruptions (Ctrl-C, kill -9, a lost node, a full disk) spend none",
    )
    p.add_argument("--root", default="experiments/sweeps", help="where sweeps live (default: experiments/sweeps)")
    p.add_argument(
        "--executor",
        choices=list(EXECUTORS),
        default="local",
        help="local: one run at a time on this machine (default); ray: every run a task on the Ray cluster at "
        "RAY_ADDRESS, reserving the sweep file's resources (num_cpus, num_gpus) and running side by side as "
        "they allow; slurm: a job array submitted with sbatch (ppolab slurm sets its resources). On Ray and "
        "Slurm the sweep folder must be on a filesystem every node sees",
    )
    add_parallel_flags(p, default=workers)


PARALLEL_WHY = (
    "Training is compute-bound: jobs running side by side on one machine slow each other "
    "down, finish no sooner in total, and make their timings (steps/s, ETA) meaningless."
)


def add_parallel_flags(p: argparse.ArgumentParser, default: int) -> None:
    p.add_argument(
        "--workers",
        type=int,
        default=default,
        metavar="N",
        help=f"jobs at once on this machine (default: {default}); more than 1 needs --allow-parallel",
    )
    p.add_argument(
        "--allow-parallel",
        action="store_true",
        help="allow --workers > 1. Not recommended: " + PARALLEL_WHY.replace("%", "%%"),
    )


def check_workers(ns: argparse.Namespace) -> None:
    if ns.workers < 0:
        raise UserError("--workers: must be 0 or more")
    if ns.workers > 1 and not ns.allow_parallel:
        raise UserError(
            f"--workers {ns.workers}: runs go one at a time on a machine; add --allow-parallel to override. "
            + PARALLEL_WHY
        )


def launch(sweep_dir: Path, ns: argparse.Namespace, dry_run: bool = False, prepared=None, write=None) -> int:
    """Show the plan, ask for approval, then run it (or detach a runner that does).

    `prepared` (spec, planned) is a plan whose sweep file does not exist yet: `write()` writes it, once
    approved, so a dry run or a "no" leaves nothing behind.
    """
    from ppolab.experiments import display, plan
    from ppolab.experiments.executors import LaunchOptions, executor
    from ppolab.experiments.live import RUNNER_PID_FILE
    from ppolab.experiments.runner_lock import hold_sweep
    from ppolab.experiments.spec import sweep_name
    from ppolab.util.files import atomic_write_text

    spec, planned = prepared or plan.load_plan(sweep_dir)
    if ns.max_retries < 0:
        raise UserError("--max-retries: must be 0 or more")
    check_workers(ns)
    name = getattr(ns, "executor", "local")
    placement = executor(name)
    opts = LaunchOptions(max_retries=ns.max_retries, workers=max(1, ns.workers), verbose=ns.verbose,
                         wait_for_lock=not ns.no_wait)  # fmt: skip
    placement.check(opts)
    print(display.info(spec, planned, sweep_dir))
    print(plan.plan_table(planned))
    if dry_run:
        return 0
    if not ns.yes:
        if not sys.stdin.isatty():
            raise UserError("no terminal to approve the plan; pass --yes to launch without asking")
        how = placement.how if opts.workers == 1 else f"{opts.workers} at a time"
        answer = input(f"Launch {count(len(planned), 'run')}, {how}? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            print("Not launched." + (" Nothing was written." if write else ""))
            return 1
    if write is not None:
        print(f"Sweep file: {write()}")
    if ns.detach:
        log = open(sweep_dir / "sweep.log", "a")
        argv = [sys.executable, "-m", "ppolab", "sweep", str(sweep_dir), "--yes", "--max-retries", str(ns.max_retries)]
        argv += ["--workers", str(opts.workers)] + (["--allow-parallel"] if opts.workers > 1 else [])
        argv += ["--executor", name]
        proc = subprocess.Popen(
            argv + (["--no-wait"] if ns.no_wait else []),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        atomic_write_text(sweep_dir / RUNNER_PID_FILE, f"{proc.pid}\n")  # --watch follows it before state.json exists
        print(f"Sweep running in the background (pid {proc.pid}); it goes on after this terminal closes.")
        print(f"Follow it: ppolab sweep {sweep_dir} --watch   (or --status; log: {sweep_dir / 'sweep.log'})")
        return 0
    runner = hold_sweep(sweep_dir, opts.wait_for_lock, lambda line: print(line, flush=True))
    try:
        return placement.launch(sweep_dir, sweep_name(sweep_dir), planned, opts)
    finally:
        runner.release()
