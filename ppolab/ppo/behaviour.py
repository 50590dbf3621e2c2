"""Behaviour checks of trained humanoid policies: does it walk, stand, turn, withstand pushes?

Episode returns say little about a gait: a policy can earn much of the walking
reward standing still. These checks hold a command fixed and measure what a person
would look at in a video. Each runs `n` envs from the evaluation start states with
the policy's mean action and returns figures and a `passed` verdict.

- walk: forward mode at `speed` for `seconds`: every env stays up, covers at least 80%
  of the commanded distance, and each foot touches down at least 8 times, the feet
  alternating (at least 80% of successive touchdowns by the other foot);
- stand: standing mode: every env stays up and drifts less than 0.1 m;
- turn: in-place mode at +-`rate` rad/s: every env stays up and turns the commanded
  way by at least half the commanded angle;
- footsteps (jvrc_step): flat forward and lateral plans for 400 steps: every env stays up and
  hits at least 80% of its plan's targets;
- push (h1): standing for `seconds` under random pushes: every env stays up.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ppolab.envs import make_env
from ppolab.envs.humanoid import yaw
from ppolab.ppo.playback import load_actor
from ppolab.ppo.policy import sampling_params
from ppolab.ppo.rollout import EVAL_STREAM, slot_rng
from ppolab.ppo.sampling_policy import SamplingPolicy

HELD = {"stand_switch_prob": 0.0, "walk_switch_prob": 0.0}  # the command stays what the check sets


def _start(path: Path, n: int, overrides: dict | None = None):
    actor, meta = load_actor(path)
    env = make_env(meta["env"], n, {**(meta.get("env_config") or {}), **(overrides or {})})
    for i in range(n):
        env.reset_one(i, slot_rng(0, EVAL_STREAM, 0, i))
    return env, SamplingPolicy(sampling_params(actor))


def _run(env, policy, steps: int, hold=None) -> tuple[np.ndarray, list[np.ndarray]]:
    """Step with the mean action; `hold(env)` re-applies the command before each step. Returns which
    envs stayed up and, for the JVRC tasks, each step's per-foot ground contact (touch sensors above 5% of
    the weight)."""
    alive = np.ones(env.num_envs, bool)
    contact = []
    for _ in range(steps):
        if hold:
            hold(env)
        _, _, terminated = env.step(policy(env.observe()))
        alive &= ~terminated
        if hasattr(env, "weight"):  # the JVRC tasks: foot touch sensors first
            contact.append(env.batch.sensors[:, 0:2] > 0.05 * env.weight)
    return alive, contact


def _touchdowns(contact: list[np.ndarray]) -> tuple[np.ndarray, float]:
    """Touchdowns per env and foot, and the share of successive touchdowns made by the other foot."""
    c = np.array(contact, dtype=int)  # steps, envs, feet
    down = np.diff(c, axis=0) == 1
    alternating, pairs = 0, 0
    for e in range(c.shape[1]):
        feet = [f for t in range(down.shape[0]) for f in (0, 1) if down[t, e, f]]
        alternating += sum(a != b for a, b in zip(feet, feet[1:]))
        pairs += max(0, len(feet) - 1)
    return down.sum(axis=0), alternating / pairs if pairs else 0.0


def walk(path: Path, speed: float = 0.3, seconds: float = 10.0, n: int = 8) -> dict:
    from ppolab.envs.jvrc import FORWARD

    env, policy = _start(path, n, HELD)
    steps = round(seconds / env.cfg.control_dt)
    start = env.batch.qpos[:, :2].copy()
    heading = yaw(env.batch.qpos[:, 3:7])

    def hold(e) -> None:
        e.mode[:] = FORWARD
        e.command[:] = [0.0, speed, 0.0]

    alive, contact = _run(env, policy, steps, hold)
    moved = env.batch.qpos[:, :2] - start
    forward = moved[:, 0] * np.cos(heading) + moved[:, 1] * np.sin(heading)
    touchdowns, alternating = _touchdowns(contact)
    target = speed * seconds
    out = {
        "command_vx": speed, "seconds": seconds, "envs": n, "still_up": int(alive.sum()),
        "distance_m": round(float(forward.mean()), 2), "distance_share": round(float(forward.mean() / target), 2),
        "min_distance_share": round(float(forward.min() / target), 2),
        "touchdowns_per_foot": round(float(touchdowns.mean()), 1), "min_touchdowns": int(touchdowns.min()),
        "alternating": round(alternating, 2),
    }  # fmt: skip
    out["passed"] = bool(alive.all() and forward.min() >= 0.8 * target and touchdowns.min() >= 8 and alternating >= 0.8)
    out["score"] = round(float((np.clip(forward / target, 0, 1) * alive).mean()), 3)  # a fall scores 0
    return out


def stand(path: Path, seconds: float = 10.0, n: int = 8) -> dict:
    from ppolab.envs.jvrc import STANDING

    env, policy = _start(path, n, HELD)
    start = env.batch.qpos[:, :2].copy()

    def hold(e) -> None:
        e.mode[:] = STANDING
        e.command[:] = 0.0

    alive, _ = _run(env, policy, round(seconds / env.cfg.control_dt), hold)
    drift = np.linalg.norm(env.batch.qpos[:, :2] - start, axis=1)
    out = {"seconds": seconds, "still_up": int(alive.sum()), "max_drift_m": round(float(drift.max()), 3)}
    out["passed"] = bool(alive.all() and drift.max() < 0.1)
    return out


def turn(path: Path, rate: float = 0.3, seconds: float = 10.0, n: int = 8) -> dict:
    from ppolab.envs.jvrc import IN_PLACE

    env, policy = _start(path, n, HELD)
    signs = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)  # half turn left, half right
    start = yaw(env.batch.qpos[:, 3:7])
    turned = np.zeros(n)
    last = start.copy()

    def hold(e) -> None:
        nonlocal last
        now = yaw(e.batch.qpos[:, 3:7])
        turned[:] += np.angle(np.exp(1j * (now - last)))  # unwrapped heading change
        last = now
        e.mode[:] = IN_PLACE
        e.command[:, 0] = signs * rate
        e.command[:, 1:] = 0.0

    alive, _ = _run(env, policy, round(seconds / env.cfg.control_dt), hold)
    share = turned * signs / (rate * seconds)
    out = {
        "rate": rate,
        "seconds": seconds,
        "still_up": int(alive.sum()),
        "min_turn_share": round(float(share.min()), 2),
    }
    out["passed"] = bool(alive.all() and share.min() >= 0.5)
    return out


def footsteps(path: Path, steps: int = 400, n: int = 8) -> dict:
    """jvrc_step on flat ground: half the envs follow a forward plan, half a lateral one, for `steps`.

    A target is hit when the env counts it reached (a foot held within its radius, then the next
    target follows). Passed: every env stays up and hits at least 80% of its plan's targets.
    """
    from ppolab.envs.jvrc_step import N_STEPS, PLANS

    hit, up = [], []
    for plan in ("forward", "lateral"):
        probs = [1.0 if p == plan else 0.0 for p in PLANS]
        env, policy = _start(path, n // 2, {"plan_probs": probs, "stair_ramp_start": 10**9})
        alive, _ = _run(env, policy, steps)
        hit.append(env.target.copy())
        up.append(alive)
    hits, alive = np.concatenate(hit), np.concatenate(up)
    out = {
        "steps": steps, "envs": n, "targets_per_plan": N_STEPS, "still_up": int(alive.sum()),
        "targets_hit": [int(h) for h in hits], "min_share": round(float(hits.min() / N_STEPS), 2),
    }  # fmt: skip
    out["passed"] = bool(alive.all() and hits.min() >= 0.8 * N_STEPS)
    return out


def push(path: Path, seconds: float = 10.0, n: int = 8) -> dict:
    """Standing under pushes (the env's randomisation on: pushes, masses, friction)."""
    env, policy = _start(path, n, {"randomization": {"enabled": True}})
    alive, _ = _run(env, policy, round(seconds / env.cfg.control_dt))
    out = {"seconds": seconds, "push_force_n": env.cfg.randomization.push_force, "still_up": int(alive.sum())}
    out["passed"] = bool(alive.all())
    return out
