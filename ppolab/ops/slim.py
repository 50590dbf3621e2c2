"""`ppolab runs slim`: shrink finished run folders to their records.

A finished run's value is its records: metrics (every iteration, evaluation and round of checks), its config,
command and provenance, and the one actor a user may still play. Checkpoints, TensorBoard files and full
console logs are most of its bytes (a 50-minute humanoid run: 7 MB, of which 0.3 MB is the actor). Slimming keeps
what analyze, compare, report and repro read, so they give the same output before and after:

- metrics.jsonl becomes metrics.jsonl.gz, its numbers to DIGITS significant digits (a float32's worth, as
  TensorBoard keeps scalars, and more than any reader prints; a float64's further digits are noise that compresses
  badly, two fifths of the file's bytes), written whole and read back record for record before the original goes;
  a metrics.jsonl.gz slimmed before the rounding is rounded the same;
- train.log keeps its head (the run's settings) and tail (the summary line readers take the run time from);
- a sweep's or study's copy of a run's console output (SWEEP/logs/RUN.log, TRIAL/RUN.log) goes when it is the
  same bytes as train.log, and is cut like train.log when it differs (several attempts, or a resume by hand);
- checkpoints go, except the ones asked for with --keep.

Only folders ppolab made are touched (its marker, or the run.json it writes), only files ppolab names are
removed, and a run without its final summary line (it may still be training) or interrupted with a last.pt to
resume from is skipped unless asked for (`--unfinished`: it can no longer be resumed).
Every step is atomic, so a kill at any moment leaves a run readable, and running the command again finishes it.
"""

from __future__ import annotations

import filecmp
import gzip
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from ppolab.errors import UserError
from ppolab.util.files import atomic_write_bytes, atomic_write_text
from ppolab.util.run_folder import (
    ACTOR,
    LAST,
    LOG,
    METRICS,
    METRICS_GZ,
    RUN_JSON,
    RunFolder,
    metrics_text,
    parse_line,
    read_records,
    records_of,
)  # fmt: skip

KEEPS = ("actor", "passing", "events", "log")
KEEP_HELP = (
    "what to keep beyond the records, repeatable: actor (actor.pt: the latest actor that passed every check, "
    "else the best by evaluation), passing (actor_N.pt of the first round of checks that passed), events "
    "(TensorBoard files), log (the whole train.log); none keeps only the records (default: actor)"
)
LOG_HEAD, LOG_TAIL = 80, 40  # lines: the settings printed at the start, the last iterations and summary line
CHECKPOINT = re.compile(r"(actor|critic)(_\d+)?\.pt|last\.pt")
DIGITS = 8  # significant digits a slimmed record keeps: reports print at most five


@dataclass
class Slimmed:
    """What slimming did (or, dry, would do) to one run folder."""

    path: Path
    before: int = 0
    after: int = 0
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    skipped: str = ""  # why the folder was left as it was

    def as_dict(self) -> dict:
        return {"path": str(self.path), "bytes_before": self.before, "bytes_after": self.after,
                "removed": self.removed, "kept": self.kept, "skipped": self.skipped or None}  # fmt: skip


def parse_keep(values: list[str] | None) -> set[str]:
    """--keep's values: a set of KEEPS; `none` alone keeps nothing."""
    if not values:
        return {"actor"}
    words = {w.strip() for v in values for w in v.split(",") if w.strip()}
    if words == {"none"}:
        return set()
    unknown = sorted(words - set(KEEPS))
    if unknown:
        raise UserError(f"--keep {unknown[0]}: not one of {', '.join(KEEPS)}, none")
    return words


def find_runs(paths: list[Path]) -> list[Path]:
    """The run folders under each path (itself, a sweep's runs/, or any tree), without following links."""
    found: list[Path] = []
    for path in paths:
        if path.is_symlink() or not path.is_dir():
            raise UserError(f"{path}: not a folder; name run folders, sweep folders or folders that hold them")
        found += [path] if is_run(path) else sorted(p for p in _walk(path) if is_run(p))
    return list(dict.fromkeys(found))


def _walk(root: Path):
    for child in root.iterdir():
        if child.is_dir() and not child.is_symlink():
            yield child
            if not is_run(child):
                yield from _walk(child)


