"""Robot models as they are published, made into ones MuJoCo compiles, each repair said in one line.

Published URDFs (and, for the shapes and inertias, MJCFs) carry what ROS tools tolerate and MuJoCo's compiler refuses:
- `package://NAME/...` mesh paths: resolved from the URDF's own package (a folder named NAME above it), from the
  robot file's `packages:` map, or from an installed Python package NAME; relative paths from the URDF's folder;
- geometry of zero size (a `<sphere radius="0"/>` standing for "no shape"): dropped;
- an inertia that is no inertia (`ixx="0"`, a negative eigenvalue, one moment above the sum of the other two):
  replaced by the nearest valid diagonal one (its eigenvalues floored, then balanced), link by link. MuJoCo's
  `balanceinertia` and `boundinertia` fix a zero moment but not a full inertia with a negative eigenvalue, and
  say nothing of which link they changed;
- a massless frame above the floating base (a `root` link at the floor, the pelvis below it on a fixed joint):
  the frames above the robot file's `root:` link are dropped, so that link is the top body and takes the free
  joint.

`repair_urdf` returns the URDF text to compile and the lines to show; `repair_mjcf` edits a loaded MJCF's spec;
nothing is written.
"""

from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from ppolab.errors import UserError

MIN_MOMENT = 1e-6  # kg m^2: a repaired inertia's smallest principal moment


