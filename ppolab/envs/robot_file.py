"""A robot file: one YAML that says everything ppolab needs to know to make a humanoid walk.

The model (an MJCF or a URDF, in a Python package or beside the file), which joints are
the legs, what happens to the others (held by PD servos, or welded in their nominal
pose), the feet, the root and head bodies, the nominal pose, PD gains by joint-name
part, armature, damping and torque-limit overrides, the rates, and the left/right naming
from which the mirror maps follow. Optional `tasks:` defaults tune a task to the robot
(a gait's timing, a goal height, a speed range).

Shipped robot files live in `ppolab/envs/robots/`; `ppolab robots` lists them and
`ppolab robots check FILE` validates one (names, mirror, standing, a picture).
A mistake is one line naming the file, the line and the fix.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    PositiveFloat,
    ValidationError,
    model_validator,
)

from ppolab.errors import UserError
from ppolab.util import yaml_file
from ppolab.util.validation import did_you_mean, first_problem

SHIPPED = Path(__file__).parent / "robots"


def _task_name(v: str) -> str:
    """A section of `tasks:`: all, or a registered task (task_registry)."""
    from ppolab.envs.task_registry import task_names

    if v != "all" and v not in task_names():
        raise ValueError(f"{v!r} is not a task; use all, {', '.join(task_names())}")
    return v


TaskName = Annotated[str, AfterValidator(_task_name)]


def _name(v: str) -> str:
    if not v or not (v[0].isalpha() and v.replace("_", "").isalnum() and v.islower()):
        raise ValueError("use lower-case letters, digits and _, starting with a letter (it names envs: NAME_walk)")
    return v


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)


class ModelSource(Frozen):
    """Where the MJCF or URDF is: `path` inside the Python package `package`, or relative to the robot file."""

    package: str | None = None
    path: str
    meshes: Literal["model", "collada", "none"] = Field(
        "model", description="visual meshes: as the model has them; collada: convert a URDF's .dae with trimesh"
    )


class Foot(Frozen):
    """A foot: a body (its collision geoms make the sole) or a site. ppolab adds the touch and sole sites."""

    body: str | None = None
    site: str | None = None

    @model_validator(mode="after")
    def _one(self) -> Foot:
        if (self.body is None) == (self.site is None):
            raise ValueError("give a foot as body: NAME or site: NAME (one of them)")
        return self


class Feet(Frozen):
    right: Foot
    left: Foot


class Head(Frozen):
    """The point whose horizontal offset over the root the upper-body term keeps small."""

    body: str
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)


class Mirror(Frozen):
    """The name parts that tell a right joint from its left twin (`R_` / `L_`, `right_` / `left_`)."""

    right: str = Field(min_length=1)
    left: str = Field(min_length=1)


class Nominal(Frozen):
    """The standing pose: a keyframe of the model, and/or joint values by joint-name part (the longest
    matching part wins)."""

    keyframe: str | None = None
    joints: dict[str, float] = {}


class Geom(Frozen):
    """A collision shape the model lacks (a URDF's soles, say): a box, capsule or sphere on `body`."""

    body: str
    name: str | None = None
    type: Literal["box", "capsule", "sphere"]
    size: tuple[PositiveFloat, ...] = Field(min_length=1, max_length=3)
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    to_body: str | None = Field(None, description="capsule: from `pos` to this child body's origin")
    collides: Literal["floor_and_robot", "robot"] = "floor_and_robot"


Gains = dict[str, NonNegativeFloat]


def _gains_given(v: Gains) -> Gains:
    if not v:
        raise ValueError("give at least one joint-name part, e.g. {hip: 100, knee: 100, ankle: 20}")
    return v


class PdGains(Frozen):
    kp: Annotated[Gains, AfterValidator(_gains_given)]
    kd: Annotated[Gains, AfterValidator(_gains_given)]


class Rates(Frozen):
    physics_dt: float = Field(0.001, ge=1e-4, le=0.1, description="s: at least 0.1 ms (finer steps take hours a run)")
    control_dt: float = Field(0.025, ge=1e-4, le=1.0, description="s: a whole multiple of physics_dt")

    @model_validator(mode="after")
    def _whole_steps(self) -> Rates:
        steps = self.control_dt / self.physics_dt
        if steps < 1 - 1e-9 or abs(steps - round(steps)) > 1e-6:
            raise ValueError(f"control_dt ({self.control_dt}) must be a whole multiple of physics_dt "
                             f"({self.physics_dt}): an action holds whole physics steps")  # fmt: skip
        return self


class RobotFile(Frozen):
    """The whole robot file. Joint-name parts match by substring, the first listed part winning."""

    name: Annotated[str, AfterValidator(_name)]
    description: str = ""
    model: ModelSource
    root: str
    head: Head
    legs: list[str] = Field(min_length=2)
    others: Literal["weld", "hold"] = Field("weld", description="the joints that are not legs")
    feet: Feet
    mirror: Mirror
    nominal: Nominal = Nominal()
    gains: PdGains
    armature: Gains = {}
    damping: Gains = {}
    torque_limit: Gains | Literal["model"] | None = Field(
        None, description="N m per joint-name part; 'model': the model's own actuator limits; none: unclamped"
    )
    body_mass: dict[str, PositiveFloat] = Field({}, description="kg per body (its inertia scaled alike)")
    rates: Rates = Rates()
    geoms: list[Geom] = []
    collision_groups: list[int] = Field(
        [],
        description="geom groups that collide with the floor and the robot (a model whose contacts are all "
        "explicit pairs, such as Menagerie's Apollo: its collision geoms are group 3)",
    )
    tasks: dict[TaskName, dict[str, Any]] = Field(
        {},
        description="defaults of the robot's tasks: all of them, or one task by name (walk, stand, step: any "
        "task setting)",
    )
    packages: dict[str, str] = Field(
        {},
        description="a URDF's package://NAME/ paths: NAME: its folder (relative to the robot file), where "
        "neither a folder NAME above the URDF nor an installed Python package NAME holds it",
    )
    source: str | None = Field(None, description="the robot file this was read from (set by ppolab)")

    @model_validator(mode="after")
    def _legs_pair_up(self) -> RobotFile:
        if len(set(self.legs)) != len(self.legs):
            raise ValueError("legs: a joint is listed twice")
        r, left = self.mirror.right, self.mirror.left
        for joint in self.legs:
            twin = twin_name(joint, r, left)
            if twin is None:
                raise ValueError(f"legs: {joint!r} has neither {r!r} nor {left!r} in its name (mirror:)")
            if twin not in self.legs:
                raise ValueError(f"legs: {joint!r} has no twin {twin!r} among the legs")
        return self

    def model_path(self) -> Path:
        """The model file on disk; a missing package or file is one line saying which."""
        src = self.model
        if src.package:
            spec = importlib.util.find_spec(src.package) if src.package.replace(".", "").isidentifier() else None
            if spec is None or not spec.submodule_search_locations:
                raise UserError(f"{self.where('model.package')}: no Python package {src.package!r}; pip install it")
            path = Path(list(spec.submodule_search_locations)[0]) / src.path
        else:
            path = Path(src.path)
            if not path.is_absolute() and self.source:
                path = Path(self.source).parent / path
        if not path.is_file():
            raise UserError(f"{self.where('model.path')}: no model file {path}")
        if path.suffix.lower() not in (".xml", ".mjcf", ".urdf"):
            raise UserError(f"{self.where('model.path')}: {path} is neither an MJCF (.xml) nor a URDF (.urdf); "
                            "name the robot's model file")  # fmt: skip
        return path

    def where(self, key: str) -> str:
        return f"{self.source or 'robot ' + self.name}: {key}"


def twin_name(joint: str, right: str, left: str) -> str | None:
    """The other side's joint: the first side marker in the name swapped for the other one."""
    r, lft = joint.find(right), joint.find(left)
    if r < 0 and lft < 0:
        return None
    if lft < 0 or (0 <= r < lft):
        return joint[:r] + left + joint[r + len(right) :]
    return joint[:lft] + right + joint[lft + len(left) :]


def _fields_of(model: type[BaseModel], loc: tuple) -> list[str]:
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        sub = field.annotation if field else None
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            model = sub
        else:
            return []
    return list(model.model_fields)


def parse(data: Any, path: Path, root: Any = None) -> RobotFile:
    """A robot file's data, checked; a mistake names the file, the line and the fix."""
    if not isinstance(data, dict):
        raise UserError(f"{path}: a robot file is a mapping (name:, model:, legs:, ...); see `ppolab robots`")
    model = data.get("model")
    if isinstance(model, dict) and not model.get("package") and isinstance(model.get("path"), str):
        model = {**model, "path": str((path.parent / model["path"]).absolute())}  # beside the file, wherever run
        data = {**data, "model": model}
    packages = data.get("packages")
    if isinstance(packages, dict) and all(isinstance(v, str) for v in packages.values()):
        data = {
            **data,
            "packages": {k: str((path.parent / Path(v).expanduser()).absolute()) for k, v in packages.items()},
        }
    try:
        return RobotFile(**{**data, "source": str(path)})
    except ValidationError as exc:
        err = first_problem(exc)
        loc = tuple(str(p) for p in err["loc"])
        if not loc and ": " in err["msg"]:  # a check of the whole file: its message starts with the key
            key, _, rest = err["msg"].partition(": ")
            loc, err["where"], err["msg"] = (key,), key, rest
        lines = yaml_file.line_index(root)
        line = next((lines[loc[:k]] for k in range(len(loc), 0, -1) if loc[:k] in lines), 1)
        if err["type"] == "extra_forbidden":
            hint = did_you_mean(loc[-1], [f for f in _fields_of(RobotFile, loc) if f != "source"])
            raise UserError(f"{path}:{line}: unknown key '{err['where']}'{hint}") from None
        raise UserError(f"{path}:{line}: {err['where'] or 'robot file'}: {err['msg']}") from None


def read(path: str | Path) -> RobotFile:
    """The robot file at `path` (a shipped robot's name also works)."""
    p = Path(path)
    if not p.suffix and (SHIPPED / f"{p}.yaml").is_file():
        p = SHIPPED / f"{p}.yaml"
    try:
        data, root = yaml_file.load(p)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise UserError(f"{path}: no such robot file; shipped robots: {', '.join(shipped())}") from None
    except yaml_file.YamlFileError as exc:
        raise UserError(str(exc)) from None
    return parse(data, p, root)


def shipped() -> list[str]:
    """The names of the robots that come with ppolab."""
    return sorted(p.stem for p in SHIPPED.glob("*.yaml"))


def shipped_robot(name: str) -> RobotFile:
    return read(SHIPPED / f"{name}.yaml")
