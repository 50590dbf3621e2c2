"""What a run leaves in its folder, besides checkpoints.

- `config.yaml`: the resolved TrainConfig (seed included, even when it was drawn);
- `command.txt`: the `ppolab train` command line that reproduces the run;
- `run.json`: versions, git commit (and `git.diff` beside it if the tree was dirty), host, start time, argv;
- `metrics.jsonl`: one JSON object per line, `{"type": "iteration", ...}` for every
  iteration (the table's metrics in snake_case plus timings and step counts) and
  `{"type": "eval", "iteration", "reward", "length", "time"}` for every evaluation, and
  `{"type": "check", "iteration", "passed", "total_steps", "total_time", "seconds", ...}` for every round of
  behaviour checks (`--check-every`; its figures flat, "walk.passed", "stand.max_drift_m");
- `train.log`: a copy of the console output;
- TensorBoard event files (`events.out.tfevents.*`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from ppolab import __version__
from ppolab.errors import UserError
from ppolab.runner.config import TrainConfig, to_args
from ppolab.util.files import atomic_write_text, refuse_links
from ppolab.util.interrupt import deferred_signals
from ppolab.util.run_folder import COMMAND, CONFIG, GIT_DIFF, MARKER, RUN_JSON, TERM_PREFIX, RunFolder, parse_line
from ppolab.util.validation import first_problem

if TYPE_CHECKING:
    from ppolab.runner.tracking import Tracker


def create_run_dir(cfg: TrainConfig) -> Path:
    """Make a new run folder (holding only its marker); never reuse an existing one."""
    path = _new_folder(cfg)
    (path / MARKER).write_text("a ppolab run folder\n")
    return path


def _new_folder(cfg: TrainConfig) -> Path:
    root = Path(cfg.logdir)
    root.mkdir(parents=True, exist_ok=True)
    if cfg.run_name:
        path = root / cfg.run_name
        try:
            path.mkdir()
        except FileExistsError:
            raise UserError(f"--run-name: {path} already exists; pick another name or --resume it") from None
        return path
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = f"{stamp}-{cfg.env}-s{cfg.seed}"
    for k in range(1000):
        path = root / (base if k == 0 else f"{base}-{k}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"could not create a run folder under {root}")


def latest_run(root: Path, need: str) -> Path | None:
    """The most recently active run folder directly inside `root` that holds the file `need` (actor.pt to
    play, last.pt to resume): a log root given where a run was meant, as LearningHumanoidWalking's
    `eval --logdir` takes one. Activity is the newest of the run's metrics and checkpoints."""
    try:
        runs = [d for d in root.iterdir() if d.is_dir() and not d.is_symlink() and (d / need).is_file()]
    except OSError:
        return None

    def active(d: Path) -> float:
        return max(p.stat().st_mtime for p in (d / need, RunFolder(d).metrics) if p.is_file())

    return max(runs, key=active, default=None)


