"""Benchmark matrices: one base command over envs × seeds, in seed-major order.

Seed-major (every env for seed 1, then every env for seed 2, ...) means a matrix
stopped half-way still has a complete first seed on every env to compare. A
`ppolab train` command becomes a sweep; any other program gets the env and seed
appended as flags (CleanRL's `--env-id`/`--seed` by default), as CleanRL's
benchmark utility does, and runs as it is.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from ppolab.errors import UserError
from ppolab.util import script_values
from ppolab.util.tables import count


@dataclass(frozen=True)
class Matrix:
    base: list[str]  # the base command's tokens, up to and including `train`
    flags: list[str]  # its train flags
    env_ids: list[str]
    seeds: list[int]
    env_flag: str = "--env"
    seed_flag: str = "--seed"

    @property
    def trains(self) -> bool:
        """A `ppolab train` command (run as a sweep), not another program."""
        return self.env_flag == "--env" and "train" in self.base

    @classmethod
    def from_command(
        cls, command: str, env_ids: list[str], seeds: list[int], flags: tuple[str, str] | None = None
    ) -> Matrix:
        """`flags`: the env and seed flags a program other than `ppolab train` takes (default: CleanRL's)."""
        try:
            tokens = shlex.split(command)
        except ValueError as exc:
            raise UserError(f"--command: cannot split it into words ({exc})") from None
        if not tokens:
            raise UserError("--command: give the command to run for each env and seed")
        ppolab_train = "train" in tokens  # `ppolab train`, `python run_experiment.py train`
        env_flag, seed_flag = ("--env", "--seed") if ppolab_train else (flags or ("--env-id", "--seed"))
        cut = tokens.index("train") + 1 if ppolab_train else len(tokens)
        for token in tokens[cut:] if ppolab_train else tokens:
            name = token.split("=", 1)[0]
            if name in (env_flag, seed_flag):
                raise UserError(
                    f"--command sets {name}; the matrix sets {env_flag} and {seed_flag} for each run, drop it"
                )
        if not env_ids:
            raise UserError("--env-ids: name at least one env")
        for env in env_ids:
            script_values.check("--env-ids", env, "env_id")
        script_values.check("--env-flag", env_flag, "flag")
        script_values.check("--seed-flag", seed_flag, "flag")
        if len(set(env_ids)) != len(env_ids):
            raise UserError("--env-ids: an env is listed twice")
        return cls(tokens[:cut], tokens[cut:], list(env_ids), list(seeds), env_flag, seed_flag)

    def cells(self) -> list[tuple[int, str]]:
        """(seed, env) pairs, seed-major."""
        return [(seed, env) for seed in self.seeds for env in self.env_ids]

    def commands(self) -> list[str]:
        return [shlex.join(self.argv(seed, env)) for seed, env in self.cells()]

    def argv(self, seed: int, env: str) -> list[str]:
        return [*self.base, *self.flags, self.env_flag, env, self.seed_flag, str(seed)]

    def listing(self) -> str:
        cmds = self.commands()
        head = (
            f"# {count(len(cmds), 'command')}: {count(len(self.env_ids), 'env')} x {count(len(self.seeds), 'seed')} "
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
