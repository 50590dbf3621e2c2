"""`<robot>_step`: LearningHumanoidWalking's stepping task on any robot file: step onto a plan of
footstep targets, on flat ground or up stairs.

Each episode draws a plan in the frame the robot starts in: forward (0.3 m steps), backward (0.1 m),
lateral (0.4 m out, two thirds of it back), curved, or standing (one target between the feet), at
0.3 / 0.2 / 0.3 / 0.15 / 0.05 (a robot file's `tasks: step:` changes any of it). The gait clock is
the walking task's (JVRC: a 1.1 s cycle; LHW: 2.2 s). A target counts as reached while a sole is
within `target_radius` (0.2 m) of it; after `swing_duration` of frames there (16; LHW: 30), the next
target follows. The step reward is dense: 0.8 exp(-d / 0.25) while a sole is within the radius (d:
the nearer sole's distance to the target) plus 0.2 exp(-|root - midpoint of the next two targets| / 2).

Stairs: a forward plan's targets rise after its first 2-3 steps; the tread height grows with the
training iteration (`set_iteration`, called by the sampler) from 0 at `stair_ramp_start` to
`max_stair_height` (0.1 m) over `stair_ramp_iterations` (LHW: 3,000 and 8,000). LHW also descends;
here stairs only rise.

Observation: the robot state, the clock (sin, cos), and the next two targets in the root frame
(dx, dy, dz, dyaw each).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from ppolab.envs.gait_clock import clock_observation, clock_tables
from ppolab.envs.humanoid import Range, Weights5, yaw
from ppolab.envs.protocol import Marker
from ppolab.envs.reward_terms import EXP, LINEAR, RewardTable, Term
from ppolab.envs.robot_model import STAIR_HALF
from ppolab.envs.robot_task import ClockedConfig, RobotTask
from ppolab.envs.task_registry import task_info
from ppolab.envs.walk import FOOT_CLOCK_TERMS, IN_PLACE, ONE_HOT

PLANS = task_info("step").plans  # forward, backward, lateral, curved, standing: the indices below
N_STEPS = 20  # targets per plan, as LHW's
RED, ORANGE, GREY = (0.9, 0.1, 0.1, 0.9), (0.95, 0.55, 0.1, 0.8), (0.5, 0.5, 0.5, 0.4)  # targets in a video


STEP_TERMS = RewardTable(  # LearningHumanoidWalking's stepping terms (the weights sum to 0.9, as there)
    *FOOT_CLOCK_TERMS,  # a standing plan holds the clock: both feet bear weight
    Term(
        "orientation", 0.05, EXP, 10.0, doc="1 - (the root's heading against the target's, as a quaternion product)^2"
    ),
    Term("height", 0.05, EXP, 40.0, doc="the root's height over the lower sole, its error beyond 0.01 m, squared"),
    Term(
        "step",
        0.45,
        LINEAR,
        1.0,
        doc="0.8 exp(-d / 0.25) while a sole is within the radius of the target (d: "
        "its distance), plus 0.2 exp(-|root - midpoint of the next two targets| / 2)",
    ),
    Term("upper_body", 0.05, EXP, 10.0, doc="the head's horizontal offset over the root, squared"),
)
StepRewards = STEP_TERMS.weights_model("StepRewards", "The stepping terms' weights (step.STEP_TERMS).")


class StepConfig(ClockedConfig):
    """LHW's stepping task on the walking task's 1.1 s clock. On LHW's 2.2 s clock, with a target held one
    swing (0.75 s, 30 frames) before the next follows, 400 steps reach at most 13 of a plan's 20 targets and
    about 9 in stride: the footstep check's 80% could not be met (benchmarks/README.md)."""

    plan_probs: Weights5 = Field(
        (0.3, 0.2, 0.3, 0.15, 0.05), description="forward, backward, lateral, curved, standing"
    )
    forward_step: float = Field(0.3, gt=0, description="m between successive targets of a forward plan")
    backward_step: float = Field(0.1, gt=0)
    lateral_step: float = Field(0.4, gt=0, description="m out; each return step is two thirds of it")
    step_gap: float = Field(0.15, gt=0, description="m of a target either side of the walking line")
    first_gap: Range = Field((0.095, 0.105), description="m: the first target (under the stance foot) off the line")
    turn_per_step: Range = Field((0.05, 0.2), description="rad per step of a curved plan")
    target_radius: float = Field(0.2, gt=0, description="m: a sole this near a target has reached it")
    max_stair_height: float = Field(0.1, ge=0)
    stair_ramp_start: int = Field(3000, ge=0, description="iteration from which stairs start to rise")
    stair_ramp_iterations: int = Field(8000, gt=0)
    rewards: StepRewards = StepRewards()  # type: ignore[valid-type]


