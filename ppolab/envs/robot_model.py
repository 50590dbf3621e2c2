"""A robot file made into a MuJoCo model for ppolab's tasks, with MjSpec.

What the build does, in order: read the MJCF or URDF; remove its actuators, sensors,
keyframes and equalities (ppolab adds its own); weld the joints that are not legs in
their nominal pose, or keep them for PD servos to hold; give the root a free joint;
apply the file's armature and damping; add its extra collision shapes; put PD position
servos on the legs (then on held joints), torque-clamped as the file says; compile once
to measure each foot's collision shapes at the nominal pose, then add the sole and
touch sites, the head site and the named sensors (touch, sole velocity and position,
head position, leg torques, self-contact) and the video scene, and compile again. Everything
a step reads per env is then in qpos, qvel and sensordata: three copies, no contact loop in Python.

Compiled models are cached (`model_cache`): the build runs once per set of inputs.
"""

from __future__ import annotations

import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from ppolab.envs import model_repair, physics, visual_meshes  # noqa: F401  (physics: MuJoCo's warnings kept, not printed)
from ppolab.envs.model_cache import load_or_build
from ppolab.envs.robot_file import RobotFile, twin_name
from ppolab.envs.scene import add_scene
from ppolab.errors import UserError

ROBOT_BIT = 2  # collision bit of robot-robot contacts added here; the floor uses bit 1
TOUCH_MARGIN = (0.005, 0.005, 0.01)  # the touch box around a sole's collision shapes, m
NOMINAL = "nominal:"  # numerics of a built model: each joint's nominal angle
STAIR_HALF = (0.15, 0.6, 0.5)  # box half-sizes of one stair tread, m
TORQUE = "torque:"  # sensors of a built model: each leg servo's force
SOLE = "{}_sole"  # the site at the bottom of each foot's sole, by side (right, left)
MERGED = "merged:"  # text elements of a built model: the body a welded body was merged into
SELF_CONTACT = "self_contact"  # sensor: the number of contacts between two parts of the robot (0 or 1)


def part_value(table: dict[str, float], joint: str) -> float | None:
    """The value of the longest joint-name part of `table` that is in `joint` (None: no part matches): a
    whole joint name (`R_HIP_P: 150`) beats a family (`HIP: 200`), whatever their order in the file."""
    parts = [part for part in table if part in joint]
    return table[max(parts, key=len)] if parts else None


@dataclass(frozen=True)
class BuildParams:
    """Everything a model depends on besides the robot file: the task's physics settings."""

    physics_dt: float
    kp: dict[str, float]
    kd: dict[str, float]
    armature: dict[str, float]
    damping: dict[str, float]
    visuals: bool
    stairs: int = 0  # treads the stepping task places per episode


def _fresh_spec(robot: RobotFile, path: Path, visuals: bool, meshes: Path | None) -> mujoco.MjSpec:
    """The model file as a spec that compiles: a URDF's COLLADA meshes converted (videos) or dropped."""
    is_urdf = path.suffix.lower() == ".urdf"
    try:
        notes: list[str] = []
        if is_urdf:  # as published: package:// paths, zero-size shapes, bad inertias, frames above the base
            text, notes = model_repair.repair_urdf(path, robot.root, robot.packages)
            spec = mujoco.MjSpec.from_string(text)
        else:
            spec = mujoco.MjSpec.from_file(str(path))
            model_repair.repair_mjcf(spec, notes)
        for note in notes:
            print(f"{robot.source or robot.name}: {note}", flush=True)
    except ValueError as exc:  # not an MJCF or URDF, cut short, or an <include> that cannot be read
        raise UserError(f"{robot.where('model.path')}: MuJoCo cannot read {path} as an MJCF or URDF: "
                        f"{one_line(exc)}") from None  # fmt: skip
    if visuals and robot.model.meshes == "collada" and meshes is not None:
        _convert_collada(spec, path, meshes)
    elif visuals and is_urdf and robot.model.meshes == "model":  # the trained model, its meshes shown only
        spec.compiler.discardvisual = False  # else the compiler drops every geom without contacts
        for geom in spec.geoms:
            if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
                _visual_only(geom)
    elif visuals and not is_urdf and meshes is not None:
        visual_meshes.lighten(spec, path, meshes)  # shown meshes within a face budget: frames in software GL
    elif not visuals or (is_urdf and robot.model.meshes != "model"):
        for geom in list(spec.geoms):  # training: no visual meshes (they cost time in every step)
            if geom.type == mujoco.mjtGeom.mjGEOM_MESH and (is_urdf or (geom.contype == 0 and geom.conaffinity == 0)):
                spec.delete(geom)
        used = {g.meshname for g in spec.geoms if g.type == mujoco.mjtGeom.mjGEOM_MESH}
        for mesh in list(spec.meshes):
            if mesh.name not in used:
                spec.delete(mesh)
    return spec


