"""`ppolab container`: the docker commands that build, run and push ppolab's image.

Preview by default: the commands are printed; `--execute` runs them. Secrets
reach the container by name only (`-e WANDB_API_KEY` passes the caller's value
through), so no printed command or shell history ever holds one.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from ppolab import __version__
from ppolab.errors import UserError
from ppolab.util import script_values

PASSTHROUGH_ENV = ("WANDB_API_KEY", "WANDB_MODE", "WANDB_ENTITY", "WANDB_PROJECT", "HF_TOKEN")


def find_context() -> Path:
    """The repository holding the Dockerfile (ppolab installed from a clone)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "Dockerfile").is_file():
        raise UserError(f"no Dockerfile beside the ppolab package ({root}); run this from a clone of ppolab")
    return root


def image_name(tag: str | None, cuda: str | None) -> str:
    """The image's reference; every option that goes into a docker command is checked against its grammar."""
    if cuda is not None:
        script_values.check("--cuda", cuda, "torch_variant")
    if tag is not None:
        script_values.check("--tag", tag, "image")
    return tag or f"ppolab:{__version__}" + (f"-{cuda}" if cuda else "")


def commands(image: str, cuda: str | None, push: str | None, context: Path) -> list[list[str]]:
    build = ["docker", "build", "-t", image]
    if cuda:
        build += ["--build-arg", f"TORCH_VARIANT={cuda}"]
    build.append(str(context))
    run = ["docker", "run", "--rm", *(["-it"] if sys.stdin.isatty() else [])]
    if cuda:
        run += ["--gpus", "all"]
    run += ["-v", f"{Path.cwd()}/experiments:/work/experiments"]
    for name in PASSTHROUGH_ENV:
        run += ["-e", name]  # by name: docker copies the caller's value, if set
    run += [image, "sweep", "experiments/sweeps/example", "--yes"]
    cmds = [build, run]
    if push:
        script_values.check("--push", push, "registry")
        remote = f"{push.rstrip('/')}/{image}"
        cmds += [["docker", "tag", image, remote], ["docker", "push", remote]]
    return cmds


def execute(cmds: list[list[str]]) -> int:
    """Build, push if asked, then run the example sweep in the image; stop at the first failure."""
    if not shutil.which("docker"):
        raise UserError("--execute: docker is not installed on this machine")
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        raise UserError("--execute: the Docker engine is not reachable (is dockerd running? see `docker info`)")
    in_order = [c for c in cmds if c[:2] != ["docker", "run"]] + [c for c in cmds if c[:2] == ["docker", "run"]]
    for cmd in in_order:
        print(f"$ {shlex.join(cmd)}", flush=True)
        code = subprocess.run(cmd).returncode
        if code != 0:
            return code
    return 0
