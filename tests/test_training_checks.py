"""Behaviour checks as a training metric: `ppolab train --check-every N [--stop-on-pass]`."""

from __future__ import annotations

import re

from conftest import REPO, only_run_dir, read_metrics, run_ppolab, without_timings

SMALL = ["--num-procs", "2", "--max-traj-len", "40", "--minibatch-size", "40", "--eval-freq", "100",
         "--eval-episodes", "1"]  # fmt: skip


def test_checks_are_recorded_each_round_and_leave_the_training_itself_unchanged(tmp_path):
    """A fresh jvrc_walk policy falls: each round stops at its first check (walk), the later ones are not run.
    The training's own records are those of the same run without checks (the checks have their own stream)."""
    common = ["train", "--env", "jvrc_walk", *SMALL, "--n-itr", "2", "--seed", "3"]
    checked = run_ppolab(*common, "--check-every", "1", "--logdir", str(tmp_path / "checked"))
    plain = run_ppolab(*common, "--logdir", str(tmp_path / "plain"))
    assert checked.returncode == 0 and plain.returncode == 0, checked.stderr + plain.stderr
    recs = read_metrics(only_run_dir(tmp_path / "checked"))
    rounds = [r for r in recs if r["type"] == "check"]
    assert [r["iteration"] for r in rounds] == [0, 1]
    for r in rounds:
        assert r["passed"] == 0 and r["walk.passed"] == 0 and "stand.passed" not in r, r
        assert r["seconds"] > 0 and 0 < r["check_share"] < 1 and r["total_steps"] > 0, r
    trained = [r for r in recs if r["type"] != "check"]
    assert without_timings(trained) == without_timings(read_metrics(only_run_dir(tmp_path / "plain")))
    assert "Checks at iteration 1" in checked.stdout
    assert re.search(r"walk FAILED \(\d of 8 fell; covered -?\d+% of the distance \(needs 80%\).*\), stand not run",
                     checked.stdout), checked.stdout  # fmt: skip

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(only_run_dir(tmp_path / "checked")))
    acc.Reload()
    assert [e.value for e in acc.Scalars("checks/passed")] == [0.0, 0.0]
    assert "checks/walk.distance_share" in acc.Tags()["scalars"]


def test_stop_on_pass_ends_the_run_at_its_first_passing_round_and_keeps_that_policy(tmp_path):
    """The shipped h1 (its check: standing 10 s under pushes), fine-tuned at a negligible learning rate on its own
    env, passes at the first round."""
    shipped = REPO / "pretrained" / "h1"
    proc = run_ppolab(
        "train", "--env", "h1", *SMALL, "--n-itr", "6", "--seed", "1", "--lr", "1e-9", "--check-every", "2",
        "--stop-on-pass", "--continued", str(shipped), "--yaml", str(shipped / "env.yaml"),
        "--logdir", str(tmp_path), timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = only_run_dir(tmp_path)
    recs = read_metrics(run)
    assert max(r["iteration"] for r in recs if r["type"] == "iteration") == 1  # stopped after the round at 1
    (check,) = [r for r in recs if r["type"] == "check"]
    assert check["passed"] == 1 and check["push.passed"] == 1 and check["push.still_up"] == 8
    assert "Stopping at iteration 1: every check passed" in proc.stdout
    assert (run / "actor_1.pt").is_file()  # the policy that passed, to play or ship


def test_check_flags_that_cannot_work_are_refused_in_one_line(tmp_path):
    for args, says in (
        (["--env", "jvrc_walk", "--stop-on-pass"], "--stop-on-pass needs --check-every"),
        (["--env", "cartpole", "--check-every", "10"], "cartpole's task declares no behaviour checks"),
    ):
        proc = run_ppolab("train", *args, "--logdir", str(tmp_path))
        assert proc.returncode == 2 and says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not any(tmp_path.iterdir())


def test_a_sweep_shows_each_run_s_latest_checks_in_a_few_words():
    from ppolab.experiments.display import check_label
    from ppolab.util.run_folder import Records

    def check(itr, passed, **figures):
        return {"type": "check", "iteration": itr, "passed": passed, "total_steps": 1, "total_time": 1.0, **figures}

    assert check_label(Records()) is None  # not checked: no column
    failing = Records(checks=[check(49, 0, **{"walk.passed": 1, "stand.passed": 0, "straight.speeds.0.passed": 0})])
    assert check_label(failing) == "stand fails (at 49)"
    failing.checks += [check(99, 1), check(149, 0, **{"walk.passed": 0})]
    assert check_label(failing) == "passed at 99"  # the first pass is the run's time to pass


def test_a_gated_round_stops_a_falling_policy_at_its_first_fall_and_agrees_with_the_full_check():
    from ppolab.envs import make_env
    from ppolab.evaluation import behaviour
    from ppolab.ppo.policy import Actor, ObsNormalizer, sampling_params

    probe = make_env("jvrc_walk", 1)
    actor = Actor(ObsNormalizer(probe.obs_dim), probe.obs_dim, probe.act_dim, [64, 64], 0.223, False)
    subject = behaviour.Subject("jvrc_walk", None, sampling_params(actor))  # a fresh policy, in memory
    gated = behaviour.checks("jvrc_walk", subject, gate=True)
    assert list(gated) == ["walk"] and not behaviour.all_passed("jvrc_walk", gated)
    assert 0 < gated["walk"]["stopped_at_s"] < 10.0  # the round ended at the first fall
    full = behaviour.walk(subject)
    assert not full["passed"] and "stopped_at_s" not in full and full["still_up"] < 8