def _convert_collada(spec: mujoco.MjSpec, urdf: Path, out: Path) -> None:
    """A URDF's COLLADA meshes as visual-only geoms (no contacts, no mass), converted to STL in `out`."""
    import trimesh

    spec.compiler.discardvisual = False  # else the compiler drops every geom without contacts
    package = urdf.parent.parent
    for mesh in spec.meshes:
        source = package / mesh.file.split("://", 1)[-1].split("/", 1)[-1] if "://" in mesh.file else Path(mesh.file)
        if not source.is_absolute() and not source.exists():
            source = urdf.parent / mesh.file
        target = out / (Path(source).stem + ".stl")
        trimesh.load(str(source), force="mesh").export(str(target))
        mesh.file = str(target)
        mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL  # open surfaces are fine: no mass is taken
    colors = _urdf_colors(urdf)
    for body in spec.bodies:
        for geom in body.geoms:
            if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
                _visual_only(geom)
                geom.rgba = colors.get(body.name, [0.7, 0.7, 0.7, 1.0])


def _visual_only(geom: mujoco.MjsGeom) -> None:
    """A URDF mesh shown in pictures, with no contact and no mass: training drops them, so a picture's episode
    is the trained model's (a URDF's collision meshes touching at the start would end it at once)."""
    geom.contype, geom.conaffinity, geom.group = 0, 0, 1
    geom.mass, geom.density = 0.0, 0.0


def _urdf_colors(urdf: Path) -> dict[str, list[float]]:
    root = ET.parse(urdf).getroot()
    named = {
        m.attrib["name"]: [float(v) for v in m.find("color").attrib["rgba"].split()]
        for m in root.iter("material")
        if m.find("color") is not None and "name" in m.attrib
    }
    colors = {}
    for link in root.iter("link"):
        material = link.find("visual/material")
        if material is not None and material.attrib.get("name") in named:
            colors[link.attrib["name"]] = named[material.attrib["name"]]
    return colors


def _check_names(robot: RobotFile, model: mujoco.MjModel) -> None:
    """Every name the file gives exists in the model: one line naming the first that does not."""
    joints = {model.joint(i).name for i in range(model.njnt)}
    bodies = {model.body(i).name for i in range(model.nbody)}
    sites = {model.site(i).name for i in range(model.nsite)}
    for joint in robot.legs:
        if joint not in joints:
            raise UserError(f"{robot.where('legs')}: no joint {joint!r} in {robot.model.path}; its joints: "
                            f"{', '.join(sorted(j for j in joints if j))}")  # fmt: skip
    named = [("root", robot.root), ("head.body", robot.head.body)]
    named += [(f"body_mass.{b}", b) for b in robot.body_mass]
    named += [(f"geoms.{k}.body", g.body) for k, g in enumerate(robot.geoms)]
    named += [(f"geoms.{k}.to_body", g.to_body) for k, g in enumerate(robot.geoms) if g.to_body]
    for side in ("right", "left"):
        foot = getattr(robot.feet, side)
        if foot.body:
            named.append((f"feet.{side}.body", foot.body))
        elif foot.site not in sites:
            raise UserError(f"{robot.where(f'feet.{side}.site')}: no site {foot.site!r}; its sites: "
                            f"{', '.join(sorted(sites)) or 'none'}")  # fmt: skip
    for key, name in named:
        if name not in bodies:
            names = ", ".join(sorted(b for b in bodies if b))
            raise UserError(f"{robot.where(key)}: no body {name!r}; its bodies: {names}")
    if robot.nominal.keyframe and robot.nominal.keyframe not in {model.key(i).name for i in range(model.nkey)}:
        raise UserError(f"{robot.where('nominal.keyframe')}: no keyframe {robot.nominal.keyframe!r}")
    tables = [("nominal.joints", robot.nominal.joints), ("gains.kp", robot.gains.kp), ("gains.kd", robot.gains.kd),
              ("armature", robot.armature), ("damping", robot.damping)]  # fmt: skip
    if isinstance(robot.torque_limit, dict):
        tables.append(("torque_limit", robot.torque_limit))
    for key, table in tables:  # a part that names no joint is a typo that would silently change nothing
        for part in table:
            if not any(part in j for j in joints if j):
                raise UserError(f"{robot.where(f'{key}.{part}')}: part of no joint's name; its joints: "
                                f"{', '.join(sorted(j for j in joints if j))}")  # fmt: skip


