"""argparse plumbing: flags generated from pydantic models, and one-line errors with exit code 2."""

from __future__ import annotations

import argparse
import sys
import types
import typing
from pathlib import Path
from typing import Any, NoReturn

from pydantic import BaseModel, ValidationError

from ppolab.errors import UserError, one_line
from ppolab.runner.config import TrainConfig, flag, validation_message
from ppolab.runner.presets import preset_fields
from ppolab.util import strict_json
from ppolab.util.run_folder import ACTOR


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line naming the flag, then exit 2. No abbreviations: a
    misspelt flag (`--entropy-coef`) is an error with a suggestion, never silently another flag."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")
        sys.exit(2)


class InnerParser(argparse.ArgumentParser):
    """For flags inside another option's value: its errors become a UserError naming that option."""

    def __init__(self, option: str) -> None:
        super().__init__(prog=option, add_help=False, allow_abbrev=False)

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{self.prog}: {message}")


METAVARS = {int: "N", float: "X"}
PATH_FLAGS = {"imitate", "continued", "yaml", "robot"}  # a str flag that names a file or folder
TRUE, FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}


def to_bool(text: str) -> bool:
    if text.lower() in TRUE:
        return True
    if text.lower() in FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _base_type(annotation: Any) -> Any:
    """`int | None` -> int; `list[int]` -> (list, int); Literal -> (Literal, choices)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _base_type(args[0])
    if origin is list:
        return (list, typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return (typing.Literal, typing.get_args(annotation))
    return annotation


def add_model_flags(parser: argparse.ArgumentParser, model: type[BaseModel], skip: set[str] = frozenset()) -> None:
    """One flag per field; defaults stay unset so that only what the user typed is collected."""
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        help_text = field.description or ""
        kind = _base_type(field.annotation)
        common: dict[str, Any] = {"dest": name, "default": argparse.SUPPRESS}
        if kind is bool:  # --learn-std, --learn-std=false (as a W&B sweep agent writes it), --no-mirror
            if field.default is True:
                parser.add_argument(
                    "--no-" + name.replace("_", "-"), action="store_false", help=f"turn off: {help_text}", **common
                )
                help_text = argparse.SUPPRESS
            parser.add_argument(
                flag(name), nargs="?", const=True, type=to_bool, metavar="BOOL", help=help_text, **common
            )
            continue
        if field.is_required():
            help_text += " (required)"
        elif field.default is not None:  # a None default is explained by the description itself
            shown = " ".join(map(str, field.default)) if isinstance(field.default, list) else field.default
            preset = model is TrainConfig and name in preset_fields()
            help_text += f" (default: {shown}{'; the env preset may set another: ppolab envs' if preset else ''})"
        if isinstance(kind, tuple) and kind[0] is list:
            parser.add_argument(flag(name), nargs="+", type=kind[1], metavar="N", help=help_text, **common)
        elif isinstance(kind, tuple):
            parser.add_argument(flag(name), choices=kind[1], help=help_text, **common)
        else:
            metavar = "PATH" if name in PATH_FLAGS else METAVARS.get(kind, name.split("_")[-1].upper())
            parser.add_argument(flag(name), type=kind, metavar=metavar, help=help_text, **common)


def build(model: type[BaseModel], values: dict[str, Any]) -> BaseModel:
    try:
        return model(**values)
    except ValidationError as exc:
        raise UserError(validation_message(exc)) from None


def print_json(command: str, payload: dict) -> None:
    """Machine-readable output: one JSON object with its schema version and the command (see the README)."""
    print(strict_json.dumps({"schema_version": 1, "command": command, **payload}, indent=2, default=str))


def train_defaults(flags: list[str], option: str) -> dict:
    """Parse `ppolab train` flags given inside another option (e.g. matrix --command) into config values."""
    parser = InnerParser(option)
    add_model_flags(parser, TrainConfig)
    ns, unknown = parser.parse_known_args(flags)
    if unknown:
        raise UserError(f"{option}: '{unknown[0]}' is not a train flag (see ppolab train --help)")
    values = vars(ns)
    build(TrainConfig, {"env": "cartpole", **values})  # checks values now, not run by run
    return values


def policy_path(ns: argparse.Namespace) -> tuple[str, Path]:
    """The flag and the policy it names: --path (a folder of runs: its latest, said so), or --logdir's latest."""
    from ppolab.runner.run_files import latest_run

    if ns.policy and ns.path:
        raise UserError(f"{ns.policy} and --path both name the policy; keep one")
    ns.path = ns.path or ns.policy
    if ns.path and ns.logdir:
        raise UserError("--path and --logdir both name the policy; keep one")
    if not ns.path and not ns.logdir:
        raise UserError(f"name the policy: ppolab {ns.subcommand} RUN_DIR_OR_ACTOR.pt (or --path), or --logdir DIR "
                        "for its most recent run")  # fmt: skip
    flag, given = ("--path", Path(ns.path)) if ns.path else ("--logdir", Path(ns.logdir))
    if flag == "--logdir" and (given / ACTOR).is_file():  # a run folder itself: play it
        return flag, given
    if given.is_dir() and (flag == "--logdir" or not (given / ACTOR).is_file()):
        latest = latest_run(given, ACTOR)
        if latest is None:
            if flag == "--logdir" or not any(given.glob("*.pt")):
                raise UserError(f"{flag} {given}: no run with an actor.pt inside; train one, or name a run folder")
        else:
            print(f"{flag} {given}: a folder of runs; playing the most recent, {latest}", flush=True)
            return flag, latest
    return flag, given
