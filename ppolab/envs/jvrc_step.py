"""`jvrc_step`: JVRC-1 follows a plan of footsteps, on flat ground or up stairs.

Each episode draws a plan: forward, backward, lateral, curved, or standing
(stepping in place), as alternating right/left footsteps (x, y, z, yaw) in the
frame the robot starts in. The right foot swings in the first half of the gait
clock, so the clock starts where the plan's first foot lifts. A target is hit
when its foot bears weight within `hit_radius` of it; the next one follows.

Stairs: a forward plan may climb, each footstep on a new tread. The tread
height grows with the training iteration (`set_iteration`, called by the
sampler), from 0 to `max_stair_height` over `stair_ramp_iterations`.

Observation (39): the robot state (29, as jvrc_walk), the clock (sin, cos),
and the next two footstep targets in the root frame (dx, dy, dz, dyaw each).
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ppolab.envs.humanoid import HumanoidBatch, yaw
from ppolab.envs.jvrc import (
    STAIR_HALF,
    JvrcConfig,
    gait_scores,
    load_robot,
    robot_state,
    robot_state_mirror,
)
from ppolab.envs.symmetry import SignedPermutation, Symmetry, leg_mirror

PLANS = ("forward", "backward", "lateral", "curved", "standing")
N_STEPS = 30  # footsteps per plan: more than an episode can use
SIDE_R, SIDE_L = 0, 1


class StepRewards(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hit: float = 0.3
    progress: float = 0.2
    gait: float = 0.2
    upright: float = 0.1
    posture: float = 0.1
    action_change: float = 0.1


class StepConfig(JvrcConfig):
    gait_period: float = Field(0.8, gt=0)
    plan_probs: tuple[float, float, float, float, float] = Field(
        (0.4, 0.1, 0.15, 0.25, 0.1), description="forward, backward, lateral, curved, standing"
    )
    step_length: tuple[float, float] = (0.1, 0.3)
    step_width: float = Field(0.19, gt=0, description="lateral distance between the feet")
    lateral_step: tuple[float, float] = (0.05, 0.12)
    turn_per_step: tuple[float, float] = (0.05, 0.2)
    hit_radius: float = Field(0.1, gt=0)
    stair_prob: float = Field(0.3, ge=0, le=1, description="share of forward plans that climb stairs")
    max_stair_height: float = Field(0.1, ge=0)
    stair_ramp_iterations: int = Field(2000, gt=0)
    rewards: StepRewards = StepRewards()


def step_symmetry() -> Symmetry:
    swaps, negate = robot_state_mirror()
    negate += [29, 30, 32, 34, 36, 38]  # clock half a cycle on; dy and dyaw of both targets
    act_swaps, act_negate = leg_mirror(0, 6, [1, 2, 4])
    return Symmetry(SignedPermutation.build(39, swaps, negate), SignedPermutation.build(12, act_swaps, act_negate))


class JvrcStepEnv:
    """A batch of JVRC-1 footstep-following envs."""

    name = "jvrc_step"
    Config = StepConfig
    obs_dim = 39
    act_dim = 12
    camera = "track"
    symmetry = step_symmetry()

    def __init__(self, num_envs: int, config: StepConfig | None = None) -> None:
        self.cfg = cfg = config or StepConfig()
        self.model, layout, nominal = load_robot(cfg, stairs=N_STEPS)
        # stairs move per env: every env needs its own model copy, randomised or not
        self.batch = HumanoidBatch(self.model, layout, cfg, num_envs, nominal, own_models=True)
        self.physics = self.batch
        self.num_envs = num_envs
        self.weight = float(self.model.body_subtreemass[1] * -self.model.opt.gravity[2])
        self.stair_geoms = np.array([self.model.geom(f"stair{k}").id for k in range(N_STEPS)])
        n = num_envs
        self.plan = np.zeros((n, N_STEPS, 4))  # x, y, z, yaw of each footstep
        self.plan_side = np.zeros((n, N_STEPS), dtype=int)
        self.target = np.zeros(n, dtype=int)  # index of the next footstep
        self.phase = np.zeros(n)
        self.prev_dist = np.zeros(n)
        self.lifted = np.zeros(n, dtype=bool)  # the target's foot left the ground since the last hit
        self.iteration = 0

    def set_iteration(self, iteration: int) -> None:
        """The stairs curriculum: treads rise with the training iteration."""
        self.iteration = iteration

    def stair_height(self) -> float:
        c = self.cfg
        return c.max_stair_height * min(1.0, self.iteration / c.stair_ramp_iterations)

    # -- plans ------------------------------------------------------------------
    def _draw_plan(self, i: int, rng: np.random.Generator) -> None:
        c = self.cfg
        kind = PLANS[rng.choice(len(PLANS), p=np.array(c.plan_probs) / sum(c.plan_probs))]
        first = rng.integers(2)  # which foot steps first
        climb = kind == "forward" and rng.random() < c.stair_prob
        length = rng.uniform(*c.step_length)
        if climb:  # treads (0.3 m deep) as long as the steps, so that each footstep has its own
            length = max(length, 2 * STAIR_HALF[0])
        rise = self.stair_height() if climb else 0.0
        half = c.step_width / 2
        lateral = rng.uniform(*c.lateral_step) * rng.choice([-1, 1])
        turn = rng.uniform(*c.turn_per_step) * rng.choice([-1, 1])
        k = np.arange(N_STEPS)
        side = (first + k) % 2
        step = np.full(N_STEPS, length)  # cumulative sums add in order, as a walker would
        zero = np.zeros(N_STEPS)
        yaw = np.cumsum(np.full(N_STEPS, turn)) if kind == "curved" else zero
        x, y = {
            "forward": (np.cumsum(step), zero),
            "backward": (np.cumsum(-step), zero),
            "lateral": (zero, np.cumsum(np.full(N_STEPS, lateral))),
            "curved": (np.cumsum(np.cos(yaw) * length), np.cumsum(np.sin(yaw) * length)),
            "standing": (zero, zero),
        }[kind]
        offset = np.where(side == SIDE_L, half, -half)
        # on stairs, the first two footsteps stay on the floor: the flight starts clear of the feet
        z = np.where(k >= 2, rise * (k - 1), 0.0) if climb else zero
        self.plan[i] = np.stack([x - np.sin(yaw) * offset, y + np.cos(yaw) * offset, z, yaw], axis=1)
        self.plan_side[i] = side
        self._place_stairs(i, climb and rise > 0)

    def _place_stairs(self, i: int, climb: bool) -> None:
        m = self.batch.models[i]
        pos = m.geom_pos[self.stair_geoms]
        pos[:] = [0.0, 0.0, -5.0]
        if climb:
            for k in range(2, N_STEPS):
                x, _, z, _ = self.plan[i, k]
                pos[k] = [x, 0.0, z - STAIR_HALF[2]]
        m.geom_pos[self.stair_geoms] = pos

    # -- episode state ------------------------------------------------------------
    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        self.batch.reset_one(i, rng)
        env_rng = self.batch.rngs[i]
        self._draw_plan(i, env_rng)
        self.target[i] = 0
        self.lifted[i] = False
        # the first footstep's foot swings now: the right foot swings in [0, 0.5) of the clock
        self.phase[i] = 0.0 if self.plan_side[i, 0] == SIDE_R else 0.5
        self.prev_dist[i] = self._distance(i)

    def _foot_pos(self) -> np.ndarray:
        return self.batch.sensors[:, 8:14].reshape(-1, 2, 3)

    def _distance(self, i: int) -> float:
        k = self.target[i]
        foot = self._foot_pos()[i, self.plan_side[i, k]]
        return float(np.linalg.norm(foot[:2] - self.plan[i, k, :2]))

    def _targets_in_root_frame(self) -> np.ndarray:
        """The next two footsteps (x, y, z, yaw) relative to the root's position and heading."""
        b = self.batch
        heading = yaw(b.qpos[:, 3:7])[:, None]
        k = np.minimum(self.target[:, None] + np.arange(2), N_STEPS - 1)
        t = self.plan[np.arange(self.num_envs)[:, None], k]  # (n, 2, 4)
        dx, dy = t[..., 0] - b.qpos[:, 0:1], t[..., 1] - b.qpos[:, 1:2]
        cos, sin = np.cos(heading), np.sin(heading)
        out = np.stack(
            [
                cos * dx + sin * dy,
                -sin * dx + cos * dy,
                t[..., 2] - (b.qpos[:, 2:3] - b.nominal_qpos[2]),
                np.angle(np.exp(1j * (t[..., 3] - heading))),
            ],
            axis=2,
        )
        return out.reshape(self.num_envs, 8)

    def observe(self) -> np.ndarray:
        clock = 2 * np.pi * self.phase
        obs = np.concatenate(
            [robot_state(self.batch), np.sin(clock)[:, None], np.cos(clock)[:, None], self._targets_in_root_frame()],
            axis=1,
        )
        return self.batch.noisy(obs)

    # -- stepping -------------------------------------------------------------------
    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b, c, w = self.batch, self.cfg, self.cfg.rewards
        prev_action = b.prev_action.copy()
        smoothed = b.apply(action)
        lay, n = b.layout, self.num_envs
        swing = np.stack([self.phase < 0.5, self.phase >= 0.5], axis=1)
        foot_force, foot_velocity = gait_scores(b, swing, self.weight)
        gait = 0.5 * (foot_force + foot_velocity)
        force = np.clip(b.sensors[:, 0:2] / self.weight, 0.0, 1.0)
        rows, k = np.arange(n), self.target
        side = self.plan_side[rows, k]
        feet = self._foot_pos()
        dist = np.linalg.norm(feet[rows, side, :2] - self.plan[rows, k, :2], axis=1)
        progress = np.clip((self.prev_dist - dist) / 0.01, -1.0, 1.0) * 0.5 + 0.5
        on_target_foot = force[rows, side]
        self.lifted |= on_target_foot < 0.05
        hits = self.lifted & (on_target_foot > 0.3) & (dist < c.hit_radius) & (k < N_STEPS - 1)
        self.target = k + hits
        self.lifted &= ~hits
        if hits.any():  # progress towards the new target starts from the foot's distance to it
            nk = self.target
            new_dist = np.linalg.norm(feet[rows, self.plan_side[rows, nk], :2] - self.plan[rows, nk, :2], axis=1)
            dist = np.where(hits, new_dist, dist)
        self.prev_dist = dist
        hit = hits.astype(float)
        upright = np.exp(-20.0 * (1.0 - b.upper_z))
        hips = [0, 1, 2, 6, 7, 8]
        posture = np.exp(-5.0 * np.mean((b.qpos[:, lay.leg_qpos] - b.nominal_leg)[:, hips] ** 2, axis=1))
        action_change = np.exp(-5.0 * np.mean((smoothed - prev_action) ** 2, axis=1))
        reward = (
            w.hit * hit + w.progress * progress + w.gait * gait + w.upright * upright + w.posture * posture
            + w.action_change * action_change
        )  # fmt: skip
        self.phase = (self.phase + c.control_dt / c.gait_period) % 1.0
        z = b.qpos[:, 2] - self.plan[np.arange(n), np.maximum(self.target - 1, 0), 2] * (self.target > 0)
        lo, hi = c.height_range
        terminated = (z < lo) | (z > hi)
        if c.terminate_on_self_collision:
            terminated |= b.self_contact
        return self.observe(), reward, terminated