def nominal_joints(robot: RobotFile, model: mujoco.MjModel) -> dict[str, float]:
    """Every hinge or slide joint's nominal value: the keyframe's, then the file's parts (the longest
    matching part wins)."""
    key = model.key(robot.nominal.keyframe).qpos if robot.nominal.keyframe else model.qpos0
    out = {}
    for j in range(model.njnt):
        if int(model.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            name = model.joint(j).name
            value = part_value(robot.nominal.joints, name)
            out[name] = float(key[model.jnt_qposadr[j]] if value is None else value)
    return out


def _weld(spec: mujoco.MjSpec, model0: mujoco.MjModel, joint: mujoco.MjsJoint, angle: float) -> None:
    """Remove a joint, its body fixed to the parent at `angle` (the body's frame turned about the joint's axis)."""
    body = joint.parent
    if angle != 0.0 and joint.type in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
        b = model0.body(body.name)
        pos, quat = b.pos.copy(), b.quat.copy()
        axis = np.asarray(joint.axis, float) / np.linalg.norm(joint.axis)
        if joint.type == mujoco.mjtJoint.mjJNT_SLIDE:
            offset = axis * angle
            turn = np.array([1.0, 0.0, 0.0, 0.0])
        else:
            turn = np.zeros(4)
            mujoco.mju_axisAngle2Quat(turn, axis, angle)
            p = np.asarray(joint.pos, float)
            rotated = np.zeros(3)
            mujoco.mju_rotVecQuat(rotated, p, turn)
            offset = p - rotated
        moved = np.zeros(3)
        mujoco.mju_rotVecQuat(moved, offset, quat)
        new_quat = np.zeros(4)
        mujoco.mju_mulQuat(new_quat, quat, turn)
        body.pos, body.quat = pos + moved, new_quat
        body.alt.type = mujoco.mjtOrientation.mjORIENTATION_QUAT
    spec.delete(joint)


def _edit_joints(robot: RobotFile, spec: mujoco.MjSpec, model0: mujoco.MjModel, p: BuildParams) -> list[str]:
    """Weld or keep the non-leg joints; the file's armature and damping; a free joint on the root. Returns
    the held joints (servoed but not commanded by the policy)."""
    nominal = nominal_joints(robot, model0)
    held = []
    for joint in list(spec.joints):
        if joint.type == mujoco.mjtJoint.mjJNT_FREE:
            continue
        if joint.name not in robot.legs and (robot.others == "weld" or joint.type == mujoco.mjtJoint.mjJNT_BALL):
            _weld(spec, model0, joint, nominal.get(joint.name, 0.0))
            continue
        if joint.name not in robot.legs:
            held.append(joint.name)
        armature, damping = part_value(p.armature, joint.name), part_value(p.damping, joint.name)
        if armature is not None:
            joint.armature = armature
        if damping is not None:
            joint.damping = [damping, 0.0, 0.0]  # (viscous, spring-damper terms unused)
    return held


def _float_root(robot: RobotFile, spec: mujoco.MjSpec) -> None:
    """A free joint on the root body (a URDF's base link has none)."""
    root = spec.body(robot.root)
    if root is None:
        names = sorted(b.name for b in spec.bodies if b.name and b.name != "world")
        raise UserError(f"{robot.where('root')}: no body {robot.root!r}; its bodies: {', '.join(names)}")
    if root.parent.name != "world":
        raise UserError(f"{robot.where('root')}: {robot.root!r} is not a top-level body; name the floating base")
    if not any(j.type == mujoco.mjtJoint.mjJNT_FREE for j in root.joints):
        root.add_freejoint(name="root")


def _torque_limits(robot: RobotFile, spec: mujoco.MjSpec, path: Path, joints: list[str]) -> dict[str, float] | None:
    """N m per servoed joint, from the file's table, or the model's own actuators (a URDF's effort limits)."""
    limit = robot.torque_limit
    if limit is None:
        return None
    if isinstance(limit, dict):
        out = {j: part_value(limit, j) for j in joints}
        return {j: v for j, v in out.items() if v is not None}
    out = {}
    if path.suffix.lower() == ".urdf":
        for joint in ET.parse(path).getroot().iter("joint"):
            lim = joint.find("limit")
            if lim is not None and "effort" in lim.attrib:
                out[joint.attrib["name"]] = float(lim.attrib["effort"])
        return out
    for joint in spec.joints:  # a joint's own actuator-force range (Menagerie's newer models)
        if joint.actfrclimited == mujoco.mjtLimited.mjLIMITED_TRUE or joint.actfrcrange[1] > 0:
            out[joint.name] = float(joint.actfrcrange[1])
    for act in spec.actuators:
        gain = abs(act.gear[0]) or 1.0
        if act.forcelimited == mujoco.mjtLimited.mjLIMITED_TRUE or (act.forcerange[1] > 0):
            out[act.target] = float(act.forcerange[1])
        elif act.biastype == mujoco.mjtBias.mjBIAS_NONE and act.ctrlrange[1] > 0:  # a motor: ctrl is torque / gear
            out[act.target] = float(act.ctrlrange[1] * gain)
    return out


def add_servos(
    robot: RobotFile, spec: mujoco.MjSpec, joints: list[str], p: BuildParams, limits: dict[str, float] | None
) -> None:
    """A PD position servo on each joint (gain kp, bias -kp q - kd qdot), torque-clamped where a limit is given."""
    for field, table in (("kp", p.kp), ("kd", p.kd)):
        missing = [j for j in joints if part_value(table, j) is None]
        if missing:
            raise UserError(f"{robot.where('gains.' + field)}: no gain for joint {missing[0]!r} (the servoed joints: "
                            "legs, and the others where others: hold); add a part of its name")  # fmt: skip
    for name in joints:
        kp, kd = part_value(p.kp, name), part_value(p.kd, name)
        act = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
        act.gainprm[0] = kp
        act.biasprm[0:3] = [0.0, -kp, -kd]
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
        if limits and name in limits:
            act.forcerange = [-limits[name], limits[name]]
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        else:
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_FALSE


def _add_geoms(robot: RobotFile, spec: mujoco.MjSpec) -> None:
    """The file's extra collision shapes; and its collision groups made to collide (floor and robot)."""
    for geom in spec.geoms:
        if geom.group in robot.collision_groups:
            geom.contype, geom.conaffinity = 1, 1
    kinds = {"box": mujoco.mjtGeom.mjGEOM_BOX, "capsule": mujoco.mjtGeom.mjGEOM_CAPSULE,
             "sphere": mujoco.mjtGeom.mjGEOM_SPHERE}  # fmt: skip
    for g in robot.geoms:
        bits = ROBOT_BIT if g.collides == "robot" else 1 | ROBOT_BIT
        size = [*g.size, 0.0, 0.0][:3]
        geom = spec.body(g.body).add_geom(type=kinds[g.type], size=size, pos=list(g.pos), contype=bits,
                                          conaffinity=bits, mass=0, rgba=[0.75, 0.75, 0.8, 1])  # fmt: skip
        if g.name:
            geom.name = g.name
        if g.to_body:
            geom.fromto = [*g.pos, *spec.body(g.to_body).pos]


def _set_masses(robot: RobotFile, spec: mujoco.MjSpec, model0: mujoco.MjModel) -> None:
    for name, mass in robot.body_mass.items():
        b = model0.body(name)
        body = spec.body(name)
        body.explicitinertial = True
        body.mass, body.ipos, body.iquat = mass, b.ipos.copy(), b.iquat.copy()
        body.inertia = b.inertia * (mass / b.mass[0]) if b.mass[0] > 0 else b.inertia
        body.fullinertia = [np.nan] * 6


def _strip(spec: mujoco.MjSpec) -> None:
    """What ppolab replaces: actuators, sensors, keyframes, equalities (a URDF's mimic joints), tendons,
    explicit contact pairs (they name a scene's floor), and cameras (a video's is ppolab's tracking one)."""
    for kind in ("actuators", "sensors", "keys", "equalities", "tendons", "cameras", "pairs"):
        for item in list(getattr(spec, kind)):
            spec.delete(item)


def one_line(exc: Exception) -> str:
    """MuJoCo's message (several lines, the element and its name among them) as one line."""
    return "; ".join(line.strip() for line in str(exc).replace("\\n", "\n").splitlines() if line.strip())


def _compile(spec: mujoco.MjSpec, robot: RobotFile, path: Path) -> mujoco.MjModel:
    """Compile, a refusal being one line naming the robot file, the model and MuJoCo's element."""
    try:
        return spec.compile()
    except ValueError as exc:
        raise UserError(
            f"{robot.where('model.path')}: MuJoCo cannot compile {path}: {one_line(exc)}; fix that "
            "element in the model, or add what it lacks in the robot file (geoms:, body_mass:)"
        ) from None


def build(robot_json: dict[str, Any], physics_dt: float, kp: dict, kd: dict, armature: dict, damping: dict,
          visuals: bool, stairs: int) -> mujoco.MjModel:  # fmt: skip
    """The task model of a robot file (the model cache's builder: JSON-able parameters only)."""
    robot = RobotFile(**robot_json)
    p = BuildParams(physics_dt, kp, kd, armature, damping, visuals, stairs)
    path = robot.model_path()
    with tempfile.TemporaryDirectory() as meshes:
        spec = _fresh_spec(robot, path, visuals, Path(meshes))
        _float_root(robot, spec)
        spec.compiler.fusestatic = False  # every body keeps its name until the last compile
        model0 = _compile(spec.copy(), robot, path)
        _check_names(robot, model0)
        spec.option.timestep = physics_dt
        limits = _torque_limits(robot, spec, path, [model0.joint(i).name for i in range(model0.njnt)])
        _strip(spec)
        _set_masses(robot, spec, model0)
        held = _edit_joints(robot, spec, model0, p)
        _add_geoms(robot, spec)
        for k in range(stairs):  # placed per episode by the task; out of the way below the floor until then
            spec.worldbody.add_geom(name=f"stair{k}", type=mujoco.mjtGeom.mjGEOM_BOX, size=list(STAIR_HALF),
                                    pos=[0, 0, -5], rgba=[0.55, 0.5, 0.45, 1], contype=1, conaffinity=1)  # fmt: skip
        add_servos(robot, spec, [*robot.legs, *held], p, limits)
        model1 = _compile(spec, robot, path)
        height = _add_sensors(robot, spec, model1, nominal_joints(robot, model0))
        add_scene(spec, spec.body(robot.root), size=height)
        spec.compiler.fusestatic = True  # welded bodies become one: fewer bodies to step
        _name_merged_bodies(spec, model1)
        return spec.compile()


def _name_merged_bodies(spec: mujoco.MjSpec, unfused: mujoco.MjModel) -> None:
    """A text element `merged:<body>` naming the body each welded body is merged into by fusestatic: a
    setting that names a body by its model's name (LHW's perturbation bodies) still finds it."""
    fused = spec.copy().compile()
    kept = {fused.body(i).name for i in range(fused.nbody)}
    for i in range(1, unfused.nbody):
        name = unfused.body(i).name
        if not name or name in kept:
            continue
        parent = i
        while unfused.body(parent).name not in kept:
            parent = int(unfused.body_parentid[parent])
        spec.add_text(name=MERGED + name, data=unfused.body(parent).name or "world")


def body_id(model: mujoco.MjModel, name: str) -> int | None:
    """The id of the body `name` in a built model, or of the body it was merged into (None: no such body)."""
    try:
        return int(model.body(name).id)
    except KeyError:
        pass
    for k in range(model.ntext):
        if mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_TEXT, k) == MERGED + name:
            start = int(model.text_adr[k])
            target = bytes(model.text_data[start : start + int(model.text_size[k]) - 1]).decode()
            return body_id(model, target)
    return None


