"""What Slurm says about a sweep's array tasks, for `ppolab sweep --status` (the Slurm column)."""

from __future__ import annotations

import re
import subprocess


def task_states(job_id: str) -> dict[int, str]:
    """Slurm's state of each array task: squeue for queued and running ones, scontrol for recently ended ones."""
    states: dict[int, str] = {}
    try:
        shown = subprocess.run(
            ["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True, timeout=10
        ).stdout
        for line in shown.splitlines():
            task, st = re.search(r"ArrayTaskId=(\S+)", line), re.search(r"JobState=(\S+)", line)
            if task and st and task.group(1).isdigit():
                states[int(task.group(1))] = st.group(1)
        queued = subprocess.run(
            ["squeue", "-h", "-r", "-j", job_id, "-o", "%K %T"], capture_output=True, text=True, timeout=10
        ).stdout
        for line in queued.splitlines():
            task, _, st = line.partition(" ")
            if task.isdigit():
                states[int(task)] = st.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return states
