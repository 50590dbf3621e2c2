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

    from ppolab.ppo.ray_sampler import connect

    def say(line: str) -> None:
        print(line, file=out, flush=True)

    cluster = connect()
    sweep_dir = sweep_dir.resolve()
    dirs = task.run_dirs(planned)
    with locked(sweep_dir, sweep_name, dirs) as state:
        todo = [i for i, p in enumerate(planned) if skip_reason(state.runs[p.name], max_retries) is None]
        for i in todo:
            if state.runs[planned[i].name]["state"] != RunState.RUNNING:
                state.update(planned[i].name, state=RunState.PENDING, reason="queued on the Ray cluster")
    if not todo:
        say("Every run is done; nothing to submit.")
        return 0
    remote = ray.remote(_ray_task)
    lost = {i: 0 for i in todo}  # placements lost with a worker: not the run's failures (they spend no retry)

    def submit(i: int):
        res = planned[i].resources
        return remote.options(
            num_cpus=res["num_cpus"], num_gpus=res["num_gpus"], max_retries=0, name=f"ppolab {planned[i].name}"
        ).remote(str(sweep_dir), i)

    previous = signal.signal(signal.SIGTERM, sigterm_as_interrupt)  # `kill` stops the sweep like Ctrl-C
    refs = {submit(i): i for i in todo}
    total = ray.cluster_resources()
    say(
        f"Submitted {len(todo)} runs to {cluster} ({total.get('CPU', 0):.0f} CPUs, "
        f"{total.get('GPU', 0):.0f} GPUs); each reserves its num_cpus/num_gpus, the rest wait for room."
    )
    results: dict[int, str] = {}
    try:
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1)
            i = refs.pop(ready[0])
            name = planned[i].name
            try:
                results[i] = ray.get(ready[0])
                say(f"Run {name}: {results[i]}")
            except ray.exceptions.RayError as exc:  # its worker or node died: the run itself is resumable
                kind = type(exc).__name__
                lost[i] += 1
                if lost[i] < LOST_LIMIT:
                    with locked(sweep_dir, sweep_name, dirs) as state:
                        state.update(name, state=RunState.PENDING, reason=f"lost with its worker ({kind}); resubmitted")
                    say(f"Run {name}: lost with its Ray worker ({kind}); submitted again, resumes from its checkpoint")
                    refs[submit(i)] = i
                    continue
                results[i] = RunState.INTERRUPTED
                with locked(sweep_dir, sweep_name, dirs) as state:
                    why = f"lost with its worker {lost[i]} times ({kind})"
                    state.update(name, state=RunState.INTERRUPTED, reason=why)
                say(f"Run {name}: lost {lost[i]} times ({kind}); launch again to resume it")
    except KeyboardInterrupt:
        say("Interrupted: stopping the runs on the cluster (each saves its checkpoint)...")
        for ref in refs:
            ray.cancel(ref)
        deadline = time.monotonic() + CANCEL_GRACE_S
        while refs and time.monotonic() < deadline:
            ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=1.0)
            for r in ready:
                refs.pop(r)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    done = sum(1 for r in results.values() if r == RunState.DONE)
    say(f"Sweep finished on Ray: {done}/{len(todo)} submitted runs done.")
    return 0 if done == len(todo) else 1