def reproduce_command(cfg: TrainConfig) -> str:
    """`ppolab train` with every setting that differs from the defaults, the seed always."""
    defaults = TrainConfig(env=cfg.env)
    parts = ["ppolab", "train", "--env", cfg.env]
    for name, value in cfg.model_dump().items():
        if name in ("env", "run_name") or (value == getattr(defaults, name) and name not in ("seed", "logdir")):
            continue
        parts += to_args(name, value)
    return shlex.join(parts)


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=Path(__file__).resolve().parent, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def cpu_model() -> str:
    """The processor's name from /proc/cpuinfo (Linux), else platform's, else "unknown"."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def system_info() -> dict[str, Any]:
    import mujoco
    import numpy
    import torch

    from ppolab.util.system import available_cores

    return {
        "ppolab": __version__,
        "python": platform.python_version(),
        "mujoco": mujoco.__version__,
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "platform": f"{platform.system()} {platform.release()}",
        "cpu": platform.processor() or "N/A",  # LHW's console line (N/A on Linux, there too)
        "cpu_model": cpu_model(),  # what the run's speed figures ran on
        "cpu_count": os.cpu_count(),
        "available_cores": available_cores(),
        "host": socket.gethostname(),
    }


def write_run_files(run_dir: Path, cfg: TrainConfig, system: dict[str, Any]) -> None:
    atomic_write_text(run_dir / CONFIG, yaml.safe_dump(cfg.model_dump(), sort_keys=False))
    atomic_write_text(run_dir / COMMAND, reproduce_command(cfg) + "\n")
    commit = _git("rev-parse", "HEAD")
    # the code that ran: ppolab's own source folder, not data a checkout also tracks (a run's files, say)
    diff = _git("diff", "HEAD", "--", str(Path(__file__).resolve().parents[1]))
    meta = {
        "system": system,
        "git_commit": commit.strip() if commit else None,
        "git_dirty": bool(diff),
        "started": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "argv": sys.argv,
    }
    if diff:
        atomic_write_text(run_dir / GIT_DIFF, diff)
    atomic_write_text(run_dir / RUN_JSON, json.dumps(meta, indent=2) + "\n")


def read_meta(run_dir: Path) -> dict:
    """run.json as a mapping; empty when it is missing or damaged, since it only describes the run."""
    try:
        meta = json.loads((run_dir / RUN_JSON).read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def record_resume(run_dir: Path, iteration: int) -> None:
    """Append a resume event to run.json: when, at which iteration, with which command line."""
    path = run_dir / RUN_JSON
    meta = read_meta(run_dir)
    if not isinstance(meta.get("resumed"), list):
        meta["resumed"] = []
    meta["resumed"].append(
        {"at": dt.datetime.now().astimezone().isoformat(timespec="seconds"), "iteration": iteration, "argv": sys.argv}
    )
    atomic_write_text(path, json.dumps(meta, indent=2) + "\n")


def read_config(run_dir: Path, who: str = "") -> dict:
    """A run folder's config.yaml as a mapping; `who` (e.g. "--resume") starts any error line."""
    path = run_dir / CONFIG
    who = f"{who}: " if who else ""
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{who}{path} is missing; is {run_dir} a ppolab run folder?") from None
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise UserError(
            f"{who}{path} is not readable YAML ({exc.__class__.__name__}); restore it from command.txt"
        ) from None
    if not isinstance(data, dict):
        raise UserError(f"{who}{path} is not a mapping of train settings; restore it from command.txt")
    return data


def load_config(run_dir: Path) -> TrainConfig:
    """The settings a run was trained with, validated (what --resume continues with). The folder and its
    files are the run's own, not links to somewhere else: a resume writes into them."""
    refuse_links(run_dir, what=" (--resume writes into the run folder)")
    path = run_dir / CONFIG
    data = read_config(run_dir, "--resume")
    try:
        return TrainConfig(**data)
    except ValidationError as exc:
        err = first_problem(exc)
        raise UserError(f"--resume: {path}: {err['where']}: {err['msg']}") from None


