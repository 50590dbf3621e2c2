"""`ppolab repro RUN_DIR`: everything needed to reproduce a run, and `--run` to do it into a new folder."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from ppolab.errors import UserError
from ppolab.runner.run_files import read_config, read_meta
from ppolab.util.run_folder import COMMAND, GIT_DIFF, RUN_JSON


def describe(run_dir: Path) -> tuple[str, list[str]]:
    """The text to print, and the `ppolab train` arguments that reproduce the run."""
    d = describe_data(run_dir)
    lines = [f"Run: {run_dir}", f"Command: {d['train_command']}"]
    commit = d["git_commit"]
    if not d["run_json_readable"]:
        lines.append(f"NOTE: {run_dir / RUN_JSON} is missing or damaged: commit, versions and platform unknown")
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
    args = _train_args(run_dir)
    config = read_config(run_dir)
    meta = read_meta(run_dir)
    system = meta.get("system") if isinstance(meta.get("system"), dict) else {}
    dirty = bool(meta.get("git_dirty"))
    return {
        "run": str(run_dir), "train_command": shlex.join(["ppolab", "train", *args]), "train_args": args,
        "git_commit": meta.get("git_commit"), "git_dirty": dirty,
        "git_diff": str(run_dir / GIT_DIFF) if dirty else None,
        "versions": {k: system[k] for k in ("ppolab", "python", "mujoco", "torch", "numpy") if k in system},
        "platform": system.get("platform"), "cpu_count": system.get("cpu_count"),
        "seed": config.get("seed"), "device": config.get("device"), "run_json_readable": bool(meta),
    }  # fmt: skip


def _train_args(run_dir: Path) -> list[str]:
    """The `ppolab train` arguments in command.txt, or one line on what is wrong with it."""
    path = run_dir / COMMAND
    try:
        args = shlex.split(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{path} is missing; is {run_dir} a ppolab run folder?") from None
    except (OSError, ValueError) as exc:  # unreadable, not text, unbalanced quotes
        raise UserError(f"{path} is damaged ({exc.__class__.__name__}); its settings are in config.yaml") from None
    if args[:2] != ["ppolab", "train"]:
        raise UserError(f"{path} is not a ppolab train command; its settings are in config.yaml")
    return args[2:]


def rerun(args: list[str], logdir: str | None) -> int:
    """Run the command again; a new run folder is made under --logdir (the original's unless given)."""
    if logdir is not None:
        if "--logdir" in args:
            i = args.index("--logdir")
            args = [*args[:i], *args[i + 2 :]]
        args = [*args, "--logdir", logdir]
    return subprocess.call([sys.executable, "-m", "ppolab", "train", *args])
