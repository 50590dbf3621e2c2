"""`ppolab runs slim PATH...`: finished run folders reduced to their records (see ppolab/ops/slim.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ppolab.errors import UserError

HELP = """Reduce finished run folders to what analyze, compare, report and repro read: metrics.jsonl
compressed (metrics.jsonl.gz, numbers to eight significant digits), train.log cut to its head
and tail, a sweep's byte-identical
copy of it (SWEEP/logs/RUN.log) removed, checkpoints and TensorBoard files removed except
those --keep names. analyze, compare and report give the same output after as before.

PATH is a run folder, a sweep folder, or any folder holding run folders (hundreds of them).
Only folders ppolab made are touched; a run that may still be training, or interrupted
with a last.pt to resume from, is skipped and said so.

  ppolab runs slim experiments/sweeps/my-sweep --dry-run    what would go, and the sizes
  ppolab runs slim logs/ --keep actor --keep events          keep actor.pt and TensorBoard files
  ppolab runs slim logs/ --keep none                         records only"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    from ppolab.ops.slim import KEEP_HELP

    p = sub.add_parser("runs", help="finished run folders: `slim` them to their records",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("action", choices=["slim"], help="slim: reduce finished runs to their records")
    p.add_argument("paths", nargs="+", metavar="PATH", help="run folders, sweep folders, or folders holding them")
    p.add_argument("--keep", action="append", metavar="WHAT", help=KEEP_HELP)
    p.add_argument(
        "--unfinished",
        action="store_true",
        help="slim runs that did not finish too (interrupted ones): they can no longer be resumed",
    )
    p.add_argument("--dry-run", action="store_true", help="say what would be removed; change nothing")
    p.add_argument("--json", action="store_true", help="one object per run folder, as JSON (schema_version 1)")


def run_runs(ns: argparse.Namespace) -> int:
    from ppolab.ops.slim import find_runs, parse_keep, slim

    keep = parse_keep(ns.keep)
    runs = find_runs([Path(p) for p in ns.paths])
    if not runs:
        raise UserError(f"{' '.join(ns.paths)}: no run folder ppolab made (none holds .ppolab-run or its run.json)")
    results = []
    for run in runs:
        r = slim(run, keep, dry_run=ns.dry_run, unfinished=ns.unfinished)
        results.append(r)
        if not ns.json:
            print(_line(r, ns.dry_run), flush=True)
    if ns.json:
        from ppolab.cli.args import print_json

        print_json("runs slim", {"dry_run": ns.dry_run, "runs": [r.as_dict() for r in results]})
        return 0
    done = [r for r in results if not r.skipped]
    before, after = sum(r.before for r in done), sum(r.after for r in done)
    verb = "would slim" if ns.dry_run else "slimmed"
    tail = "" if ns.dry_run else f": {_mb(before)} -> {_mb(after)}"
    print(f"{verb} {len(done)} of {len(results)} run folder(s){tail}; {len(results) - len(done)} skipped")
    return 0


def _line(r, dry: bool) -> str:
    if r.skipped:
        return f"skipped {r.path}: {r.skipped}"
    kept = f"; kept {', '.join(r.kept)}" if r.kept else ""
    if dry:
        return f"would slim {r.path} ({_mb(r.before)}): remove {', '.join(r.removed) or 'nothing'}{kept}"
    return f"slimmed {r.path}: {_mb(r.before)} -> {_mb(r.after)}{kept}"


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"
