"""What an expert policy sees of a student's states (`ppolab train --imitate EXPERT`).

The student's env declares it, because only the env knows its observation's layout: for each batch of
the student's observations, the expert's observations, which samples count, and which action entries are
compared. A task on a robot file answers for experts of the same robot (`RobotTask.expert_view`): the
entries both observe (the robot state, the gait clock) are copied by name; an entry only the expert
observes (a walker's mode and command) is filled with the command that matches the student's task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


class NoExpertView(ValueError):
    """The student's env cannot show its states to this expert (another robot, or no shared layout)."""


@dataclass(frozen=True)
class ExpertView:
    """How a batch of the student's observations becomes the expert's: `copies` (student slice, expert slice)
    pairs over `template` (the expert's observation with its fixed entries), the samples that count (`mask`,
    from the student's observation; None: all), and the action entries compared."""

    template: np.ndarray
    copies: tuple[tuple[slice, slice], ...]
    actions: np.ndarray
    mask: Callable[[np.ndarray], np.ndarray] | None = None

    def expert_obs(self, obs: np.ndarray) -> np.ndarray:
        out = np.broadcast_to(self.template, (obs.shape[0], self.template.size)).copy()
        for student, expert in self.copies:
            out[:, expert] = obs[:, student]
        return out

    def weights(self, obs: np.ndarray, act_dim: int) -> np.ndarray:
        """(rows, act_dim) of 1 where a sample and an action entry count, else 0."""
        rows = np.ones(obs.shape[0], bool) if self.mask is None else self.mask(obs)
        cols = np.zeros(act_dim, bool)
        cols[self.actions] = True
        return (rows[:, None] & cols[None, :]).astype(np.float32)


def shared_view(student: dict[str, slice], expert: dict[str, slice], fill: dict[str, np.ndarray], act_dim: int,
                mask: Callable[[np.ndarray], np.ndarray] | None = None) -> ExpertView:  # fmt: skip
    """Copy every entry both layouts name (of equal size); `fill` gives each expert-only entry's value."""
    dim = max(s.stop for s in expert.values())
    template = np.zeros(dim, np.float32)
    copies = []
    for name, where in expert.items():
        if name in student and student[name].stop - student[name].start == where.stop - where.start:
            copies.append((student[name], where))
        elif name in fill:
            template[where] = fill[name]
        else:
            raise NoExpertView(f"the expert observes '{name}', which the student's env neither has nor can fill")
    return ExpertView(template, tuple(copies), np.arange(act_dim), mask)
