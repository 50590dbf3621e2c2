"""Damaged files: every reader explains the damage in one line or works around it; nothing is lost silently."""

from __future__ import annotations

import json
import os
import stat

import pytest
from conftest import run_ppolab

from ppolab.analysis import synthetic

STATE_CASES = {
    "not json": b"{not json",
    "a list": b"[1, 2, 3]",
    "runs is a list": b'{"runs": []}',
    "entry is a number": b'{"runs": {"control-s1": 3}}',
    "unknown state": b'{"runs": {"control-s1": {"state": "weird", "run_dir": "runs/control-s1", "attempts": 0}}}',
    "run_dir escapes": b'{"runs": {"control-s1": {"state": "done", "run_dir": "../../x", "attempts": 1}}}',
    "attempts is text": b'{"runs": {"control-s1": {"state": "done", "run_dir": "runs/control-s1", "attempts": "1"}}}',
    "binary": bytes(range(256)),
}


def sweep(tmp_path):
    d = tmp_path / "experiments" / "sweeps" / "dmg"
    synthetic.write_sweep(
        d, {"control": {"lr": 1e-3}, "fast": {"lr": 3e-3}}, [1, 2], {"control": [300, 310], "fast": [320, 330]}
    )
    return d


@pytest.mark.parametrize("case", STATE_CASES)
def test_a_damaged_state_json_is_named_by_every_reader(tmp_path, case):
    from ppolab.errors import UserError
    from ppolab.experiments import display
    from ppolab.experiments.executors.local import run_sweep
    from ppolab.experiments.plan import load_plan
    from ppolab.experiments.report import run_states, write_report

    d = sweep(tmp_path)
    (d / "state.json").write_bytes(STATE_CASES[case])
    _, planned = load_plan(d)
    for reader in (lambda: display.status(d, planned), lambda: run_sweep(d, "dmg", planned, wait_for_lock=False)):
        with pytest.raises(UserError, match="move it aside"):  # --status and a relaunch say what is wrong
            reader()
    assert display.list_data(d.parent)[0]["state_error"]  # --list names it and goes on with other sweeps
    assert run_states(d) == {}  # compare and report judge by the run folders
    assert write_report(d).exists()


def test_a_damaged_state_json_through_the_cli_is_one_line(tmp_path):
    d = sweep(tmp_path)
    (d / "state.json").write_bytes(STATE_CASES["runs is a list"])
    proc = run_ppolab("sweep", str(d), "--status", "--json")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert f"{d / 'state.json'}: damaged (no 'runs' mapping)" in proc.stderr


METRICS_CASES = {
    "a json list line": b"[1, 2]\n",
    "a string line": b'"iteration"\n',
    "a wrong type": b'{"type": "iteration", "iteration": "x", "mean_eprew": 1}\n',
    "a text value": b'{"type": "iteration", "iteration": 3, "mean_eprew": "high"}\n',
    "non-utf8 bytes": b"\xff\xfe\xfd\n",
    "a torn line": b'{"type": "iteration", "itera',
    "an iteration without its fields": b'{"type": "iteration", "iteration": 100}\n',
    "an eval without its fields": b'{"type": "eval", "iteration": 100}\n',
}


@pytest.mark.parametrize("case", METRICS_CASES)
def test_damaged_metrics_lines_are_skipped_by_every_reader(tmp_path, case):
    from ppolab.analysis.compare import compare, load_runs
    from ppolab.analysis.parse import load_run
    from ppolab.analysis.summary import summarize
    from ppolab.experiments import display
    from ppolab.experiments.plan import load_plan
    from ppolab.experiments.report import write_report

    d = sweep(tmp_path)
    metrics = d / "runs" / "fast-s1" / "metrics.jsonl"
    metrics.write_bytes(metrics.read_bytes() + METRICS_CASES[case])
    summary = summarize(load_run(metrics.parent))
    assert summary.iterations == 100 and summary.incomplete_iterations == 1  # counted, not hidden
    _, planned = load_plan(d)
    assert display.status_data(d, planned)[2]["iteration"] == 100
    assert "fast-s1" in compare(load_runs([(p.name, d / "runs" / p.name) for p in planned], {}))
    assert write_report(d).exists()


