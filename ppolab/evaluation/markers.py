"""What the policy is told, drawn into a MuJoCo scene: the same markers in videos, filmstrips and the viewer."""

from __future__ import annotations

import mujoco
import numpy as np

from ppolab.envs.protocol import Marker


def add_marker(scene: mujoco.MjvScene, marker: Marker) -> None:
    """Append one marker's geom to `scene` (a full scene keeps what it has: markers are never physics)."""
    if scene.ngeom >= scene.maxgeom:
        return
    mat = np.eye(3)
    if marker.kind == "arrow":  # MuJoCo's arrow points along its z axis: turn z to the heading, level
        c, s = np.cos(marker.heading), np.sin(marker.heading)
        mat = np.array([[0.0, -s, c], [0.0, c, s], [-1.0, 0.0, 0.0]])
        kind = mujoco.mjtGeom.mjGEOM_ARROW
    else:
        kind = mujoco.mjtGeom.mjGEOM_SPHERE if marker.kind == "sphere" else mujoco.mjtGeom.mjGEOM_CYLINDER
    mujoco.mjv_initGeom(scene.geoms[scene.ngeom], kind, np.asarray(marker.size, float),
                        np.asarray(marker.pos, float), mat.flatten(), np.asarray(marker.rgba, np.float32))  # fmt: skip
    scene.ngeom += 1
