"""`ppolab export`: a trained policy for a robot's controller, and the contract its inputs and outputs follow.

The ONNX (or TorchScript) file maps raw observations to the deterministic action (an LSTM policy: one
control step, its state as inputs and outputs); the observation normaliser is folded in, so a controller
feeds what it measures, arranged as the sidecar JSON says. The sidecar (`<file>.json`) is the contract a
deployer matches on hardware: every observation entry (name, slice, units, source), the joint order, what
an action means (offsets from the nominal pose, scaled, smoothed), the PD gains and limits, the control and
physics rates, and the versions. `<file>.mjb` is the MuJoCo model the policy was trained on, for a
sim-to-sim check outside ppolab (examples/deploy_mujoco.py).
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import mujoco
import numpy as np
import torch
from torch import nn

from ppolab import __version__
from ppolab.envs import make_env
from ppolab.errors import UserError
from ppolab.ppo import checkpoint as ckpt
from ppolab.ppo.checkpoint import load_actor
from ppolab.util.files import check_output_file, temp_sibling

UNITS = {  # an observation entry's units and where a controller reads it
    "root_orient": ("rad", "IMU: roll and pitch of the root (pelvis) frame"),
    "root_ang_vel": ("rad/s", "IMU: the root's angular velocity, in its own frame"),
    "joint_pos": ("rad", "leg joint encoders, in joint_order"),
    "joint_vel": ("rad/s", "leg joint velocities, in joint_order"),
    "joint_torque": ("N m", "leg joint torques, in joint_order"),
    "clock": ("1", "the gait clock: sin and cos of the phase, one cycle per gait period"),
    "mode": ("1", "the command's mode, one-hot: standing, in place, forward"),
    "command": (
        "rad/s, m/s, m/s",
        "yaw rate (plus the heading correction: gain x heading error, clamped), forward "
        "speed, sideways speed (plus, walking forward, the correction back onto the line walked)",
    ),
    "targets": ("m, rad", "the next two footstep targets (x, y, z, yaw) in the root's heading frame"),
    "cart_pos": ("m", "the cart's position on the rail"),
    "pole_cos": ("1", "cos of the pole's angle (1: upright)"),
    "pole_sin": ("1", "sin of the pole's angle"),
    "cart_vel": ("m/s", "the cart's velocity"),
    "pole_ang_vel": ("rad/s", "the pole's angular velocity"),
}


class DeterministicPolicy(nn.Module):
    """Raw observation -> mean action: the actor's normaliser and network, nothing else."""

    def __init__(self, actor: nn.Module) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor.head(self.actor.norm(obs))[0]


class RecurrentPolicy(nn.Module):
    """One control step of an LSTM policy: (raw observation, each layer's h and c) -> (mean action, new h and c).
    The state starts at zeros with each episode; the controller feeds back what the previous step returned."""

    def __init__(self, actor: nn.Module) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, obs: torch.Tensor, *state: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x, out = self.actor.norm(obs), []
        for k, layer in enumerate(self.actor.lstm.layers):
            h, c = state[2 * k].unsqueeze(0), state[2 * k + 1].unsqueeze(0)
            y, (h, c) = layer(x.unsqueeze(0), (h, c))
            x = y.squeeze(0)
            out += [h.squeeze(0), c.squeeze(0)]
        return (self.actor.out(x), *out)


def state_names(widths: list[int]) -> list[tuple[str, int]]:
    """The LSTM state's inputs, in order: h0, c0, h1, c1, ... with each layer's width."""
    return [(f"{kind}{k}", w) for k, w in enumerate(widths) for kind in ("h", "c")]


def contract(meta: dict) -> dict:
    """The sidecar: what the exported policy reads and what its output means, from the env it was trained on."""
    env = make_env(meta["env"], 1, meta.get("env_config"))
    cfg = env.cfg
    out: dict = {"schema_version": 1, "env": meta["env"], "obs_dim": env.obs_dim, "act_dim": env.act_dim,
                 "iteration": meta.get("iteration"), "env_config": meta.get("env_config"),
                 "normaliser": "folded into the network: feed raw observations",
                 "versions": {"ppolab": __version__, "torch": torch.__version__, "mujoco": mujoco.__version__,
                              "python": platform.python_version()}}  # fmt: skip
    if meta.get("recurrent"):
        out["state"] = {"inputs": [{"name": n, "size": w} for n, w in state_names(list(meta["hidden_sizes"]))],
                        "outputs": "the same, suffixed _out, after the action", "reset": "zeros at each episode's "
                        "start"}  # fmt: skip
    info, layout = env.info, env.layout
    if layout:
        out["observation"] = [
            {"name": name, "slice": [s.start, s.stop], "units": UNITS.get(name, ("", ""))[0],
             "source": UNITS.get(name, ("", ""))[1]}
            for name, s in layout.items()
        ]  # fmt: skip
    if info.servos:
        robot = env.robot
        legs = list(robot.file.legs)
        m = env.model
        act = {m.actuator(i).trnid[0]: i for i in range(m.nu)}
        ids = [act[m.joint(j).id] for j in legs]
        out["joint_order"] = legs
        out["action"] = {
            "meaning": "target joint angle = nominal + scale * smoothed action, held by PD servos; smoothed = "
            "smoothing * action + (1 - smoothing) * previous (the previous raw action with filter 'pair', "
            "the previous smoothed one with 'ema')",
            "nominal_rad": dict(zip(legs, map(float, env.batch.nominal_leg))), "scale": cfg.action_scale,
            "smoothing": cfg.action_smoothing, "filter": cfg.action_filter, "clip": cfg.action_clip,
            "kp": {j: float(m.actuator_gainprm[i, 0]) for j, i in zip(legs, ids)},
            "kd": {j: float(-m.actuator_biasprm[i, 2]) for j, i in zip(legs, ids)},
            "torque_limit_nm": {j: float(m.actuator_forcerange[i, 1]) if m.actuator_forcelimited[i] else None
                                for j, i in zip(legs, ids)},
        }  # fmt: skip
        out["rates"] = {"control_dt": cfg.control_dt, "physics_dt": cfg.physics_dt,
                        "substeps": round(cfg.control_dt / cfg.physics_dt)}  # fmt: skip
        out["initial_qpos"] = [float(v) for v in robot.nominal_qpos]
        out["imu"] = {"root_orient": "roll = atan2(2(wx + yz), 1 - 2(x^2 + y^2)), pitch = asin(2(wy - zx)) of the "
                      "root's quaternion (w, x, y, z)", "root_ang_vel": "the free joint's angular velocity "
                      "(qvel[3:6], the root's own frame)"}  # fmt: skip
    if info.clock:
        out["clock"] = {"period_steps": int(env.period), "observation": "sin and cos of 2 pi phase / period; the "
                        "phase advances by one every control step"}  # fmt: skip
    if info.modes:
        out["modes"] = list(info.modes)
    return out