def posed(model: mujoco.MjModel, nominal: dict[str, float]) -> mujoco.MjData:
    """Data at the nominal pose (kinematics only)."""
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0
    for j in range(model.njnt):
        if model.joint(j).name in nominal:
            data.qpos[model.jnt_qposadr[j]] = nominal[model.joint(j).name]
    mujoco.mj_kinematics(model, data)
    return data


def _foot_frame(
    robot: RobotFile, model: mujoco.MjModel, data: mujoco.MjData, side: str
) -> tuple[str, np.ndarray, np.ndarray]:
    """The foot's body, and its sole box (centre of its bottom, half sizes) in the world at the nominal pose."""
    foot = getattr(robot.feet, side)
    if foot.site:
        site = model.site(foot.site)
        body = model.body(site.bodyid[0]).name
        centre, half = data.site_xpos[site.id].copy(), site.size.copy()
        return body, centre - [0, 0, half[2]], np.maximum(half, 0.005)
    bid = model.body(foot.body).id
    corners = []
    for g in range(model.ngeom):
        if model.geom_bodyid[g] != bid or not (model.geom_contype[g] or model.geom_conaffinity[g]):
            continue
        c, h = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
        box = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * h + c
        corners.append(box @ data.geom_xmat[g].reshape(3, 3).T + data.geom_xpos[g])
    if not corners:
        raise UserError(f"{robot.where(f'feet.{side}.body')}: {foot.body!r} has no collision geom to stand on; "
                        "add one under geoms: (a box sole)")  # fmt: skip
    pts = np.concatenate(corners)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    return foot.body, (lo + hi) / 2 - [0, 0, (hi[2] - lo[2]) / 2], (hi - lo) / 2


