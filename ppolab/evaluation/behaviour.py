"""Behaviour checks of trained humanoid policies: does it do what it is told, measured from MuJoCo's state?

Episode returns say little about a gait: a policy can earn much of the walking reward
standing still. These checks hold a command fixed and measure what a person would look
at in a video. They start from states training never begins from (their own random
stream, a random heading, 1.5 times training's noise on the leg angles, at least 0.02 rad; a
draw whose legs touch each other, which would end the episode at once, is drawn again)
and run for horizons longer than training's episodes, with the policy's mean action. They run the
dynamics the policy was trained on (randomised joints and masses, sensor noise) without external wrenches:
a push that the policy cannot observe changes its speed over ground whatever it does (h1_walk, pushed by
LHW's perturbations, walked 52-168% of 0.15 m/s, and 101-105% unpushed). The push check is the one that pushes.

- walk (NAME_walk): forward at 75% of the command range's top speed for 10 s: every env stays
  up, covers at least 80% of the commanded distance, and each foot touches down on at least 80%
  of the gait clock's cycles, the feet alternating (at least 80% of successive touchdowns; its
  `tap_share` says how many touchdowns end under 0.1 s in the air, a swing foot tapping the floor);
- straight (NAME_walk): forward for 30 s at three speeds across the command range: heading drift at
  most 5 degrees in every 10 s, sideways at most 10% of the distance walked, speed within 20% of the
  command;
- stand (NAME_walk): standing mode for 10 s: every env stays up, drifts less than 0.1 m and turns
  less than 5 degrees;
- turn (NAME_walk): in-place mode at +-0.3 rad/s for 10 s: every env stays up and turns the
  commanded way by at least half the commanded angle;
- footsteps (NAME_step): every plan type (forward, backward, lateral, curved, standing) on flat ground
  for 400 steps: every env stays up and hits at least 80% of its plan's targets;
- push (h1): standing for 10 s under random pushes: every env stays up.

A policy is checked from a file (a run folder, pretrained/ENV, an actor .pt) or, during training
(`ppolab train --check-every N`), from the trainer's actor in memory: a `Subject` either way. There,
`checks(..., gate=True)` runs the cheapest first and ends a round at its first failure, so that a policy
still falling costs one 10 s walk and the 90 s of straightness are paid only by one that walks, stands
and turns.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ppolab.envs import env_info, make_env
from ppolab.envs.humanoid import yaw
from ppolab.envs.walk import FORWARD, IN_PLACE, STANDING
from ppolab.ppo.checkpoint import load_actor
from ppolab.ppo.policy import sampling_params
from ppolab.ppo.rollout import CHECK_STREAM, slot_rng
from ppolab.ppo.sampling_policy import SamplingParams, SamplingPolicy

START_NOISE = 0.02  # rad on each leg angle at the start, at least (1.5 x training's): states training never began from
DRIFT_DEG = 5.0
TAP_S = 0.1  # s: a touchdown after less time than this in the air is a tap of the swing foot, not a step
MAX_REDRAWS = 20  # a start state whose legs touch is drawn again (the episode would end at its first step)


class Subject(NamedTuple):
    """A policy to check: its env, the env settings it was trained with, its weights as the sampler runs them."""

    env: str
    env_config: dict | None
    params: SamplingParams

    @classmethod
    def of(cls, policy: Subject | Path | str) -> Subject:
        """The subject itself, or the one saved at a path (a run folder, pretrained/ENV, an actor .pt)."""
        if isinstance(policy, Subject):
            return policy
        actor, meta = load_actor(Path(policy))
        return cls(meta["env"], meta.get("env_config"), sampling_params(actor))


Policy = Subject | Path | str


def _undisturbed(cfg: dict) -> dict:
    """The env settings without external wrenches (the pushes and LHW's perturbations of training's
    randomisation) and without its start lean; the robot's own randomised dynamics and sensor noise stay."""
    r = dict(cfg.get("randomization") or {})
    r["push_force"] = 0.0
    r["start_tilt"] = 0.0
    r["perturbation"] = {**(r.get("perturbation") or {}), "enabled": False}
    return {**cfg, "randomization": r}


