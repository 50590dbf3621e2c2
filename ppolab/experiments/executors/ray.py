"""`ppolab sweep DIR --executor ray`: every run a Ray task, placed by the cluster's scheduler.

Each task reserves its run's `resources` (num_cpus, num_gpus; from the sweep file),
so runs go in parallel across the cluster's nodes but never more at once than the
resources allow; Ray queues the rest. A task runs its run like a Slurm array task
(ppolab.experiments.executors.task): state.json, logs and run folders in the sweep folder,
which every node must see (a shared filesystem). A run lost with its node goes
back to pending and is submitted again; it resumes from its checkpoint.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import TextIO

from ppolab.experiments.executors import task
from ppolab.experiments.executors.attempt import skip_reason
from ppolab.experiments.plan import PlannedRun
from ppolab.experiments.state import locked
from ppolab.util.interrupt import sigterm_as_interrupt
from ppolab.util.run_state import RunState

CANCEL_GRACE_S = 90.0
LOST_LIMIT = 5  # placements a run may lose with its worker in one launch before it waits for the next launch


def _ray_task(sweep_dir: str, index: int) -> str:
    """Runs on a Ray worker: one run of the sweep, in a fresh trainer process."""
    import ray

    where = {
        "ray_task": ray.get_runtime_context().get_task_id()[:16],
        "ray_worker": f"pid {os.getpid()} on {socket.gethostname()}",
    }
    return task.run_task(Path(sweep_dir), index, where=where, fresh_process=True)


def run_sweep_on_ray(
    sweep_dir: Path, sweep_name: str, planned: list[PlannedRun], *, max_retries: int = 2, out: TextIO = sys.stdout
) -> int:
    """Submit every run that is not done; follow them to the end. 0 all done, 1 some not, 130 interrupted."""
    import ray

    from ppolab.runner.ray_sampler import connect

    cluster = connect()
    sweep = _RaySweep(sweep_dir.resolve(), sweep_name, planned, out)
    todo = sweep.queue(max_retries)
    if not todo:
        sweep.say("Every run is done; nothing to submit.")
        return 0
    previous = signal.signal(signal.SIGTERM, sigterm_as_interrupt)  # `kill` stops the sweep like Ctrl-C
    refs = {sweep.submit(i): i for i in todo}
    total = ray.cluster_resources()
    sweep.say(
        f"Submitted {len(todo)} runs to {cluster} ({total.get('CPU', 0):.0f} CPUs, "
        f"{total.get('GPU', 0):.0f} GPUs); each reserves its num_cpus/num_gpus, the rest wait for room."
    )
    results: dict[int, str] = {}
    try:
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1)
            i = refs.pop(ready[0])
            try:
                results[i] = ray.get(ready[0])
                sweep.say(f"Run {planned[i].name}: {results[i]}")
            except ray.exceptions.RayError as exc:  # its worker or node died: the run itself is resumable
                if (ref := sweep.lost_with_worker(i, type(exc).__name__)) is not None:
                    refs[ref] = i
                else:
                    results[i] = RunState.INTERRUPTED
    except KeyboardInterrupt:
        sweep.say("Interrupted: stopping the runs on the cluster (each saves its checkpoint)...")
        _cancel(refs)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    done = sum(1 for r in results.values() if r == RunState.DONE)
    sweep.say(f"Sweep finished on Ray: {done}/{len(todo)} submitted runs done.")
    return 0 if done == len(todo) else 1


class _RaySweep:
    """The sweep's side of its Ray tasks: which runs to submit, how, and what a run lost with its worker becomes."""

    def __init__(self, sweep_dir: Path, sweep_name: str, planned: list[PlannedRun], out: TextIO) -> None:
        import ray

        self.sweep_dir, self.sweep_name, self.planned, self.out = sweep_dir, sweep_name, planned, out
        self.dirs = task.run_dirs(planned)
        self.remote = ray.remote(_ray_task)
        self.lost: dict[int, int] = {}  # placements lost with a worker: not the run's failures (no retry spent)

    def say(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def queue(self, max_retries: int) -> list[int]:
        """The runs to submit (not done, retries left), marked pending in state.json."""
        with locked(self.sweep_dir, self.sweep_name, self.dirs) as state:
            todo = [i for i, p in enumerate(self.planned) if skip_reason(state.runs[p.name], max_retries) is None]
            for i in todo:
                if state.runs[self.planned[i].name]["state"] != RunState.RUNNING:
                    state.update(self.planned[i].name, state=RunState.PENDING, reason="queued on the Ray cluster")
        self.lost = {i: 0 for i in todo}
        return todo

    def submit(self, i: int):
        res = self.planned[i].resources
        return self.remote.options(
            num_cpus=res["num_cpus"], num_gpus=res["num_gpus"], max_retries=0, name=f"ppolab {self.planned[i].name}"
        ).remote(str(self.sweep_dir), i)

    def lost_with_worker(self, i: int, kind: str):
        """A run whose worker or node died: submitted again (its new ref), or, lost too often, interrupted (None)."""
        name = self.planned[i].name
        self.lost[i] += 1
        with locked(self.sweep_dir, self.sweep_name, self.dirs) as state:
            if self.lost[i] < LOST_LIMIT:
                state.update(name, state=RunState.PENDING, reason=f"lost with its worker ({kind}); resubmitted")
            else:
                why = f"lost with its worker {self.lost[i]} times ({kind})"
                state.update(name, state=RunState.INTERRUPTED, reason=why)
        if self.lost[i] < LOST_LIMIT:
            self.say(f"Run {name}: lost with its Ray worker ({kind}); submitted again, resumes from its checkpoint")
            return self.submit(i)
        self.say(f"Run {name}: lost {self.lost[i]} times ({kind}); launch again to resume it")
        return None


def _cancel(refs: dict) -> None:
    """Cancel the runs still on the cluster; wait up to CANCEL_GRACE_S for them to save and stop."""
    import ray

    for ref in refs:
        ray.cancel(ref)
    deadline = time.monotonic() + CANCEL_GRACE_S
    while refs and time.monotonic() < deadline:
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=1.0)
        for r in ready:
            refs.pop(r)
