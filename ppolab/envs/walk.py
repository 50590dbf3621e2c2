"""`<robot>_walk`: LearningHumanoidWalking's walking task on any robot file, holding its heading.

Each episode is in one of three modes, switched at random: standing, stepping in place
(turning at a commanded yaw rate), and walking forward at a commanded speed. A gait clock
(right swing, double support, left swing, double support) says when each foot should
carry weight and when it should swing; LHW's rewards score the feet against it, and the
root's velocity, yaw rate, height, posture and smoothness.

Beyond LHW, so that a robot told to walk straight walks straight: the task keeps a heading
reference (the heading when a mode starts, turned at the commanded yaw rate) and adds
`heading_gain` x the heading error to the observed yaw-rate command, as legged_gym's heading
command does, in every mode: standing too, where without it the policy cannot see that it has
turned. In the forward mode it also keeps the line the mode started on and adds `lateral_gain`
x the distance off it, back towards it, to the observed sideways command: a gait that crabs
with its heading held is steered back. Two reward terms make the tracking tight: `heading` (the
error itself) and `velocity_fine` (the velocity averaged over about half a gait cycle, on a
0.05 m/s scale, or one relative to the commanded speed with `velocity_relative`, beside LHW's broad
instantaneous term). Measured in benchmarks/README.md.

Observation: the robot state (root roll and pitch, root angular velocity, leg joint angles
and velocities, and their torques where the robot's task says so), the clock (sin, cos),
the mode one-hot (standing, in place, forward) and the command (yaw rate, vx, vy).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import Field, StrictBool

from ppolab.envs.gait_clock import clock_observation, clock_tables
from ppolab.envs.humanoid import IterationRange, Range, Weights3, ramp_share, yaw
from ppolab.envs.protocol import Marker
from ppolab.envs.reward_terms import EXP, LINEAR, RewardTable, Term
from ppolab.envs.robot_task import ClockedConfig, RobotTask
from ppolab.envs.task_registry import task_info

STANDING, IN_PLACE, FORWARD = 0, 1, 2
MODES = task_info("walk").modes  # standing, in_place, forward: the indices below
ONE_HOT = np.eye(3)
SWITCH_BLOCK = 128  # steps of mode-switch draws an env's generator fills at once
VELOCITY_AVERAGE_S = 0.5  # time constant of the averaged velocity that `velocity_fine` scores
# the feet against the gait clock (LHW's clock scores), in the walking and the stepping task alike
FOOT_CLOCK_TERMS = (
    Term("foot_force", 0.15, LINEAR, 0.5, doc="each foot's force against its clock: +1 when it bears weight as "
         "told (LHW's clock score), summed over the feet"),
    Term("foot_velocity", 0.15, LINEAR, 0.5, doc="each foot's speed against its clock: still in stance, moving "
         "in swing"),
)  # fmt: skip
WALK_TERMS = RewardTable(  # LHW's walking terms, with velocity_fine and heading added; the weights sum to 1
    *FOOT_CLOCK_TERMS,
    Term(
        "root_accel", 0.05, EXP, 0.25, doc="the root's angular velocity and linear acceleration, summed absolute values"
    ),
    Term("torque_change", 0.025, EXP, lambda t: 0.25 / t.n_legs, doc="the legs' torque change, summed absolute values"),
    Term("action_change", 0.025, EXP, lambda t: 5.0 / t.n_legs, doc="the legs' target change, summed absolute values"),
    Term("yaw_rate", 0.05, EXP, 10.0, doc="the yaw rate's error against the command, cubed"),
    Term("velocity", 0.075, EXP, 10.0, doc="the velocity's squared error in the heading's frame (LHW's)"),
    Term(
        "velocity_fine",
        0.2,
        EXP,
        1.0,
        doc="the velocity averaged over about half a gait cycle: its squared error over the scale ahead "
        "(velocity_scale, or velocity_relative x the commanded speed where larger) and lateral_scale sideways",
    ),
    Term("upper_body", 0.05, EXP, 10.0, doc="the head's horizontal offset over the root"),
    Term("posture", 0.05, EXP, 1.0, doc="the legs' distance from the nominal pose"),
    Term("height", 0.05, EXP, 40.0, doc="the root height's error beyond a tolerance growing with the speed, squared"),
    Term("heading", 0.125, EXP, lambda t: 1.0 / t.cfg.heading_scale**2, doc="the heading error, squared"),
)
WalkRewards = WALK_TERMS.weights_model("WalkRewards", "The walking terms' weights (walk.WALK_TERMS).")


class WalkConfig(ClockedConfig):
    """LHW's walking task on a 1.1 s gait cycle (0.4 s swing, 0.15 s double support; LHW's JVRC: 2.2 s),
    with a heading reference. A robot file's `tasks: walk:` changes any of it."""

    mode_probs: Weights3 = Field((0.4, 0.2, 0.4), description="standing, in place, forward at the start")
    forward_speed: Range = Field((0.1, 0.4), description="m/s of the forward mode")
    lateral_speed: Range = Field((0.0, 0.0), description="m/s sideways in the forward mode")
    turn_rate: Range = Field((-0.5, 0.5), description="rad/s of yaw in the in-place mode")
    stand_switch_prob: float = Field(
        0.01, ge=0, le=1, description="chance per step, in double support, of standing <-> in place"
    )
    walk_switch_prob: float = Field(0.005, ge=0, le=1, description="chance per step of in place <-> forward")
    speed_switch_prob: float = Field(0.0, ge=0, le=1, description="chance per step, in the forward mode, of a new "
                                     "speed drawn from forward_speed and lateral_speed, the heading and the line "
                                     "kept (0: one speed a forward mode, LHW's; 0.02 at 50 Hz: every 1 s "
                                     "on average, as legged_gym and mjlab resample their commands)")  # fmt: skip
    speed_ramp: IterationRange | None = Field(None, description="training iterations [first, last] over which the "
                                              "forward speeds drawn grow from forward_speed's slowest alone (up to "
                                              "first) to its whole range (from last), linearly: a command curriculum "
                                              "as legged_gym's. Checks and evaluation hold their own commands. null: "
                                              "the whole range from the first iteration (LHW's)")  # fmt: skip
    check_speed: Range | None = Field(None, description="m/s: the range the behaviour checks take their speeds "
                                      "from (walk: 3/4 of its top; straight: its sixths), so that a training "
                                      "range can change while the checks stay. null: forward_speed")  # fmt: skip
    heading_gain: float = Field(1.0, ge=0, le=20, description="rad/s of yaw command per rad of heading error "
                                "while stepping (0: LHW's open-loop yaw command)")  # fmt: skip
    heading_limit: float = Field(0.5, gt=0, description="rad/s: the heading correction's largest command")
    lateral_gain: float = Field(0.5, ge=0, le=20, description="m/s of sideways command per m off the line "
                                "walked in the forward mode (0: none)")  # fmt: skip
    lateral_limit: float = Field(0.1, gt=0, description="m/s: the line correction's largest sideways command")
    heading_standing: StrictBool = Field(True, description="the heading correction also while standing (the policy "
                                   "sees its heading error in every mode; false: only while stepping)")  # fmt: skip
    heading_scale: float = Field(0.1, gt=0, description="rad: the heading term's scale")
    velocity_scale: float = Field(0.05, gt=0, description="m/s: the velocity_fine term's scale, ahead (with "
                                  "velocity_relative: its smallest)")  # fmt: skip
    velocity_relative: float = Field(0.0, ge=0, le=2, description="the velocity_fine term's scale ahead as a share "
                                     "of the commanded forward speed, where larger than velocity_scale: an error "
                                     "judged relative to the command, as the speed checks judge it (0: "
                                     "velocity_scale at every speed)")  # fmt: skip
    lateral_scale: float = Field(0.05, gt=0, description="m/s: the velocity_fine term's scale, sideways (a "
                                 "crab walk drifts off the line while the heading holds)")  # fmt: skip
    rewards: WalkRewards = WalkRewards()  # type: ignore[valid-type]
    # what a setting added since meant before it existed: a saved config without it is read with these
    legacy: ClassVar[dict[str, Any]] = {"heading_standing": False, "lateral_gain": 0.0, "speed_switch_prob": 0.0,
                                        "velocity_relative": 0.0, "speed_ramp": None,
                                        "check_speed": None}  # fmt: skip


