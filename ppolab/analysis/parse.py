"""Read a run's per-iteration metrics: from `metrics.jsonl` when there is one, else from a console log.

The console parser reads ppolab's log and the logs of other PPO trainers that
print the same table (see shared/reference), with the noise real logs carry:
ANSI colours, worker-prefixed lines (`(RolloutWorker pid=7254) ...`), warnings,
`nan` rows, extra rows (`Imitation loss`), evaluation blocks printed after the
iteration they belong to, and a last iteration cut off by a crash (dropped:
only iterations whose `Total time elapsed` line was written count).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from ppolab.errors import UserError
from ppolab.runner.console import TABLE_ROWS
from ppolab.util.run_folder import CONFIG, LOG, RunFolder, read_records

LABELS = dict(TABLE_ROWS)  # the console table's labels (LearningHumanoidWalking's) -> metric keys
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PREFIX = re.compile(r"^\([^)]*pid=\d+[^)]*\)\s*")
ITERATION = re.compile(r"\*+ Iteration (\d+) \*+")
SAMPLING = re.compile(r"Sampling took ([\d.]+)s for (\d+) steps")
OPTIMIZER = re.compile(r"Optimizer took: ([\d.]+)s")
TOTAL = re.compile(r"Total time elapsed: ([\d.]+)s\. Total steps: (\d+) \(fps=(\d+(?:\.\d+)?|nan|inf)")
EVAL = re.compile(r"\(Episode length:([-\d.naif]+)\. Reward:([-\d.naif]+)\. Time taken:([\d.]+)s\)")
FINAL = re.compile(r"Training (?:finished|interrupted at iteration \d+)\. Total time: ([\d.]+)s")


@dataclass
class RunRecords:
    """A run's metrics in the shape of metrics.jsonl records, wherever they were read from."""

    source: str
    iterations: list[dict] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)
    checks: list[dict] = field(default_factory=list)  # rounds of behaviour checks (--check-every)
    final_time: float | None = None  # from the summary line, when the log has one
    incomplete: int = 0  # iterations cut off before their Total line
    fine_tune: bool = False  # started from trained weights (config.yaml's `continued`)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _snake(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def parse_log(text: str, source: str = "log") -> RunRecords:
    out = RunRecords(source=source)
    current: dict | None = None
    last_iteration: int | None = None
    want_eval = False
    for raw in text.splitlines():
        line = raw
        if "\x1b" in line:
            line = ANSI.sub("", line)
        if line.startswith("("):
            if line.startswith("(Episode length:"):
                if want_eval and (m := EVAL.match(line)):
                    out.evals.append(
                        {
                            "iteration": last_iteration if last_iteration is not None else 0,
                            "length": _number(m.group(1)),
                            "reward": _number(m.group(2)),
                            "time": float(m.group(3)),
                        }
                    )
                want_eval = False
                continue
            line = PREFIX.sub("", line)
        if line.startswith("|"):
            if current is not None:
                cells = line.split("|")
                if len(cells) >= 4:
                    label = cells[1].strip()
                    current[LABELS.get(label) or _snake(label)] = _number(cells[2].strip())
            continue
        if line.startswith("*"):
            if m := ITERATION.search(line):
                if current is not None:
                    out.incomplete += 1
                current = {"iteration": int(m.group(1))}
            continue
        if line.startswith("Sampling took") and current is not None:
            if m := SAMPLING.match(line):
                current["sample_time"], current["steps"] = float(m.group(1)), int(m.group(2))
        elif line.startswith("Optimizer took") and current is not None:
            if m := OPTIMIZER.match(line):
                current["optimizer_time"] = float(m.group(1))
        elif line.startswith("Total time elapsed"):
            if current is not None and (m := TOTAL.match(line)):
                current.update(total_time=float(m.group(1)), total_steps=int(m.group(2)), fps=_number(m.group(3)))
                out.iterations.append(current)
                last_iteration = current["iteration"]
                current = None
        elif line.startswith("====EVALUATE EPISODE===="):
            want_eval = True
        elif line.startswith("Training ") and (m := FINAL.match(line)):
            out.final_time = float(m.group(1))
    if current is not None:
        out.incomplete += 1
    return out


def read_jsonl(path: Path) -> RunRecords:
    """Records of metrics.jsonl (RunFolder's one rule: a line cut off by a crash, or damaged, is skipped
    and counted), with the log's summary line when the run ended normally or by Ctrl-C."""
    folder = RunFolder(path.parent)
    try:
        recs = read_records(path)
    except OSError as exc:
        raise UserError(f"{path}: unreadable ({exc.strerror})") from None
    source = folder.metrics if path == folder.metrics_gz else path  # a slimmed run's records, as they were
    out = RunRecords(source=str(source), iterations=recs.iterations, evals=recs.evals, checks=recs.checks,
                     incomplete=recs.skipped)  # fmt: skip
    if folder.log.exists():  # the summary line, when the run ended normally or by Ctrl-C
        for line in reversed(folder.log.read_text(errors="replace").splitlines()[-5:]):
            if m := FINAL.match(line):
                out.final_time = float(m.group(1))
                break
    return out


def _continued(run_dir: Path) -> bool:
    """The run folder's config.yaml names pretrained weights it started from."""
    import yaml

    try:
        cfg = yaml.safe_load((run_dir / CONFIG).read_text())
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return False
    return isinstance(cfg, dict) and bool(cfg.get("continued"))


def load_run(path: Path) -> RunRecords:
    """A run folder (metrics.jsonl, else train.log) or a plain stdout log file."""
    if path.is_dir():
        if RunFolder(path).has_metrics():
            out = read_jsonl(RunFolder(path).metrics_file)
            out.fine_tune = _continued(path)
            return out
        if (path / LOG).exists():
            path = path / LOG
        else:
            raise UserError(f"{path}: no metrics.jsonl or train.log; is it a run folder?")
    if not path.exists():
        raise UserError(f"{path}: no such file or folder")
    if path.suffix == ".jsonl" or path.name.endswith(".jsonl.gz"):
        return read_jsonl(path)
    records = parse_log(path.read_text(errors="replace"), source=str(path))
    if not records.iterations:
        raise UserError(f"{path}: no complete training iteration found; is it a PPO training log?")
    return records
