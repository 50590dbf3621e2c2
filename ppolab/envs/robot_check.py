"""`ppolab robots check FILE`: is a robot file right, before half an hour of training says it was not?

- every name it gives exists in the model (the build says which one does not);
- mirroring twice is the identity, and the nominal pose mirrors to itself;
- at the nominal pose no two robot parts touch, and the soles carry the weight;
- it stands for 2 s under its PD servos holding the nominal pose (their targets offset by what gravity
  bends each joint, the standing action), its root kept from tipping by a harness (a torque spring on
  roll and pitch, as a robot hangs from a gantry on first power-up): the legs carry the weight within
  their torque limits, the soles carry it, nothing explodes. Published RL gains cannot balance a
  humanoid without a policy (LHW's JVRC-1 tips over in 0.8 s), so the harness-free time is reported
  beside it, not judged;
- the harness stand at action 0 (the pose itself as the targets) under the walking task's own gains (a
  file's `tasks: walk:` may soften them, as LHW's H1 does): reported, not judged; where it does not hold,
  a policy should start at the standing action (`ppolab train --start-standing`);
- the legs' passive drag: the model's own joint damping and friction at a walking joint speed (2 rad/s:
  the 95th percentile of the shipped walkers' leg joints at 0.3 m/s) against each joint's torque limit;
  reported, not judged. Menagerie's Apollo has 171 N m s/rad on its hip yaw (350 N m of drag at that speed
  against a 120 N m limit), and still learned to walk (one seed: 71% of the walk check's distance at
  iteration 600, 33% without it; benchmarks/README.md); a
  file's `damping:` sets it (MuJoCo Playground's Apollo has none, and damps with the servos' kv);
- the gait's size against the robot's: the step the fastest commanded walk takes per half gait cycle
  (forward_speed's top x the half cycle) over the root's height at the nominal pose. The walkers trained
  here step 0.20-0.34 of it; past STEP_SHARE the report gives the walking task's settings that keep the
  walk dynamically similar to G1's (speeds x sqrt(h / h_G1), the half cycle too, as the Froude number
  says): a 0.25 m tall OP3 told 0.4 m/s on G1's 0.56 s half cycle would step 0.9 of its height.
  Reported, not judged;
- how high the head point is over the root: the upper-body term keeps it over the root, which says
  nothing about a lean when the point is at the pelvis (H1's torso_link origin is); reported, not judged;
- a picture of the nominal pose.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
from pydantic import ValidationError

from ppolab.envs.humanoid import roll_pitch
from ppolab.envs.robot_file import RobotFile
from ppolab.envs.robot_task import RobotTask
from ppolab.errors import UserError
from ppolab.util.validation import first_problem

STAND_S = 2.0
SAG = 0.75  # the root stays above this share of its nominal height (where the walking task ends an episode)
TILT = 0.35  # rad: harness-free, "up" is the root tilted less than this
PICTURE_MARK = "ppolab robots check"  # the Software text of the pictures it writes
STEP_SHARE = 0.45  # the top speed's step per half cycle over the root height, past which the report advises
GAIT_REFERENCE = (0.778, 0.56, 0.4, (0.1, 0.4))  # G1's root height, half cycle, swing and speeds: its walk passes
SWING_SPEED = 2.0  # rad/s: a leg joint's speed in a walk (the 95th percentile of the shipped walkers' at 0.3 m/s)
DRAG_SHARE = 0.5  # past this share of a joint's torque limit at that speed, the report names the joint


def _mirror_checks(env: RobotTask) -> dict:
    m = env.robot.mirror
    twice = np.array_equal(m.twin[m.twin], np.arange(len(m.twin))) and np.all(m.sign * m.sign[m.twin] == 1.0)
    legs = env.batch.nominal_leg
    mirrored = m.sign[m.twin] * legs[m.twin]
    worst = int(np.argmax(np.abs(mirrored - legs)))
    return {
        "mirror_twice_identity": bool(twice),
        "nominal_mirrors_to_itself": bool(np.allclose(mirrored, legs, atol=1e-6)),
        "nominal_mirror_worst": f"{env.robot_file.legs[worst]} {legs[worst]:+.4f} vs mirrored {mirrored[worst]:+.4f}",
        "pairs": [(j, env.robot_file.legs[int(t)], int(s)) for j, t, s in zip(env.robot_file.legs, m.twin, m.sign)],
    }


def swing_drag(env: RobotTask) -> dict:
    """The leg joint whose passive drag (joint damping x `SWING_SPEED` + friction loss) takes the largest share
    of its torque limit, and the name parts (side marker dropped) of every joint over `DRAG_SHARE`; joints
    without a limit have no share."""
    m, f = env.batch.models[0], env.robot_file
    dofs, limit = env.batch.layout.leg_qvel, env.batch.layout.torque_limit
    drag = m.dof_damping[dofs] * SWING_SPEED + m.dof_frictionloss[dofs]
    share = np.divide(drag, limit, out=np.zeros_like(drag), where=limit > 0)
    worst = int(np.argmax(share)) if limit.any() else int(np.argmax(drag))
    sides = (f.mirror.right, f.mirror.left)
    parts = [_part(j, sides) for j, over in zip(f.legs, share > DRAG_SHARE) if over]
    return {"joint": f.legs[worst], "drag_nm": round(float(drag[worst]), 1),
            "limit_nm": round(float(limit[worst]), 1), "share": round(float(share[worst]), 2),
            "over_half": list(dict.fromkeys(parts))}  # fmt: skip


def gait_size(env: RobotTask) -> dict:
    """The fastest commanded step per half gait cycle over the root's height, and where that is past
    `STEP_SHARE`, the walking task's settings that scale G1's walk to this robot's height (`advice`)."""
    c, height = env.cfg, env.robot.height
    half = c.swing_duration + c.stance_duration
    step = c.forward_speed[1] * half
    out = {"step_m": round(step, 3), "share": round(step / height, 2), "advice": None}
    if step / height <= STEP_SHARE:
        return out
    ref_height, ref_half, ref_swing, ref_speeds = GAIT_REFERENCE
    scale = float(np.sqrt(height / ref_height))
    steps = max(2, round(ref_half * scale / c.control_dt))  # a half cycle of whole control steps
    swing = max(1, round(steps * ref_swing / ref_half))
    speeds = [round(v * scale, 2) for v in ref_speeds]
    out["advice"] = {"forward_speed": speeds, "swing_duration": round(swing * c.control_dt, 4),
                     "stance_duration": round((steps - swing) * c.control_dt, 4)}  # fmt: skip
    return out


