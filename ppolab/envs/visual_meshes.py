"""Lighter meshes for pictures: a robot's shown meshes decimated to a face budget, its physics untouched.

Offscreen rendering on a CPU (Mesa's llvmpipe) costs time per triangle: MuJoCo Menagerie's G1 shows 393,000
faces and Berkeley Humanoid 544,000, 73 and 110 ms a 640 x 480 frame against JVRC-1's 15 ms at 8,700. Each
visual-only geom (no contacts) is pointed at a quadric-decimated copy of its mesh (fast-simplification,
through trimesh), so that all the shown faces together stay within VISUAL_FACES. The collision geoms keep
the original meshes (their convex hulls are the physics), and a copy takes no mass: an episode with the
robot's looks is the episode without them.
"""

from __future__ import annotations

from pathlib import Path

import mujoco

VISUAL_FACES = 60_000  # the shown faces of a robot at most, all meshes together
MIN_FACES = 200  # no mesh is cut below this: small parts keep their shape
AGGRESSION = 3  # fast-simplification's: its default (7) pulls spikes out of Berkeley Humanoid's feet (a 5.5 cm
# wide part became 9.8 cm); at 3 the outline holds within 3 mm, with somewhat more faces than asked for
SHOWN = "{}_shown"  # the name of a mesh's decimated copy


def lighten(spec: mujoco.MjSpec, model_path: Path, out: Path) -> None:
    """Point the visual-only mesh geoms of `spec` at decimated copies written to `out`, when the shown meshes
    exceed the budget."""
    import trimesh

    shown = [g for g in spec.geoms if g.type == mujoco.mjtGeom.mjGEOM_MESH and g.contype == 0 and g.conaffinity == 0]
    meshes = {m.name: m for m in spec.meshes if m.file and m.name in {g.meshname for g in shown}}
    loaded = {name: trimesh.load(str(_file(spec, model_path, m)), force="mesh") for name, m in meshes.items()}
    faces = {name: len(t.faces) for name, t in loaded.items()}
    total = sum(faces[g.meshname] for g in shown if g.meshname in faces)
    if total <= VISUAL_FACES:
        return
    ratio = VISUAL_FACES / total
    for name, mesh in loaded.items():
        target = max(MIN_FACES, int(faces[name] * ratio))
        if faces[name] <= target:
            continue
        file = out / (SHOWN.format(name) + ".stl")
        mesh.simplify_quadric_decimation(face_count=target, aggression=AGGRESSION).export(str(file))
        copy = spec.add_mesh(name=SHOWN.format(name), file=str(file), scale=meshes[name].scale)
        copy.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL  # a decimated surface may not close
        for geom in shown:
            if geom.meshname == name:
                geom.meshname = copy.name


def _file(spec: mujoco.MjSpec, model_path: Path, mesh: mujoco.MjsMesh) -> Path:
    """Where a mesh's file is: as written if absolute, else under the model's folder and its meshdir."""
    file = Path(mesh.file)
    return file if file.is_absolute() else model_path.parent / (spec.meshdir or "") / file
