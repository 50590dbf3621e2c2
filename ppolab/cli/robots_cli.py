"""`ppolab robots`: the robot files ppolab ships, and `ppolab robots check FILE` for one of yours."""

from __future__ import annotations

import argparse
from pathlib import Path

from ppolab.errors import UserError
from ppolab.util import strict_json
from ppolab.util.run_folder import ACTOR

HELP = """A robot file is one YAML that makes a humanoid trainable: its model (MJCF or URDF), legs, feet,
root and head, nominal pose, PD gains, rates and left/right naming (see ppolab/envs/robots/*.yaml
and the README's "Add your robot"). Each robot gets three envs: NAME_walk, NAME_stand, NAME_step.

  ppolab robots                       the shipped robots, their envs and shipped policies
  ppolab robots check FILE            validate a robot file (a shipped robot's name works too):
                                      names, mirror, standing 2 s, a picture (FILE.png)
  ppolab train --env NAME_walk --robot FILE    train one of its tasks

check exits 0 when every check passes, 1 when one fails (the figures say which), 2 for a file
that cannot be read or built (one line naming the file, the line and the fix)."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("robots", help="the robot files, and `check FILE` to validate one",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("action", nargs="?", choices=["check"], help="check: validate a robot file")
    p.add_argument("file", nargs="?", help="the robot file (or a shipped robot's name)")
    p.add_argument("--picture", metavar="PNG", help="where the picture of the nominal pose goes (default: FILE.png "
                   "beside the file; a shipped robot: ./NAME.png)")  # fmt: skip
    p.add_argument("--no-picture", action="store_true", help="skip the picture (no rendering)")
    p.add_argument("--json", action="store_true", help="the figures as JSON (schema_version 1)")


def run_robots(ns: argparse.Namespace) -> int:
    from ppolab.envs import robot_file

    if ns.action is None:
        if ns.file:
            raise UserError(f"robots: unexpected {ns.file!r}; did you mean `ppolab robots check {ns.file}`?")
        return _list()
    if not ns.file:
        raise UserError("robots check: name a robot file (or a shipped robot: " + ", ".join(robot_file.shipped()) + ")")
    file = robot_file.read(ns.file)
    picture = None if ns.no_picture else Path(ns.picture or _default_picture(ns.file, file))
    if picture is not None:
        _check_picture(picture, named=ns.picture is not None)
    from ppolab.envs.robot_check import check

    result = check(file, picture)
    if ns.json:
        print(strict_json.dumps({"schema_version": 1, **result}, indent=2))
    else:
        _print_check(result)
    return 0 if result["passed"] else 1


def _default_picture(arg: str, file) -> Path:
    path = Path(arg)
    return path.with_suffix(".png") if path.suffix in (".yaml", ".yml") else Path(f"{file.name}.png")


def _check_picture(picture: Path, named: bool) -> None:
    """A PNG path in an existing folder, never through a symlink. An existing file there is replaced when it
    is a picture an earlier check wrote, or, named by --picture, any PNG; the default path beside the robot
    file never replaces a file of the user's (robot.png may be a photo of the robot)."""
    from ppolab.envs.robot_check import written_by_check

    flag = f"--picture {picture}" if named else f"the picture {picture}"
    if picture.suffix.lower() != ".png":
        raise UserError(f"{flag}: name a .png file")
    if not picture.parent.is_dir():
        raise UserError(f"{flag}: no folder {picture.parent}")
    if picture.is_symlink():
        raise UserError(f"{flag}: is a symlink; name another file with --picture, or give --no-picture")
    if not picture.exists() or written_by_check(picture):
        return
    try:
        png = picture.is_file() and picture.open("rb").read(8) == b"\x89PNG\r\n\x1a\n"
    except OSError:
        png = False
    if not png:
        raise UserError(f"{flag}: exists and is not a PNG; name another file with --picture, or give --no-picture")
    if not named:
        raise UserError(f"{flag}: exists and ppolab did not write it; name another file with --picture (or this "
                        "one, to replace it), or give --no-picture")  # fmt: skip


def _list() -> int:
    from ppolab.envs import robot_file
    from ppolab.envs.task_registry import task_names

    pretrained = Path.cwd() / "pretrained"
    for name in robot_file.shipped():
        f = robot_file.shipped_robot(name)
        envs = [f"{name}_{t}" for t in task_names()]
        shipped = [e for e in envs if (pretrained / e / ACTOR).is_file()]
        extra = f"; trained: {', '.join(f'pretrained/{e}' for e in shipped)}" if shipped else ""
        print(f"{name}: {f.description or f.model.path} (envs {', '.join(envs)}{extra})")
    print("A robot of your own: `ppolab robots check FILE`, then `ppolab train --env NAME_walk --robot FILE`.")
    return 0