class StepTask(RobotTask):
    """Follow a plan of footstep targets"""

    task = "step"
    info = task_info("step")
    Config = StepConfig

    def __init__(self, num_envs: int, config: StepConfig | None = None) -> None:
        super().__init__(num_envs, config, stairs=N_STEPS)
        cfg = self.cfg
        self.stair_geoms = np.array([self.model.geom(f"stair{k}").id for k in range(N_STEPS)])
        self.clock, _ = clock_tables(cfg.swing_duration, cfg.stance_duration, cfg.control_dt)
        self.period = len(self.clock)
        self.hold_frames = int(np.floor(cfg.swing_duration / cfg.control_dt + 1e-9))
        n = num_envs
        self.plan = np.zeros((n, N_STEPS, 4))  # x, y, z, yaw of each target, in the world
        self.kind = np.zeros(n, dtype=int)  # index into PLANS
        self.target = np.zeros(n, dtype=int)  # the target to reach now (t1); the next one is t1 + 1
        self.reached = np.zeros(n, dtype=int)  # frames a sole has stayed within the radius of the target
        self.phase = np.zeros(n, dtype=int)
        self.iteration = 0
        self.clock_obs = clock_observation(self.period)
        self._kernel_tables()
        self.layout = self.observation_layout([("clock", 2), ("targets", 8)])
        self.obs_dim, self.act_dim = self.layout["targets"].stop, self.n_legs
        # clock half a cycle on; dy and dyaw of both targets flip
        self.symmetry = self.mirrored(list(range(10)), [-1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0])

    def set_iteration(self, iteration: int) -> None:
        """The stairs curriculum: treads rise with the training iteration."""
        super().set_iteration(iteration)
        self.iteration = iteration

    def stair_height(self) -> float:
        c = self.cfg
        return c.max_stair_height * float(
            np.clip((self.iteration - c.stair_ramp_start) / c.stair_ramp_iterations, 0, 1)
        )

    # -- plans ------------------------------------------------------------------
    def _draw_plan(self, i: int, rng: np.random.Generator, start: np.ndarray, heading: float) -> None:
        """Targets for env i, from the midpoint of its feet (`start`, x and y), in the frame it faces."""
        c, k = self.cfg, np.arange(N_STEPS)
        kind = int(rng.choice(len(PLANS), p=np.array(c.plan_probs) / sum(c.plan_probs)))
        self.kind[i] = kind
        left_first = self.phase[i] != 0  # the first target is where the stance foot stands
        side = np.where((k % 2 == 0) == left_first, -1.0, 1.0)  # -1: a right-foot target
        first = rng.uniform(*c.first_gap)
        y = np.where(k == 0, first, c.step_gap) * side
        zero = np.zeros(N_STEPS)
        yaw, z = zero, zero
        if PLANS[kind] in ("forward", "backward"):
            step = c.forward_step if PLANS[kind] == "forward" else -c.backward_step
            x = step * k
            rise = self.stair_height() if PLANS[kind] == "forward" else 0.0
            flat = int(rng.integers(2, 4))  # the first few targets stay on the floor
            z = rise * np.maximum(0, k - flat)
        elif PLANS[kind] == "lateral":
            direction = rng.choice([-1.0, 1.0])
            moves = np.where(k % 2 == 0, c.lateral_step, -2.0 / 3.0 * c.lateral_step)  # out, two thirds back
            x, y = zero, direction * np.cumsum(moves)
        elif PLANS[kind] == "curved":  # the walking line turns a little at every step
            yaw = rng.uniform(*c.turn_per_step) * rng.choice([-1, 1]) * k
            cx = np.cumsum(np.where(k > 0, np.cos(yaw) * c.forward_step, 0.0))
            cy = np.cumsum(np.where(k > 0, np.sin(yaw) * c.forward_step, 0.0))
            x, y = cx - np.sin(yaw) * y, cy + np.cos(yaw) * y
        else:  # standing: every target where the stance foot is
            x, y = zero, np.full(N_STEPS, y[0])
        cos, sin = np.cos(heading), np.sin(heading)
        self.plan[i] = np.stack([start[0] + cos * x - sin * y, start[1] + sin * x + cos * y, z, yaw + heading], axis=1)
        self._place_stairs(i, z.max() > 0, heading)

    def _place_stairs(self, i: int, climb: bool, heading: float) -> None:
        """A tread under every raised target, as deep as a step, across the walking line (turned with it)."""
        m = self.batch.models[i]
        pos = m.geom_pos[self.stair_geoms]
        pos[:] = [0.0, 0.0, -5.0]
        if climb:
            line = self.plan[i, 0, :2]  # the treads are centred on the walking line, not on each foot's target
            cos, sin = np.cos(heading), np.sin(heading)
            for k in np.nonzero(self.plan[i, :, 2] > 0)[0]:
                x, y, z, _ = self.plan[i, k]
                along = (x - line[0]) * cos + (y - line[1]) * sin
                pos[k] = [line[0] + along * cos, line[1] + along * sin, z - STAIR_HALF[2]]
        m.geom_pos[self.stair_geoms] = pos
        m.geom_quat[self.stair_geoms] = [np.cos(heading / 2), 0.0, 0.0, np.sin(heading / 2)]

    # -- episode state ------------------------------------------------------------
    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        self.batch.reset_one(i, rng)
        env_rng = self.batch.rngs[i]
        self.phase[i] = 0 if env_rng.random() < 0.5 else self.period // 2
        heading = float(yaw(self.batch.qpos[i : i + 1, 3:7])[0])
        self._draw_plan(i, env_rng, self.sole_positions()[i, :, :2].mean(axis=0), heading)
        self.target[i] = 0
        self.reached[i] = 0

    def _kernel_tables(self) -> None:
        """What the compiled step needs that never changes: where its sensors are, the reward table bound to
        this task, and the arrays it writes into."""
        from ppolab.envs import step_kernels  # numba: imported by the envs that step, not by every ppolab command

        s = self.s
        self._kernels = step_kernels
        self._sensor_at = np.array([s.sole_pos.start, s.sole_vel.start, s.touch.start, s.head_pos.start])
        self.rewards = STEP_TERMS.bind(self, self.cfg.rewards, step_kernels.SIZES)
        self._targets_out = np.empty((self.num_envs, 8))

    def _standing(self) -> np.ndarray:
        return self.kind == PLANS.index("standing")

    def _targets_in_root_frame(self) -> np.ndarray:
        """The next two targets (x, y, z, yaw) relative to the root's position and heading; zeros when standing
        (compiled: step_kernels)."""
        self._kernels.targets_in_root_frame(self.batch.qpos, self.plan, self.target, self._standing(),
                                            self._targets_out)  # fmt: skip
        return self._targets_out

    def observe(self) -> np.ndarray:
        obs = np.concatenate([self.proprioception(), self.clock_obs[self.phase], self._targets_in_root_frame()], axis=1)
        return self.batch.noisy(obs, self.layout)

    def expert_fill(self, expert_task: str) -> dict[str, np.ndarray]:
        """A walking expert steps in place with no velocity command (as LHW's H1 students ask theirs): the gait
        its student needs before it follows targets."""
        return {"mode": ONE_HOT[IN_PLACE], "command": np.zeros(3)} if expert_task == "walk" else {}

    def expert_mask(self):
        """Samples of a plan with targets (a standing plan's are all zero: its clock is held, not the walk's)."""
        targets = self.layout["targets"]
        return lambda obs: np.abs(obs[:, targets]).max(axis=1) > 0.05  # m: above any observation noise

    def markers(self, i: int) -> list[Marker]:
        """The plan's footstep targets on the ground: the one to reach now red, the next orange, the rest grey
        (a standing plan: the stance foot's place, red)."""
        out, now = [], int(self.target[i])
        for k, (x, y, z, _) in enumerate(self.plan[i]):
            rgba = RED if k == now else ORANGE if k == now + 1 else GREY
            out.append(Marker("disc", (x, y, z + 0.003), (0.06, 0.003, 0.0), rgba))
        return out

    def ground_height(self) -> np.ndarray:
        return self.sole_positions()[:, :, 2].min(axis=1)

    # -- stepping -------------------------------------------------------------------
    def _task_step(self) -> np.ndarray:
        """The targets' progress and the reward, on the state the physics left (compiled: step_kernels).

        A target is reached once a sole has stayed within `target_radius` of it for `hold_frames` frames; the
        next one follows. The reward: STEP_TERMS."""
        c, r = self.cfg, self.rewards
        self._kernels.step_reward(self.batch.sensors, self.batch.qpos, self.plan, self._standing(), self.target,
                                  self.reached, self.clock, self.phase, self._sensor_at, self.hold_frames,
                                  c.target_radius, self.goal_height, 2.0 / self.weight, r.factor, r.linear,
                                  r.weights, r.sizes, r.terms, r.out)  # fmt: skip
        return r.compose()

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self.batch.apply(action)
        self.phase = (self.phase + 1) % self.period
        reward = self._task_step()
        return self.observe(), reward, self.fallen()
