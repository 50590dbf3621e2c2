"""The learning rate's schedule: fixed, or adapted to each update's KL (rsl_rl's rule, per iteration)."""

from __future__ import annotations

import pytest
from conftest import TINY, only_run_dir, read_metrics, run_ppolab, without_timings

from ppolab.ppo.lr_schedule import LR_MAX, LR_MIN, next_lr


def test_the_adaptive_rule_moves_by_one_and_a_half_within_its_bounds():
    assert next_lr("fixed", 3e-4, 1.0, 0.01) == 3e-4
    assert next_lr("adaptive", 3e-4, 0.03, 0.01) == pytest.approx(2e-4)  # above twice the target
    assert next_lr("adaptive", 3e-4, 0.004, 0.01) == pytest.approx(4.5e-4)  # below half of it
    assert next_lr("adaptive", 3e-4, 0.01, 0.01) == 3e-4  # near it: kept
    assert next_lr("adaptive", LR_MIN, 1.0, 0.01) == LR_MIN and next_lr("adaptive", LR_MAX, 1e-9, 0.01) == LR_MAX
    assert next_lr("adaptive", 3e-4, float("nan"), 0.01) == 3e-4


@pytest.mark.parametrize("update", ["fused", "exact"])
def test_an_adaptive_run_records_its_rates_and_resumes_with_them(tmp_path, update):
    """A target far below any update's KL: the rate falls by 1.5 after every iteration, in both kernels
    (the fused one's critic epochs in their second process too); a resumed run continues from the saved rate."""
    args = [*TINY, "--seed", "4", "--schedule", "adaptive", "--desired-kl", "1e-9", "--lr", "1e-3", "--update", update]
    full = run_ppolab("train", *args, "--n-itr", "4", "--logdir", str(tmp_path / "full"))
    assert full.returncode == 0, full.stderr
    rates = [r["lr"] for r in read_metrics(only_run_dir(tmp_path / "full")) if r["type"] == "iteration"]
    assert rates == pytest.approx([1e-3 / 1.5**i for i in range(4)])
    if update == "exact":
        return  # the resume is the trainer's, the same for both kernels: once is enough
    part = run_ppolab("train", *args, "--n-itr", "3", "--logdir", str(tmp_path / "part"))
    assert part.returncode == 0, part.stderr
    resumed = run_ppolab("train", "--resume", str(only_run_dir(tmp_path / "part")), "--n-itr", "4")
    assert resumed.returncode == 0, resumed.stderr
    same = [without_timings(read_metrics(only_run_dir(tmp_path / d))) for d in ("full", "part")]
    assert same[0] == same[1]
