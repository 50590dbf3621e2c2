"""Learning from an expert (`ppolab train --imitate EXPERT --imitate-coeff X`, LearningHumanoidWalking's).

The expert is a trained actor, fixed. Each iteration it is run (its mean action, in numpy, as the rollout
workers run policies) on the student's own states, as the student's env shows them to it
(`envs/imitation.py`), once for the whole batch; the loss (`loss.imitation_loss`) then pulls the student's
mean towards those actions on the samples and action entries that count. Everything a mismatch could break
is checked before training starts, in one line each.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ppolab.envs import make_env
from ppolab.envs.imitation import ExpertView, NoExpertView
from ppolab.envs.robot_task import RobotTask
from ppolab.errors import UserError
from ppolab.ppo import checkpoint as ckpt
from ppolab.ppo.checkpoint import load_actor
from ppolab.ppo.policy import sampling_params
from ppolab.ppo.sampling_policy import SamplingPolicy


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Expert:
    """An expert policy and how it sees the student's states."""

    path: Path  # its actor file
    checksum: str
    env: str
    view: ExpertView
    policy: SamplingPolicy
    act_dim: int

    @classmethod
    def load(cls, given: str, student: object, student_env: str) -> Expert:
        """The expert at `given` (a run folder or actor .pt) for a student on `student` (a one-env batch)."""
        try:
            path = ckpt.find_actor(Path(given))
            actor, meta = load_actor(path)
        except UserError as exc:
            raise UserError(f"--imitate: {exc}") from None
        if meta.get("recurrent"):
            raise UserError(f"--imitate {given}: an LSTM expert cannot be asked about single states; give an MLP one")
        if not isinstance(student, RobotTask):
            raise UserError(f"--imitate: {student_env} cannot show its states to an expert (tasks on a robot file can)")
        expert_env = make_env(meta["env"], 1, meta.get("env_config"))
        if meta["obs_dim"] != expert_env.obs_dim or meta["act_dim"] != expert_env.act_dim:
            raise UserError(f"--imitate {given}: its network ({meta['obs_dim']} inputs) no longer fits its env "
                            f"{meta['env']} ({expert_env.obs_dim}); retrain or re-ship it")  # fmt: skip
        try:
            view = student.expert_view(expert_env)
        except NoExpertView as exc:
            raise UserError(f"--imitate {given}: trained on {meta['env']}: {exc}; give an expert of the same robot, "
                            f"such as its walking policy") from None  # fmt: skip
        return cls(path, sha256(path), meta["env"], view, SamplingPolicy(sampling_params(actor)), student.act_dim)

    def targets(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The expert's mean actions on a batch of the student's raw observations, and their weights (1 where a
        sample's action entry counts, else 0)."""
        actions = np.asarray(self.policy(self.view.expert_obs(obs)), np.float32)
        return actions, self.view.weights(obs, self.act_dim)

    def check_unchanged(self, recorded: str | None) -> None:
        """A resume refuses an expert whose file changed since the run started (its SHA-256 recorded then)."""
        if recorded is not None and recorded != self.checksum:
            raise UserError(f"--imitate {self.path}: the expert changed since this run started (its SHA-256 differs "
                            "from config.yaml's imitate_sha256); restore it, or start a new run")  # fmt: skip
