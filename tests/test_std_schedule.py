"""The fixed action std's schedule: constant (LHW's), or shrinking linearly to --std-final."""

from __future__ import annotations

import pytest
from conftest import TINY, only_run_dir, read_metrics, run_ppolab, without_timings

from ppolab.ppo.std_schedule import std_at

FIXED = [*TINY, "--learn-std=false", "--seed", "5"]  # cartpole's preset learns its std


def test_the_std_goes_linearly_to_its_final_value_and_stays():
    assert std_at(7, 0.2, None, 10) == 0.2
    assert [std_at(i, 0.2, 0.05, 2) for i in range(4)] == pytest.approx([0.2, 0.125, 0.05, 0.05])
    assert std_at(5, 0.1, 0.3, 10) == pytest.approx(0.2)  # it may grow too


@pytest.mark.parametrize("update", ["fused", "exact"])
def test_a_run_samples_and_updates_at_the_scheduled_std_and_resumes_on_it(tmp_path, update):
    """Each iteration's update reports the std it ran at (both kernels read the actor's own tensor); a run
    resumed half way continues the schedule from its iteration: the same metrics as one run through."""
    args = [*FIXED, "--std-dev", "0.2", "--std-final", "0.05", "--std-decay-itr", "4", "--update", update]
    full = run_ppolab("train", *args, "--n-itr", "5", "--logdir", str(tmp_path / "full"))
    assert full.returncode == 0, full.stderr
    stds = [r["noise_std"] for r in read_metrics(only_run_dir(tmp_path / "full")) if r["type"] == "iteration"]
    assert stds == pytest.approx([0.2, 0.1625, 0.125, 0.0875, 0.05])
    if update == "exact":
        return  # the resume is the trainer's, the same for both kernels: once is enough
    part = run_ppolab("train", *args, "--n-itr", "3", "--logdir", str(tmp_path / "part"))
    assert part.returncode == 0, part.stderr
    resumed = run_ppolab("train", "--resume", str(only_run_dir(tmp_path / "part")), "--n-itr", "5")  # from 3: mid-way
    assert resumed.returncode == 0, resumed.stderr
    same = [without_timings(read_metrics(only_run_dir(tmp_path / d))) for d in ("full", "part")]
    assert same[0] == same[1]


def test_a_schedule_of_a_learned_std_is_one_line_naming_the_flag(tmp_path):
    proc = run_ppolab("train", *TINY, "--std-final", "0.05", "--n-itr", "1", "--logdir", str(tmp_path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--std-final" in lines[0] and "--learn-std" in lines[0], proc.stderr
    assert not any(tmp_path.iterdir())