def _start(policy: Policy, n: int, overrides: dict | None = None, stream_slot: int = 0, pushed: bool = False):
    """The policy's env from unseen start states: the check's own random stream, any heading, noisy legs.
    Not `pushed`: without external wrenches, because a commanded speed, heading or stance can only be judged
    where nothing unseen pushes the robot (the policy observes no linear velocity)."""
    subject = Subject.of(policy)
    cfg = {**(subject.env_config or {}), **(overrides or {})}
    cfg = cfg if pushed else _undisturbed(cfg)
    env = make_env(subject.env, n, cfg)
    if "init_yaw" in type(env.cfg).model_fields:
        noise = max(1.5 * env.cfg.init_joint_noise, START_NOISE)
        env = make_env(subject.env, n, {**cfg, "init_yaw": (-math.pi, math.pi), "init_joint_noise": noise})
    for i in range(n):
        env.reset_one(i, slot_rng(0, CHECK_STREAM, stream_slot, i))
        for k in range(1, MAX_REDRAWS + 1):  # legs drawn into each other: not a state a robot starts from
            if not env.batch.self_contact[i]:
                break
            env.reset_one(i, slot_rng(0, CHECK_STREAM, stream_slot, i + k * n))
    return env, SamplingPolicy(subject.params)


def _run(env, actor, steps: int, each=None, gate: bool = False, failed=None, noise=None) -> tuple[np.ndarray, int]:
    """Step with the mean action (`each(env)` after every step): which envs stayed up, and the steps run.
    With `gate`, stop as soon as the check cannot pass: an env fell, or `failed()` says so. With `noise` (a
    numpy Generator), the action training samples instead: the mean plus the policy's std x a normal draw."""
    alive = np.ones(env.num_envs, bool)
    for k in range(1, steps + 1):
        action = actor(env.observe())
        if noise is not None:
            action = action + actor.std * noise.standard_normal(action.shape).astype(action.dtype)
        _, _, terminated = env.step(action)
        alive &= ~terminated
        if each:
            each(env)
        if gate and (not alive.all() or (failed is not None and failed())):
            return alive, k
    return alive, steps


def _stopped(out: dict, ran: int, steps: int, control_dt: float) -> dict:
    """Mark a gated check that stopped once it could no longer pass: its figures cover `ran` steps only."""
    if ran < steps:
        out["stopped_at_s"] = round(ran * control_dt, 2)
    return out


def _verdict(out: dict, bars: dict[str, bool]) -> dict:
    """Set `passed` from the check's bars ({what was measured, in words: met}) and, when it fails, `missed`:
    the bars it missed, so that a failing round says why (the console, checks.json)."""
    missed = [what for what, met in bars.items() if not met]
    out["passed"] = not missed
    if missed:
        out["missed"] = missed
    return out


def _fell(alive: np.ndarray) -> str:
    return f"{int((~alive).sum())} of {alive.size} fell"