def _in_body(model: mujoco.MjModel, data: mujoco.MjData, body: str, world: np.ndarray) -> tuple[list, list]:
    b = model.body(body).id
    rot = data.xmat[b].reshape(3, 3)
    quat = np.zeros(4)
    mujoco.mju_negQuat(quat, data.xquat[b])
    return list(rot.T @ (world - data.xpos[b])), list(quat)


def _add_sensors(robot: RobotFile, spec: mujoco.MjSpec, model: mujoco.MjModel, nominal: dict[str, float]) -> float:
    """Sole and touch sites under each foot (world-aligned at the nominal pose), the head site, the sensors,
    and the nominal pose of every joint left, as numerics (`nominal:<joint>`) the built model keeps."""
    data = posed(model, nominal)
    for j in range(model.njnt):
        name = model.joint(j).name
        if name in nominal:
            spec.add_numeric(name=f"{NOMINAL}{name}", data=[nominal[name]])
    site_of = {}
    for side in ("right", "left"):
        body, sole, half = _foot_frame(robot, model, data, side)
        centre = sole + [0, 0, half[2]]
        pos, quat = _in_body(model, data, body, centre)
        spec.body(body).add_site(name=f"{side}_touch", type=mujoco.mjtGeom.mjGEOM_BOX, pos=pos, quat=quat,
                                 size=list(half + TOUCH_MARGIN), group=4)  # fmt: skip
        pos, quat = _in_body(model, data, body, sole)
        spec.body(body).add_site(name=SOLE.format(side), pos=pos, quat=quat, size=[0.01, 0, 0], group=4)
        site_of[side] = SOLE.format(side)
    spec.body(robot.head.body).add_site(name="head", pos=list(robot.head.offset), size=[0.01, 0, 0], group=4)
    S, SITE = mujoco.mjtSensor, mujoco.mjtObj.mjOBJ_SITE
    for side in ("right", "left"):
        spec.add_sensor(name=f"{side}_touch", type=S.mjSENS_TOUCH, objtype=SITE, objname=f"{side}_touch")
    for side in ("right", "left"):
        spec.add_sensor(name=f"{side}_sole_vel", type=S.mjSENS_FRAMELINVEL, objtype=SITE, objname=site_of[side])
    for side in ("right", "left"):
        spec.add_sensor(name=f"{side}_sole_pos", type=S.mjSENS_FRAMEPOS, objtype=SITE, objname=site_of[side])
    spec.add_sensor(name="head_pos", type=S.mjSENS_FRAMEPOS, objtype=SITE, objname="head")
    for joint in robot.legs:  # each leg servo's force: read with the rest of sensordata, no second copy per env
        spec.add_sensor(name=f"{TORQUE}{joint}", type=S.mjSENS_ACTUATORFRC, objtype=mujoco.mjtObj.mjOBJ_ACTUATOR,
                        objname=joint)  # fmt: skip
    body = mujoco.mjtObj.mjOBJ_XBODY  # contacts with both geoms in the robot's tree (found: 1, nearest, 1 of them)
    spec.add_sensor(name=SELF_CONTACT, type=S.mjSENS_CONTACT, objtype=body, objname=robot.root, reftype=body,
                    refname=robot.root, intprm=[1, 1, 1])  # fmt: skip
    soles = [_foot_frame(robot, model, data, side)[1][2] for side in ("right", "left")]
    return float(data.xpos[model.body(robot.root).id][2] - min(soles))  # the root's standing height


