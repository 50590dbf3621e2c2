"""Run a sweep as a Slurm job array: one array task per run, requeued and resumed when preempted.

The generated script runs `ppolab slurm SWEEP_DIR --task $SLURM_ARRAY_TASK_ID` on the
node. That task runs its run like the local runner does (resuming from `last.pt`
when there is one) and records every transition in the sweep's state.json under
a lock that holds across nodes. Slurm schedules, so tasks take no machine lock.

Shortly before the time limit (`--signal=B:USR1@...`: a tenth of it, 1 to 10
minutes), the task stops its run at the end of an iteration and requeues itself;
the next start resumes it. On preemption Slurm sends SIGTERM and requeues the job
itself (`--requeue`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ppolab.errors import UserError
from ppolab.experiments.executors import task
from ppolab.experiments.executors.attempt import Stop, skip_reason
from ppolab.experiments.plan import LOGS_DIR, PlannedRun
from ppolab.experiments.state import SweepState, locked, now
from ppolab.util import script_values
from ppolab.util.files import atomic_write_text
from ppolab.util.run_state import RunState

SCRIPT_NAME = "slurm.sbatch"


@dataclass(frozen=True)
class Resources:
    partition: str | None = None
    time: str = "24:00:00"
    cpus_per_task: int = 2
    gpus_per_task: int = 0
    mem: str = "16G"
    max_concurrent: int | None = None

    def check(self) -> None:
        """Every value as Slurm reads it: each becomes an #SBATCH line, where no quoting holds a newline."""
        if self.partition is not None:
            script_values.check("--partition", self.partition, "slurm_partition")
        script_values.check("--time", self.time, "slurm_time")
        script_values.check("--mem", self.mem, "slurm_mem")
        if self.cpus_per_task < 1:
            raise UserError("--cpus-per-task: must be at least 1")
        if self.gpus_per_task < 0:
            raise UserError("--gpus-per-task: must be 0 or more")
        if self.max_concurrent is not None and self.max_concurrent < 1:
            raise UserError("--max-concurrent: must be at least 1")


def time_seconds(limit: str) -> int:
    """Slurm's time formats: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS."""
    days, _, rest = limit.rpartition("-")
    parts = [int(x) for x in rest.split(":")]
    if days:
        h, m, sec = (parts + [0, 0])[:3]
    elif len(parts) == 3:
        h, m, sec = parts
    else:
        h, m, sec = 0, parts[0], (parts + [0])[1]
    return int(days or 0) * 86400 + h * 3600 + m * 60 + sec