class WalkTask(RobotTask):
    """Walk on a velocity command with a clock-driven gait, holding the heading."""

    task = "walk"
    info = task_info("walk")
    Config = WalkConfig

    def __init__(self, num_envs: int, config: WalkConfig | None = None) -> None:
        from ppolab.envs import walk_kernels  # numba: imported by the envs that step, not by every ppolab command

        super().__init__(num_envs, config)
        self._walk_command, self._walk_reward = walk_kernels.walk_command, walk_kernels.walk_reward
        cfg = self.cfg
        self.clock, self.double_support = clock_tables(cfg.swing_duration, cfg.stance_duration, cfg.control_dt)
        self.period = len(self.clock)
        self._mode_clock = np.stack([np.ones_like(self.clock), self.clock, self.clock])  # (mode, phase, foot)
        n = num_envs
        self.phase = np.zeros(n, dtype=int)  # control steps into the gait cycle
        self.mode = np.zeros(n, dtype=int)
        self.rate = np.zeros(n)  # the mode's yaw rate (in place)
        self.velocity = np.zeros((n, 2))  # the mode's vx, vy (forward)
        self.heading_ref = np.zeros(n)
        self.line_origin = np.zeros((n, 2))  # where the mode started: the forward mode walks the line through it
        self.command = np.zeros((n, 3))  # what the policy observes: yaw rate (with the correction), vx, vy
        self.v_avg = np.zeros((n, 2))  # body-frame velocity, averaged
        self.prev_torque = np.zeros((n, self.n_legs))
        self.held = False  # a fixed command (the behaviour checks, videos): no random switches
        self.speed_share = 1.0  # how much of forward_speed's range the speeds drawn cover (`speed_ramp`)
        self.heading = np.zeros(n)  # the root's yaw after the last step
        self.heading_error = np.zeros(n)  # the heading reference minus the heading, wrapped
        self._switch_u, self._switch_k = np.empty((n, SWITCH_BLOCK, 2)), SWITCH_BLOCK  # the draws, the next one
        self.clock_obs = clock_observation(self.period)
        self._reward_tables()
        self._mode_cdf = np.cumsum(cfg.mode_probs) / sum(cfg.mode_probs)  # the start mode: Generator.choice's draw
        self.layout = self.observation_layout([("clock", 2), ("mode", 3), ("command", 3)])
        self.obs_dim, self.act_dim = self.layout["command"].stop, self.n_legs
        self.symmetry = self.mirrored(list(range(8)), [-1.0, -1.0, 1.0, 1.0, 1.0, -1.0, 1.0, -1.0])
        self._load_kernels()

    def _load_kernels(self) -> None:
        """Run the compiled kernels once now: numba's first call in a process costs about 0.4 s (its cache
        loaded, its types set up); made here, before a sampler forks its workers, they inherit it done."""
        v_avg = self.v_avg.copy()
        self._update_command()
        self._reward(self.batch.prev_action, self.batch.prev_action)
        self.v_avg[:] = v_avg  # the reward's running average, as it was: nothing of this call stays

    # -- commands ---------------------------------------------------------------
    def _set_mode(self, i: int, mode: int, rng: np.random.Generator) -> None:
        c = self.cfg
        self.mode[i] = mode
        self.rate[i] = rng.uniform(*c.turn_rate) if mode == IN_PLACE else 0.0
        self.velocity[i] = self._draw_velocity(rng) if mode == FORWARD else 0.0
        self.heading_ref[i] = yaw(self.batch.qpos[i : i + 1, 3:7])[0]  # a new mode starts from where it faces
        self.line_origin[i] = self.batch.qpos[i, :2]

    def _draw_velocity(self, rng: np.random.Generator) -> list[float]:
        """A forward mode's vx, vy: forward_speed's slowest up to its share of the range (`speed_ramp`)."""
        c = self.cfg
        lo, hi = c.forward_speed
        return [rng.uniform(lo, lo + (hi - lo) * self.speed_share), rng.uniform(*c.lateral_speed)]

    def set_command(self, mode: int, yaw_rate: float = 0.0, vx: float = 0.0, vy: float = 0.0) -> None:
        """Every env in `mode` with this command, held: the mode never switches (checks, videos)."""
        self.held = True
        self.mode[:] = mode
        self.rate[:] = yaw_rate
        self.velocity[:] = [vx, vy]
        self.heading_ref[:] = yaw(self.batch.qpos[:, 3:7])
        self.line_origin[:] = self.batch.qpos[:, :2]
        self._update_command()

    def _update_command(self) -> None:
        """The observed command: the mode's yaw rate plus the heading correction, the mode's velocity plus, in
        the forward mode, a sideways correction back onto the line the mode started on (walk_kernels)."""
        c = self.cfg
        self._walk_command(self.batch.qpos, self.mode, self.rate, self.velocity, self.heading_ref, self.line_origin,
                           c.heading_gain, c.heading_limit, c.heading_standing, c.lateral_gain, c.lateral_limit,
                           self.command, self.heading, self.heading_error)  # fmt: skip

    def markers(self, i: int) -> list[Marker]:
        """The command drawn over the robot: an arrow along the heading it is told to hold (blue: walk, its
        length the speed; yellow: turn in place), a grey ball while standing."""
        head = self.batch.sensors[i, self.s.head_pos] + (0.0, 0.0, 0.25)
        if self.mode[i] == STANDING:
            return [Marker("sphere", tuple(head), (0.05, 0.0, 0.0), (0.6, 0.6, 0.6, 0.8))]
        walking = self.mode[i] == FORWARD
        length = 0.15 + (1.5 * float(np.hypot(*self.velocity[i])) if walking else 0.1)
        rgba = (0.15, 0.35, 0.95, 0.9) if walking else (0.95, 0.8, 0.1, 0.9)
        return [Marker("arrow", tuple(head), (0.03, 0.03, length), rgba, float(self.heading_ref[i]))]

    def reset_one(self, i: int, rng: np.random.Generator) -> None:
        self.batch.reset_one(i, rng)
        env_rng = self.batch.rngs[i]
        self.phase[i] = env_rng.integers(self.period)
        self._set_mode(i, int(self._mode_cdf.searchsorted(env_rng.random(), side="right")), env_rng)
        self.prev_torque[i] = self.batch.torque[i]
        self.v_avg[i] = 0.0
        self.held = False
        self._update_command()

    def set_iteration(self, iteration: int) -> None:
        """A new iteration's switch draws start a new block, from the generators its resets just drew: what an
        iteration samples never depends on the one before it (a resumed run starts on fresh envs)."""
        super().set_iteration(iteration)
        self._switch_k = SWITCH_BLOCK
        self.speed_share = ramp_share(self.cfg.speed_ramp, iteration)

    def _switch_modes(self) -> None:
        """Standing <-> in place (only in double support) and in place <-> forward, at random. Each env's two
        draws a step come from a block its own generator fills every SWITCH_BLOCK steps: one call per env and
        block instead of one per env and step, and numpy's few calls for the whole batch on the steps (most)
        where no env draws a switch."""
        c, b = self.cfg, self.batch
        if self._switch_k == SWITCH_BLOCK:
            for rng, block in zip(b.rngs, self._switch_u):
                rng.random(out=block)
            self._switch_k = 0
        u = self._switch_u[:, self._switch_k]
        self._switch_k += 1
        walk_switch = c.walk_switch_prob
        drawn = (u[:, 0] < c.stand_switch_prob) | (u[:, 1] < walk_switch + c.speed_switch_prob)
        if not drawn.any():
            return
        for i in np.flatnonzero(drawn):
            mode = self.mode[i]
            if u[i, 0] < c.stand_switch_prob and self.double_support[self.phase[i]] and mode != FORWARD:
                self._set_mode(i, IN_PLACE if mode == STANDING else STANDING, b.rngs[i])
            elif u[i, 1] < walk_switch and mode != STANDING:
                self._set_mode(i, IN_PLACE if mode == FORWARD else FORWARD, b.rngs[i])
            elif walk_switch <= u[i, 1] < walk_switch + c.speed_switch_prob and mode == FORWARD:
                self.velocity[i] = self._draw_velocity(b.rngs[i])

    def observe(self) -> np.ndarray:
        obs = np.concatenate(
            [self.proprioception(), self.clock_obs[self.phase], ONE_HOT[self.mode], self.command], axis=1
        )
        return self.batch.noisy(obs, self.layout)

    privileged_dim: ClassVar[int] = RobotTask.privileged_dim + 2

    def task_privileged(self) -> list[np.ndarray]:
        """The averaged velocity `velocity_fine` scores: the reward's own state, which no observation holds."""
        return [self.v_avg]

    # -- stepping -----------------------------------------------------------------
    def force_clock(self) -> np.ndarray:
        """(n, 2) force clock of the right and left foot: +1 bear weight, -1 swing; standing: both +1."""
        return self._mode_clock[self.mode, self.phase]

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b = self.batch
        prev_target = b.prev_action  # apply() replaces the array, never writes into it
        target = b.apply(action)
        self.phase = (self.phase + 1) % self.period
        self.heading_ref += self.rate * self.cfg.control_dt
        if not self.held:
            self._switch_modes()
        self._update_command()
        reward = self._reward(target, prev_target)
        self.prev_torque = b.torque.copy()
        return self.observe(), reward, self.fallen()

    def _reward(self, target: np.ndarray, prev_target: np.ndarray) -> np.ndarray:
        """WALK_TERMS on this step, compiled: walk_kernels."""
        b, r = self.batch, self.rewards
        self._walk_reward(b.sensors, b.qpos, b.qvel, b.root_acc, b.torque, self.prev_torque, target, prev_target,
                          self._mode_clock, self.mode, self.phase, self.command, self.heading, self.heading_error,
                          self.v_avg, self.goal_height, self._sensor_at, self._leg_q, b.nominal_leg, self._params,
                          r.factor, r.linear, r.weights, r.sizes, r.terms, r.out)  # fmt: skip
        return r.compose()

    def _reward_tables(self) -> None:
        """What `_reward` needs that never changes: where its sensors and legs are, its normalisers, and the
        reward table bound to this task."""
        from ppolab.envs.walk_kernels import SIZES

        c, s = self.cfg, self.s
        self._sensor_at = np.array([s.sole_vel.start, s.touch.start, s.head_pos.start])
        self._leg_q = np.asarray(self.batch.layout.leg_qpos, dtype=np.int64)
        stance, swing = 2.0 / self.weight, 5.0  # touch x stance: 1 at half the weight; speed x swing: 1 at 0.2 m/s
        alpha = c.control_dt / VELOCITY_AVERAGE_S
        self._params = np.array([stance, swing, alpha, c.velocity_scale, 1.0 / c.lateral_scale, c.velocity_relative])
        self.rewards = WALK_TERMS.bind(self, c.rewards, SIZES)