class Sensors:
    """Named slices of `sensordata`: a task reads `sensors[:, s.touch]`, never a bare position."""

    def __init__(self, model: mujoco.MjModel) -> None:
        def span(*names: str) -> slice:
            ids = [model.sensor(n).id for n in names]
            start = int(model.sensor_adr[ids[0]])
            stop = int(model.sensor_adr[ids[-1]] + model.sensor_dim[ids[-1]])
            return slice(start, stop)

        self.touch = span("right_touch", "left_touch")  # (2,) N on each sole
        self.sole_vel = span("right_sole_vel", "left_sole_vel")  # (6,) world velocity of each sole
        self.sole_pos = span("right_sole_pos", "left_sole_pos")  # (6,) world position of each sole's bottom
        self.head_pos = span("head_pos")  # (3,)


@dataclass
class Mirror:
    """Each leg joint's twin (index into the legs) and the sign that maps its angle onto the twin's."""

    twin: np.ndarray
    sign: np.ndarray


def derive_mirror(robot: RobotFile, model: mujoco.MjModel, nominal_qpos: np.ndarray) -> Mirror:
    """Twins from the left/right naming; signs from the joint axes: a joint whose axis, reflected in the
    sagittal plane (as a rotation axis: (-x, y, -z)), is the twin's axis keeps its sign; the opposite axis
    flips it. Axes that are neither are a model that is not left/right symmetric: refused by name."""
    data = mujoco.MjData(model)
    data.qpos[:] = nominal_qpos
    mujoco.mj_kinematics(model, data)
    legs = robot.legs
    twin = np.array([legs.index(twin_name(j, robot.mirror.right, robot.mirror.left)) for j in legs])
    sign = np.ones(len(legs))
    for k, name in enumerate(legs):
        a = data.xaxis[model.joint(name).id]
        b = data.xaxis[model.joint(legs[twin[k]]).id]
        dot = float(np.dot(a * [-1, 1, -1], b))
        if abs(dot) < 0.95:
            raise UserError(f"{robot.where('mirror')}: {name!r} and {legs[twin[k]]!r} are not mirror images "
                            f"(axes {np.round(a, 3).tolist()} and {np.round(b, 3).tolist()})")  # fmt: skip
        sign[k] = 1.0 if dot > 0 else -1.0
    return Mirror(twin, sign)