def warning_seconds(limit: str) -> int:
    """How long before the limit a task is told to stop and requeue: a tenth of it, 60 s to 10 min."""
    return max(60, min(600, time_seconds(limit) // 10))


def array_spec(indices: list[int], max_concurrent: int | None) -> str:
    """`0-3%2`, or `1,3` when only some runs are left."""
    if indices == list(range(indices[0], indices[-1] + 1)):
        spec = f"{indices[0]}-{indices[-1]}" if len(indices) > 1 else str(indices[0])
    else:
        spec = ",".join(map(str, indices))
    return spec + (f"%{max_concurrent}" if max_concurrent else "")


def sbatch_file_pattern(folder: Path, pattern: str) -> str:
    """FOLDER/PATTERN as an #SBATCH value: double-quoted (sbatch reads quotes there, not shell syntax), a
    literal % of the folder doubled (Slurm's filename patterns use it). A folder that an #SBATCH line cannot
    carry is refused, never half-written."""
    text = str(folder)
    bad = next((c for c in text if c in '"\\' or not c.isprintable()), None)
    if bad is not None:
        raise UserError(f"{folder}: the sweep's path has {bad!r}, which an #SBATCH line cannot carry; "
                        "move the sweep to a folder without it")  # fmt: skip
    return '"' + text.replace("%", "%%") + "/" + pattern + '"'


def render_script(sweep_dir: Path, sweep_name: str, indices: list[int], res: Resources) -> str:
    """The job-array script. Every name and path in it is quoted for what reads it (bash or sbatch); a name
    never becomes code (tests run it under bash against names built to break out)."""
    sweep = sweep_dir.resolve()
    lines = [
        "#!/bin/bash",
        f"# ppolab sweep {re.sub(r'[^A-Za-z0-9_.+=-]', '?', sweep_name)}: one array task per run (ppolab slurm)",
        f"#SBATCH --job-name=ppolab-{re.sub(r'[^A-Za-z0-9_.-]', '-', sweep_name)}",
        f"#SBATCH --array={array_spec(indices, res.max_concurrent)}",
        f"#SBATCH --output={sbatch_file_pattern(sweep / LOGS_DIR, 'slurm-%A_%a.out')}",
        "#SBATCH --open-mode=append",
        f"#SBATCH --cpus-per-task={res.cpus_per_task}",
        f"#SBATCH --mem={res.mem}",
        f"#SBATCH --time={res.time}",
    ]
    if res.partition:
        lines.append(f"#SBATCH --partition={res.partition}")
    if res.gpus_per_task:
        lines.append(f"#SBATCH --gpus-per-task={res.gpus_per_task}")
    lines += [
        "#SBATCH --requeue",
        f"#SBATCH --signal=B:USR1@{warning_seconds(res.time)}",
        "",
        "trap '' USR1  # until ppolab handles it: an early warning must not kill the task",
        "export PYTHONUNBUFFERED=1",
        f"cd {shlex.quote(str(Path.cwd()))}",
        f'exec {shlex.quote(sys.executable)} -m ppolab slurm {shlex.quote(str(sweep))} --task "$SLURM_ARRAY_TASK_ID"',
        "",
    ]
    return "\n".join(lines)


def runs_left(sweep_dir: Path, planned: list[PlannedRun], max_retries: int = 2) -> list[int]:
    """The runs to submit: every run a launch would run (attempt.skip_reason, as on the other executors)."""
    state = SweepState.read(sweep_dir)
    return [i for i, p in enumerate(planned) if not state or p.name not in state.runs
            or skip_reason(state.runs[p.name], max_retries) is None]  # fmt: skip


def submit(sweep_dir: Path, sweep_name: str, planned: list[PlannedRun], script: str, indices: list[int]) -> str:
    """sbatch the script (kept in the sweep folder); record the job id in state.json."""
    if not shutil.which("sbatch"):
        raise UserError("--submit: sbatch is not on PATH; run this on a Slurm login node (or drop --submit)")
    (sweep_dir / LOGS_DIR).mkdir(exist_ok=True)
    path = sweep_dir / SCRIPT_NAME
    atomic_write_text(path, script)
    proc = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise UserError(f"sbatch refused {path}: {proc.stderr.strip() or proc.stdout.strip()}")
    job_id = proc.stdout.strip().split(";")[0]
    with locked(sweep_dir, sweep_name, task.run_dirs(planned)) as state:
        state.data["slurm"] = {"job_id": job_id, "submitted": now(), "script": SCRIPT_NAME, "tasks": indices}
        for i in indices:
            entry = state.runs[planned[i].name]
            if entry["state"] != RunState.RUNNING:
                entry.update(state=RunState.PENDING, reason=f"queued as Slurm job {job_id}_{i}")
        state.save()
    return job_id


def _interpret(signum: int) -> Stop:
    """USR1: the time limit is near, so the task requeues itself (pending again); TERM: Slurm stopped it."""
    if signum == signal.SIGUSR1:
        requeue = subprocess.run(["scontrol", "requeue", os.environ.get("SLURM_JOB_ID", "")], capture_output=True)
        if requeue.returncode != 0:
            return Stop("stopped before the time limit; requeue failed, submit again to resume")
        return Stop("stopped before the time limit; requeued, resumes from its checkpoint", then=RunState.PENDING)
    return Stop("stopped by Slurm (preempted, requeued or cancelled)")


def run_task(sweep_dir: Path, index: int) -> int:
    """One array task: run (or resume) run number `index` of the sweep, recording its state."""
    job_tag = f"{os.environ.get('SLURM_ARRAY_JOB_ID', '?')}_{os.environ.get('SLURM_ARRAY_TASK_ID', index)}"
    final = task.run_task(sweep_dir, index, where={"slurm_task": job_tag}, interpret=_interpret)
    return 0 if final in (RunState.DONE, RunState.PENDING) else 1