def _touchdowns(contact: list[np.ndarray], tap_steps: int) -> tuple[np.ndarray, float, float]:
    """Touchdowns per env and foot; the share of successive touchdowns made by the other foot; and the share
    that end less than `tap_steps` in the air: a swing foot tapping the floor, which the alternation counts as
    a step of its own (t1_walk learned to tap 1-2 times a swing, benchmarks/README.md)."""
    c = np.array(contact, dtype=int)  # steps, envs, feet
    down = np.diff(c, axis=0) == 1
    up = np.diff(c, axis=0) == -1
    alternating, pairs, taps = 0, 0, 0
    for e in range(c.shape[1]):
        feet = [f for t in range(down.shape[0]) for f in (0, 1) if down[t, e, f]]
        alternating += sum(a != b for a, b in zip(feet, feet[1:]))
        pairs += max(0, len(feet) - 1)
        for f in (0, 1):
            lifts, lands = np.flatnonzero(up[:, e, f]), np.flatnonzero(down[:, e, f])
            if not lifts.size:  # never lifted: no touchdown ends an air spell seen
                continue
            before = np.searchsorted(lifts, lands) - 1  # the lift-off each touchdown ends, -1: none seen
            taps += int(np.sum((before >= 0) & (lands - lifts[np.maximum(before, 0)] < tap_steps)))
    total = int(down.sum())
    return down.sum(axis=0), alternating / pairs if pairs else 0.0, taps / total if total else 0.0


def _heading(env) -> np.ndarray:
    return yaw(env.batch.qpos[:, 3:7])


def _check_range(cfg) -> tuple[float, float]:
    """The speeds the walk and straight checks are placed in: the task's check_speed, else its forward_speed."""
    return tuple(cfg.check_speed or cfg.forward_speed)


def walk(policy: Policy, speed: float | None = None, seconds: float = 10.0, n: int = 8, gate: bool = False) -> dict:
    env, actor = _start(policy, n)
    speed = round(0.75 * _check_range(env.cfg)[1], 3) if speed is None else speed
    env.set_command(FORWARD, vx=speed)
    steps = round(seconds / env.cfg.control_dt)
    start, heading = env.batch.qpos[:, :2].copy(), _heading(env)
    contact: list[np.ndarray] = []
    alive, ran = _run(env, actor, steps, lambda e: contact.append(e.foot_contact()), gate)
    moved = env.batch.qpos[:, :2] - start
    forward = moved[:, 0] * np.cos(heading) + moved[:, 1] * np.sin(heading)
    touchdowns, alternating, taps = _touchdowns(contact, round(TAP_S / env.cfg.control_dt))
    need = math.ceil(0.8 * seconds / (env.period * env.cfg.control_dt))
    target = speed * seconds
    out = {
        "command_vx": speed, "seconds": seconds, "envs": n, "still_up": int(alive.sum()),
        "distance_m": round(float(forward.mean()), 2), "distance_share": round(float(forward.mean() / target), 2),
        "min_distance_share": round(float(forward.min() / target), 2),
        "touchdowns_per_foot": round(float(touchdowns.mean()), 1), "min_touchdowns": int(touchdowns.min()),
        "touchdowns_needed": need, "alternating": round(alternating, 2), "tap_share": round(taps, 2),
    }  # fmt: skip
    _verdict(out, {
        _fell(alive): alive.all(),
        f"covered {forward.min() / target:.0%} of the distance (needs 80%)": forward.min() >= 0.8 * target,
        f"{touchdowns.min()} touchdowns of a foot (needs {need})": touchdowns.min() >= need,
        f"alternating {alternating:.2f} (needs 0.80; {taps:.0%} of touchdowns taps)": alternating >= 0.8,
    })  # fmt: skip
    out["score"] = round(float((np.clip(forward / target, 0, 1) * alive).mean()), 3)  # a fall scores 0
    return _stopped(out, ran, steps, env.cfg.control_dt)


