"""Flags from the tools ppolab's users come from (CleanRL, rl-zoo3 and Stable-Baselines3, LearningHumanoidWalking,
MuJoCo Playground and mjlab's rsl_rl), and what ppolab says instead.

One table: `ppolab train` answers an unknown flag from it (so `--learning-rate` leads to `--lr`, never to a
neighbour by spelling such as `--learn-std`), and the docs' command-line page lists it (cli/reference.py).
LearningHumanoidWalking's underscores (`--n_itr`) need no row: they are read as ppolab's dashes.
"""

from __future__ import annotations

from typing import NamedTuple


class Habit(NamedTuple):
    flag: str  # as the other tool spells it, with dashes
    tools: str
    ppolab: str  # what to write instead: a flag with how it relates, or why there is none


BATCH = "the batch is --num-procs x --num-envs-per-worker x --max-traj-len env steps an iteration"
HABITS = [
    Habit("--learning-rate", "CleanRL, SB3, rl-zoo3, Playground", "--lr"),
    Habit("--total-timesteps", "CleanRL", f"--n-itr N (iterations, not steps: {BATCH}), or --time-limit MINUTES"),
    Habit("--n-timesteps", "rl-zoo3", f"--n-itr N (iterations, not steps: {BATCH}), or --time-limit MINUTES"),
    Habit("--num-timesteps", "Playground", f"--n-itr N (iterations, not steps: {BATCH}), or --time-limit MINUTES"),
    Habit("--max-iterations", "rsl_rl, mjlab", "--n-itr (one iteration: one rollout and one update, as there)"),
    Habit(
        "--num-envs",
        "CleanRL, Playground, rsl_rl, mjlab",
        "--num-procs N (rollout workers) x --num-envs-per-worker M (envs each): N x M envs in all",
    ),
    Habit(
        "--num-steps",
        "CleanRL; LearningHumanoidWalking",
        "CleanRL's steps per env an iteration: --steps-per-env N; LearningHumanoidWalking's batch: " + BATCH,
    ),
    Habit("--num-steps-per-env", "rsl_rl, mjlab", "--steps-per-env"),
    Habit("--unroll-length", "Playground", "--steps-per-env"),
    Habit("--episode-length", "Playground", "--max-traj-len (control steps)"),
    Habit("--gae-lambda", "CleanRL, SB3", "--lam"),
    Habit("--discounting", "Playground", "--gamma"),
    Habit(
        "--num-minibatches",
        "CleanRL, Playground, rsl_rl",
        "--minibatch-size (samples a minibatch: the batch over the number of minibatches)",
    ),
    Habit("--batch-size", "SB3, rl-zoo3", "--minibatch-size (SB3's batch_size is the minibatch)"),
    Habit("--update-epochs", "CleanRL", "--epochs"),
    Habit("--n-epochs", "SB3, rl-zoo3", "--epochs"),
    Habit("--num-learning-epochs", "rsl_rl", "--epochs"),
    Habit("--num-updates-per-batch", "Playground", "--epochs"),
    Habit("--clip-coef", "CleanRL", "--clip"),
    Habit("--clip-range", "SB3", "--clip"),
    Habit("--clip-param", "rsl_rl", "--clip"),
    Habit("--ent-coef", "CleanRL, SB3", "--entropy-coeff"),
    Habit("--entropy-coef", "rsl_rl", "--entropy-coeff"),
    Habit("--entropy-cost", "Playground", "--entropy-coeff"),
    Habit("--vf-coef", "CleanRL, SB3", "none: the critic has an optimiser of its own, so no value-loss weight"),
    Habit("--value-loss-coef", "rsl_rl", "none: the critic has an optimiser of its own, so no value-loss weight"),
    Habit("--anneal-lr", "CleanRL", "--schedule adaptive (rsl_rl's KL rule) or fixed; no linear decay"),
    Habit("--target-kl", "CleanRL, SB3", "--schedule adaptive --desired-kl X (the rate follows the KL; no early stop)"),
    Habit("--env-id", "CleanRL", "--env"),
    Habit("--task", "mjlab", "--env"),
    Habit("--algo", "rl-zoo3", "drop it: ppolab trains PPO"),
    Habit("--tensorboard-log", "SB3, rl-zoo3", "--logdir (every run writes TensorBoard events in its folder)"),
    Habit("--log-folder", "rl-zoo3", "--logdir"),
    Habit("--hyperparams", "rl-zoo3", "train flags as they are, or a sweep file's defaults; env settings: --yaml FILE"),
    Habit("--capture-video", "CleanRL", "ppolab eval RUN --video FILE.mp4"),
    Habit("--torch-deterministic", "CleanRL", "drop it: a seed gives the same run on any core count, always"),
    Habit("--cuda", "CleanRL", "--device"),
    Habit("--normalize-observations", "Playground", "drop it: observations are always normalised"),
    Habit(
        "--anneal",
        "LearningHumanoidWalking",
        "drop it: the std is fixed (--std-dev), learned (--learn-std), or scheduled (--std-final, --std-decay-itr)",
    ),  # fmt: skip
    Habit("--use-gae", "LearningHumanoidWalking", "drop it: advantages always come from GAE (--lam)"),
]
BY_FLAG = {h.flag: h for h in HABITS}


def hint(flag: str) -> str | None:
    """One line for a flag another tool has: whose it is and what ppolab says instead (None: not one of theirs)."""
    habit = BY_FLAG.get(flag)
    return None if habit is None else f"{flag} ({habit.tools}): in ppolab, {habit.ppolab}"


def table() -> str:
    """The table for the docs' command-line page."""
    rows = [f"| `{h.flag}` | {h.tools} | {h.ppolab.replace('|', '/')} |" for h in HABITS]
    return "\n".join(["| flag | where it comes from | in ppolab |", "| --- | --- | --- |", *rows])
