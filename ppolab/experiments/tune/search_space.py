"""The search-space file of `ppolab tune`: which train flags to search, over what, and how to score envs.

    params:                                   # `ppolab train` flags in snake_case
      lr: {type: float, low: 1.0e-5, high: 1.0e-3, log: true}
      entropy_coeff: {type: float, low: 0.0, high: 0.01}
      epochs: {type: int, low: 2, high: 8}
      minibatch_size: {type: categorical, choices: [64, 128, 256]}
      n_itr: 60                               # a plain value is fixed: passed to every trial as is
      time_limit: 30                          # minutes a trial, whatever its batch (train --time-limit)
    target_scores:                            # needed with --env-ids: each env's score -> [0, 1]
      cartpole: [0, 400]

The whole file is checked before any trial runs; a mistake is one line naming
the file, line and key, and how to fix it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import optuna
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ppolab.errors import UserError
from ppolab.experiments.spec import NOT_IN_SWEEPS, Locator, closest, read_yaml
from ppolab.runner.config import TrainConfig
from ppolab.util.validation import first_problem

NOT_SEARCHED = NOT_IN_SWEEPS | {"env", "seed"}  # tune sets these per run (--env/--env-ids, --seed/--seeds)


class FloatRange(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    type: Literal["float"]
    low: float
    high: float
    log: bool = False
    step: float | None = Field(None, gt=0)


class IntRange(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    type: Literal["int"]
    low: int
    high: int
    log: bool = False
    step: int = Field(1, gt=0)


class Choice(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    type: Literal["categorical"]
    choices: list[Any] = Field(min_length=1)


Searched = Annotated[FloatRange | IntRange | Choice, Field(discriminator="type")]


class _Searched(BaseModel):
    value: Searched


class SpaceFile(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    params: dict[str, Any] = Field(min_length=1)
    target_scores: dict[str, tuple[float, float]] = Field(default_factory=dict)


@dataclass
class SearchSpace:
    path: Path
    searched: dict[str, FloatRange | IntRange | Choice]
    fixed: dict[str, Any]
    target_scores: dict[str, tuple[float, float]]

    def suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        """The trial's values for every searched flag (Optuna picks them)."""
        values: dict[str, Any] = {}
        for name, d in self.searched.items():
            if isinstance(d, FloatRange):
                values[name] = trial.suggest_float(name, d.low, d.high, log=d.log, step=d.step)
            elif isinstance(d, IntRange):
                values[name] = trial.suggest_int(name, d.low, d.high, log=d.log, step=d.step)
            else:
                values[name] = trial.suggest_categorical(name, d.choices)
        return values

    def grid(self) -> dict[str, list[Any]]:
        """Every value of every flag, for the grid sampler; floats need a step to have a grid."""
        grid: dict[str, list[Any]] = {}
        for name, d in self.searched.items():
            if isinstance(d, Choice):
                grid[name] = d.choices
            elif isinstance(d, IntRange) and not d.log:
                grid[name] = list(range(d.low, d.high + 1, d.step))
            elif isinstance(d, FloatRange) and d.step and not d.log:
                n = int(math.floor((d.high - d.low) / d.step + 1e-9))
                grid[name] = [round(d.low + i * d.step, 12) for i in range(n + 1)]
            else:
                raise UserError(
                    f"{self.path}: --sampler grid needs a finite list for '{name}'; "
                    "give it {type: categorical, choices: [...]} (or a step without log)"
                )
        return grid

    def grid_size(self) -> int:
        return math.prod(len(v) for v in self.grid().values())


