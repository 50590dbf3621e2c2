"""The sweep file, `experiments/sweeps/<name>/sweep.yaml`: schema, interpolation and validation.

    metadata:                      # name, description, hypothesis, experiment_tag_prefix
      name: "gamma-ablation"
      hypothesis: "gamma 0.995 reaches 450 eval reward sooner than 0.99"
      experiment_tag_prefix: "gamma-ablation"
    defaults: {env: cartpole, n_itr: 300}   # `ppolab train` flags in snake_case, for every run
    seeds: [1, 2]                  # optional: every run once per seed (a run may set its own); also 3 (1..3) or "4-6"
    order: runs                    # optional: runs (each run's seeds in turn: the default) or seeds (seed by seed)
    timeout: 3600                  # optional: seconds a run may take before it is stopped
    resources: {num_cpus: 2, num_gpus: 0}   # optional, per run: what --executor ray reserves for it
    runs:
      A: {name: control, description: "...", config: {experiment_tag: "${metadata.experiment_tag_prefix}-A"}}
      B: {name: gamma0995, config: {gamma: 0.995}, grid: {lr: [1.0e-4, 3.0e-4]}}

`${...}` interpolation (OmegaConf) works over the whole file. Every mistake is
reported as `FILE:LINE: what is wrong; how to fix it`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from ppolab.errors import UserError
from ppolab.runner.config import RUN_NAME, TrainConfig
from ppolab.util import yaml_file
from ppolab.util.seeds import MAX_SEED, parse_seeds
from ppolab.util.validation import did_you_mean, first_problem

SWEEP_FILE = "sweep.yaml"
MAX_RUNS = 10_000  # planned runs in one sweep: more is a mistake (a grid of 10^6), not a plan
Seed = Annotated[int, Field(strict=True, ge=0, le=MAX_SEED)]  # true is not a seed


def sweep_name(sweep_dir: Path) -> str:
    """A sweep's one name: its folder's (in --list, --status, state.json, the report, the tracker, job
    names). `metadata.name` is its title, shown beside it. A control character in it (a newline, an escape)
    is refused: it would end a line of a script, a log or a report that the name goes into."""
    name = sweep_dir.resolve().name
    check_folder_name(name, f"{sweep_dir}: the sweep folder's name")
    return name


def check_folder_name(name: str, what: str) -> None:
    """A name that becomes a folder, a job name and a line of text: printable characters only, no slash."""
    bad = next((c for c in name if not c.isprintable() or c in "/\\"), None)
    if bad is not None or not name.strip():
        shown = repr(bad) if bad is not None else "only blanks"
        raise UserError(f"{what} {name!r} has {shown}; rename it with letters, digits and _ . - only")


def _seeds_spec(value: Any) -> Any:
    """`seeds: 3` and `seeds: "4-6"` mean what `--seeds` means on the command line; a list is a list."""
    return parse_seeds(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else value


Seeds = Annotated[list[Seed], BeforeValidator(_seeds_spec)]
NAME = RUN_NAME  # a run name is a folder name
NOT_IN_SWEEPS = {"logdir", "run_name"}  # set per run by the runner, not by the file


SweepMetric = Literal["final_reward", "time_to_pass", "steps_to_pass"]  # what a sweep's verdict can compare


class Metadata(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    name: str
    description: str = ""
    hypothesis: str = ""
    experiment_tag_prefix: str = ""
    min_effect: float | None = Field(
        None, gt=0, description="smallest difference in final reward worth finding (power and equivalence tests)"
    )
    metric: SweepMetric = Field(
        "final_reward",
        description="what the verdict compares: the final mean reward, or how soon the runs' behaviour checks first "
        "pass (time_to_pass, steps_to_pass: the runs need check_every; a run that never passes is censored)",
    )


class Resources(BaseModel):
    """What one run reserves on a Ray cluster (`ppolab sweep --executor ray`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    num_cpus: float = Field(1.0, gt=0)
    num_gpus: float = Field(0.0, ge=0)


class RunSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    name: str
    description: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    seeds: Seeds | None = None
    timeout: float | None = Field(None, gt=0)
    resources: Resources | None = None


class SweepSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    metadata: Metadata
    defaults: dict[str, Any] = Field(default_factory=dict)
    seeds: Seeds | None = None
    order: Literal["runs", "seeds"] = Field(
        "runs",
        description="runs: each run's seeds one after the other; seeds: every run of the first seed, then of the "
        "next: a drift of the machine's load over hours (or a sweep continued on another machine) then falls on "
        "every configuration alike, which matters when the metric is a time (time_to_pass)",
    )
    timeout: float | None = Field(None, gt=0)
    resources: Resources = Field(default_factory=Resources)
    runs: dict[str, RunSpec] = Field(min_length=1)


class Locator:
    def __init__(self, path: Path, lines: dict[tuple[str, ...], int]) -> None:
        self.path, self.lines = path, lines

    def error(self, keys: tuple[Any, ...], message: str) -> UserError:
        keys = tuple(str(k) for k in keys)
        while keys and keys not in self.lines:
            keys = keys[:-1]
        line = self.lines.get(keys, 1)
        return UserError(f"{self.path}:{line}: {message}")

    def invalid(self, exc: ValidationError, model_at: Callable[[tuple], type[BaseModel]]) -> UserError:
        """The file's validation error as one line at its key: an unknown key with the nearest key of the
        model that holds it (`model_at(the key's path)`), else the key's path and pydantic's message."""
        err = first_problem(exc)
        keys = err["loc"]
        if err["type"] == "extra_forbidden":
            hint = closest(str(keys[-1]), list(model_at(keys).model_fields))
            return self.error(keys, f"unknown key '{keys[-1]}'{hint}")
        return self.error(keys, f"{err['where']}: {err['msg']}")


def closest(word: str, options: list[str]) -> str:
    return did_you_mean(word, options, cutoff=0.5)


def read_yaml(path: Path, missing_hint: str) -> tuple[Any, Locator]:
    """A YAML file and a locator for its keys' lines; whatever is wrong with the file is one UserError."""
    try:
        data, root = yaml_file.load(path)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise UserError(f"{path}: no such file; {missing_hint}") from None
    except PermissionError:
        raise UserError(f"{path}: not readable (permission denied)") from None
    except yaml_file.YamlFileError as exc:
        raise UserError(str(exc)) from None
    return data, Locator(path, yaml_file.line_index(root))


def load_sweep(sweep_dir: Path) -> SweepSpec:
    """Read, interpolate and validate a sweep file; every failure is one UserError naming file and line."""
    path = sweep_dir / SWEEP_FILE if sweep_dir.is_dir() else sweep_dir
    raw, loc = read_yaml(path, "a sweep folder holds a " + SWEEP_FILE)
    if not isinstance(raw, dict):
        raise UserError(f"{path}:1: a sweep file is a mapping with metadata, defaults and runs")
    _refuse_resolvers(raw, loc, ())
    try:
        resolved = OmegaConf.to_container(OmegaConf.create(raw), resolve=True)
    except OmegaConfBaseException as exc:
        key = tuple(str(exc.full_key).split(".")) if getattr(exc, "full_key", None) else ()
        detail = str(exc).splitlines()[0]
        raise loc.error(key, f"interpolation failed: {detail}; point ${{...}} at an existing key") from None
    try:
        spec = SweepSpec(**resolved)
    except ValidationError as exc:
        raise loc.invalid(exc, _model_at) from None
    seen: dict[str, str] = {}
    for key, run in spec.runs.items():
        if run.name in seen:
            raise loc.error(
                ("runs", key, "name"), f"duplicate run name '{run.name}' (also run {seen[run.name]}); rename one"
            )
        seen[run.name] = key
    _check_names(spec, loc)
    _check_train_keys(spec, loc)
    _check_metric(spec, loc)
    return spec


def _model_at(keys: tuple) -> type[BaseModel]:
    """The section of sweep.yaml that holds the key at `keys`."""
    if "resources" in map(str, keys[:-1]):
        return Resources
    return {"metadata": Metadata, "runs": RunSpec}.get(str(keys[0]), SweepSpec)


def _refuse_resolvers(node: Any, loc: Locator, keys: tuple) -> None:
    """`${a.b}` references stay; resolvers (`${oc.env:VAR}`, `${oc.decode:...}`) would read the environment
    into the plan, the logs and the run folders, so they are refused."""
    if isinstance(node, dict):
        for k, v in node.items():
            if not isinstance(k, (str, int, float, bool)) and k is not None:
                raise loc.error(keys, f"a key must be text or a number, not {type(k).__name__}")
            _refuse_resolvers(v, loc, (*keys, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _refuse_resolvers(v, loc, (*keys, i))
    elif isinstance(node, str) and re.search(r"\$\{[^}]*:", node):
        raise loc.error(keys, f"{node!r}: resolvers such as oc.env are not allowed; write the value itself")


def _check_names(spec: SweepSpec, loc: Locator) -> None:
    """Run names become folder names: identifiers only, and not too many runs to plan."""
    total = 0
    for key, run in spec.runs.items():
        if not NAME.fullmatch(run.name):
            raise loc.error(
                ("runs", key, "name"),
                f"run name {run.name!r}: use letters, digits and _ . + = - (at most 100, not starting with . or -); "
                "it names a folder",
            )
        count = len(run.seeds if run.seeds is not None else spec.seeds or [None])
        for values in run.grid.values():
            count *= max(1, len(values))
        total += count
        if total > MAX_RUNS:
            raise loc.error(("runs", key), f"more than {MAX_RUNS:,} planned runs; split the sweep or shrink its grid")


def _check_train_keys(spec: SweepSpec, loc: Locator) -> None:
    """defaults, config and grid hold `ppolab train` flags: check names, types and the env."""
    allowed = [k for k in TrainConfig.model_fields if k not in NOT_IN_SWEEPS]
    sections: list[tuple[tuple[str, ...], dict]] = [(("defaults",), spec.defaults)]
    for key, run in spec.runs.items():
        sections += [(("runs", key, "config"), run.config), (("runs", key, "grid"), run.grid)]
    for where, values in sections:
        for name in values:
            if name not in allowed:
                hint = " (the runner sets it)" if name in NOT_IN_SWEEPS else closest(name, allowed)
                raise loc.error((*where, name), f"unknown train flag '{name}'{hint}")
    for key, run in spec.runs.items():
        for name, values in run.grid.items():
            if not values:
                raise loc.error(("runs", key, "grid", name), f"grid '{name}' is empty; list at least one value")
            for v in values:
                _check_value(loc, ("runs", key, "grid", name), {**spec.defaults, **run.config, name: v})
        _check_value(loc, ("runs", key, "config"), {**spec.defaults, **run.config})


def _check_metric(spec: SweepSpec, loc: Locator) -> None:
    """A time-to-pass metric needs every run to run its behaviour checks."""
    if spec.metadata.metric == "final_reward":
        return
    for key, run in spec.runs.items():
        if not {**spec.defaults, **run.config}.get("check_every"):
            raise loc.error(("metadata", "metric"), f"{spec.metadata.metric} needs the runs' behaviour checks: set "
                            f"check_every (e.g. 50) under defaults (run '{key}' has none)")  # fmt: skip


def _check_value(loc: Locator, where: tuple[str, ...], values: dict) -> None:
    try:
        TrainConfig(**values)
    except ValidationError as exc:
        err = first_problem(exc)
        name = str(err["loc"][0]) if err["loc"] else ""
        if name and where[-1] != name and name in values:
            section = where if where[-1] in ("config", "grid") else where[:-1]
            keys = (*section, name) if (*section, name) in loc.lines else ("defaults", name)
        else:
            keys = where
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            raise loc.error(where, f"'{name}' is required; set it under defaults or the run's config") from None
        got = f" (got {err['input']!r})" if name else ""
        raise loc.error(keys, f"{name or 'config'}: {msg}{got}") from None
