"""`--yaml FILE`: override an env's configuration (gains, reward weights, timing, randomisation).

The file holds a subset of the env's config keys, nested as in the env's config
class; unknown keys are refused with the closest valid name. LearningHumanoidWalking's own
env files are read as they are (`lhw_yaml`). Every run folder
keeps the full resolved configuration in `env.yaml` (with or without `--yaml`),
which `--resume` reuses, and every saved policy carries it: a later change of an
env's defaults never changes a run or a policy trained before it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ppolab.envs import EnvSettings, env_class, lhw_yaml
from ppolab.errors import UserError
from ppolab.util import yaml_file
from ppolab.util.run_folder import ENV
from ppolab.util.validation import did_you_mean, first_problem


def _closest(key: str, model: type[BaseModel]) -> str:
    return did_you_mean(key, list(model.model_fields))


def _submodel(model: type[BaseModel], path: tuple) -> type[BaseModel]:
    for part in path:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            break
        model = annotation
    return model


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        out[key] = _merge(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return out


def validate(env: str, data: Any, source: str) -> EnvSettings:
    """The overrides, checked against the env's config class: the env's settings in full."""
    cfg_cls = env_class(env, data if isinstance(data, dict) else None).Config
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UserError(f"{source}: expected a mapping of {env} config keys, got {type(data).__name__}")
    try:  # merged into the defaults: `kp: {hip: 150}` changes the hip gain, not the whole table
        return EnvSettings(env, cfg_cls(**_merge(cfg_cls().model_dump(mode="json"), data)))
    except ValidationError as exc:
        err = first_problem(exc)
        where = err["where"]
        if err["type"] == "extra_forbidden":
            parent = _submodel(cfg_cls, err["loc"][:-1])
            hint = _closest(str(err["loc"][-1]), parent)
            raise UserError(f"{source}: unknown key '{where}' for env {env}{hint}") from None
        if not where:  # a check of the whole config: its message names the key
            raise UserError(f"{source}: {err['msg']}") from None
        raise UserError(f"{source}: {where}: {err['msg']} (got {err['input']!r})") from None


def resolve(env: str, path: str | None, robot: str | None = None) -> EnvSettings:
    """The env's configuration in full: its defaults, changed by a `--yaml` file if one is given. A user's
    robot file (`--robot`) is part of it: its contents travel with the run."""
    if robot is not None:
        from ppolab.envs import robot_file, use_robot

        use_robot(robot_file.read(robot))
    if path is None:
        return validate(env, {}, f"the defaults of {env}")
    try:
        data, _ = yaml_file.load(Path(path))
    except (FileNotFoundError, IsADirectoryError):
        raise UserError(f"--yaml {path}: no such file") from None
    except yaml_file.YamlFileError as exc:
        raise UserError(f"--yaml {exc}") from None
    if lhw_yaml.is_lhw(data):  # LearningHumanoidWalking's envs/<robot>/configs/*.yaml, as it is
        data, notes = lhw_yaml.translate(data, env_class(env).Config, path)
        for note in notes:
            print(f"Note: {note}", flush=True)
    elif _saved_in_full(env, data):  # a run's or a policy's env.yaml: trained as it was, not as the preset is now
        data = restore(env, data)
    return validate(env, data, path)


def _saved_in_full(env: str, data: Any) -> bool:
    """Whether `--yaml` data is a saved env.yaml (every setting of its day written: all but those added since,
    which `legacy` names) rather than a few overrides. Why: a setting added since is then read as it was when
    the policy trained (`restore`), where overrides take today's preset for what they leave out."""
    if not isinstance(data, dict):
        return False
    cls = env_class(env, data).Config
    return set(cls.model_fields) - set(getattr(cls, "legacy", {})) <= set(data)


def save(run_dir: Path, settings: EnvSettings) -> None:
    from ppolab.util.files import atomic_write_text

    atomic_write_text(run_dir / ENV, yaml.safe_dump(settings.data(), sort_keys=False))


def load_saved(run_dir: Path, env: str) -> EnvSettings | None:
    """A run folder's env.yaml (None for a folder made before every run kept one: the env's defaults)."""
    path = run_dir / ENV
    if not path.exists():
        return None
    return validate(env, restore(env, yaml.safe_load(path.read_text())), str(path))


def restore(env: str, saved: Any) -> Any:
    """A saved env config (a run's env.yaml, a policy's settings) as it was trained: a setting added to the
    task since takes the value the task had before it existed (the config class's `legacy`), not today's
    default, so a policy keeps seeing the observation it was trained on."""
    if not isinstance(saved, dict):
        return saved
    legacy = getattr(env_class(env, saved).Config, "legacy", {})
    out = {**{k: v for k, v in legacy.items() if k not in saved}, **saved}
    r = out.get("randomization")
    if isinstance(r, dict) and "start_tilt" not in r:  # saved before the start tilt existed: trained without it
        out["randomization"] = {**r, "start_tilt": 0.0}
    return out
