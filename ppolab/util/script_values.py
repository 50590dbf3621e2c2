"""Values that ppolab writes into scripts, job definitions and shell lines: each checked against the grammar of
what reads it, so that no option value becomes code.

A generated Slurm script is read by sbatch (its `#SBATCH` lines) and by bash (the rest); a container command by
docker; an AWS Batch job by its API and the shell in the container. Quoting alone cannot make a newline safe on
an `#SBATCH` line, and a value outside its grammar would fail later, on the cluster, with a worse message; so
every option is held to the grammar of its reader here, once, and refused in one line naming the flag.
"""

from __future__ import annotations

import re

from ppolab.errors import UserError

_COMPONENT = r"[a-z0-9]+([._-][a-z0-9]+)*"  # a docker name component; the host may carry a :port
_REPOSITORY = rf"{_COMPONENT}(:\d+)?(/{_COMPONENT})*"
GRAMMARS: dict[str, tuple[re.Pattern[str], str]] = {  # kind -> (the whole value must match, an example)
    # Slurm: partition names (a comma-separated list is allowed), time limits, memory sizes
    "slurm_partition": (re.compile(r"[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*"), "gpu or gpu,cpu"),
    "slurm_time": (re.compile(r"(\d+-)?\d{1,2}(:\d{2}){0,2}"), "24:00:00, 90:00 or 2-00:00:00"),
    "slurm_mem": (re.compile(r"\d+[KMGT]?"), "16G or 8000M"),
    # docker: an image reference ([registry[:port]/]path[:tag]), a registry, a PyTorch wheel variant
    "image": (re.compile(rf"{_REPOSITORY}(:[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"), "registry.example.com/ppolab:v1"),
    "registry": (re.compile(rf"{_REPOSITORY}/?"), "registry.example.com:5000/team"),
    "torch_variant": (re.compile(r"cpu|cu\d{2,4}|rocm\d+(\.\d+)*|xpu"), "cu128"),
    # AWS Batch: queue names; a path inside the container
    "aws_name": (re.compile(r"[A-Za-z0-9_-]{1,128}"), "ppolab-queue"),
    "abs_path": (re.compile(r"/[A-Za-z0-9_.,+@=/-]*"), "/mnt/ppolab"),
    # another program's command-line flag, and an env id it takes
    "flag": (re.compile(r"--?[A-Za-z0-9][A-Za-z0-9_.-]*"), "--env-id"),
    "env_id": (re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]*"), "Hopper-v4"),
}


def check(flag: str, value: str, kind: str) -> str:
    """`value` when the whole of it is in the grammar of `kind`, else one UserError naming the flag and the form."""
    pattern, example = GRAMMARS[kind]
    if not isinstance(value, str) or pattern.fullmatch(value) is None:
        shown = value if isinstance(value, str) and value.isprintable() and len(value) <= 60 else "that value"
        raise UserError(f"{flag} {shown}: not a valid value here; write it as, e.g., {example}")
    return value
