"""Flags from CleanRL, SB3/rl-zoo3, LearningHumanoidWalking, Playground and rsl_rl/mjlab lead to ppolab's own,
by meaning, never to a neighbour by spelling; the docs' table is the same table."""

from __future__ import annotations

import re

import pytest
from conftest import REPO, run_ppolab

from ppolab.cli.habits import HABITS
from ppolab.cli.main import make_parser


@pytest.mark.parametrize(
    ("flag", "says"),
    [
        ("--learning-rate", "--learning-rate (CleanRL, SB3, rl-zoo3, Playground): in ppolab, --lr"),
        ("--num-steps", "--steps-per-env N"),
        ("--total-timesteps", "--n-itr N (iterations, not steps: the batch is --num-procs x --num-envs-per-worker"),
        ("--num-envs", "--num-procs N (rollout workers) x --num-envs-per-worker M (envs each): N x M envs in all"),
        ("--target-kl", "--schedule adaptive --desired-kl X"),
    ],
)
def test_another_tools_flag_is_one_line_naming_ppolabs(flag, says):
    proc = run_ppolab("train", "--env", "cartpole", flag, "1")
    assert proc.returncode == 2 and says in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert "did you mean" not in proc.stderr and "docs/cli.md" in proc.stderr


def test_every_flag_a_row_names_is_a_real_train_flag_and_no_row_shadows_one():
    train = make_parser()._subparsers._group_actions[0].choices["train"]
    flags = {s for a in train._actions for s in a.option_strings}
    for habit in HABITS:
        assert habit.flag not in flags, f"{habit.flag} is ppolab's own flag: no row needed"
        for named in re.findall(r"--[a-z][a-z-]*[a-z]", habit.ppolab):
            assert named in flags or named in ("--video",), f"{habit.flag}'s row names {named}, not a train flag"
    assert len({h.flag for h in HABITS}) == len(HABITS)


def test_the_docs_table_is_the_hints_table():
    page = (REPO / "docs" / "cli.md").read_text()
    for habit in HABITS:
        assert f"| `{habit.flag}` | {habit.tools} |" in page
