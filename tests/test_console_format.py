"""The console output of `ppolab train` stays line-compatible with other PPO trainers' logs."""

from __future__ import annotations

import re

import pytest
from conftest import REPO

from ppolab.runner.console import TABLE_ROWS

ITER_BLOCK = [
    r"\*{10} Iteration (\d+) \*{12}",
    r"Sampling took \d+\.\d\ds for 100 steps\.",
    r"Optimizer took: \d+\.\d\ds",
    r"-{37}",
    r"\|      Mean Eprew \| +\S+ \|",
    r"\|      Mean Eplen \| +\S+ \|",
    r"\|      Actor loss \| +\S+ \|",
    r"\|     Critic loss \| +\S+ \|",
    r"\|     Mirror loss \| +0 \|",
    r"\|  Imitation loss \| +0 \|",
    r"\|     Mean KL Div \| +\S+ \|",
    r"\|    Mean Entropy \| +\S+ \|",
    r"\|   Clip Fraction \| +\S+ \|",
    r"\|  Mean noise std \| +\S+ \|",
    r"-{37}",
    r"Total time elapsed: \d+\.\d\ds\. Total steps: (\d+) \(fps=\d+\.\d\d\. iter-avg=\d+\.\d\ds\. ETA=\d+:\d\d:\d\d\)",
]
EVAL_BLOCK = [
    r"====EVALUATE EPISODE====",
    r"\(Episode length:\d+\.\d{3}\. Reward:-?\d+\.\d{3}\. Time taken:\d+\.\d\ds\)",
]


def test_header_names_versions_config_and_run_folder(trained_run):
    out = (trained_run / "stdout.txt").read_text()
    for needle in (
        "MuJoCo version: ",
        "PyTorch version: ",
        "Platform: ",
        "CPU count: ",
        "Environment: cartpole",
        f"Log directory: {trained_run.resolve()}",
        "Seed: 3",
        "Batch size: 100",
        "Normalization initialized with 100 samples",  # one batch: ppolab's warm-up without --input-norm-steps
    ):
        assert needle in out


def test_every_iteration_prints_the_table_block_line_by_line(trained_run):
    lines = (trained_run / "stdout.txt").read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("**********")]
    assert len(starts) == 4
    for n, start in enumerate(starts):
        block = lines[start : start + len(ITER_BLOCK)]
        for pattern, line in zip(ITER_BLOCK, block):
            assert re.fullmatch(pattern, line), (pattern, line)
        assert re.fullmatch(ITER_BLOCK[0], block[0]).group(1) == str(n)
        assert re.fullmatch(ITER_BLOCK[-1], block[-1]).group(1) == str(100 * (n + 1))


def test_evaluations_follow_iterations_0_every_eval_freq_and_the_last(trained_run):
    lines = (trained_run / "stdout.txt").read_text().splitlines()
    evals = [i for i, line in enumerate(lines) if line == "====EVALUATE EPISODE===="]
    assert len(evals) == 3
    for i in evals:
        assert re.fullmatch(EVAL_BLOCK[1], lines[i + 1])
    iteration_of = []
    for i in evals:
        heads = [j for j in range(i) if lines[j].startswith("**********")]
        iteration_of.append(int(re.fullmatch(ITER_BLOCK[0], lines[heads[-1]]).group(1)))
    assert iteration_of == [0, 2, 3]


def test_last_line_summarises_the_run(trained_run):
    last = (trained_run / "stdout.txt").read_text().splitlines()[-1]
    m = re.fullmatch(
        r"Training finished\. Total time: \d+\.\d\ds\. Total steps: 400\. Average fps: \d+\.\d\d\. "
        r"Best eval reward: -?\d+\.\d{3} at iteration (\d)\.",
        last,
    )
    assert m and m.group(1) in {"0", "2", "3"}


def test_console_log_is_also_saved_in_the_run_folder(trained_run):
    saved = (trained_run / "train.log").read_text()
    assert saved == (trained_run / "stdout.txt").read_text()


def test_entropy_is_printed_as_the_entropy_itself(trained_run):
    # one action dim: entropy = 0.5 * log(2 pi e) + log(std), negative for a small std, not its negation
    import math

    lines = (trained_run / "stdout.txt").read_text().splitlines()
    entropy = float(next(line for line in lines if "Mean Entropy" in line).split("|")[2])
    std = float(next(line for line in lines if "Mean noise std" in line).split("|")[2])
    assert entropy < 0
    assert abs(entropy - (0.5 * math.log(2 * math.pi * math.e) + math.log(std))) < 0.01


def test_table_labels_are_those_of_the_reference_trainer():
    ref = REPO.parent / "shared" / "reference" / "lhw-cartpole-2workers-seed1.log"
    if not ref.exists():
        pytest.skip(f"{ref} is not beside the repository")
    ref_labels = {line.split("|")[1].strip() for line in ref.read_text().splitlines() if line.startswith("|")}
    ours = {label for label, _ in TABLE_ROWS}
    assert ours <= ref_labels, ours - ref_labels
