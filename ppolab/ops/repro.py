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
    d = describe_data(run_dir)
    lines = [f"Run: {run_dir}", f"Command: {d['train_command']}"]
    commit = d["git_commit"]
    lines.append(f"Git commit: {commit or 'unknown (not run from a git checkout)'}")
    if d["git_dirty"]:
        lines.append(
            f"WARNING: the working tree had uncommitted changes; they are saved in {d['git_diff']} "
            f"(git checkout {commit} && git apply {d['git_diff']})"
        )
    versions = ", ".join(f"{k} {v}" for k, v in d["versions"].items())
    lines.append(f"Versions: {versions or 'unknown'}")
    lines.append(f"Platform: {d['platform'] or 'unknown'}, {d['cpu_count'] or '?'} CPUs")
    lines.append(f"Seed: {d['seed']}   Device: {d['device']}")
    return "\n".join(lines), d["train_args"]


def describe_data(run_dir: Path) -> dict:
    """What reproduces the run: its command, commit (and saved diff), versions, seed, device (`repro --json`)."""
    try:
        command = (run_dir / "command.txt").read_text().strip()
        config = yaml.safe_load((run_dir / "config.yaml").read_text())
    except FileNotFoundError as exc:
        raise UserError(f"{run_dir}: {Path(exc.filename).name} is missing; is it a ppolab run folder?") from None
    meta = json.loads((run_dir / "run.json").read_text()) if (run_dir / "run.json").exists() else {}
    system = meta.get("system", {})
    args = shlex.split(command)
    if args[:2] != ["ppolab", "train"]:
        raise UserError(f"{run_dir / 'command.txt'}: not a ppolab train command")
    dirty = bool(meta.get("git_dirty"))
    return {
        "run": str(run_dir), "train_command": command, "train_args": args[2:], "git_commit": meta.get("git_commit"),
        "git_dirty": dirty, "git_diff": str(run_dir / "git.diff") if dirty else None,
        "versions": {k: system[k] for k in ("ppolab", "python", "mujoco", "torch", "numpy") if k in system},
        "platform": system.get("platform"), "cpu_count": system.get("cpu_count"),
        "seed": config.get("seed"), "device": config.get("device"),
    }  # fmt: skip


def rerun(args: list[str], logdir: str | None) -> int:
    """Run the command again; a new run folder is made under --logdir (the original's unless given)."""
    if logdir is not None:
        if "--logdir" in args:
            i = args.index("--logdir")
            args = [*args[:i], *args[i + 2 :]]
        args = [*args, "--logdir", logdir]
    return subprocess.call([sys.executable, "-m", "ppolab", "train", *args])