class MetricsLog:
    """metrics.jsonl, TensorBoard scalars and (with --track) W&B; on resume, drops records past the checkpoint."""

    def __init__(
        self,
        run_dir: Path,
        resume_from: int | None = None,
        tracker: Tracker | None = None,
        restore: list[dict] | None = None,
    ) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.path = RunFolder(run_dir).metrics
        self.notes: list[str] = []
        if resume_from is not None:
            self._repair(resume_from, restore or [])
        self.file = open(self.path, "a")
        self.tb = SummaryWriter(str(run_dir), purge_step=resume_from)
        self.tracker = tracker

    def describe(self, cfg: TrainConfig) -> None:
        """A new run's settings for TensorBoard: the HParams table (runs compare there) and the config as text."""
        from torch.utils.tensorboard.summary import hparams

        values = {k: (v if isinstance(v, int | float | str | bool) else str(v)) for k, v in cfg.model_dump().items()}
        values = {k: v for k, v in values.items() if v is not None}
        rows = "\n".join(f"|{k}|{v}|" for k, v in values.items())
        with deferred_signals():  # TensorBoard's queue, as in _record
            for summary in hparams(values, {"eval/reward": float("nan"), "charts/mean_eprew": float("nan")}):
                self.tb.file_writer.add_summary(summary)
            self.tb.add_text("config", f"|setting|value|\n|-|-|\n{rows}")

    def _repair(self, resume_from: int, restore: list[dict]) -> None:
        """Keep the complete records before the checkpoint; put back the checkpoint's own iteration from
        the copy last.pt holds when the file lost it (a torn last line); say what cannot be recovered."""
        text = self.path.read_bytes().decode("utf-8", errors="replace") if self.path.exists() else ""
        kept = [line for line in text.splitlines() if _complete_before(line, resume_from)]
        have = {(r["type"], r["iteration"]) for r in map(json.loads, kept)}
        for rec in restore:
            if (rec.get("type"), rec.get("iteration")) not in have:
                kept.append(json.dumps(rec, allow_nan=True))
                have.add((rec["type"], rec["iteration"]))
                self.notes.append(f"metrics.jsonl had lost its {rec['type']} record of iteration {rec['iteration']}: "
                                  "restored from last.pt")  # fmt: skip
        lost = sorted(set(range(resume_from)) - {i for kind, i in have if kind == "iteration"})
        if lost:
            self.notes.append(
                f"metrics.jsonl lacks {len(lost)} iteration(s) the checkpoint covers ({lost[0]}..{lost[-1]}): "
                "their records are lost; training goes on"
            )
        atomic_write_text(self.path, "".join(line + "\n" for line in kept))

    def iteration(self, rec: dict) -> None:
        self.written = [{"type": "iteration", **rec}]
        scalars = {f"charts/{k}": rec[k] for k in ("mean_eprew", "mean_eplen", "noise_std", "fps", "lr") if k in rec}
        for key in ("actor_loss", "critic_loss", "mirror_loss", "imitation_loss", "kl", "entropy", "clip_fraction"):
            if key in rec:  # a record from before imitation_loss existed (a resumed older run) lacks it
                scalars[f"losses/{key}"] = rec[key]
        scalars |= {k: v for k, v in rec.items() if k.startswith(TERM_PREFIX)}  # rewards/<term>, as recorded
        self._record({"type": "iteration", **rec}, scalars)

    def evaluation(self, rec: dict) -> None:
        self.written.append({"type": "eval", **rec})
        self._record({"type": "eval", **rec}, {"eval/reward": rec["reward"], "eval/length": rec["length"]})

    def check(self, rec: dict) -> None:
        """A round of behaviour checks; TensorBoard gets its pass (1 or 0), its cost and every figure."""
        self.written.append({"type": "check", **rec})
        skip = ("iteration", "total_steps", "total_time")
        self._record({"type": "check", **rec}, {f"checks/{k}": v for k, v in rec.items() if k not in skip})

    def _record(self, rec: dict, scalars: dict[str, float]) -> None:
        """One record to every sink, with Ctrl-C/SIGTERM held until it is written. Why: TensorBoard's writer
        queues events for a thread; a KeyboardInterrupt raised between its queue's put and notify left the
        event unseen and close() waiting for it forever (1 of 40 SIGTERMs under load hung the run this way)."""
        with deferred_signals():
            self.file.write(json.dumps(rec, allow_nan=True) + "\n")
            self.file.flush()
            for tag, value in scalars.items():
                self.tb.add_scalar(tag, value, rec["iteration"])
            if self.tracker is not None:
                self.tracker.log(scalars, rec["iteration"])

    def close(self) -> None:
        self.file.close()
        self.tb.close()
        if self.tracker is not None:
            self.tracker.close()


def _complete_before(line: str, iteration: int) -> bool:
    """A record (RunFolder's rule: not a line cut off by a crash, or damaged) of an iteration before this."""
    rec = parse_line(line)
    return rec is not None and rec["iteration"] < iteration
