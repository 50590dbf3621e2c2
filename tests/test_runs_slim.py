"""`ppolab runs slim`: finished runs reduced to their records, read by analyze, compare and report as before."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest
from conftest import TINY, make_sweep, only_run_dir, run_ppolab


def _views(sweep) -> dict[str, str]:
    """What a user reads of a sweep: analyze, compare and report (results.md), each as text."""
    out = {}
    for cmd in (["analyze", str(sweep)], ["compare", str(sweep)], ["report", str(sweep)]):
        proc = run_ppolab(*cmd)
        assert proc.returncode == 0, proc.stderr
        out[cmd[0]] = proc.stdout
    out["results.md"] = (sweep / "results.md").read_text()
    return out


def test_a_slimmed_sweep_reads_the_same_in_analyze_compare_and_report(tmp_path):
    sweep = make_sweep(tmp_path, n_itr=4)
    assert run_ppolab("sweep", str(sweep), "--yes", env={"PPOLAB_LOCK_DIR": str(tmp_path)}).returncode == 0
    before = _views(sweep)
    run = sweep / "runs" / "control-s1"
    records = (run / "metrics.jsonl").read_text()
    assert (sweep / "logs" / "control-s1.log").read_bytes() == (run / "train.log").read_bytes()

    dry = run_ppolab("runs", "slim", str(sweep), "--dry-run")
    assert dry.returncode == 0 and "would slim 2 of 2 run folder(s)" in dry.stdout, dry.stdout + dry.stderr
    assert (run / "metrics.jsonl").is_file() and (run / "last.pt").is_file()  # a dry run changes nothing

    proc = run_ppolab("runs", "slim", str(sweep))
    assert proc.returncode == 0 and "slimmed 2 of 2 run folder(s)" in proc.stdout, proc.stdout + proc.stderr
    names = sorted(p.name for p in run.iterdir())
    assert "actor.pt" in names and not [n for n in names if n.endswith(".pt") and n != "actor.pt"], names
    assert "metrics.jsonl" not in names and not [n for n in names if n.startswith("events.out")], names
    slimmed = gzip.decompress((run / "metrics.jsonl.gz").read_bytes()).decode().splitlines()
    assert len(slimmed) == len(records.splitlines())
    for raw, kept in zip(records.splitlines(), slimmed, strict=True):  # the same records, to eight digits
        a, b = json.loads(raw), json.loads(kept)
        assert a.pop("type") == b.pop("type") and b == pytest.approx(a, rel=1e-7), kept
        assert all(float(f"{v:.8g}") == v for v in b.values() if isinstance(v, float)), kept
    assert not (sweep / "logs" / "control-s1.log").exists()  # the byte-identical copy of train.log
    assert "Training finished." in (run / "train.log").read_text().splitlines()[-1]
    assert _views(sweep) == before

    relaunch = run_ppolab("sweep", str(sweep), "--yes", env={"PPOLAB_LOCK_DIR": str(tmp_path)})
    assert relaunch.returncode == 0, relaunch.stdout + relaunch.stderr
    assert "runs again" not in relaunch.stdout + relaunch.stderr and "Removed" not in relaunch.stdout
    assert (run / "metrics.jsonl.gz").is_file() and _views(sweep) == before  # a finished, slimmed run stays done

    again = run_ppolab("runs", "slim", str(sweep), "--json")  # a second pass finds nothing more to remove
    assert again.returncode == 0, again.stderr
    runs = json.loads(again.stdout)["runs"]
    assert [r["removed"] for r in runs] == [[], []] and [r["kept"] for r in runs] == [["actor.pt"], ["actor.pt"]]

    rounded = (run / "metrics.jsonl.gz").read_bytes()  # a run slimmed before the rounding: rounded the same
    (run / "metrics.jsonl.gz").write_bytes(gzip.compress(records.encode()))
    assert run_ppolab("runs", "slim", str(run)).returncode == 0
    assert (run / "metrics.jsonl.gz").read_bytes() == rounded and _views(sweep) == before


def test_unfinished_and_foreign_folders_are_left_alone(tmp_path):
    logdir = tmp_path / "logs"
    assert run_ppolab("train", *TINY, "--n-itr", "2", "--logdir", str(logdir)).returncode == 0
    run = only_run_dir(logdir)
    interrupted = logdir / "interrupted"
    shutil.copytree(run, interrupted)
    log = interrupted / "train.log"
    log.write_text(log.read_text().replace("Training finished.", "Training interrupted at iteration 1."))
    training = logdir / "training"  # no summary line yet: it may still be writing
    shutil.copytree(run, training)
    log = training / "train.log"
    log.write_text("\n".join(log.read_text().splitlines()[:-1]) + "\n")
    (training / "last.pt").unlink()
    stale = logdir / "stale"  # interrupted, and its last.pt is gone: nothing to resume from
    shutil.copytree(interrupted, stale)
    (stale / "last.pt").unlink()
    foreign = tmp_path / "logs" / "mine"
    foreign.mkdir()
    (foreign / "metrics.jsonl").write_text("{}\n")
    (foreign / "last.pt").write_bytes(b"not ppolab's")

    proc = run_ppolab("runs", "slim", str(logdir), "--keep", "none")
    assert proc.returncode == 0, proc.stderr
    assert f"skipped {interrupted}: interrupted and resumable" in proc.stdout
    assert (interrupted / "last.pt").is_file() and (interrupted / "metrics.jsonl").is_file()
    assert f"skipped {training}: not finished" in proc.stdout and (training / "metrics.jsonl").is_file()
    assert (stale / "metrics.jsonl.gz").is_file() and not (stale / "metrics.jsonl").exists(), proc.stdout
    assert (foreign / "last.pt").read_bytes() == b"not ppolab's" and str(foreign) not in proc.stdout
    assert not list(run.glob("*.pt"))  # --keep none: records only

    proc = run_ppolab("runs", "slim", str(interrupted), "--unfinished")
    assert proc.returncode == 0 and not (interrupted / "last.pt").exists(), proc.stdout + proc.stderr
    analyzed = run_ppolab("analyze", str(interrupted))
    assert analyzed.returncode == 0 and "Run: interrupted" in analyzed.stdout, analyzed.stdout + analyzed.stderr


def test_slim_mistakes_are_one_line_and_exit_2(tmp_path):
    for args, needle in (
        (["runs", "slim", str(tmp_path / "nope")], "not a folder"),
        (["runs", "slim", str(tmp_path)], "no run folder ppolab made"),
        (["runs", "slim", str(tmp_path), "--keep", "checkpoints"], "--keep checkpoints: not one of"),
    ):
        proc = run_ppolab(*args)
        assert proc.returncode == 2 and needle in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