def is_run(path: Path) -> bool:
    """A folder ppolab made for a run: its marker, or (run folders written before the marker) the run.json
    whose system block names ppolab's version."""
    folder = RunFolder(path)
    if folder.is_ppolabs():
        return True
    try:
        meta = json.loads((path / RUN_JSON).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and isinstance(meta.get("system"), dict) and "ppolab" in meta["system"]


def finished(folder: RunFolder) -> bool:
    """The log ends with the summary line of a run that finished (not one interrupted, nor one still going)."""
    return folder.ending() == "finished"


def _why_not(folder: RunFolder, unfinished: bool) -> str:
    """Why a run must be left as it is, or "" when it may be slimmed. An interrupted run that has no last.pt
    any more cannot be resumed, so slimming it loses nothing; one still writing is never touched."""
    if not (folder.metrics.is_file() or folder.metrics_gz.is_file()):
        return "no metrics.jsonl: nothing would read it the same after"
    end = folder.ending()
    if unfinished or end == "finished" or (end == "interrupted" and not folder.last.is_file()):
        return ""
    if end == "interrupted":
        return "interrupted and resumable (last.pt): resume it and let it end, or give --unfinished"
    return (
        "not finished (no summary line at the end of train.log): it may still be training; let it end, "
        "or give --unfinished"
    )


def slim(path: Path, keep: set[str], dry_run: bool = False, unfinished: bool = False) -> Slimmed:
    """Slim one run folder (see the module's docstring); the result says what went and what stayed.
    `unfinished` slims a run that did not finish too: it can no longer be resumed."""
    folder = RunFolder(path)
    out = Slimmed(path, before=_size(path))
    out.skipped = _why_not(folder, unfinished)
    if out.skipped:
        out.after = out.before
        return out
    keep_names = _kept_checkpoints(folder, keep)
    for p in sorted(path.iterdir()):
        if p.is_file() and (CHECKPOINT.fullmatch(p.name) or p.name.startswith("events.out.tfevents")):
            if p.name in keep_names or ("events" in keep and p.name.startswith("events.out.tfevents")):
                out.kept.append(p.name)
            else:
                out.removed.append(p.name)
                if not dry_run:
                    p.unlink()
    copy = _sweep_log_copy(folder)
    if copy is not None:
        out.removed.append(str(copy))
        if not dry_run:
            copy.unlink()
    if folder.metrics.is_file():
        out.removed.append(f"{METRICS} (now {METRICS_GZ})")
    if not dry_run:
        compress_metrics(folder)
    if "log" not in keep and not dry_run:
        trim_log(folder.log)
        if copy is None and (other := _sweep_log(path)) is not None:
            trim_log(other)  # the sweep's log of several attempts: cut the same way
    out.after = out.before if dry_run else _size(path)
    return out


def _kept_checkpoints(folder: RunFolder, keep: set[str]) -> set[str]:
    names = {ACTOR} if "actor" in keep else set()
    if "passing" in keep:
        first = folder.records().first_pass()
        if first is not None:
            names.add(folder.actor(first["iteration"]).name)
    return names - {LAST}


def _sweep_log(path: Path) -> Path | None:
    """The runner's copy of this run's console output, when there is one (a file): SWEEP/logs/RUN.log for a
    sweep's run, TRIAL/RUN.log beside a study's trial run."""
    logs = [path.parent / f"{path.name}.log"]
    if path.parent.name == "runs":
        logs.insert(0, path.parent.parent / "logs" / f"{path.name}.log")
    return next((log for log in logs if log.is_file() and not log.is_symlink()), None)


def _sweep_log_copy(folder: RunFolder) -> Path | None:
    """The sweep's log of this run when it holds the same bytes as its train.log."""
    log = _sweep_log(folder.path)
    return log if log is not None and folder.log.is_file() and filecmp.cmp(log, folder.log, shallow=False) else None


def compress_metrics(folder: RunFolder) -> None:
    """metrics.jsonl (or a metrics.jsonl.gz not yet rounded) -> metrics.jsonl.gz with every record's numbers to
    DIGITS significant digits; the original goes only once the copy reads back the same records. Lines that are
    not records stay as they were; a file already rounded is left alone."""
    source = folder.metrics if folder.metrics.is_file() else folder.metrics_gz
    raw, text = source.read_bytes(), metrics_text(source)
    lines = [_rounded(line) for line in text.splitlines()]
    if source == folder.metrics_gz and lines == text.splitlines():
        return
    expected = records_of(lines)
    data = "".join(line + "\n" for line in lines).encode()
    atomic_write_bytes(folder.metrics_gz, gzip.compress(data, compresslevel=9, mtime=0))
    if read_records(folder.metrics_gz) != expected:
        if source == folder.metrics:
            folder.metrics_gz.unlink()
        else:
            atomic_write_bytes(source, raw)  # the records as they were
        raise OSError(f"{folder.metrics_gz}: read back different records; {source.name} kept as it was")
    if source == folder.metrics:
        folder.metrics.unlink()


def _rounded(line: str) -> str:
    """One metrics line with its record's floats to DIGITS significant digits; a line that is no record as is."""
    rec = parse_line(line)
    if rec is None:
        return line
    return json.dumps({k: _round(v) for k, v in rec.items()})


def _round(value: object) -> object:
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.{DIGITS}g}")
    return value


def trim_log(log: Path) -> None:
    """Keep the log's first LOG_HEAD and last LOG_TAIL lines, with one line saying how many went between."""
    if log.is_symlink() or not log.is_file():
        return
    lines = log.read_text(errors="replace").splitlines()
    if len(lines) <= LOG_HEAD + LOG_TAIL + 1:
        return
    cut = len(lines) - LOG_HEAD - LOG_TAIL
    note = f"[... {cut} lines removed by `ppolab runs slim`; the records are in {METRICS_GZ} ...]"
    atomic_write_text(log, "\n".join([*lines[:LOG_HEAD], note, *lines[-LOG_TAIL:]]) + "\n")


def _size(path: Path) -> int:
    """The run's bytes: its folder's files and the sweep's log of it."""
    log = _sweep_log(path)
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file() and not p.is_symlink()) + (
        log.stat().st_size if log else 0)  # fmt: skip


__all__ = ["KEEPS", "KEEP_HELP", "LOG", "Slimmed", "find_runs", "parse_keep", "slim"]
