"""A robot description as packages publish it loads without hand edits: a copy of JVRC-1's URDF, broken the
ways published URDFs are (zero-size shapes, an inertia that is none, a massless frame above the floating base,
package:// mesh paths), passes `robots check` with one line per repair; each defect alone gives its line."""

from __future__ import annotations

import shutil
from pathlib import Path

import jvrc_description
import pytest
import yaml
from conftest import REPO, run_ppolab

SOURCE = Path(jvrc_description.__file__).parent


def _defects(text: str, which: set[str]) -> str:
    if "sphere" in which:  # two links with a shape of zero size
        for link in ("R_HIP_R_S", "L_KNEE_S"):
            text = text.replace(f'<link name="{link}">', f'<link name="{link}">\n    <collision><geometry>'
                                '<sphere radius="0"/></geometry></collision>', 1)  # fmt: skip
    if "inertia" in which:  # no inertia a body can have: a zero moment and a negative eigenvalue
        start = text.index('<link name="R_KNEE_S">')
        cut = text.index("<inertia ", start)
        end = text.index("/>", cut) + 2
        text = text[:cut] + '<inertia ixx="0" ixy="0.01" ixz="0.0" iyy="0.002" iyz="0.0" izz="0.002"/>' + text[end:]
    if "root" in which:  # a massless frame at the floor, the robot below it on a fixed joint
        text = text.replace('<link name="base_link"/>', '<link name="root"/>\n  <link name="base_link"/>\n  '
                            '<joint name="root_to_base" type="fixed"><parent link="root"/><child link="base_link"/>'
                            '<origin xyz="0 0 0.9"/></joint>', 1)  # fmt: skip
    if "package" in which:  # the mesh paths of a package of another name, found from the URDF's place
        text = text.replace("package://jvrc_description/", "package://mydesc/")
    return text


def _robot(tmp_path: Path, which: set[str]) -> Path:
    desc = tmp_path / "mydesc"
    shutil.copytree(SOURCE / "meshes", desc / "meshes")
    (desc / "urdf").mkdir()
    (desc / "urdf" / "robot.urdf").write_text(_defects((SOURCE / "urdf" / "jvrc1.urdf").read_text(), which))
    doc = yaml.safe_load((REPO / "ppolab" / "envs" / "robots" / "jvrc.yaml").read_text())
    doc.update(name="mybot", model={"path": "mydesc/urdf/robot.urdf", "meshes": "collada"})
    path = tmp_path / "mybot.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


LINES = {
    "sphere": ["link R_HIP_R_S: dropped a collision sphere of zero size", "link L_KNEE_S: dropped a collision sphere"],
    "inertia": ["link R_KNEE_S: its inertia had principal moments"],
    "root": ["the massless frame(s) root above root 'base_link' dropped"],
    "package": ["package://mydesc/ paths resolved to", "(the folder above the URDF)"],
}


def test_a_urdf_broken_four_ways_passes_robots_check_with_a_line_per_repair(tmp_path):
    robot = _robot(tmp_path, set(LINES))
    proc = run_ppolab("robots", "check", str(robot), "--no-picture", cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for expected in (line for lines in LINES.values() for line in lines):
        assert expected in proc.stdout, expected
    assert "Traceback" not in proc.stderr and not (tmp_path / "MUJOCO_LOG.TXT").exists()


@pytest.mark.parametrize("defect", sorted(LINES))
def test_each_defect_alone_gives_just_its_line(tmp_path, defect):
    robot = _robot(tmp_path, {defect})
    proc = run_ppolab("robots", "check", str(robot), "--no-picture", cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    repaired = [line for line in proc.stdout.splitlines() if "repaired:" in line]
    assert repaired and all(any(e in line for e in LINES[defect]) for line in repaired), repaired


def test_the_add_your_robot_steps_run_end_to_end_on_a_robot_file_of_ones_own(tmp_path):
    """check -> train (with checks) -> eval -> export -> the gait check, on a robot file made here from a broken
    URDF: the env and the robot travel with the run, so no step needs the file again but train."""
    import subprocess
    import sys

    robot = _robot(tmp_path, set(LINES))
    assert run_ppolab("robots", "check", str(robot), "--no-picture", cwd=tmp_path, timeout=600).returncode == 0
    logdir = tmp_path / "runs"
    train = run_ppolab("train", "--env", "mybot_walk", "--robot", str(robot), "--n-itr", "1", "--num-procs", "1",
                       "--max-traj-len", "20", "--minibatch-size", "20", "--logdir", str(logdir), cwd=tmp_path,
                       timeout=600)  # fmt: skip
    assert train.returncode == 0, train.stdout[-2000:] + train.stderr
    run = next(logdir.iterdir())
    for args in (["eval", str(run), "--episodes", "1", "--max-steps", "10"],
                 ["export", str(run), "--onnx", str(tmp_path / "p.onnx")]):  # fmt: skip
        proc = run_ppolab(*args, cwd=tmp_path, timeout=600)
        assert proc.returncode == 0 and proc.stdout.startswith(f"Policy: {run / 'actor.pt'}"), proc.stderr
    checked = subprocess.run([sys.executable, str(REPO / "benchmarks" / "humanoid_learning.py"), "--check", str(run),
                              "--gated"], capture_output=True, text=True, timeout=900, cwd=tmp_path)  # fmt: skip
    assert checked.returncode == 0, checked.stderr[-2000:]
    assert "(env mybot_walk" in checked.stdout.splitlines()[0] and '"walk"' in checked.stdout
    script = str(REPO / "benchmarks" / "humanoid_learning.py")
    wrong = subprocess.run([sys.executable, script, "--check", str(run), "--env", "jvrc_walk"], capture_output=True,
                           text=True, timeout=300, cwd=tmp_path)  # fmt: skip
    assert wrong.returncode == 2 and "was trained on mybot_walk" in wrong.stderr


def test_an_mjcf_with_a_zero_size_shape_and_an_impossible_inertia_loads_with_a_line_each(tmp_path):
    from ppolab.envs import robot_file

    shipped = robot_file.shipped_robot("berkeley")
    folder = tmp_path / "berkeley"
    shutil.copytree(shipped.model_path().parent, folder)
    model = folder / shipped.model_path().name
    text = model.read_text()
    text = text.replace('<body name="ll_hr" pos="0 0.07 0" quat="0.92388 0 0.382683 0">',
                        '<body name="ll_hr" pos="0 0.07 0" quat="0.92388 0 0.382683 0">\n<geom type="sphere" '
                        'size="0" contype="0" conaffinity="0"/>', 1)  # fmt: skip
    start = text.index('<body name="ll_haa"')
    cut = text.index("diaginertia=", start)
    end = text.index('"', text.index('"', cut) + 1) + 1
    model.write_text(text[:cut] + 'diaginertia="0 0.001 0.001"' + text[end:])
    doc = yaml.safe_load((REPO / "ppolab" / "envs" / "robots" / "berkeley.yaml").read_text())
    doc.update(name="mybk", model={"path": f"berkeley/{model.name}"})
    robot = tmp_path / "mybk.yaml"
    robot.write_text(yaml.safe_dump(doc, sort_keys=False))
    proc = run_ppolab("robots", "check", str(robot), "--no-picture", cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "repaired: body ll_hr: dropped a sphere geom of zero size" in proc.stdout
    assert "repaired: body ll_haa: its inertia had principal moments 0, 0.001, 0.001" in proc.stdout