@dataclass
class Robot:
    """A built robot: its file, model, indices, nominal standing pose, mirror and weight."""

    file: RobotFile
    model: mujoco.MjModel
    sensors: Sensors
    nominal_qpos: np.ndarray  # soles on the floor
    mirror: Mirror
    weight: float  # N
    height: float  # root height at the nominal pose, m


def load(robot: RobotFile, p: BuildParams, pose: dict[str, float] | None = None) -> Robot:
    """The robot's task model (cached), its nominal pose standing on the floor, its mirror and weight.
    `pose`: leg joint angles by joint-name part that replace the robot file's (a task's nominal_pose)."""
    params = {"robot_json": robot.model_dump(mode="json"), "physics_dt": p.physics_dt, "kp": p.kp, "kd": p.kd,
              "armature": p.armature, "damping": p.damping, "visuals": p.visuals, "stairs": p.stairs}  # fmt: skip
    model = load_or_build(f"robot-{robot.name}", [robot.model_path()], build, params)
    qpos = model.qpos0.copy()
    for k in range(model.nnumeric):
        name = model.numeric(k).name
        if name.startswith(NOMINAL):
            qpos[model.joint(name[len(NOMINAL) :]).qposadr[0]] = model.numeric_data[model.numeric_adr[k]]
    for leg in robot.legs if pose else []:
        if (value := part_value(pose, leg)) is not None:
            qpos[model.joint(leg).qposadr[0]] = value
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    soles = [data.site_xpos[model.site(SOLE.format(s)).id][2] for s in ("right", "left")]
    qpos[2] -= min(soles)  # stand the soles on the floor
    root = model.body(robot.root).id
    return Robot(
        file=robot, model=model, sensors=Sensors(model), nominal_qpos=qpos,
        mirror=derive_mirror(robot, model, qpos), weight=float(model.body_subtreemass[root] * -model.opt.gravity[2]),
        height=float(qpos[model.jnt_qposadr[model.body_jntadr[root]] + 2]),
    )  # fmt: skip
