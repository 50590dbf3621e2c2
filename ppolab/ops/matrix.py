"""Benchmark matrices: one base `train` command over envs × seeds, in seed-major order.

Seed-major (every env for seed 1, then every env for seed 2, ...) means a matrix
stopped half-way still has a complete first seed on every env to compare.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from ppolab.errors import UserError

FIXED_BY_MATRIX = ("--env", "--seed")


@dataclass(frozen=True)
class Matrix:
    base: list[str]  # the base command's tokens, up to and including `train`
    flags: list[str]  # its train flags
    env_ids: list[str]
    seeds: list[int]

    @classmethod
    def from_command(cls, command: str, env_ids: list[str], num_seeds: int, start_seed: int) -> Matrix:
        try:
            tokens = shlex.split(command)
        except ValueError as exc:
            raise UserError(f"--command: cannot split it into words ({exc})") from None
        if "train" not in tokens:
            raise UserError(f"--command: '{command}' is not a train command; start it with 'ppolab train'")
        cut = tokens.index("train") + 1
        for token in tokens[cut:]:
            name = token.split("=", 1)[0]
            if name in FIXED_BY_MATRIX:
                raise UserError(
                    f"--command sets {name}; the matrix sets --env and --seed for each run, drop it from the command"
                )
        if not env_ids:
            raise UserError("--env-ids: name at least one env")
        if len(set(env_ids)) != len(env_ids):
            raise UserError("--env-ids: an env is listed twice")
        if num_seeds < 1:
            raise UserError("--num-seeds: must be at least 1")
        seeds = list(range(start_seed, start_seed + num_seeds))
        return cls(tokens[:cut], tokens[cut:], list(env_ids), seeds)

    def cells(self) -> list[tuple[int, str]]:
        """(seed, env) pairs, seed-major."""
        return [(seed, env) for seed in self.seeds for env in self.env_ids]

    def commands(self) -> list[str]:
        return [shlex.join([*self.base, *self.flags, "--env", env, "--seed", str(seed)]) for seed, env in self.cells()]

    def listing(self) -> str:
        cmds = self.commands()
        head = (
            f"# {len(cmds)} commands: {len(self.env_ids)} envs x {len(self.seeds)} seeds "
            f"({self.seeds[0]}..{self.seeds[-1]}), seed-major"
        )
        return "\n".join([head, *cmds])

    def sweep_doc(self, name: str, defaults: dict[str, Any]) -> dict[str, Any]:
        """The sweep file that runs this matrix: one run per (seed, env), in seed-major order."""
        runs = {
            f"{env}-s{seed}": {"name": f"{env}-s{seed}", "config": {"env": env, "seed": seed}}
            for seed, env in self.cells()
        }
        return {
            "metadata": {
                "name": name,
                "description": f"Benchmark matrix: {' '.join(self.env_ids)} x seeds {self.seeds[0]}..{self.seeds[-1]}",
                "hypothesis": "",
                "experiment_tag_prefix": name,
            },
            "defaults": defaults,
            "runs": runs,
        }
