"""Robot files: `ppolab robots`, `ppolab robots check`, mistakes named by file and line, and a robot of
the user's own trained, resumed and played from its robot file alone."""

from __future__ import annotations

import json
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest
import yaml
from conftest import REPO, read_metrics, run_ppolab

from ppolab.envs import robot_file
from ppolab.errors import UserError

APOLLO = REPO / "examples" / "robots" / "apollo.yaml"


def test_robots_lists_every_shipped_robot_and_its_envs():
    proc = run_ppolab("robots")
    assert proc.returncode == 0, proc.stderr
    names = [line.split(":")[0] for line in proc.stdout.splitlines() if ": " in line and "(envs " in line]
    assert len(names) >= 6 and {"jvrc", "h1", "g1", "t1", "berkeley"} <= set(names)
    assert "jvrc_walk, jvrc_stand, jvrc_step" in proc.stdout


def test_a_shipped_robot_passes_its_check_and_gets_a_picture(tmp_path):
    picture = tmp_path / "g1.png"
    proc = run_ppolab("robots", "check", "g1", "--picture", str(picture), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["passed"] and result["mirror_twice_identity"] and result["nominal_mirrors_to_itself"]
    assert result["stand_harness"]["seconds_up"] >= 2.0 and 0.8 <= result["stand_harness"]["weight_on_soles"] <= 1.2
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.stat().st_size > 10_000
    from ppolab.cli.robots_cli import _check_picture

    _check_picture(picture, named=False)  # its own picture: a later check may replace it, by default too


def test_the_check_says_when_the_walking_gains_need_a_policy_that_starts_standing(tmp_path):
    soft = run_ppolab("robots", "check", "h1", "--no-picture")  # h1_walk takes LHW's soft gains
    assert soft.returncode == 0, soft.stdout + soft.stderr
    assert "action 0 does not hold the nominal pose" in soft.stdout and "--start-standing" in soft.stdout
    path = tmp_path / "weak.yaml"  # a robot whose knees and ankles cannot carry it: the check fails
    data = yaml.safe_load((REPO / "examples" / "robots" / "apollo.yaml").read_text())
    data["torque_limit"] = {"hip": 300, "knee": 1, "ankle": 1}
    path.write_text(yaml.safe_dump(data))
    weak = run_ppolab("robots", "check", str(path), "--json", "--no-picture")
    assert weak.returncode == 1, weak.stdout + weak.stderr
    assert not json.loads(weak.stdout)["passed"]


def test_the_check_reports_the_legs_passive_drag_and_which_joints_the_model_damps_past_half_their_limit(tmp_path):
    """Menagerie's Apollo damps its hip yaw at 171 N m s/rad: 350 N m of drag at 2 rad/s against a 120 N m
    limit. Reported (with the joints over half their limit and the key that sets it), not judged: Apollo
    learned to walk with it. The example file zeroes it, as MuJoCo Playground's Apollo does."""
    data = yaml.safe_load(APOLLO.read_text())
    del data["damping"]
    path = _write(tmp_path, yaml.safe_dump(data, sort_keys=False))
    damped = run_ppolab("robots", "check", str(path), "--no-picture")
    assert damped.returncode == 0, damped.stdout + damped.stderr
    line = next(x for x in damped.stdout.splitlines() if "passive drag" in x)
    assert "most l_hip_ie, 349.9 of 120.0 N m; over half the limit: hip_ie, hip_aa, hip_fe" in line, line
    assert "`damping:`" in line and "(not judged)" in line
    fine = run_ppolab("robots", "check", str(APOLLO), "--no-picture", "--json")
    assert fine.returncode == 0, fine.stdout + fine.stderr
    drag = json.loads(fine.stdout)["swing_drag"]
    assert drag["over_half"] == [] and drag["share"] <= 0.5 and drag["joint"] == "l_hip_ie"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bot.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda d: d.update(legz=d.pop("legs")), "unknown key 'legz'; did you mean 'legs'?"),
        (lambda d: d.update(legs=[j + "x" if "hip_ie" in j else j for j in d["legs"]]), "no joint 'l_hip_iex'"),
        (lambda d: d["legs"].pop(0), "has no twin 'l_hip_ie' among the legs"),
        (lambda d: d["feet"]["left"].update(body="l_fooot_link"), "feet.left.body: no body 'l_fooot_link'"),
        (lambda d: d["model"].update(package="no_such_package_here"), "model.package: no Python package"),
        (lambda d: d["gains"]["kp"].update(knee=-1), "gains.kp.knee: Input should be greater than or equal to 0"),
        (lambda d: d["nominal"].update(keyframe="sit"), "nominal.keyframe: no keyframe 'sit'"),
        (lambda d: d["gains"].update(kp={"hip": 1.0}), "gains.kp: no gain for joint 'l_knee_fe'"),
        (lambda d: d.update(name="Big Bot"), "name: use lower-case letters"),
    ],
)
def test_a_mistake_in_a_robot_file_is_one_line_naming_the_file_and_exit_2(tmp_path, edit, says):
    data = yaml.safe_load(APOLLO.read_text())
    edit(data)
    path = _write(tmp_path, yaml.safe_dump(data, sort_keys=False))
    proc = run_ppolab("robots", "check", str(path), "--no-picture")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert str(path) in proc.stderr and says in proc.stderr, proc.stderr