def _part(joint: str, sides: tuple[str, str]) -> str:
    """A joint's name without its side marker (l_hip_ie: hip_ie), as a file's tables by name part take it."""
    for side in sides:
        if side in joint:
            return joint.replace(side, "", 1).strip("_") or joint
    return joint


def _stand(env: RobotTask, harness: bool, hold: bool = True) -> dict:
    """2 s of the servos holding the nominal pose (`hold`: at the targets that hold it against gravity, the
    standing action; else at the pose itself, action 0); with the harness, a tilt spring-damper on the root
    applied at every physics step (the whole robot's weight times 4 cm per degree-ish: stiff, critically damped)."""
    b, m = env.batch, env.batch.models[0]
    env.reset_one(0, np.random.default_rng(0))
    d = b.datas[0]
    if hold:
        d.ctrl[b.layout.leg_act] = b.nominal_leg + env.cfg.action_scale * env.standing_action()
    root = b.layout.root_body
    mass, h = float(env.model.body_subtreemass[root]), env.robot.height
    k = 3.0 * mass * 9.81 * h  # N m/rad: three times the stiffness gravity topples it with
    c = 2.0 * np.sqrt(k * mass * (0.3 * h) ** 2)  # about critical, for a body of radius of gyration 0.3 h
    steps = round(STAND_S / env.cfg.physics_dt)
    up_s, lowest, share = 0.0, np.inf, []
    for t in range(steps):
        if harness:
            roll, pitch = roll_pitch(d.qpos[None, 3:7])
            torque = -k * np.array([roll[0], pitch[0], 0.0]) - c * np.array([*d.qvel[3:5], 0.0])
            d.xfrc_applied[root, 3:6] = d.xmat[root].reshape(3, 3) @ torque
        mujoco.mj_step(m, d)
        if not np.isfinite(d.qpos).all():
            return {"seconds_up": round(up_s, 2), "exploded": True}
        if (t + 1) % b.substeps:
            continue
        b._gather(0)
        z = b.qpos[0, 2] / env.robot.height
        roll, pitch = roll_pitch(b.qpos[:1, 3:7])
        lowest = min(lowest, z)
        share.append(b.sensors[0, env.s.touch].sum() / env.weight)
        if z > SAG and max(abs(roll[0]), abs(pitch[0])) < TILT and not b.self_contact[0]:
            up_s = (t + 1) * env.cfg.physics_dt
        else:
            break
    d.xfrc_applied[:] = 0.0
    return {"seconds_up": round(up_s, 2), "lowest_height_share": round(float(lowest), 3),
            "weight_on_soles": round(float(np.mean(share[-20:])), 2) if share else 0.0}  # fmt: skip


