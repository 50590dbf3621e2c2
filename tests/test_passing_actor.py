"""The policy that passed is the one a user gets: with --check-every, actor.pt is the latest actor that passed
every check (before any pass, the best by evaluation), the run says which, and eval and export say which file
and iteration they use on their first line."""

from __future__ import annotations

from conftest import REPO, only_run_dir, run_ppolab

from ppolab.ppo import checkpoint as ckpt


def test_actor_pt_is_the_latest_actor_that_passed_and_eval_says_so(tmp_path):
    logdir = tmp_path / "runs"
    shipped = REPO / "pretrained" / "jvrc_walk"  # a walker that passes, on the task it was trained on
    proc = run_ppolab("train", "--env", "jvrc_walk", "--continued", str(shipped), "--yaml", str(shipped / "env.yaml"),
                      "--n-itr", "2", "--check-every", "2", "--eval-freq", "1", "--num-procs", "1",
                      "--max-traj-len", "40", "--minibatch-size", "40", "--std-dev", "0.05", "--lr", "1e-6",
                      "--logdir", str(logdir), "--seed", "3", timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    run = only_run_dir(logdir)
    assert proc.stdout.count("PASSED") == 1, proc.stdout[-3000:]  # the shipped walker passes, a tiny lr keeps it
    meta = ckpt.load(run / "actor.pt")["meta"]
    assert meta["iteration"] == 1 and meta["chosen_by"] == "the latest actor that passed every check"
    assert "actor.pt is now iteration 1's actor: the latest that passed every check" in proc.stdout
    assert "actor.pt: iteration 1's actor, the latest that passed every check" in proc.stdout
    for args in (["eval", str(run), "--episodes", "1", "--max-steps", "5"],
                 ["export", str(run), "--onnx", str(tmp_path / "p.onnx")]):  # fmt: skip
        shown = run_ppolab(*args)
        assert shown.returncode == 0, shown.stderr
        first = shown.stdout.splitlines()[0]
        assert first == (f"Policy: {run / 'actor.pt'}, iteration 1 (env jvrc_walk; actor.pt is the latest actor "
                         "that passed every check)"), first  # fmt: skip


def test_without_checks_actor_pt_is_the_best_evaluation_and_says_so(trained_run):
    meta = ckpt.load(trained_run / "actor.pt")["meta"]
    assert meta["chosen_by"].startswith("the best evaluation reward so far")
    stdout = (trained_run / "stdout.txt").read_text()
    assert f"actor.pt: iteration {meta['iteration']}'s actor, the best evaluation reward" in stdout
    assert "no actor passed every check" not in stdout  # no checks were asked for