def test_a_key_error_names_its_line(tmp_path):
    text = APOLLO.read_text().replace("collision_groups: [3]", "collision_groups: [3]\nsole: l_foot_link")
    path = _write(tmp_path, text)
    line = text.splitlines().index("sole: l_foot_link") + 1
    with pytest.raises(UserError) as err:
        robot_file.read(path)
    assert str(err.value).startswith(f"{path}:{line}: unknown key 'sole'")


def test_a_robot_of_ones_own_trains_resumes_and_plays_from_its_robot_file(tmp_path):
    """The example robot file (a Menagerie model ppolab ships no file for): trained with --robot; then resumed
    and played with nothing but the run folder, whose env.yaml keeps the robot file's contents."""
    logdir = tmp_path / "runs"
    args = ("--n-itr", "2", "--num-procs", "2", "--max-traj-len", "20", "--minibatch-size", "8",
            "--eval-episodes", "1", "--seed", "1", "--logdir", str(logdir), "--run-name", "mine")  # fmt: skip
    proc = run_ppolab("train", "--env", "apollo_walk", "--robot", str(APOLLO), *args)
    assert proc.returncode == 0, proc.stderr
    run = logdir / "mine"
    saved = yaml.safe_load((run / "env.yaml").read_text())
    assert saved["robot"]["name"] == "apollo" and saved["robot"]["legs"][0] == "l_hip_ie"
    proc = run_ppolab("train", "--resume", str(run), "--n-itr", "3")
    assert proc.returncode == 0, proc.stderr
    assert [r["iteration"] for r in read_metrics(run) if r["type"] == "iteration"] == [0, 1, 2]
    proc = run_ppolab("eval", "--path", str(run), "--episodes", "1", "--max-steps", "20", "--mode", "forward",
                      "--vx", "0.2")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "env apollo_walk" in proc.stdout


def test_a_robot_file_needs_its_env_named_and_an_unknown_robot_env_says_how(tmp_path):
    proc = run_ppolab("train", "--env", "apollo_walk", "--logdir", str(tmp_path))
    assert proc.returncode == 2 and "a robot of your own: --robot FILE" in proc.stderr, proc.stderr
    proc = run_ppolab("train", "--env", "h1_walk", "--robot", str(APOLLO), "--logdir", str(tmp_path))
    assert proc.returncode == 2 and "gives apollo_walk, apollo_stand, apollo_step" in proc.stderr, proc.stderr
    assert not any(tmp_path.iterdir())


