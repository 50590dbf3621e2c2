"""A run folder: the one owner of its file names, of reading its metrics, and of finding its checkpoints.

It sits at the bottom (util), below the trainer that writes runs and the analysis that reads them, so that no
other module spells out a run file's name.

Every reader of a run (the trainer resuming it, analyze, compare, the sweep's status and live view,
the tuner's pruner) goes through `RunFolder`, so one rule decides which metrics lines are records
(`is_record`): a line cut off by a crash, damaged, or without the fields readers use is skipped and
counted, never half-read.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

METRICS = "metrics.jsonl"  # one JSON record per iteration, per evaluation and per round of behaviour checks
METRICS_GZ = "metrics.jsonl.gz"  # the same records, compressed, in a finished run that `ppolab runs slim` slimmed
LAST = "last.pt"  # everything --resume needs, rewritten every iteration
MARKER = ".ppolab-run"  # in every run folder ppolab makes: the only folders it ever moves aside or removes
CONFIG, ENV, LOG = "config.yaml", "env.yaml", "train.log"  # the settings, the env's settings, the console
RUN_JSON, COMMAND, GIT_DIFF = "run.json", "command.txt", "git.diff"  # provenance: versions, the command, a change
ACTOR, CRITIC = "actor.pt", "critic.pt"  # the policy a user gets, and its critic
FINAL = re.compile(r"Training (finished|interrupted at iteration \d+)\. Total time")  # the log's summary line
TERM_PREFIX = "rewards/"  # an iteration record's reward terms: "rewards/<term>", a mean contribution per env step
REQUIRED = {  # what every reader uses, by record type
    "iteration": ("mean_eprew", "mean_eplen"),
    "eval": ("reward", "length"),
    "check": ("passed", "total_steps", "total_time"),  # --check-every: a round of behaviour checks
}


def is_record(rec: object) -> bool:
    """A record as ppolab writes it: a mapping with a type, an iteration count, the fields every reader uses,
    and numbers for values. Anything else (a record cut short, hand-edited, or from another tool) is skipped."""
    if not isinstance(rec, dict) or rec.get("type") not in REQUIRED:
        return False
    if any(k not in rec for k in REQUIRED[rec["type"]]):
        return False
    itr = rec.get("iteration")
    if not isinstance(itr, int) or isinstance(itr, bool) or itr < 0:
        return False
    return all(
        v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
        for k, v in rec.items()
        if k not in ("type", "iteration")
    )


def parse_line(line: str) -> dict | None:
    """The record on one line of metrics.jsonl, or None when the line is not one (see is_record)."""
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    return rec if is_record(rec) else None


@dataclass
class Records:
    """A run's metrics records: iterations in order, evaluations, rounds of behaviour checks, and how many
    lines were not records."""

    iterations: list[dict] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)
    checks: list[dict] = field(default_factory=list)
    skipped: int = 0

    def add(self, line: str) -> None:
        rec = parse_line(line)
        if rec is None:
            self.skipped += bool(line.strip())
        else:
            {"eval": self.evals, "check": self.checks}.get(rec["type"], self.iterations).append(rec)

    def first_pass(self) -> dict | None:
        """The first round of checks that passed, or None (never checked, or never passed: censored)."""
        return next((r for r in sorted(self.checks, key=lambda r: r["iteration"]) if r["passed"]), None)

    def check_firsts(self) -> dict[str, int | None]:
        """Each check's first passing iteration (None: never passed), in the order a round runs them: which
        check a run waited on last, and from when. A round stops at its first failure, so a later check is
        first seen passing no sooner than every check before it."""
        firsts: dict[str, int | None] = {}
        for rec in sorted(self.checks, key=lambda r: r["iteration"]):
            for name, passed in check_passes(rec).items():
                if firsts.get(name) is None:
                    firsts[name] = rec["iteration"] if passed else None
        return firsts


def check_passes(record: dict) -> dict[str, bool]:
    """Each check's verdict in one round's record ('walk.passed' -> walk), in the order the round ran them;
    a check after the round's first failure was not run and is absent."""
    return {key.split(".")[0]: bool(v) for key, v in record.items() if key.count(".") == 1 and key.endswith(".passed")}