def test_damaged_metrics_through_the_cli(tmp_path):
    d = sweep(tmp_path)
    metrics = d / "runs" / "fast-s1" / "metrics.jsonl"
    metrics.write_bytes(metrics.read_bytes() + METRICS_CASES["non-utf8 bytes"] + METRICS_CASES["a wrong type"])
    proc = run_ppolab("analyze", str(metrics.parent), "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["incomplete_iterations"] == 2


def test_an_unreadable_config_is_named(tmp_path):
    d = sweep(tmp_path)
    (d / "runs" / "fast-s2" / "config.yaml").write_bytes(b"lr: [unclosed\n")
    proc = run_ppolab("compare", str(d))
    assert proc.returncode == 2 and "fast-s2/config.yaml is not readable YAML" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


REPRO_CASES = {
    "command.txt unbalanced": ("command.txt", b'ppolab train --env "cartpole', "command.txt is damaged"),
    "command.txt binary": ("command.txt", bytes(range(256)), "command.txt is damaged"),
    "command.txt other tool": ("command.txt", b"python train.py", "command.txt is not a ppolab train command"),
    "config.yaml torn": ("config.yaml", b"seed: [3", "config.yaml is not readable YAML"),
    "config.yaml a list": ("config.yaml", b"- 3", "config.yaml is not a mapping"),
}


@pytest.mark.parametrize("case", sorted(REPRO_CASES))
def test_repro_names_a_damaged_file_in_one_line(tmp_path, case):
    name, data, says = REPRO_CASES[case]
    run = tmp_path / "r"
    run.mkdir()
    (run / "command.txt").write_text("ppolab train --env cartpole --seed 3\n")
    (run / "config.yaml").write_text("seed: 3\ndevice: cpu\n")
    (run / name).write_bytes(data)
    proc = run_ppolab("repro", str(run))
    assert proc.returncode == 2 and says in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_repro_with_a_damaged_run_json_still_gives_the_command(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    (run / "command.txt").write_text("ppolab train --env cartpole --seed 3\n")
    (run / "config.yaml").write_text("seed: 3\ndevice: cpu\n")
    (run / "run.json").write_text('{"system": 5, "git_commit"')
    proc = run_ppolab("repro", str(run))
    assert proc.returncode == 0, proc.stderr
    assert "Command: ppolab train --env cartpole --seed 3" in proc.stdout
    assert "run.json is missing or damaged" in proc.stdout


def test_files_honour_the_umask(tmp_path):
    d = sweep(tmp_path)
    old = os.umask(0o022)
    try:
        assert run_ppolab("report", str(d)).returncode == 0
    finally:
        os.umask(old)
    for path in (d / "results.md", tmp_path / "experiments" / "experiment-tracker.md"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path


def test_stale_temp_files_of_killed_writes_are_cleaned_and_others_kept(tmp_path):
    from ppolab.util.files import remove_stale_temps

    names = [".state.json.abc123.tmp", ".last.pt.x_y9.tmp", ".actor_40.pt.q1.tmp", ".notes.txt.k.tmp", "state.json"]
    for name in names:
        (tmp_path / name).write_text("x")
        os.utime(tmp_path / name, (1, 1))  # long ago
    (tmp_path / ".metrics.jsonl.new.tmp").write_text("x")  # a live writer's: too recent to touch
    assert remove_stale_temps(tmp_path) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [".metrics.jsonl.new.tmp", ".notes.txt.k.tmp", "state.json"]


def test_resume_repairs_a_torn_metrics_tail_and_survives_a_corrupt_last_pt(tmp_path):
    from conftest import TINY, read_metrics

    proc = run_ppolab("train", *TINY, "--n-itr", "4", "--seed", "2", "--logdir", str(tmp_path), "--run-name", "r")
    assert proc.returncode == 0, proc.stderr
    run = tmp_path / "r"
    lines = (run / "metrics.jsonl").read_text().splitlines()
    (run / "metrics.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:25])  # last.pt covers it
    resumed = run_ppolab("train", "--resume", str(run), "--n-itr", "5")
    assert resumed.returncode == 0 and "restored from last.pt" in resumed.stdout
    assert [r["iteration"] for r in read_metrics(run) if r["type"] == "iteration"] == [0, 1, 2, 3, 4]
    (run / "last.pt").write_bytes(b"not a checkpoint")
    again = run_ppolab("train", "--resume", str(run), "--n-itr", "6")
    assert again.returncode == 0 and "Traceback" not in again.stderr
    assert "last.pt is unreadable" in again.stdout and "resuming from actor_4.pt and critic_4.pt" in again.stdout
    assert [r["iteration"] for r in read_metrics(run) if r["type"] == "iteration"] == [0, 1, 2, 3, 4, 5]


@pytest.fixture
def small_disk(tmp_path):
    """A 1.5 MB tmpfs of the test's own (root only), unmounted after; skipped where mounting is impossible."""
    import subprocess

    mount = tmp_path / "disk"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1500k", "tmpfs", str(mount)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({proc.stderr.decode().strip() or 'not root'})")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_disk_stops_the_run_in_one_line_and_it_continues_after_space_is_freed(small_disk):
    import subprocess

    from conftest import TINY, read_metrics

    args = [*TINY, "--eval-freq", "1", "--n-itr", "3000", "--seed", "1", "--logdir", str(small_disk), "--run-name", "r"]
    full = run_ppolab("train", *args)
    assert full.returncode == 75, full.stderr
    assert full.stderr.strip().splitlines() == [full.stderr.strip()] and "Traceback" not in full.stderr
    assert "no space left on the disk of" in full.stderr and "free space and launch again" in full.stderr
    done = [r["iteration"] for r in read_metrics(small_disk / "r") if r["type"] == "iteration"]
    assert done and (small_disk / "r" / "last.pt").exists()
    grown = subprocess.run(["mount", "-o", "remount,size=60m", str(small_disk)], capture_output=True)
    assert grown.returncode == 0, grown.stderr
    resumed = run_ppolab("train", "--resume", str(small_disk / "r"), "--n-itr", str(done[-1] + 5))
    assert resumed.returncode == 0, resumed.stderr
    rows = [r["iteration"] for r in read_metrics(small_disk / "r") if r["type"] == "iteration"]
    assert rows == list(range(done[-1] + 5))  # nothing lost, nothing twice
