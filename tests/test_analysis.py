"""`ppolab analyze`: real-world logs (the reference trainer's, cut and noisy variants), ppolab's own runs, a NaN run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import TINY, only_run_dir, read_metrics, run_ppolab

from ppolab.analysis.parse import load_run, parse_log
from ppolab.analysis.summary import summarize

DATA = Path(__file__).parent / "data"
REFERENCE = DATA / "lhw-cartpole-2workers-seed1.log"
ANALYZE_KEYS = {
    "iterations",
    "total_steps",
    "total_time_s",
    "fps",
    "final_mean_reward",
    "peak_eval_reward",
    "peak_eval_iteration",
    "evals",
    "stable",
    "anomalies",
}


def test_reference_log_of_another_trainer():
    rec = load_run(REFERENCE)
    assert len(rec.iterations) == 500 and rec.incomplete == 0
    first = rec.iterations[0]
    assert first["mean_eprew"] == 178.48 and first["critic_loss"] == 26.5 and first["imitation_loss"] == 0
    assert first["entropy"] == 0.484  # read as printed (that trainer prints the negative entropy)
    assert (first["sample_time"], first["optimizer_time"], first["steps"]) == (0.21, 0.07, 1000)
    # evaluation blocks come after the iteration they belong to (their checkpoint is actor_<itr>.pt)
    assert [e["iteration"] for e in rec.evals] == [0, 99, 199, 299, 399, 499]
    s = summarize(rec)
    assert (s.peak_eval_reward, s.peak_eval_iteration) == (218.3, 99)
    assert s.total_time_s == 125.37 and s.total_steps == 500000  # no final line: the last Total time elapsed
    assert abs(s.fps - 3988.2) < 1
    assert {a["rule"] for a in s.anomalies} == {"kl_high", "clip_high"}


def test_log_cut_off_by_a_crash_keeps_every_complete_iteration():
    text = REFERENCE.read_text()
    cut = text.index("|     Critic loss |", text.index("********** Iteration 250 ************"))
    rec = parse_log(text[:cut])
    assert [r["iteration"] for r in rec.iterations] == list(range(250))
    assert rec.incomplete == 1


def test_noisy_log_colours_worker_lines_warnings_and_nan_rows():
    lines = REFERENCE.read_text().splitlines()
    noisy = []
    for line in lines:
        if line.startswith("|     Critic loss"):
            noisy.append("\x1b[36m(RolloutWorker pid=4242)\x1b[0m UserWarning: something odd happened")
        if line.startswith("|      Mean Eprew") and len(noisy) % 7 == 0:
            line = "|      Mean Eprew |             nan |"
        if line.startswith("|"):
            line = f"\x1b[32m{line}\x1b[0m"
        noisy.append(line)
    noisy.insert(100, "/site-packages/glfw/__init__.py:917: GLFWError: (65550) b'X11: DISPLAY missing'")
    rec = parse_log("\n".join(noisy))
    assert len(rec.iterations) == 500
    assert any(math.isnan(r["mean_eprew"]) for r in rec.iterations)
    s = summarize(rec)
    assert s.final_mean_reward is not None and math.isfinite(s.final_mean_reward)
    assert "nan_inf" not in {a["rule"] for a in s.anomalies}  # nan reward = no finished episode, not a fault


def test_ppolab_console_log_parses_to_the_same_numbers_as_its_metrics(trained_run):
    from_log = parse_log((trained_run / "train.log").read_text())
    from_jsonl = [r for r in read_metrics(trained_run) if r["type"] == "iteration"]
    assert [r["iteration"] for r in from_log.iterations] == [r["iteration"] for r in from_jsonl]
    for a, b in zip(from_log.iterations, from_jsonl):
        assert a["critic_loss"] == pytest.approx(b["critic_loss"], rel=5e-3)
        assert a["mean_eprew"] == pytest.approx(b["mean_eprew"], abs=0.01)
    assert [e["iteration"] for e in from_log.evals] == [0, 2, 3]
    assert from_log.final_time is not None


def test_analyze_json_for_a_run_folder_and_a_log_file(trained_run, tmp_path):
    proc = run_ppolab("analyze", str(trained_run), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert ANALYZE_KEYS <= set(data) and data["iterations"] == 4
    assert [e["iteration"] for e in data["evals"]] == [0, 2, 3]
    log_copy = tmp_path / "stdout.log"
    log_copy.write_text((trained_run / "train.log").read_text())
    from_log = json.loads(run_ppolab("analyze", str(log_copy), "--json").stdout)
    assert from_log["iterations"] == 4 and from_log["peak_eval_iteration"] == data["peak_eval_iteration"]


def test_a_run_driven_to_nan_is_flagged(tmp_path):
    logs = tmp_path / "logs"
    proc = run_ppolab(  # in tmp_path: MuJoCo's own warnings (nan controls) must not land in the user's folder
        "train",
        *TINY,
        "--n-itr",
        "4",
        "--lr",
        "1e6",
        "--learn-std",
        "--seed",
        "1",
        "--logdir",
        str(logs),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists() and "Nan, Inf" not in proc.stderr
    out = run_ppolab("analyze", str(only_run_dir(logs)), "--json")
    data = json.loads(out.stdout)
    assert data["stable"] is False
    nan = next(a for a in data["anomalies"] if a["rule"] == "nan_inf")
    assert nan["first_iteration"] <= 1


def test_thresholds_from_a_config_file_then_flags(tmp_path):
    config = tmp_path / "thresholds.yaml"
    config.write_text("kl: 1.0\nclip_fraction: 0.9\n")
    data = json.loads(run_ppolab("analyze", str(REFERENCE), "--json", "--config", str(config)).stdout)
    assert data["stable"] is True
    data = json.loads(run_ppolab("analyze", str(REFERENCE), "--json", "--config", str(config), "--kl", "0.05").stdout)
    assert [a["rule"] for a in data["anomalies"]] == ["kl_high"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--kl", "-1"], "--kl: Input should be greater than 0"),
        (["--config", "{cfg}"], "--config: {cfg}: kll: Extra inputs are not permitted; valid keys: critic_loss"),
        ([], None),
    ],
)
def test_bad_thresholds_are_one_line_exit_2(tmp_path, args, message):
    cfg = tmp_path / "t.yaml"
    cfg.write_text("kll: 0.1\n")
    args = [a.replace("{cfg}", str(cfg)) for a in args]
    proc = run_ppolab("analyze", str(REFERENCE), *args)
    if message is None:
        assert proc.returncode == 0
        return
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert message.replace("{cfg}", str(cfg)) in proc.stderr
