"""Where a sweep's runs go: placement strategies behind one protocol, chosen by name in one place.

Every executor runs each run as an `attempt.Attempt` (one lifecycle: prepare, start, supervise, decide,
record), so states, retries and reasons mean the same whichever places the runs:
- local: here, one at a time (or --workers at once), under the machine lock;
- ray: every run a task on the Ray cluster at RAY_ADDRESS, as its resources allow;
- slurm: a job array, one task per run, submitted with sbatch (`ppolab slurm` sets its resources).

To add one: a class with `name`, `how`, `check(opts)` and `launch(...)`, registered in EXECUTORS.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from ppolab.errors import UserError


@dataclass(frozen=True)
class LaunchOptions:
    max_retries: int = 2  # failures of a run itself before a launch skips it
    workers: int = 1  # runs at once on this machine (local)
    verbose: bool = False  # every run's training output on the terminal too
    wait_for_lock: bool = True  # queue behind another job on this machine instead of refusing


class Executor(Protocol):
    name: ClassVar[str]
    how: ClassVar[str]  # how the runs go, in the approval question ("one at a time")

    def check(self, opts: LaunchOptions) -> None:
        """Refuse, before the plan is shown, what this executor cannot do (one UserError)."""

    def launch(self, sweep_dir: Path, sweep_name: str, planned: list, opts: LaunchOptions) -> int:
        """Run or submit every run not done: 0 all done (or submitted), 1 some not, 130 stopped."""


class Local:
    name, how = "local", "one at a time"

    def check(self, opts: LaunchOptions) -> None:
        pass

    def launch(self, sweep_dir: Path, sweep_name: str, planned: list, opts: LaunchOptions) -> int:
        from ppolab.experiments.executors.local import run_sweep

        return run_sweep(sweep_dir, sweep_name, planned, wait_for_lock=opts.wait_for_lock,
                         max_retries=opts.max_retries, parallel=max(1, opts.workers), verbose=opts.verbose)  # fmt: skip


class Ray:
    name, how = "ray", "on the Ray cluster"

    def check(self, opts: LaunchOptions) -> None:
        from ppolab.runner.ray_sampler import check_address

        if opts.workers > 1:
            raise UserError("--workers is for the local executor; on Ray, the runs' resources decide how many run "
                            "at once")  # fmt: skip
        check_address()

    def launch(self, sweep_dir: Path, sweep_name: str, planned: list, opts: LaunchOptions) -> int:
        from ppolab.experiments.executors.ray import run_sweep_on_ray

        return run_sweep_on_ray(sweep_dir, sweep_name, planned, max_retries=opts.max_retries)


class Slurm:
    name, how = "slurm", "as a Slurm job array"

    def check(self, opts: LaunchOptions) -> None:
        import shutil

        if opts.workers > 1:
            raise UserError("--workers is for the local executor; Slurm places the array's tasks")
        if not shutil.which("sbatch"):
            raise UserError("--executor slurm: sbatch is not on PATH; run this on a Slurm login node")

    def launch(self, sweep_dir: Path, sweep_name: str, planned: list, opts: LaunchOptions) -> int:
        from ppolab.experiments.executors import slurm

        indices = slurm.runs_left(sweep_dir, planned, opts.max_retries)
        if not indices:
            print(f"Every run of {sweep_dir} is done; nothing to submit.")
            return 0
        res = slurm.Resources()
        job_id = slurm.submit(sweep_dir, sweep_name, planned, slurm.render_script(sweep_dir, sweep_name, indices, res),
                              indices)  # fmt: skip
        print(f"Submitted Slurm job {job_id}: one array task per run ({len(indices)}); follow with "
              f"ppolab sweep {sweep_dir} --status (ppolab slurm sets partition, time and resources)")  # fmt: skip
        return 0


EXECUTORS: dict[str, type[Executor]] = {"local": Local, "ray": Ray, "slurm": Slurm}


def executor(name: str) -> Executor:
    """The executor of that name (the CLI's --executor choices are EXECUTORS' keys)."""
    return EXECUTORS[name]()