def export(path: Path, onnx: str | None = None, torchscript: str | None = None) -> list[Path]:
    """Write the policy at `path` as ONNX and/or TorchScript, each with its sidecar; returns what was written.
    Every file is written to a temp name and renamed: a failure leaves no partial file."""
    outputs = [(check_output_file("--onnx", onnx, ".onnx"), "onnx")] if onnx else []
    outputs += [(check_output_file("--torchscript", torchscript, ".pt"), "torchscript")] if torchscript else []
    if not outputs:
        raise UserError("give --onnx FILE.onnx and/or --torchscript FILE.pt (what to write)")
    ckpt.find_actor(path)  # a missing path is named before anything is built
    try:
        actor, meta = load_actor(path)
        make_env(meta["env"], 1, meta.get("env_config"))
    except UserError as exc:
        if str(exc).startswith(str(path)):
            raise
        env = ckpt.load(ckpt.find_actor(path)).get("meta", {}).get("env")
        raise UserError(f"{path}: trained on {env!r}, which cannot be built here: {exc}") from None
    module = (RecurrentPolicy(actor) if meta.get("recurrent") else DeterministicPolicy(actor)).eval()
    example = example_inputs(meta)
    sidecar = contract(meta)
    written = []
    for out, kind in outputs:
        tmp = temp_sibling(out)
        try:
            with torch.no_grad():
                if kind == "onnx":
                    _onnx(module, meta, example, tmp)
                else:
                    torch.jit.trace(module, example).save(str(tmp))
            side, model = out.with_name(out.name + ".json"), out.with_name(out.name + ".mjb")
            side_tmp, model_tmp = temp_sibling(side), temp_sibling(model)
            mujoco.mj_saveModel(make_env(meta["env"], 1, meta.get("env_config")).model, str(model_tmp), None)
            extra = {"file": out.name, "format": kind, "model": model.name}
            side_tmp.write_text(json.dumps({**sidecar, **extra}, indent=2) + "\n")
            os.replace(tmp, out)
            os.replace(model_tmp, model)
            os.replace(side_tmp, side)
        except OSError as exc:
            for t in (out, out.with_name(out.name + ".json"), out.with_name(out.name + ".mjb")):
                temp_sibling(t).unlink(missing_ok=True)
            raise UserError(f"--{kind} {out}: cannot write it ({exc.strerror}); choose another place") from None
        written += [out, side, model]
    return written


def example_inputs(meta: dict) -> tuple[torch.Tensor, ...]:
    """One observation (and, for an LSTM, its zero state): what tracing runs the module on."""
    state = [torch.zeros(1, w) for _, w in state_names(list(meta["hidden_sizes"]))] if meta.get("recurrent") else []
    return (torch.zeros(1, meta["obs_dim"]), *state)


def _onnx(module: nn.Module, meta: dict, example: tuple[torch.Tensor, ...], dest: Path) -> None:
    import warnings

    state = [n for n, _ in state_names(list(meta["hidden_sizes"]))] if meta.get("recurrent") else []
    inputs, outputs = ["obs", *state], ["action", *(f"{n}_out" for n in state)]
    batch = {name: {0: "batch"} for name in inputs + outputs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter's deprecation notice: it needs no onnxscript
        torch.onnx.export(module, example, str(dest), dynamo=False, input_names=inputs, output_names=outputs,
                          dynamic_axes=batch, opset_version=17)  # fmt: skip


def max_difference(exported: Path, actor_path: Path, obs: np.ndarray) -> float:
    """The largest difference between onnxruntime's actions and ppolab's own policy's on `obs` (for an LSTM,
    a sequence of single observations, the state carried from step to step on both sides)."""
    import onnxruntime

    from ppolab.ppo.policy import sampling_params
    from ppolab.ppo.sampling_policy import SamplingPolicy

    actor, meta = load_actor(actor_path)
    ours, session, obs = (
        SamplingPolicy(sampling_params(actor)),
        onnxruntime.InferenceSession(str(exported)),
        obs.astype(np.float32),
    )
    if not meta.get("recurrent"):
        return float(np.abs(np.asarray(ours(obs)) - session.run(None, {"obs": obs})[0]).max())
    names = [n for n, _ in state_names(list(meta["hidden_sizes"]))]
    state = {n: np.zeros((1, w), np.float32) for n, w in state_names(list(meta["hidden_sizes"]))}
    worst = 0.0
    for row in obs:
        action, *new = session.run(None, {"obs": row[None], **state})
        state = dict(zip(names, new))
        worst = max(worst, float(np.abs(np.asarray(ours(row[None])) - action).max()))
    return worst