def metrics_text(path: Path) -> str:
    """A metrics file's text (metrics.jsonl, or a slimmed run's metrics.jsonl.gz); OSError if it cannot be read."""
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (EOFError, gzip.BadGzipFile, ValueError) as exc:
            raise OSError(f"{path}: not a whole gzip file ({exc})") from None
    return data.decode("utf-8", errors="replace")


def records_of(lines: list[str]) -> Records:
    """The records among metrics lines, iterations sorted by iteration."""
    out = Records()
    for line in lines:
        out.add(line)
    out.iterations.sort(key=lambda r: r["iteration"])
    return out


def read_records(path: Path) -> Records:
    """Every record of a metrics file (metrics.jsonl, or a slimmed run's metrics.jsonl.gz), iterations sorted by
    iteration; OSError if it cannot be read."""
    return records_of(metrics_text(path).splitlines())


class RunFolder:
    """The files of one run folder, by name."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    @property
    def metrics(self) -> Path:
        return self.path / METRICS

    @property
    def metrics_gz(self) -> Path:
        return self.path / METRICS_GZ

    @property
    def metrics_file(self) -> Path:
        """Where the records are to be read: metrics.jsonl, else a slimmed run's metrics.jsonl.gz."""
        return self.metrics_gz if not self.metrics.is_file() and self.metrics_gz.is_file() else self.metrics

    @property
    def last(self) -> Path:
        return self.path / LAST

    @property
    def log(self) -> Path:
        return self.path / LOG

    def has_metrics(self) -> bool:
        return self.metrics_file.is_file()

    def has_checkpoint(self) -> bool:
        """A completed iteration to resume from."""
        return self.last.is_file()

    def ending(self) -> str:
        """How the run's log ends: "finished", "interrupted" (the process exited and said so), or "" (still
        training, or killed before it could write its summary line)."""
        try:
            with open(self.log, "rb") as f:
                f.seek(max(0, f.seek(0, 2) - 4096))
                tail = f.read().decode("utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        lines = [line for line in tail if line.strip()]
        m = FINAL.match(lines[-1]) if lines else None
        return "" if m is None else m.group(1).split()[0]

    def holds_work(self) -> bool:
        """Completed work is kept here: a checkpoint, a slimmed run's metrics.jsonl.gz, or the summary line of a
        run that ended (its checkpoints removed by hand). Without any, the folder was left by a run killed
        before its first iteration was saved, and may go."""
        return self.has_checkpoint() or self.metrics_gz.is_file() or self.ending() != ""

    def is_ppolabs(self) -> bool:
        """Made by ppolab (its marker is there): a folder ppolab may move aside or remove."""
        return (self.path / MARKER).is_file()

    def records(self) -> Records:
        """Every record of metrics.jsonl or .gz (none before the first iteration); OSError if it cannot be read."""
        path = self.metrics_file
        return read_records(path) if path.exists() else Records()

    def follow(self) -> MetricsTail:
        """An incremental reader of metrics.jsonl: each call returns only the records written since."""
        return MetricsTail(self.metrics)

    def checkpoints(self) -> list[int]:
        """The iterations of the saved actor_<N>.pt, in order."""
        names = (p.stem.split("_", 1)[1] for p in self.path.glob("actor_*.pt"))
        return sorted(int(n) for n in names if n.isdigit())

    def actor(self, iteration: int | None = None) -> Path:
        return self.path / (ACTOR if iteration is None else f"actor_{iteration}.pt")

    def critic(self, iteration: int | None = None) -> Path:
        return self.path / (CRITIC if iteration is None else f"critic_{iteration}.pt")


class MetricsTail:
    """Reads a growing metrics.jsonl from where it stopped: a line still being written is read next time."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0

    def __call__(self) -> list[dict]:
        if not self.path.exists():
            return []
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        records = (parse_line(line) for line in complete.decode("utf-8", errors="replace").splitlines())
        return [r for r in records if r is not None]
