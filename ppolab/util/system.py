"""Facts about this machine that runs and reports record, found without importing torch or MuJoCo."""

from __future__ import annotations

import os
import shutil
import subprocess


def available_cores() -> int:
    """The cores this process may run on (its affinity, which Slurm and containers set), not the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def gpus() -> str:
    """The NVIDIA GPUs `nvidia-smi` lists, or "none"."""
    if not shutil.which("nvidia-smi"):
        return "none"
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "none"
    names = [line.strip() for line in out.splitlines() if line.strip()]
    return ", ".join(names) or "none"
