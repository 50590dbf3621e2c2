"""`ppolab doctor`: is this machine ready, and which credentials are set, without ever showing one.

Credentials are classified by ppolab.util.credentials (set, missing, placeholder);
their values are never printed, logged or stored.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import subprocess

from ppolab.errors import UserError
from ppolab.util.credentials import CHECKS, CREDENTIALS
from ppolab.util.system import available_cores, gpus


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine() -> dict[str, str]:
    return {
        "ppolab": _version("ppolab"),
        "python": platform.python_version(),
        "mujoco": _version("mujoco"),
        "torch": _version("torch"),
        "platform": f"{platform.system()} {platform.release()}",
        "cores": f"{available_cores()} available of {os.cpu_count()}",
        "gpu": gpus(),
        "slurm": shutil.which("sbatch") or "not found (sbatch)",
        "docker": _docker(),
        "ray": _ray_cluster(),
    }


def _ray_cluster() -> str:
    """Where `ppolab train` would sample: the local backend, or the cluster at RAY_ADDRESS if it answers."""
    address = os.environ.get("RAY_ADDRESS") or ""
    if not address:
        return f"{_version('ray')}; RAY_ADDRESS unset: the local backend"
    from ppolab.runner.ray_sampler import check_address

    try:
        check_address()
    except UserError:
        return f"{_version('ray')}; RAY_ADDRESS={address}: no cluster answers there"
    return f"{_version('ray')}; RAY_ADDRESS={address}: answers"


def _docker() -> str:
    client = shutil.which("docker")
    if not client:
        return "not found"
    try:
        out = subprocess.run(
            [client, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return f"{client} (client only: no engine answered)"
    if out.returncode == 0 and out.stdout.strip():
        return f"{client} (engine {out.stdout.strip()})"
    return f"{client} (client only: no engine running)"


def report_data(required: list[str]) -> dict:
    """Machine facts and each credential's state (set, missing, placeholder) and source, never a value."""
    creds = [CHECKS[name]() for name in CREDENTIALS]
    rows = [{"name": c.name, "state": c.state, "required": c.name in required, "source": c.source} for c in creds]
    ready = all(c.ready for c in creds if c.name in required)
    return {"machine": machine(), "credentials": rows, "required": required, "ready": ready}


def report(required: list[str]) -> tuple[str, bool]:
    data = report_data(required)
    lines = ["Machine"]
    lines += [f"  {k:<9} {v}" for k, v in data["machine"].items()]
    lines.append("Credentials (values are never shown)")
    for c in data["credentials"]:
        mark = "required" if c["required"] else "optional"
        lines.append(f"  {c['name']:<9} {c['state']:<12} {mark:<9} {c['source']}")
    if required:
        lines.append("Ready: yes" if data["ready"] else f"Ready: no ({', '.join(required)} required; see above)")
    return "\n".join(lines), data["ready"]
