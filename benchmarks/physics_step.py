"""Side by side: one trained policy under several physics steps. Same gait, same checks, how much faster?

Issue 29 lets the physics step change only if a side-by-side measurement shows the same gait and the
same check results. For each physics step (`physics_dt`; the control period stays, so it must divide it):

- the env's behaviour checks, ungated, with every figure (walk, stand, turn, straight...);
- the gait, from the same 8 unseen start states, told to walk ahead at 0.3 m/s for 10 s: the leg joints'
  RMS difference from the first step's run (rad, over every joint, step and env), the share of
  (step, env, foot) whose contact agrees with it, touchdowns per foot, and the speed over ground;
- speed: env steps per second of those 8 envs stepping in this one process (policy included).

    python benchmarks/physics_step.py [--env jvrc_walk] [--policy pretrained/ENV] [--dts 0.001 0.0025 ...]
                                      [--json out.json]

The first step given is the reference (the robot file's own, 1 ms for every shipped robot).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from ppolab.envs.humanoid import yaw
from ppolab.envs.walk import FORWARD
from ppolab.evaluation.behaviour import Subject, _start, checks, flat_figures

PRETRAINED = Path(__file__).parent.parent / "pretrained"
SECONDS, SPEED, ENVS = 10.0, 0.3, 8


def gait(subject: Subject) -> dict[str, np.ndarray | float]:
    """Leg joint angles and foot contacts, every control step, walking ahead from the checks' start states
    (a walking task's forward mode; other tasks are stepped with the commands they draw themselves)."""
    env, actor = _start(subject, ENVS)
    if hasattr(env, "set_command"):
        env.set_command(FORWARD, vx=SPEED)
    start, heading = env.batch.qpos[:, :2].copy(), yaw(env.batch.qpos[:, 3:7])
    legs, contact, up = [], [], np.ones(ENVS, bool)
    t0 = time.perf_counter()
    for _ in range(round(SECONDS / env.cfg.control_dt)):
        _, _, fallen = env.step(actor(env.observe()))
        up &= ~fallen
        legs.append(env.batch.qpos[:, env.batch.leg_q].copy())
        contact.append(env.foot_contact())
    seconds = time.perf_counter() - t0
    moved = env.batch.qpos[:, :2] - start
    ahead = moved[:, 0] * np.cos(heading) + moved[:, 1] * np.sin(heading)
    c = np.array(contact, dtype=int)
    return {"legs": np.array(legs), "contact": c, "still_up": int(up.sum()), "speed_m_s": float(ahead.mean() / SECONDS),
            "touchdowns_per_foot": float((np.diff(c, axis=0) == 1).sum(axis=0).mean()),
            "env_steps_per_s": len(legs) * ENVS / seconds}  # fmt: skip


def compare(policy: Path, dts: list[float]) -> list[dict]:
    base = Subject.of(policy)
    rows, ref = [], None
    for dt in dts:
        subject = Subject(base.env, {**(base.env_config or {}), "physics_dt": dt}, base.params)
        t0 = time.perf_counter()
        figures = flat_figures(checks(base.env, subject))
        check_s = time.perf_counter() - t0
        g = gait(subject)
        ref = ref or g
        rms = float(np.sqrt(((g["legs"] - ref["legs"]) ** 2).mean()))
        row = {"physics_dt": dt, "checks_passed": all(figures[f"{name}.passed"] for name in _names(figures)),
               "checks_seconds": round(check_s, 1), "joint_rms_rad": rms,
               "contact_agreement": float((g["contact"] == ref["contact"]).mean()),
               **{k: g[k] for k in ("still_up", "speed_m_s", "touchdowns_per_foot", "env_steps_per_s")},
               "figures": figures}  # fmt: skip
        rows.append(row)
        print(_line(row), flush=True)
    return rows


def _names(figures: dict) -> list[str]:
    return [k.split(".")[0] for k in figures if k.count(".") == 1 and k.endswith(".passed")]


def _line(r: dict) -> str:
    f = r["figures"]
    straight = "/".join(
        f"{v:.3f}" for k, v in f.items() if k.startswith("straight.speeds.") and k.endswith("speed_m_s")
    )
    return (
        f"| {1000 * r['physics_dt']:g} ms | {'all pass' if r['checks_passed'] else 'FAIL'} | "
        f"{f.get('walk.distance_share', float('nan')):.2f} | {f.get('stand.max_drift_m', float('nan')):.3f} | "
        f"{straight} | {r['joint_rms_rad']:.3f} | {100 * r['contact_agreement']:.1f}% | "
        f"{r['touchdowns_per_foot']:.1f} | {r['speed_m_s']:.3f} | {r['env_steps_per_s']:,.0f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="jvrc_walk", help="its shipped policy, pretrained/ENV, unless --policy")
    ap.add_argument(
        "--policy", type=Path, help="a run folder, pretrained folder or actor .pt (default: pretrained/ENV)"
    )
    ap.add_argument("--dts", type=float, nargs="+", default=[0.001, 0.00125, 0.0025, 0.005])
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    print(
        "| physics step | checks | walk distance share | stand drift m | straight m/s | joint RMS vs first, rad "
        "| contact agrees | touchdowns/foot | speed m/s | env steps/s, one process |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = compare(a.policy or PRETRAINED / a.env, a.dts)
    if a.json:
        a.json.write_text(json.dumps({"env": a.env, "date": time.strftime("%Y-%m-%d"), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
