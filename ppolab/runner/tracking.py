"""Weights & Biases tracking (`--track`): best effort, never in the way of training.

Without an API key, or with WANDB_MODE=offline, the run is logged offline inside
the run folder and the user is told how to sync it later. If wandb cannot start
at all (not installed, no network, a server error), training goes on without it
and says so in one line. The key is never read here beyond asking whether one is
set; wandb itself reads it from the environment or ~/.netrc.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ppolab.runner.config import TrainConfig

ID_FILE = "wandb-id.txt"
INIT_TIMEOUT_S = 30


class Tracker:
    def __init__(self, cfg: TrainConfig, run_dir: Path, say: Callable[[str], None] = print) -> None:
        self.run: Any = None
        if not cfg.track:
            return
        try:
            import wandb
        except ImportError:
            say("W&B: the wandb package is not installed; training without tracking")
            return
        from ppolab.util.credentials import wandb as wandb_credential

        mode = os.environ.get("WANDB_MODE", "").lower()
        why = "WANDB_MODE=offline"
        if mode not in ("online", "offline", "disabled"):
            credential = wandb_credential()
            mode = "online" if credential.ready else "offline"
            why = f"W&B API key {credential.state}"
        id_path = run_dir / ID_FILE
        run_id = id_path.read_text().strip() if id_path.exists() else uuid.uuid4().hex[:8]
        id_path.write_text(run_id + "\n")
        kwargs = dict(
            project=cfg.wandb_project,
            entity=cfg.wandb_entity,
            group=cfg.wandb_group,
            tags=[cfg.experiment_tag] if cfg.experiment_tag else None,
            name=run_dir.name,
            config=cfg.model_dump(),
            dir=str(run_dir),
            id=run_id,
            resume="allow",
            settings=wandb.Settings(
                console="off", silent=True, init_timeout=float(os.environ.get("WANDB_INIT_TIMEOUT", INIT_TIMEOUT_S))
            ),
        )
        for attempt in (mode, "offline") if mode == "online" else (mode,):
            try:
                self.run = wandb.init(mode=attempt, **kwargs)
                mode = attempt
                break
            except Exception as exc:  # network, auth or server trouble: never a reason to stop training
                then = "trying offline" if attempt == "online" else "training without tracking"
                why = "W&B unreachable"
                say(f"W&B: could not start in {attempt} mode ({type(exc).__name__}); {then}")
                try:
                    wandb.teardown()  # a failed start leaves its service behind; offline needs a fresh one
                except Exception:
                    pass
        if self.run is None:
            return
        if mode == "offline":
            say(
                f"W&B: logging offline to {run_dir / 'wandb'} ({why}). "
                f"Sync later: wandb sync {run_dir / 'wandb'}/offline-run-*"
            )
        elif mode == "online":
            say(f"W&B: {self.run.url}")

    def log(self, scalars: dict[str, float], step: int) -> None:
        if self.run is not None:
            try:
                self.run.log(scalars, step=step)
            except Exception:  # a tracking hiccup never costs the run
                pass

    def close(self) -> None:
        if self.run is not None:
            try:
                self.run.finish()
            except Exception:
                pass
            self.run = None
