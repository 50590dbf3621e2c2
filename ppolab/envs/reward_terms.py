"""A task's reward as a table of named terms, composed in one place.

Each term has a name, a default weight, a kind and a scale, and a size: what it measures on the batch. An
"exp" term contributes weight x exp(-scale x size) (a kernel that is 1 when the size is 0, as LearningHumanoid-
Walking's terms); a "linear" term contributes weight x scale x size (a score the task computes itself, such as
the feet's clock scores). The reward is the sum of the contributions, and each term's contribution is kept
(`Rewards.terms`), so training logs one curve per term (`rewards/<term>` in metrics.jsonl and TensorBoard), as
rsl_rl, legged_gym and mjlab do.

A term's size is a numpy function of the task, or comes from the task's compiled kernel (`size=None`): the
kernel writes the sizes of the first terms of the table, in the table's order, and says which with its own
`SIZES` tuple, checked against the table when a task is built; tests/test_humanoid_envs.py checks each compiled
size against its definition. Adding a term is one entry here, with a numpy size: the weights' settings (the
task config's `rewards:`) are made from the table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, create_model

EXP, LINEAR = "exp", "linear"


@dataclass(frozen=True)
class Term:
    """One named reward term. `scale` is a number, or a function of the task (a scale from its config)."""

    name: str
    weight: float
    kind: str = EXP
    scale: float | Callable[[Any], float] = 1.0
    size: Callable[[Any], np.ndarray] | None = None  # (n,) from the task; None: the task's compiled kernel's
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in (EXP, LINEAR):
            raise ValueError(f"reward term {self.name!r}: kind {self.kind!r} is not {EXP!r} or {LINEAR!r}")


class RewardTable:
    """A task's terms, in the order they are computed and logged."""

    def __init__(self, *terms: Term) -> None:
        names = [t.name for t in terms]
        if len(set(names)) != len(names):
            raise ValueError(f"reward terms named twice: {sorted({n for n in names if names.count(n) > 1})}")
        self.terms = terms
        self.names = tuple(names)
        self.compiled = tuple(t.name for t in terms if t.size is None)
        if self.names[: len(self.compiled)] != self.compiled:
            raise ValueError("the compiled terms (size=None) come first in a reward table, in the kernel's order")

    def weights_model(self, name: str, doc: str) -> type[BaseModel]:
        """The task config's `rewards:` settings: one weight per term, the table's weights as defaults."""
        fields: dict[str, Any] = {t.name: (float, t.weight) for t in self.terms}
        model = create_model(name, __config__=ConfigDict(extra="forbid", allow_inf_nan=False), **fields)
        model.__doc__ = doc
        return model

    def bind(self, task: Any, weights: BaseModel, kernel_sizes: tuple[str, ...] = ()) -> Rewards:
        """The table on one task: its weights (from the config), scales, and the arrays a step writes into."""
        if kernel_sizes != self.compiled:
            raise ValueError(f"the compiled kernel computes {kernel_sizes}, the reward table expects {self.compiled}")
        return Rewards(self, task, weights)


class Rewards:
    """A reward table bound to one task. A step's reward is `compose()`: the compiled kernel's total over its
    columns (it writes `sizes`, `terms` and `out`), plus the numpy terms'. `terms` keeps each term's weighted
    contribution at the last step, which training averages into one figure per term and iteration."""

    def __init__(self, table: RewardTable, task: Any, weights: BaseModel) -> None:
        self.table, self.task, self.names = table, task, table.names
        n, k = task.num_envs, len(table.terms)
        self.weights = np.array([getattr(weights, t.name) for t in table.terms], dtype=np.float64)
        scales = np.array([t.scale(task) if callable(t.scale) else t.scale for t in table.terms], np.float64)
        self.linear = np.array([t.kind == LINEAR for t in table.terms])
        self.factor = np.where(self.linear, scales, -scales)  # linear: scale x size; exp: exp(-scale x size)
        self.sizes = np.zeros((n, k))  # each term's size at the last step
        self.terms = np.zeros((n, k))  # each term's weighted contribution at the last step
        self.out = np.zeros(n)  # a compiled kernel's total over its columns
        self._numpy = [(j, t.size) for j, t in enumerate(table.terms) if t.size is not None]
        cols = np.array([j for j, _ in self._numpy], dtype=np.int64)  # the numpy terms' columns, and their settings
        self._cols, self._lin = cols, self.linear[cols]
        self._factor, self._weights = self.factor[cols], self.weights[cols]

    def compose(self) -> np.ndarray:
        """(n,) the step's reward: the kernel's total (none without compiled terms) plus the numpy terms'."""
        total = self.out.copy() if self.table.compiled else np.zeros(len(self.out))
        if self._numpy:
            for j, size in self._numpy:
                self.sizes[:, j] = size(self.task)
            x = self.sizes[:, self._cols] * self._factor
            contrib = np.where(self._lin, x, np.exp(np.where(self._lin, 0.0, x))) * self._weights
            self.terms[:, self._cols] = contrib
            total += contrib.sum(axis=1)
        return total