def repair_urdf(path: Path, root: str, packages: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """The URDF at `path` ready for MuJoCo (see the module's docstring), and one line per repair."""
    try:
        tree = ET.parse(path)
    except ET.ParseError as exc:
        raise UserError(f"{path}: not a readable URDF ({exc})") from None
    robot, notes = tree.getroot(), []
    _resolve_paths(robot, path, packages or {}, notes)
    _drop_empty_geoms(robot, notes)
    _fix_inertias(robot, notes)
    _drop_frames_above(robot, root, notes)
    return ET.tostring(robot, encoding="unicode"), notes


def _package_dir(name: str, urdf: Path, packages: dict[str, str]) -> tuple[Path | None, str]:
    """Where package://NAME/ is, and how it was found: the robot file's map, a folder NAME above the URDF, or
    an installed Python package NAME (a robot-description package on PyPI, as JVRC-1's)."""
    if name in packages:
        return Path(packages[name]).expanduser(), "the robot file's packages:"
    spec = importlib.util.find_spec(name) if name.isidentifier() else None
    if spec is not None and spec.submodule_search_locations:  # as intended: nothing to say
        return Path(list(spec.submodule_search_locations)[0]), ""
    for parent in urdf.resolve().parents:
        if parent.name == name:
            return parent, "the folder above the URDF"
    return None, ""


def _resolve_paths(robot: ET.Element, urdf: Path, packages: dict[str, str], notes: list[str]) -> None:
    unresolved, said = set(), {}
    for mesh in robot.iter("mesh"):
        name = mesh.get("filename", "")
        if name.startswith("package://"):
            package, _, rest = name.removeprefix("package://").partition("/")
            folder, how = _package_dir(package, urdf, packages)
            if folder is None:
                unresolved.add(package)
                continue
            if how:
                said[package] = f"repaired: package://{package}/ paths resolved to {folder} ({how})"
            mesh.set("filename", str(folder / rest))
        elif name.startswith("file://"):
            mesh.set("filename", name.removeprefix("file://"))
        elif name and not Path(name).is_absolute():
            mesh.set("filename", str((urdf.parent / name).resolve()))
    notes += list(said.values())
    for package in sorted(unresolved):
        notes.append(f"package://{package}/ paths are not resolved (no folder or Python package {package}); the "
                     f"meshes go unused in training; for videos give `packages: {{{package}: FOLDER}}`")  # fmt: skip


def _drop_empty_geoms(robot: ET.Element, notes: list[str]) -> None:
    for link in robot.iter("link"):
        for kind in ("collision", "visual"):
            for element in list(link.findall(kind)):
                shape = element.find("geometry")
                sizes = _sizes(shape[0]) if shape is not None and len(shape) else []
                if sizes and min(sizes) <= 0:
                    link.remove(element)
                    notes.append(f"repaired: link {link.get('name')}: dropped a {kind} {shape[0].tag} of zero size")


def _sizes(shape: ET.Element) -> list[float]:
    attrs = {"sphere": ["radius"], "cylinder": ["radius", "length"], "capsule": ["radius", "length"]}
    try:
        if shape.tag == "box":
            return [float(v) for v in shape.get("size", "1 1 1").split()]
        return [float(shape.get(a, "1")) for a in attrs.get(shape.tag, [])]
    except ValueError:
        return []


def valid_moments(matrix: np.ndarray) -> np.ndarray | None:
    """None for an inertia a body can have (positive principal moments, each at most the sum of the other two),
    else the nearest diagonal one: its principal moments floored, then balanced."""
    moments = np.linalg.eigvalsh(matrix)
    if moments.min() > 0 and 2 * moments.max() <= moments.sum() * (1 + 1e-9):
        return None
    fixed = np.maximum(moments, MIN_MOMENT)
    return np.minimum(fixed, (fixed.sum() - fixed) * 0.999 + MIN_MOMENT)  # each below the sum of the others


def _said(where: str, before: np.ndarray, after: np.ndarray) -> str:
    return (f"repaired: {where}: its inertia had principal moments {', '.join(f'{m:.3g}' for m in before)} (not a "
            f"body's); now diagonal {', '.join(f'{m:.3g}' for m in after)} kg m^2")  # fmt: skip


def _fix_inertias(robot: ET.Element, notes: list[str]) -> None:
    for link in robot.iter("link"):
        inertia = link.find("inertial/inertia")
        if inertia is None:
            continue
        keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        try:
            xx, xy, xz, yy, yz, zz = (float(inertia.get(k, "0")) for k in keys)
        except ValueError:
            continue
        matrix = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        fixed = valid_moments(matrix)
        if fixed is not None:
            for k, v in zip(keys, (fixed[0], 0.0, 0.0, fixed[1], 0.0, fixed[2])):
                inertia.set(k, repr(float(v)))
            notes.append(_said(f"link {link.get('name')}", np.linalg.eigvalsh(matrix), fixed))


def repair_mjcf(spec, notes: list[str]) -> None:
    """An MJCF's shapes of zero size dropped and its impossible inertias repaired, body by body."""
    import mujoco

    sized = {mujoco.mjtGeom.mjGEOM_SPHERE: 1, mujoco.mjtGeom.mjGEOM_CAPSULE: 1, mujoco.mjtGeom.mjGEOM_CYLINDER: 1,
             mujoco.mjtGeom.mjGEOM_BOX: 3, mujoco.mjtGeom.mjGEOM_ELLIPSOID: 3}  # fmt: skip
    for body in spec.bodies:
        for geom in list(body.geoms):
            n = sized.get(geom.type)
            if n and np.isnan(geom.fromto[0]) and min(geom.size[:n]) <= 0:
                spec.delete(geom)
                notes.append(f"repaired: body {body.name}: dropped a {geom.type.name.removeprefix('mjGEOM_').lower()} "
                             "geom of zero size")  # fmt: skip
        if not body.explicitinertial:
            continue
        full = body.fullinertia
        if np.isnan(full[0]):
            matrix = np.diag(body.inertia)
        else:
            xx, yy, zz, xy, xz, yz = full
            matrix = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        fixed = valid_moments(matrix)
        if fixed is not None:
            body.inertia = fixed
            body.fullinertia = [np.nan, 0, 0, 0, 0, 0]
            notes.append(_said(f"body {body.name}", np.linalg.eigvalsh(matrix), fixed))


def _drop_frames_above(robot: ET.Element, root: str, notes: list[str]) -> None:
    """Massless links joined by fixed joints above `root`: dropped, so `root` is the top link."""
    links = {link.get("name"): link for link in robot.findall("link")}
    parent_of = {j.find("child").get("link"): j for j in robot.findall("joint") if j.find("child") is not None}
    if root not in links or root not in parent_of:
        return
    chain, name = [], root
    while name in parent_of:
        joint = parent_of[name]
        parent = joint.find("parent").get("link")
        mass = links.get(parent).find("inertial/mass") if parent in links else None
        if joint.get("type") != "fixed" or (mass is not None and float(mass.get("value", "0")) > 0):
            return  # a joint that moves, or a frame with mass: the robot file's root is not below frames only
        chain.append((joint, parent))
        name = parent
    removed = {p for _, p in chain}
    for joint in robot.findall("joint"):  # other frames hung on the dropped ones hang on the root instead
        if (
            joint.find("parent") is not None
            and joint.find("parent").get("link") in removed
            and joint not in {j for j, _ in chain}
        ):
            joint.find("parent").set("link", root)
    for joint, parent in chain:
        robot.remove(joint)
        robot.remove(links[parent])
    dropped = ", ".join(p for _, p in chain)
    notes.append(f"repaired: the massless frame(s) {dropped} above root {root!r} dropped: {root} is the floating base")