def check(file: RobotFile, picture: Path | None) -> dict:
    """Every check's figures and a `passed` verdict (the model builds, or a UserError names what is wrong)."""
    from ppolab.envs import ENVS
    from ppolab.envs.robot_task import task_env
    from ppolab.envs.task_registry import task_class

    cls = ENVS.get(f"{file.name}_walk")
    if cls is None or cls.robot_file != file:
        cls = task_env(task_class("walk"), file)
    quiet = {"randomization": {"enabled": False}, "init_joint_noise": 0.0, "init_tilt": 0.0, "init_lift": 0.0}
    # the robot's own gains and nominal pose, not a task's (h1's walking task takes LHW's softer gains and pose)
    try:
        config = cls.Config(**quiet, kp=file.gains.kp, kd=file.gains.kd, nominal_pose={})
    except ValidationError as exc:  # the robot file's tables, checked against its joints: name the file's key
        msg = first_problem(exc)["msg"]
        raise UserError(
            f"{file.source or file.name}: {'gains.' if msg.startswith(('kp:', 'kd:')) else ''}{msg}"
        ) from None
    env = cls(1, config)
    env.reset_one(0, np.random.default_rng(0))
    b = env.batch
    start = {"self_contact_at_nominal": bool(b.self_contact[0]),
             "head_above_root_m": round(float(b.sensors[0, env.s.head_pos][2] - b.qpos[0, 2]), 3)}  # fmt: skip
    out = {
        "robot": file.name, "model": str(file.model_path()), "legs": len(file.legs),
        "mass_kg": round(env.weight / 9.81, 2),
        "nominal_height_m": round(env.robot.height, 3), **_mirror_checks(env), **start, "swing_drag": swing_drag(env),
        "gait_size": gait_size(env),
        "stand_harness": _stand(env, harness=True), "stand_free": _stand(env, harness=False),
        "stand_walk_gains": _stand(cls(1, cls.Config(**quiet)), harness=True, hold=False),  # the walk task's gains
    }  # fmt: skip
    out["passed"] = bool(
        out["mirror_twice_identity"] and out["nominal_mirrors_to_itself"] and not start["self_contact_at_nominal"]
        and out["stand_harness"]["seconds_up"] >= STAND_S and 0.8 <= out["stand_harness"]["weight_on_soles"] <= 1.2
    )  # fmt: skip
    if picture is not None:
        out["picture"] = str(render_nominal(cls, picture))
    return out


def render_nominal(cls: type[RobotTask], path: Path, size: tuple[int, int] = (480, 640)) -> Path:
    """A PNG of the robot in its nominal pose, meshes on, from the tracking camera (written whole, or not at all)."""
    import imageio.v3 as iio
    from PIL.PngImagePlugin import PngInfo

    from ppolab.util.files import atomic_write_bytes

    env = cls(1, cls.Config(visuals=True, randomization={"enabled": False}, init_joint_noise=0.0, init_tilt=0.0,
                            init_lift=0.0))  # fmt: skip
    env.reset_one(0, np.random.default_rng(0))
    renderer = mujoco.Renderer(env.model, height=size[0], width=size[1])
    try:
        renderer.update_scene(env.datas[0], camera=0)
        pixels = renderer.render()
    finally:
        renderer.close()
    marked = PngInfo()
    marked.add_text("Software", PICTURE_MARK)  # a later check replaces only a picture that says this
    atomic_write_bytes(path, iio.imwrite("<bytes>", pixels, extension=".png", pnginfo=marked))
    return path


def written_by_check(path: Path) -> bool:
    """Whether the PNG at `path` is a picture `robots check` wrote (its text chunk says so)."""
    import imageio.v3 as iio

    try:
        return iio.immeta(path, extension=".png").get("Software") == PICTURE_MARK
    except Exception:  # unreadable, not a PNG, torn: not ours, whatever the reason  # noqa: BLE001
        return False