def test_a_robot_file_beside_its_own_mjcf_and_feet_given_as_sites(tmp_path):
    """A user's MJCF (here a copy of Menagerie's Berkeley Humanoid) next to the robot file, found wherever the
    command runs from; the feet given as the model's sites."""
    import shutil

    src = robot_file.shipped_robot("berkeley").model_path().parent
    shutil.copytree(src, tmp_path / "model")
    data = yaml.safe_load((robot_file.SHIPPED / "berkeley.yaml").read_text())
    data["name"] = "mybot"
    data["model"] = {"path": "model/berkeley_humanoid.xml"}
    data["feet"] = {"right": {"site": "LR_FOOT"}, "left": {"site": "LL_FOOT"}}
    path = tmp_path / "mybot.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    proc = run_ppolab("robots", "check", str(path), "--json", "--no-picture", cwd=REPO / "tests")
    assert proc.returncode in (0, 1), proc.stderr  # built and checked (exit 1 names a failed check)
    result = json.loads(proc.stdout)
    assert result["model"] == str(tmp_path / "model" / "berkeley_humanoid.xml")
    assert result["mirror_twice_identity"] and result["nominal_mirrors_to_itself"] and result["legs"] == 12


def test_the_check_never_replaces_a_file_that_is_not_its_picture(tmp_path):
    mine = tmp_path / "g1.png"
    mine.write_text("my notes")
    link = tmp_path / "link.png"
    link.symlink_to(tmp_path / "elsewhere.png")
    for picture, says in ((mine, "exists and is not a PNG"), (link, "is a symlink")):
        proc = run_ppolab("robots", "check", "g1", "--picture", str(picture))
        assert proc.returncode == 2 and says in proc.stderr, proc.stderr
    assert mine.read_text() == "my notes" and not (tmp_path / "elsewhere.png").exists()
    photo = _write(tmp_path, APOLLO.read_text()).with_suffix(".png")  # bot.yaml, and the user's bot.png beside it
    photo.write_bytes(iio.imwrite("<bytes>", np.zeros((8, 8, 3), np.uint8), extension=".png"))
    before = photo.read_bytes()
    proc = run_ppolab("robots", "check", str(photo.with_suffix(".yaml")))  # the default picture: bot.png
    assert proc.returncode == 2 and f"the picture {photo}: exists and ppolab did not write it" in proc.stderr
    assert photo.read_bytes() == before


def test_the_check_scales_a_walk_out_of_proportion_to_the_robots_height(tmp_path):
    """OP3's root is 0.25 m high: told the walking task's default 0.4 m/s on a 0.56 s half cycle it would step
    0.9 of that. The check says so and gives G1's walk scaled to its height; the file with those settings
    builds and steps in proportion. G1 itself gets no advice."""
    shipped = REPO / "ppolab" / "envs" / "robots"
    big = run_ppolab("robots", "check", str(shipped / "g1.yaml"), "--no-picture", "--json")
    assert big.returncode == 0, big.stdout + big.stderr
    assert json.loads(big.stdout)["gait_size"]["advice"] is None
    small = run_ppolab("robots", "check", str(shipped / "op3.yaml"), "--no-picture")
    assert small.returncode == 0, small.stdout + small.stderr
    line = next(x for x in small.stdout.splitlines() if "fastest step" in x)
    assert "0.89 of the root's height, past 0.45" in line and "(not judged)" in line, line
    as_json = run_ppolab("robots", "check", str(shipped / "op3.yaml"), "--no-picture", "--json")
    advice = json.loads(as_json.stdout)["gait_size"]["advice"]
    assert advice == {"forward_speed": [0.06, 0.23], "swing_duration": 0.22, "stance_duration": 0.1}
    assert "forward_speed: [0.06, 0.23], swing_duration: 0.22, stance_duration: 0.1" in line
    data = yaml.safe_load((shipped / "op3.yaml").read_text())
    data["tasks"]["walk"] = {**data["tasks"].get("walk", {}), **advice}
    path = _write(tmp_path, yaml.safe_dump(data, sort_keys=False))
    scaled = run_ppolab("robots", "check", str(path), "--no-picture", "--json")
    assert scaled.returncode == 0, scaled.stdout + scaled.stderr
    size = json.loads(scaled.stdout)["gait_size"]
    assert size["advice"] is None and 0.2 <= size["share"] <= 0.34, size