def load_space(path: Path, given: dict[str, Any], envs: list[str]) -> SearchSpace:
    """Read and check a search-space file against the train flags `given` on the command line."""
    raw, loc = read_yaml(path, "write a search-space file (see ppolab tune --help)")
    if not isinstance(raw, dict):
        raise UserError(f"{path}:1: a search-space file is a mapping with 'params' (and 'target_scores')")
    try:
        spec = SpaceFile(**raw)
    except ValidationError as exc:
        raise loc.invalid(exc, lambda _: SpaceFile) from None
    allowed = [k for k in TrainConfig.model_fields if k not in NOT_SEARCHED]
    searched: dict[str, FloatRange | IntRange | Choice] = {}
    fixed: dict[str, Any] = {}
    for name, value in spec.params.items():
        where = ("params", name)
        if name not in allowed:
            hint = " (ppolab tune sets it per run)" if name in NOT_SEARCHED else closest(name, allowed)
            raise loc.error(where, f"unknown train flag '{name}'{hint}")
        if name in given:
            raise loc.error(where, f"'{name}' is also given as a flag; keep one of the two")
        if isinstance(value, dict):
            searched[name] = _distribution(loc, where, value)
        else:
            fixed[name] = value
    if not searched:
        raise loc.error(("params",), "nothing to search: give at least one flag a range or choices")
    for env in envs:  # each env with its own preset: a value valid for one may not be for another
        _check_values(loc, searched, {"env": env, **given, **fixed})
    for env, (low, high) in spec.target_scores.items():
        if env not in envs:
            continue
        if not high > low:
            raise loc.error(("target_scores", env), f"target_scores.{env}: write [low, high] with high > low")
    if len(envs) > 1:
        missing = [e for e in envs if e not in spec.target_scores]
        if missing:
            raise loc.error(
                ("target_scores",) if spec.target_scores else (),
                f"scores of several envs are not comparable: add target_scores: {{{missing[0]}: [LOW, HIGH]}} "
                "(the reward of a poor and of a good policy) for every env of --env-ids",
            )
    return SearchSpace(path, searched, fixed, dict(spec.target_scores))


def _distribution(loc: Locator, where: tuple[str, ...], value: dict) -> FloatRange | IntRange | Choice:
    if "type" not in value:
        raise loc.error(where, f"{where[-1]}: say its type: float, int or categorical")
    try:
        d = _Searched(value=value).value
    except ValidationError as exc:
        err = first_problem(exc)
        keys = [k for k in err["loc"][1:] if isinstance(k, str) and k not in ("float", "int", "categorical")]
        detail = err["msg"]
        if err["type"] == "union_tag_invalid":
            detail = f"type must be float, int or categorical (got {value['type']!r})"
        elif err["type"] == "extra_forbidden":
            kind = {"float": FloatRange, "int": IntRange}.get(value["type"], Choice)
            detail = f"unknown key '{keys[-1]}' for type {value['type']}{closest(keys[-1], list(kind.model_fields))}"
        return_keys = (*where, *keys)
        raise loc.error(return_keys, f"{'.'.join(return_keys[1:])}: {detail}") from None
    if isinstance(d, FloatRange | IntRange):
        if not d.high > d.low:
            raise loc.error(where, f"{where[-1]}: high must be above low (got low={d.low}, high={d.high})")
        if d.log and d.low <= 0:
            raise loc.error(where, f"{where[-1]}: a log range needs low > 0 (got {d.low})")
        if d.log and isinstance(d, FloatRange) and d.step:
            raise loc.error(where, f"{where[-1]}: use log or step, not both")
    return d


def _check_values(loc: Locator, searched: dict, base: dict[str, Any]) -> None:
    """Every end of every range and every choice must be a valid train config with the fixed values."""
    probe = {"env": "cartpole", **base}  # `base` names the env; cartpole only for a caller that gives none
    try:
        TrainConfig(**probe)
    except ValidationError as exc:
        err = first_problem(exc)
        bad = str(err["loc"][0]) if err["loc"] else "params"
        raise loc.error(("params", bad), f"{bad}: {err['msg']}") from None
    for name, d in searched.items():
        if isinstance(d, FloatRange):  # a float range over a whole-number flag fails only at its first trial
            between = d.low + 0.371 * (d.high - d.low)
            if between != round(between) and _refused(probe, name, between):
                raise loc.error(("params", name), f"{name} takes whole numbers: give it type: int")
        for v in d.choices if isinstance(d, Choice) else (d.low, d.high):
            try:
                TrainConfig(**{**probe, name: v})
            except ValidationError as exc:
                err = first_problem(exc)
                bad = str(err["loc"][0]) if err["loc"] else name
                msg = err["msg"]
                where = ("params", name) if bad in (name, "model") or bad not in searched else ("params", bad)
                raise loc.error(where, f"{name}={v!r}: {bad}: {msg}") from None


def _refused(probe: dict[str, Any], name: str, value: Any) -> bool:
    try:
        TrainConfig(**{**probe, name: value})
    except ValidationError:
        return True
    return False
