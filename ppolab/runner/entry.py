"""The one way into training, for `ppolab train` and for a sweep's or a study's job alike.

A request is a fresh configuration or a run folder to resume (with, at most, a new iteration total).
`checked` applies every rule once (what a resume may change, a mirror loss on an env without one, a
pretrained policy that can be read, a Ray cluster that answers), before any run folder exists, and
`run` turns the outcome into the process's exit code: 0 trained to the end, 130 stopped, 2 a user's
mistake (said in one line), 75 no space left (nothing lost: free space and launch again).
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ppolab.errors import NO_SPACE_EXIT, NoSpace, UserError, one_line
from ppolab.runner.config import TrainConfig, flag, validation_message
from ppolab.util.run_folder import LAST, RunFolder


@dataclass(frozen=True)
class TrainRequest:
    """What to train: `config`, validated once where the request is made (`TrainRequest.of`, `settings`), or
    `resume`, a run folder, with `budget`: a new n_itr or time_limit."""

    config: TrainConfig | None = None
    resume: Path | None = None
    budget: dict[str, int | float] = field(default_factory=dict)
    sampler_procs: int | None = None
    backend: str = "auto"

    @classmethod
    def of(cls, given: dict[str, Any], resume: Path | None = None, **kwargs: Any) -> TrainRequest:
        """From the flags given (the CLI's): the settings checked now; a mistake is a UserError naming the flag."""
        if resume is None:
            return cls(config=settings(given), **kwargs)
        extra = sorted(set(given) - set(BUDGET))
        if extra:
            raise UserError(f"--resume continues a run with its saved configuration; drop {flag(extra[0])} "
                            "(only --n-itr and --time-limit may change)")  # fmt: skip
        return cls(resume=Path(resume), budget=dict(given), **kwargs)


def settings(given: dict[str, Any]) -> TrainConfig:
    """A new run's settings from the flags given (the env's preset fills the rest), every rule checked once:
    the CLI, a sweep's plan and a study's trial make their TrainConfig here; a UserError names the flag."""
    if "env" not in given:
        raise UserError("--env is required (or --resume RUN_DIR)")
    if given.get("imitate_coeff") is not None and not given.get("imitate"):
        raise UserError("--imitate-coeff weighs the imitation loss towards --imitate EXPERT, which is not given; "
                        "add --imitate PATH (a run folder or actor .pt) or drop --imitate-coeff")  # fmt: skip
    cfg = build_config(given)
    _check_mirror(cfg, given)
    return cfg


def checked(req: TrainRequest) -> tuple[TrainConfig, Path | None]:
    """The run's settings and the folder it resumes; what only the machine that trains can check (policy files,
    the Ray address) is checked here. A UserError names what is wrong."""
    if req.sampler_procs is not None and req.sampler_procs < 1:
        raise UserError("--sampler-procs: must be at least 1")
    if req.resume is not None:
        return _resumed(Path(req.resume), req.budget), Path(req.resume)
    if req.config is None:
        raise UserError("--env is required (or --resume RUN_DIR)")
    cfg = req.config
    for option, policy in (("--continued", cfg.continued), ("--imitate", cfg.imitate)):
        if policy:
            check_policy_file(option, Path(policy))
    _check_backend(req.backend)
    return cfg, None


BUDGET = ("n_itr", "time_limit")  # what a resumed run may change: how long it goes on, not how it trains


def _resumed(run_dir: Path, given: dict) -> TrainConfig:
    from ppolab.runner.run_files import latest_run, load_config

    if not run_dir.is_dir():
        raise UserError(f"--resume: {run_dir} is not a folder")
    folder = RunFolder(run_dir)
    if not folder.has_checkpoint():
        if latest := latest_run(run_dir, LAST):  # a folder of runs: say which, never guess
            import shlex

            raise UserError(f"--resume: {run_dir} is a folder of runs; the most recent: "
                            f"ppolab train --resume {shlex.quote(str(latest))}")  # fmt: skip
        if folder.holds_work():
            raise UserError(f"--resume: {folder.last} is missing (the run was slimmed, or its checkpoints removed): "
                            "its records stay readable, but it cannot continue; train a new run")  # fmt: skip
        raise UserError(f"--resume: {folder.last} is missing; no completed iteration to resume from")
    cfg = load_config(run_dir)
    budget = {k: v for k, v in given.items() if k in BUDGET}
    return build_config({**cfg.model_dump(), **budget}) if budget else cfg


def build_config(values: dict) -> TrainConfig:
    """TrainConfig from flag values; the first problem as one line naming the flag."""
    from pydantic import ValidationError

    try:
        return TrainConfig(**values)
    except ValidationError as exc:
        raise UserError(validation_message(exc)) from None


def _check_mirror(cfg: TrainConfig, given: dict) -> None:
    """Asking for a mirror loss on an env with no symmetry is a mistake worth one clear line."""
    from ppolab.envs import ENVS

    if "mirror_coeff" in given and not ENVS[cfg.env].has_symmetry:
        with_symmetry = sorted(n for n, c in ENVS.items() if c.has_symmetry)
        raise UserError(f"--mirror-coeff: env {cfg.env} has no mirror symmetry; drop the flag "
                        f"(the mirror loss is for {', '.join(with_symmetry)})")  # fmt: skip


def check_policy_file(option: str, path: Path) -> None:
    """Fail early, naming the flag, when a policy path is missing or unreadable."""
    if not path.exists():  # before importing torch: a mistyped path is told at once
        raise UserError(f"{option}: {path}: no such file")
    from ppolab.ppo import checkpoint as ckpt

    try:
        ckpt.load(ckpt.find_actor(path))
    except UserError as exc:
        raise UserError(f"{option}: {exc}") from None


def _check_backend(backend: str) -> None:
    from ppolab.runner.sampling import resolve_backend

    if resolve_backend(backend) == "ray":
        from ppolab.runner.ray_sampler import check_address

        check_address()  # before a run folder exists


def run(
    req: TrainRequest,
    lock: Callable[[TrainConfig, Path | None], AbstractContextManager] | None = None,
    err: TextIO = sys.stderr,
) -> int:
    """Check, hold `lock` (the CLI's machine lock; a job's is held by its runner), train: the exit code."""
    try:
        cfg, resume_dir = checked(req)
        from ppolab.runner.trainer import train  # torch: after the checks, so that a mistake is told at once

        with lock(cfg, resume_dir) if lock is not None else nullcontext():
            _, completed = train(cfg, resume_dir=resume_dir, sampler_procs=req.sampler_procs, backend=req.backend)
    except UserError as exc:
        err.write(f"ppolab train: error: {one_line(exc)}\n")
        return 2
    except (NoSpace, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno != errno.ENOSPC:
            raise
        err.write(f"ppolab train: {one_line(exc if isinstance(exc, NoSpace) else NoSpace(exc.filename))}\n")
        return NO_SPACE_EXIT
    return 0 if completed else 130