def _straight_at(
    policy: Policy, speed: float, seconds: float, n: int, slot: int, gate: bool = False, noisy: bool = False
) -> dict:
    env, actor = _start(policy, n, stream_slot=slot)
    noise = np.random.default_rng(slot) if noisy else None
    env.set_command(FORWARD, vx=speed)
    window = round(10.0 / env.cfg.control_dt)
    steps = round(seconds / env.cfg.control_dt)
    start, heading0 = env.batch.qpos[:, :2].copy(), _heading(env)
    unwrapped, last = np.zeros(n), heading0.copy()
    marks = [np.zeros(n)]
    side_max = np.zeros(n)
    count = 0

    def each(e) -> None:
        nonlocal last, count
        now = _heading(e)
        unwrapped[:] += np.angle(np.exp(1j * (now - last)))
        last = now
        moved = e.batch.qpos[:, :2] - start
        side = -moved[:, 0] * np.sin(heading0) + moved[:, 1] * np.cos(heading0)
        side_max[:] = np.maximum(side_max, np.abs(side))
        count += 1
        if count % window == 0:
            marks.append(unwrapped.copy())

    def drifted() -> bool:  # a closed 10 s window already turned too far
        return count % window == 0 and float(np.degrees(np.abs(marks[-1] - marks[-2])).max()) > DRIFT_DEG

    alive, ran = _run(env, actor, steps, each, gate, drifted, noise)
    if count % window:
        marks.append(unwrapped.copy())  # the last, shorter window counts as a whole one: stricter
    moved = env.batch.qpos[:, :2] - start
    forward = moved[:, 0] * np.cos(heading0) + moved[:, 1] * np.sin(heading0)
    side = np.abs(-moved[:, 0] * np.sin(heading0) + moved[:, 1] * np.cos(heading0))
    drift = np.degrees(np.abs(np.diff(np.array(marks), axis=0))).max(axis=0)  # worst 10 s window, per env
    speed_share = forward / (speed * seconds)
    side_share = side / np.maximum(forward, 1e-6)
    out = {
        "command_vx": speed, "seconds": seconds, "still_up": int(alive.sum()),
        "speed_m_s": round(float(forward.mean() / seconds), 3),
        "speed_share": [round(float(x), 2) for x in (speed_share.min(), speed_share.max())],
        "max_heading_drift_deg_per_10s": round(float(drift.max()), 1),
        "max_sideways_share": round(float(side_share.max()), 3), "max_sideways_m": round(float(side_max.max()), 2),
    }  # fmt: skip
    _verdict(out, {
        _fell(alive): alive.all(),
        f"heading drift {drift.max():.1f} deg in 10 s (at most {DRIFT_DEG:g})": drift.max() <= DRIFT_DEG,
        f"sideways {side_share.max():.0%} of the distance (at most 10%)": side_share.max() <= 0.1,
        f"speed {speed_share.min():.0%}-{speed_share.max():.0%} of the command (80-120%)":
            bool(np.all(np.abs(speed_share - 1.0) <= 0.2)),
    })  # fmt: skip
    return _stopped(out, ran, steps, env.cfg.control_dt)


def straight(policy: Policy, seconds: float = 30.0, n: int = 8, gate: bool = False) -> dict:
    """Forward at three speeds across the checks' range (its sixths: 1/6, 1/2, 5/6), `seconds` each; with
    `gate`, the speeds after the first that fails are not run."""
    subject = Subject.of(policy)
    env = make_env(subject.env, 1, subject.env_config)
    lo, hi = _check_range(env.cfg)
    speeds = [round(lo + (hi - lo) * f, 3) for f in (1 / 6, 1 / 2, 5 / 6)]
    runs = []
    for slot, v in enumerate(speeds, start=1):
        runs.append(_straight_at(subject, v, seconds, n, slot, gate))
        if gate and not runs[-1]["passed"]:
            break
    missed = [f"at {r['command_vx']:g} m/s: {m}" for r in runs for m in r.get("missed", [])]
    return _verdict({"speeds": runs}, {"; ".join(missed): not missed and len(runs) == len(speeds)})


HOLD_SPEEDS = (0.1, 0.2, 0.3, 0.4)  # m/s: the shipped walkers' command range, where the checks run three
HOLD_SLOT = 11  # the start states' stream slots from here on: none of them is a training check's start


