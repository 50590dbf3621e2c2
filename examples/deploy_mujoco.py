"""Sim-to-sim: run an exported ppolab walking policy in MuJoCo with nothing of ppolab's.

    ppolab export pretrained/jvrc_walk --onnx walk.onnx
    python examples/deploy_mujoco.py walk.onnx [--vx 0.3] [--seconds 10] [--solver pgs --iterations 50]

Only mujoco, numpy and onnxruntime: the observation is built from MuJoCo's state as the sidecar
(walk.onnx.json) says, the policy runs at its control rate, and this script's own PD loop turns its
targets into joint torques at the physics rate. It prints how far the robot walked and whether it stayed
up; exit 0 when it stayed up and covered at least half the commanded distance, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import mujoco
import numpy as np
import onnxruntime


def roll_pitch_yaw(q: np.ndarray) -> tuple[float, float, float]:
    w, x, y, z = q
    roll = math.atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = math.asin(max(-1.0, min(1.0, 2 * (w * y - z * x))))
    yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return roll, pitch, yaw


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("policy", help="the exported .onnx file (its .json and .mjb beside it)")
    ap.add_argument("--vx", type=float, default=0.3, help="commanded forward speed, m/s")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--solver", choices=["newton", "pgs", "cg"], help="override the model's constraint solver")
    ap.add_argument("--iterations", type=int, help="override the solver's iteration cap")
    args = ap.parse_args()
    path = Path(args.policy)
    sidecar = path.with_name(path.name + ".json")
    if not sidecar.is_file():
        ap.error(f"{sidecar}: no sidecar beside the policy; export it with `ppolab export RUN --onnx {path}`")
    c = json.loads(sidecar.read_text())
    names = {e["name"] for e in c.get("observation", [])}
    if "modes" not in c or not {"mode", "command", "clock"} <= names:
        ap.error(f"{path}: not a walking policy ({c.get('env', 'its env')}: its observation has no walking command); "
                 "this script runs NAME_walk policies; play it in ppolab instead: ppolab eval RUN")
    model = mujoco.MjModel.from_binary_path(str(path.with_name(c["model"])))
    if args.solver:
        model.opt.solver = {"newton": mujoco.mjtSolver.mjSOL_NEWTON, "pgs": mujoco.mjtSolver.mjSOL_PGS,
                            "cg": mujoco.mjtSolver.mjSOL_CG}[args.solver]  # fmt: skip
    if args.iterations:
        model.opt.iterations = args.iterations
    data = mujoco.MjData(model)
    data.qpos[:] = c["initial_qpos"]
    mujoco.mj_forward(model, data)
    session = onnxruntime.InferenceSession(str(path))

    legs, act = c["joint_order"], c["action"]
    qadr = np.array([model.joint(j).qposadr[0] for j in legs])
    vadr = np.array([model.joint(j).dofadr[0] for j in legs])
    actuators = np.array([next(i for i in range(model.nu) if model.actuator(i).trnid[0] == model.joint(j).id)
                          for j in legs])  # fmt: skip
    model.actuator_gainprm[actuators, :3] = (1.0, 0.0, 0.0)  # motors: this script is the PD loop
    model.actuator_biasprm[actuators, :3] = 0.0
    model.actuator_ctrllimited[actuators] = 0
    kp = np.array([act["kp"][j] for j in legs])
    kd = np.array([act["kd"][j] for j in legs])
    limit = np.array([act["torque_limit_nm"][j] or np.inf for j in legs])
    nominal = np.array([act["nominal_rad"][j] for j in legs])
    period = c["clock"]["period_steps"]
    slices = {e["name"]: slice(*e["slice"]) for e in c["observation"]}
    mode = np.eye(len(c["modes"]))[c["modes"].index("forward")]

    start, (_, _, heading0) = data.qpos[:2].copy(), roll_pitch_yaw(data.qpos[3:7])
    prev_raw = prev = np.zeros(len(legs))
    steps, up = round(args.seconds / c["rates"]["control_dt"]), True
    for k in range(steps):
        roll, pitch, yaw = roll_pitch_yaw(data.qpos[3:7])
        heading_error = math.atan2(math.sin(heading0 - yaw), math.cos(heading0 - yaw))
        obs = np.zeros(c["obs_dim"], np.float32)
        obs[slices["root_orient"]] = (roll, pitch)
        obs[slices["root_ang_vel"]] = data.qvel[3:6]
        obs[slices["joint_pos"]] = data.qpos[qadr]
        obs[slices["joint_vel"]] = data.qvel[vadr]
        angle = 2 * math.pi * (k % period) / period
        obs[slices["clock"]] = (math.sin(angle), math.cos(angle))
        obs[slices["mode"]] = mode
        obs[slices["command"]] = (max(-0.5, min(0.5, heading_error)), args.vx, 0.0)  # yaw rate: hold the heading
        a = session.run(None, {"obs": obs[None]})[0][0]
        if act["clip"] is not None:
            a = np.clip(a, -act["clip"], act["clip"])
        smoothed = act["smoothing"] * a + (1 - act["smoothing"]) * (prev_raw if act["filter"] == "pair" else prev)
        prev_raw, prev = a, smoothed
        target = nominal + act["scale"] * smoothed
        for _ in range(c["rates"]["substeps"]):
            torque = kp * (target - data.qpos[qadr]) - kd * data.qvel[vadr]
            data.ctrl[actuators] = np.clip(torque, -limit, limit)
            mujoco.mj_step(model, data)
        if abs(roll) > 1.0 or abs(pitch) > 1.0 or data.qpos[2] < 0.5 * c["initial_qpos"][2]:
            up = False
            break
    moved = data.qpos[:2] - start
    forward = moved[0] * math.cos(heading0) + moved[1] * math.sin(heading0)
    commanded = args.vx * steps * c["rates"]["control_dt"]
    fate = "stayed up" if up else f"fell after {(k + 1) * c['rates']['control_dt']:.1f} s"
    print(f"{fate}; walked {forward:.3f} m of the {commanded:.2f} m commanded ({forward / commanded:.0%})")
    return 0 if up and forward >= 0.5 * commanded else 1


if __name__ == "__main__":
    raise SystemExit(main())