def _print_swing(s: dict) -> None:
    from ppolab.envs.robot_check import SWING_SPEED

    head = f"  the legs' passive drag (the model's joint damping and friction at {SWING_SPEED:g} rad/s): "
    if not s["limit_nm"]:
        print(head + f"most {s['joint']}, {s['drag_nm']} N m; no torque limits (not judged)")
        return
    parts = ", ".join(s["over_half"])
    over = f"; over half the limit: {parts} (`damping:` in the file sets it)" if parts else ""
    print(head + f"most {s['joint']}, {s['drag_nm']} of {s['limit_nm']} N m{over} (not judged)")


def _print_gait(g: dict) -> None:
    from ppolab.envs.robot_check import STEP_SHARE

    head = f"  the walking task's fastest step: {g['step_m']} m per half gait cycle, {g['share']} of the root's height"
    if g["advice"] is None:
        print(head + " (the walkers trained here: 0.20-0.34; not judged)")
        return
    a = g["advice"]
    lo, hi = a["forward_speed"]
    print(head + f", past {STEP_SHARE}: a walk out of proportion for its size (the walkers trained here: "
          f"0.20-0.34). G1's walk scaled to its height: `tasks: walk: {{forward_speed: [{lo}, {hi}], "
          f"swing_duration: {a['swing_duration']}, stance_duration: {a['stance_duration']}}}` in the file "
          "(not judged)")  # fmt: skip


def _print_check(r: dict) -> None:
    ok = lambda b: "ok" if b else "FAILED"  # noqa: E731
    print(f"Robot {r['robot']}: {r['legs']} leg joints, {r['mass_kg']} kg, root {r['nominal_height_m']} m high "
          f"at the nominal pose ({r['model']})")  # fmt: skip
    print("  names: ok (every joint, body and site the file names is in the model)")
    print(f"  mirror twice is the identity: {ok(r['mirror_twice_identity'])}")
    print(f"  nominal pose mirrors to itself: {ok(r['nominal_mirrors_to_itself'])}"
          + ("" if r["nominal_mirrors_to_itself"] else f" (worst: {r['nominal_mirror_worst']})"))  # fmt: skip
    flips = [j for j, _, s in r["pairs"] if s < 0]
    print(f"  mirror pairs: {len(r['pairs']) // 2}; sign flips (roll and yaw axes): {', '.join(flips) or 'none'}")
    print(f"  no self-contact at the nominal pose: {ok(not r['self_contact_at_nominal'])}")
    _print_swing(r["swing_drag"])
    _print_gait(r["gait_size"])
    up, tall = r["head_above_root_m"], r["nominal_height_m"]
    hint = "" if up >= 0.25 * tall else (": too close to see the upper body lean; give head: a body near the head, "
                                          "or an offset up the torso (not judged)")  # fmt: skip
    print(f"  head point {up} m above the root at the nominal pose{hint}")
    h, f = r["stand_harness"], r["stand_free"]
    stood = h["seconds_up"] >= 2.0 and 0.8 <= h.get("weight_on_soles", 0) <= 1.2
    print(f"  stands 2 s under its PD servos at their holding targets, the soles carrying the weight (root kept "
          f"from tipping by a harness): "
          f"{ok(stood)} "
          f"({h['seconds_up']} s; lowest root {h.get('lowest_height_share', 0):.0%} of nominal; soles carry "
          f"{h.get('weight_on_soles', 0):.0%} of the weight)")  # fmt: skip
    print(f"  without the harness it stays up {f['seconds_up']} s (a policy balances it; not judged)")
    w = r["stand_walk_gains"]
    if w["seconds_up"] >= 2.0:
        print("  under the walking task's gains, action 0 holds the nominal pose too (with the harness)")
    else:
        print(f"  under the walking task's gains, action 0 does not hold the nominal pose (the root sinks to "
              f"{w.get('lowest_height_share', 0):.0%} of nominal within {w['seconds_up']} s, with the harness): "
              "train with --start-standing (not judged)")  # fmt: skip
    if "picture" in r:
        print(f"  picture of the nominal pose: {r['picture']}")
    print("Passed." if r["passed"] else "FAILED: see the lines marked FAILED.")