def speed_hold(
    policy: Policy, speeds: tuple[float, ...] = HOLD_SPEEDS, seconds: float = 60.0, n: int = 8, noisy: bool = False
) -> dict:
    """Holding a commanded speed, off the checks' distribution: the straight check's bars (speed within 80-120%
    of the command, heading within 5 deg per 10 s, sideways within 10%), at `speeds` the checks do not use,
    for `seconds` (twice the checks'), from start states of their own. Not one of a task's training checks:
    what a shipped walker must also do (`benchmarks/speed_hold.py`). `noisy`: with the action noise training
    samples, to tell a gait that walks its commanded speed only under that noise from one that never does."""
    subject = Subject.of(policy)
    runs = [_straight_at(subject, v, seconds, n, HOLD_SLOT + k, noisy=noisy) for k, v in enumerate(speeds)]
    missed = [f"at {r['command_vx']:g} m/s: {m}" for r in runs for m in r.get("missed", [])]
    return _verdict({"speeds": runs}, {"; ".join(missed): not missed})


def stand(policy: Policy, seconds: float = 10.0, n: int = 8, gate: bool = False) -> dict:
    env, actor = _start(policy, n)
    env.set_command(STANDING)
    start, heading0 = env.batch.qpos[:, :2].copy(), _heading(env)
    steps = round(seconds / env.cfg.control_dt)
    alive, ran = _run(env, actor, steps, gate=gate)
    drift = np.linalg.norm(env.batch.qpos[:, :2] - start, axis=1)
    turned = np.degrees(np.abs(np.angle(np.exp(1j * (_heading(env) - heading0)))))
    out = {"seconds": seconds, "still_up": int(alive.sum()), "max_drift_m": round(float(drift.max()), 3),
           "max_heading_drift_deg": round(float(turned.max()), 1)}  # fmt: skip
    _verdict(out, {
        _fell(alive): alive.all(),
        f"moved {drift.max():.2f} m (under 0.1)": drift.max() < 0.1,
        f"turned {turned.max():.1f} deg (at most {DRIFT_DEG:g})": turned.max() <= DRIFT_DEG,
    })  # fmt: skip
    return _stopped(out, ran, steps, env.cfg.control_dt)


def turn(policy: Policy, rate: float = 0.3, seconds: float = 10.0, n: int = 8, gate: bool = False) -> dict:
    env, actor = _start(policy, n)
    signs = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)  # half turn left, half right
    env.set_command(IN_PLACE)
    env.rate[:] = signs * rate
    turned, last = np.zeros(n), _heading(env)

    def each(e) -> None:
        nonlocal last
        now = _heading(e)
        turned[:] += np.angle(np.exp(1j * (now - last)))  # unwrapped heading change
        last = now

    steps = round(seconds / env.cfg.control_dt)
    alive, ran = _run(env, actor, steps, each, gate)
    share = turned * signs / (rate * seconds)
    out = {"rate": rate, "seconds": seconds, "still_up": int(alive.sum()),
           "min_turn_share": round(float(share.min()), 2), "max_turn_share": round(float(share.max()), 2)}  # fmt: skip
    _verdict(out, {_fell(alive): alive.all(), f"turned {share.min():.0%} of the angle (needs 50%)": share.min() >= 0.5})
    return _stopped(out, ran, steps, env.cfg.control_dt)


