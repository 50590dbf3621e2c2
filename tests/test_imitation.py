"""Learning from an expert (--imitate, --imitate-coeff): the loss pulls the student to the expert, through
both update kernels; an expert that does not fit, or that changed under a run, is refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import REPO, only_run_dir, read_metrics, run_ppolab

from ppolab.envs import make_env
from ppolab.ppo.adam import FlatAdam
from ppolab.ppo.imitation import Expert
from ppolab.ppo.policy import sampling_params
from ppolab.ppo.rollout import Trajectories
from ppolab.ppo.sampling_policy import SamplingPolicy
from ppolab.ppo.storage import RolloutStorage
from ppolab.ppo.update import choose_update
from ppolab.runner.config import TrainConfig
from ppolab.runner.trainer import build_networks, hyper

WALKER = REPO / "pretrained" / "jvrc_walk"


def student_states(actor, steps: int = 60, envs: int = 4, cfg: dict | None = None) -> Trajectories:
    """A fresh jvrc_step student's own rollout (its states, raw), with no reward: only the imitation moves it."""
    env, policy = make_env("jvrc_step", envs, cfg), SamplingPolicy(sampling_params(actor))
    for i in range(envs):
        env.reset_one(i, np.random.default_rng(i))
    obs, acts = [], []
    for _ in range(steps):
        o = env.observe()
        a = policy(o)
        obs.append(o)
        acts.append(a)
        env.step(a)
    shape = (steps, envs)
    return Trajectories(obs=np.array(obs, np.float32), actions=np.array(acts, np.float32),
                        rewards=np.zeros(shape, np.float32), terminated=np.zeros(shape, bool),
                        ended=np.zeros(shape, bool), final_obs=np.zeros_like(np.array(obs, np.float32)),
                        ep_return=np.full(shape, np.nan), ep_length=np.full(shape, np.nan))  # fmt: skip


@pytest.mark.parametrize("update, coeff", [("fused", 1.0), ("exact", 1.0), ("fused", 0.0)])
def test_the_imitation_loss_pulls_the_student_to_the_expert_on_a_fixed_batch(update, coeff):
    """No reward: with the imitation's weight the student's actions near the expert's; without, they stay."""
    cfg = TrainConfig(env="jvrc_step", imitate_coeff=coeff, mirror=False, epochs=1, lr=1e-3, update=update)
    probe = make_env("jvrc_step", 1)
    expert = Expert.load(str(WALKER), probe, "jvrc_step")
    torch.manual_seed(0)
    actor, critic = build_networks(cfg, probe.obs_dim, probe.act_dim)
    traj = student_states(actor)
    actor.norm.update(traj.obs)
    flat_obs = traj.obs.reshape(-1, probe.obs_dim)
    targets, weights = expert.targets(flat_obs)
    assert weights.mean() > 0.5  # the samples with footstep targets count
    standing = student_states(actor, 20, 2, {"plan_probs": [0, 0, 0, 0, 1]}).obs.reshape(-1, probe.obs_dim)
    assert expert.targets(standing)[1].sum() == 0  # a standing plan's do not: its clock is held, not the walk's
    update = choose_update(actor, critic, FlatAdam(actor, critic, cfg.lr, cfg.eps), hyper(cfg), None)

    def distance() -> float:
        with torch.no_grad():
            mean, _ = actor.head(actor.norm(torch.from_numpy(flat_obs)))
        d = (mean.numpy() - targets) * weights
        return float((d * d).sum() / weights.sum())

    before, rng, losses = distance(), np.random.default_rng(0), []
    for _ in range(8):
        storage = RolloutStorage(traj, actor, critic, gamma=0.99, lam=0.95, recurrent=False,
                                 device=torch.device("cpu"), expert=(targets, weights))  # fmt: skip
        losses.append(update(storage, rng)["imitation_loss"])
    update.close()
    if coeff:
        assert distance() < 0.9 * before and losses[-1] < losses[0], (before, distance(), losses)
    else:
        assert distance() == pytest.approx(before, rel=0.01)


def test_imitating_through_lhw_s_command_line_records_the_expert_and_a_resume_refuses_a_changed_one(tmp_path):
    expert = tmp_path / "expert.pt"
    expert.write_bytes((WALKER / "actor.pt").read_bytes())
    small = ["--n-itr", "2", "--num-procs", "2", "--max-traj-len", "40", "--minibatch-size", "40", "--eval-freq", "100",
             "--eval-episodes", "1", "--seed", "1"]  # fmt: skip
    proc = run_ppolab("train", "--env", "jvrc_step", *small, "--imitate", str(expert), "--imitate-coeff", "0.5",
                      "--logdir", str(tmp_path / "runs"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"Imitating {expert} (trained on jvrc_walk; --imitate-coeff 0.5)" in proc.stdout
    assert "|  Imitation loss |" in proc.stdout  # LHW's row, where LHW prints it
    run = only_run_dir(tmp_path / "runs")
    assert all(r["imitation_loss"] > 0 for r in read_metrics(run) if r["type"] == "iteration")
    assert "imitate_sha256: " in (run / "config.yaml").read_text()
    expert.write_bytes(expert.read_bytes() + b"\0")  # the expert changed under the run
    resumed = run_ppolab("train", "--resume", str(run), "--n-itr", "3")
    assert resumed.returncode == 2 and "the expert changed since this run started" in resumed.stderr
    assert len(resumed.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args, says",
    [
        (["--env", "t1_walk", "--imitate", str(WALKER)], "its env is not one of robot t1's tasks"),
        (["--env", "cartpole", "--imitate", str(WALKER)], "cartpole cannot show its states to an expert"),
        (["--env", "jvrc_step", "--imitate", "no-such-run"], "--imitate: no-such-run: no such file"),
        (["--env", "jvrc_step", "--imitate", "."], "--imitate: actor.pt: no such file (is this a run folder"),
        (["--env", "jvrc_step", "--imitate", str(WALKER / "env.yaml")], "--imitate: " + str(WALKER / "env.yaml")),
        (["--env", "jvrc_step", "--imitate-coeff", "0.5"], "add --imitate PATH (a run folder or actor .pt)"),
    ],
)
def test_an_expert_that_does_not_fit_is_one_line_before_anything_is_made(tmp_path, args, says):
    proc = run_ppolab("train", *args, "--n-itr", "1", "--logdir", str(tmp_path / "runs"), cwd=tmp_path)
    assert proc.returncode == 2 and says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "runs").exists()
