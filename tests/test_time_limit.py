"""`ppolab train --time-limit MINUTES`: a budget in wall time, which a resumed run may raise."""

from __future__ import annotations

from conftest import only_run_dir, read_metrics, run_ppolab

SMALL = ["--num-procs", "2", "--max-traj-len", "50", "--minibatch-size", "50", "--eval-freq", "1000"]


def _iterations(run) -> list[dict]:
    return [r for r in read_metrics(run) if r["type"] == "iteration"]


def test_a_run_ends_when_its_time_is_up_and_a_resume_may_give_it_more(tmp_path):
    limit = 0.03  # minutes: 1.8 s of training, a few dozen cartpole iterations here, far fewer than --n-itr
    proc = run_ppolab("train", "--env", "cartpole", *SMALL, "--n-itr", "100000", "--seed", "1",
                      "--time-limit", str(limit), "--logdir", str(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = only_run_dir(tmp_path)
    first = _iterations(run)
    last = first[-1]["iteration"]
    assert 0 < last < 100000
    assert f"Stopping at iteration {last}: its time limit of {limit:g} min is reached" in proc.stdout
    assert first[-2]["total_time"] < 60 * limit  # it went on while there was time left
    assert "Continue it with" not in proc.stdout  # it ended as planned, not interrupted

    more = run_ppolab("train", "--resume", str(run), "--time-limit", str(2 * limit))
    assert more.returncode == 0, more.stderr
    after = _iterations(run)
    assert after[-1]["iteration"] > last and after[-2]["total_time"] < 120 * limit
    assert f"its time limit of {2 * limit:g} min is reached" in more.stdout


def test_the_time_left_is_whichever_budget_ends_the_run_first():
    from ppolab.experiments.display import sweep_line
    from ppolab.runner.config import seconds_left
    from ppolab.util.run_state import RunState

    assert seconds_left(2.0, 10, 100, 20.0, None) == 180.0  # 90 iterations at 2 s
    assert seconds_left(2.0, 10, 100, 20.0, 1.0) == 40.0  # the minute ends first
    assert seconds_left(2.0, 10, 100, 70.0, 1.0) == 0.0  # past it (the run stops at its next iteration)
    running = {"state": RunState.RUNNING, "iteration": 10, "elapsed_s": 20.0, "s_per_iteration": 2.0}
    pending = {"state": RunState.PENDING, "iteration": 0, "elapsed_s": None}
    rows = [{**row, "n_itr": 100, "time_limit": 1.0} for row in (running, pending)]
    assert sweep_line(rows) == "Sweep: 0/2 runs done, ETA 0:01:40"  # 40 s, then 60 s: not 190 iterations at 2 s


def test_a_run_with_a_time_limit_shows_its_progress_in_minutes():
    from ppolab.experiments.display import progress
    from ppolab.experiments.live import run_line

    row = {"run": 1, "name": "a-s1", "iteration": 10, "n_itr": 100_000, "time_limit": 1.0, "elapsed_s": 30.0,
           "latest_reward": 1.0, "eta_s": 30.0}  # fmt: skip
    assert progress(row) == 0.5 and "iteration 10, 0:00:30 of 1 min (50%)" in run_line(row, 2)
    assert "iteration 10/12 (83%)" in run_line({**row, "n_itr": 12}, 2)  # the iterations end it first
    assert progress({**row, "time_limit": None}) == 10 / 100_000
    assert "(29%)" in run_line({**row, "time_limit": None, "iteration": 29, "n_itr": 100}, 2)
