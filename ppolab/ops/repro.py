"""`ppolab repro RUN_DIR`: everything needed to reproduce a run, and `--run` to do it into a new folder."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from ppolab.errors import UserError


def describe(run_dir: Path) -> tuple[str, list[str]]:
    """The text to print, and the `ppolab train` arguments that reproduce the run."""
    try:
        command = (run_dir / "command.txt").read_text().strip()
        config = yaml.safe_load((run_dir / "config.yaml").read_text())
    except FileNotFoundError as exc:
        raise UserError(f"{run_dir}: {Path(exc.filename).name} is missing; is it a ppolab run folder?") from None
    meta = json.loads((run_dir / "run.json").read_text()) if (run_dir / "run.json").exists() else {}
    system = meta.get("system", {})
    lines = [f"Run: {run_dir}", f"Command: {command}"]
    commit = meta.get("git_commit")
    lines.append(f"Git commit: {commit or 'unknown (not run from a git checkout)'}")
    if meta.get("git_dirty"):
        diff = run_dir / "git.diff"
        lines.append(
            f"WARNING: the working tree had uncommitted changes; they are saved in {diff} "
            f"(git checkout {commit} && git apply {diff})"
        )
    versions = ", ".join(f"{k} {system[k]}" for k in ("ppolab", "python", "mujoco", "torch", "numpy") if k in system)
    lines.append(f"Versions: {versions or 'unknown'}")
    lines.append(f"Platform: {system.get('platform', 'unknown')}, {system.get('cpu_count', '?')} CPUs")
    lines.append(f"Seed: {config.get('seed')}   Device: {config.get('device')}")
    args = shlex.split(command)
    if args[:2] != ["ppolab", "train"]:
        raise UserError(f"{run_dir / 'command.txt'}: not a ppolab train command")
    return "\n".join(lines), args[2:]


def rerun(args: list[str], logdir: str | None) -> int:
    """Run the command again; a new run folder is made under --logdir (the original's unless given)."""
    if logdir is not None:
        if "--logdir" in args:
            i = args.index("--logdir")
            args = [*args[:i], *args[i + 2 :]]
        args = [*args, "--logdir", logdir]
    return subprocess.call([sys.executable, "-m", "ppolab", "train", *args])