def footsteps(policy: Policy, steps: int = 400, n: int = 8, gate: bool = False) -> dict:
    """Every plan type on flat ground, `n` envs each, for `steps`. A target is hit when the env counts it
    reached (a sole held within its radius, then the next target follows). With `gate`, the plans after the
    first that fails are not run."""
    from ppolab.envs.step import N_STEPS, PLANS

    plans = {}
    for slot, plan in enumerate(PLANS):
        probs = [1.0 if p == plan else 0.0 for p in PLANS]
        env, actor = _start(policy, n, {"plan_probs": probs, "stair_ramp_start": 10**9}, stream_slot=slot)
        alive, ran = _run(env, actor, steps, gate=gate)
        hits = env.target.copy()
        plans[plan] = {"still_up": int(alive.sum()), "targets_hit": [int(h) for h in hits],
                       "min_share": round(float(hits.min() / N_STEPS), 2)}  # fmt: skip
        _verdict(plans[plan], {
            _fell(alive): alive.all(),
            f"hit {hits.min() / N_STEPS:.0%} of its targets (needs 80%)": hits.min() >= 0.8 * N_STEPS,
        })  # fmt: skip
        _stopped(plans[plan], ran, steps, env.cfg.control_dt)
        if gate and not plans[plan]["passed"]:
            break
    out = {"steps": steps, "envs_per_plan": n, "targets_per_plan": N_STEPS, "plans": plans,
           "min_share": min(p["min_share"] for p in plans.values())}  # fmt: skip
    missed = [f"{plan}: {m}" for plan, p in plans.items() for m in p.get("missed", [])]
    return _verdict(out, {"; ".join(missed): not missed and len(plans) == len(PLANS)})


def push(policy: Policy, seconds: float = 10.0, n: int = 8, gate: bool = False) -> dict:
    """Standing under pushes (the env's randomisation on: pushes, masses, friction)."""
    env, actor = _start(policy, n, {"randomization": {"enabled": True}}, pushed=True)
    steps = round(seconds / env.cfg.control_dt)
    alive, ran = _run(env, actor, steps, gate=gate)
    out = {"seconds": seconds, "push_force_n": env.cfg.randomization.push_force, "still_up": int(alive.sum())}
    _verdict(out, {_fell(alive): alive.all()})
    return _stopped(out, ran, steps, env.cfg.control_dt)


CHECKS: dict[str, Callable[..., dict]] = {  # every check by name; a task lists its own in `info.checks`
    "walk": walk, "stand": stand, "turn": turn, "straight": straight, "footsteps": footsteps, "push": push,
}  # fmt: skip


def register_check(name: str, check: Callable[..., dict]) -> None:
    """A check a new task names in its `info.checks`: `check(subject, gate=False) -> {"passed": ..., ...}`."""
    if name in CHECKS and CHECKS[name] is not check:
        raise ValueError(f"a behaviour check named {name!r} exists already")
    CHECKS[name] = check


def checks_of(env: str, env_config: dict | None = None) -> dict:
    """The env's checks by name, in the order its task declares them ({} for a task with none). A user robot's
    env is found from the robot file its saved config carries."""
    return {name: CHECKS[name] for name in env_info(env, env_config).checks}


def checks(env: str, policy: Policy, gate: bool = False) -> dict:
    """Every behaviour check of the env's kind on the policy (a Subject, run folder, pretrained folder or actor).
    With `gate`, a check stops as soon as it cannot pass (an env fell, a heading drifted too far: its figures
    then cover the time until then, `stopped_at_s`) and the round ends at the first check that fails: the later
    ones are not run (and not in the result). A gated round passes exactly when an ungated one would."""
    subject, out = Subject.of(policy), {}
    for name, check in checks_of(env, subject.env_config).items():
        out[name] = check(subject, gate=gate)
        if gate and not out[name]["passed"]:
            break
    return out


def all_passed(env: str, result: dict) -> bool:
    """Every check of the env's kind ran and passed (a gated round that stopped early did not pass)."""
    names = checks_of(env)
    return bool(names) and all(name in result and result[name]["passed"] for name in names)


def flat_figures(result: dict, prefix: str = "") -> dict[str, float]:
    """A check result's numbers as one flat mapping ("walk.passed": 1.0, "straight.speeds.0.speed_m_s": 0.28):
    what metrics.jsonl and TensorBoard take. Lists of numbers (per-env figures) are left out."""
    out: dict[str, float] = {}
    for key, value in result.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out |= flat_figures(value, f"{name}.")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, item in enumerate(value):
                out |= flat_figures(item, f"{name}.{i}.")
        elif isinstance(value, bool | int | float):
            out[name] = float(value)
    return out
