"""Collect one iteration of experience for a contiguous range of env slots.

An env slot is one logical env (worker `w`, env `j` is slot `w * envs_per_worker + j`).
Everything random about a slot in an iteration comes from its own generator,
seeded by (seed, stream, iteration, slot), and the policy is evaluated on a
batch padded to every slot at its global row. So a slot's trajectory is the
same whichever process samples it and however many processes share the work:
the metrics of a seed do not depend on the number of cores.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ppolab.ppo.sampling_policy import SamplingParams, SamplingPolicy

TRAIN_STREAM, WARMUP_STREAM, EVAL_STREAM, CHECK_STREAM = 0, 1, 2, 3  # CHECK: the behaviour checks' starts


def slot_rng(seed: int, stream: int, iteration: int, slot: int) -> np.random.Generator:
    return np.random.default_rng([seed, stream, iteration, slot])


@dataclass
class Trajectories:
    """Time-major arrays (T, slots, ...) of one iteration's experience.

    `ended` marks the last step of an episode (terminated, or cut by the horizon
    or the end of the iteration); `final_obs` holds the observation reached at
    that step, used to bootstrap the value of an episode that was cut, not
    terminated. `ep_return`/`ep_length` are set (else NaN) where an episode
    finished, by termination or by reaching the horizon. `reward_terms` (1, slots,
    terms) sums each reward term's contribution over the iteration's steps. `priv` and
    `final_priv` are the privileged state beside `obs` and `final_obs` (width 0 unless
    the critic is privileged).
    """

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    ended: np.ndarray
    final_obs: np.ndarray
    ep_return: np.ndarray
    ep_length: np.ndarray
    reward_terms: np.ndarray = field(default_factory=lambda: np.zeros((1, 0, 0)))
    priv: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0), np.float32))
    final_priv: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0), np.float32))

    @staticmethod
    def concat(parts: list[Trajectories]) -> Trajectories:
        return Trajectories(
            **{k: np.concatenate([getattr(p, k) for p in parts], axis=1) for k in Trajectories.__dataclass_fields__}
        )


class Episodes:
    """Each env's episode in progress when a rollout ended, held beside the envs (one per sampling process).

    With rollouts shorter than the episode horizon (`--steps-per-env`, as rsl_rl's num_steps_per_env), the
    next iteration of the same stream continues these episodes instead of starting fresh ones. Any other
    call (the first, a resume's first, another stream, a replaced Ray worker) starts fresh episodes."""

    def __init__(self) -> None:
        self.at: tuple[int, int] | None = None  # (stream, iteration) of the rollout that left them
        self.obs = self.priv = self.ep_ret = self.ep_len = self.limit = np.empty(0)

    def follows(self, stream: int, iteration: int) -> bool:
        return self.at == (stream, iteration - 1)

    def keep(self, at: tuple[int, int], obs: np.ndarray, priv: np.ndarray, ep_ret: np.ndarray, ep_len: np.ndarray,
             limit: np.ndarray) -> None:  # fmt: skip
        self.at, self.obs, self.priv, self.ep_ret, self.ep_len, self.limit = at, obs, priv, ep_ret, ep_len, limit


def collect(
    env,
    params: SamplingParams,
    *,
    seed: int,
    stream: int,
    iteration: int,
    first_slot: int,
    total_slots: int,
    steps: int,
    horizon: int | None = None,
    episodes: Episodes | None = None,
    privileged: bool = False,
) -> Trajectories:
    """Run `steps` policy steps in every env of `env`, its env i being slot first_slot + i.

    `horizon` None (LearningHumanoidWalking's rollouts): every call starts fresh episodes of at most `steps`
    steps. Else episodes last up to `horizon` steps, and those in progress at the end are kept in `episodes`
    for the next iteration to continue (the last step is then cut: bootstrapped, not an episode's end).
    `privileged`: record the env's privileged state beside each observation (a privileged critic's input)."""
    n, obs_dim, act_dim = env.num_envs, env.obs_dim, env.act_dim
    priv_dim = env.privileged_dim if privileged else 0
    none = np.zeros((n, 0), np.float32)
    state = env.privileged if privileged else (lambda: none)  # no allocation a step without it
    policy = SamplingPolicy(params)
    lo, hi = first_slot, first_slot + n
    rngs = [slot_rng(seed, stream, iteration, s) for s in range(lo, hi)]
    noise = np.stack([r.standard_normal((steps, act_dim), dtype=np.float32) for r in rngs], axis=1)
    noise *= policy.std

    out = Trajectories(
        obs=np.empty((steps, n, obs_dim), np.float32),
        actions=np.empty((steps, n, act_dim), np.float32),
        rewards=np.empty((steps, n), np.float32),
        terminated=np.empty((steps, n), bool),
        ended=np.empty((steps, n), bool),
        final_obs=np.zeros((steps, n, obs_dim), np.float32),
        ep_return=np.full((steps, n), np.nan),
        ep_length=np.full((steps, n), np.nan),
        reward_terms=np.zeros((1, n, len(env.rewards.names))),
        priv=np.empty((steps, n, priv_dim), np.float32),
        final_priv=np.zeros((steps, n, priv_dim), np.float32),
    )
    term_sums = out.reward_terms[0]
    env.set_iteration(iteration)  # curricula (the stepping task's stairs) follow the training iteration
    policy.reset(slice(None))
    if horizon is not None and episodes is not None and episodes.follows(stream, iteration):
        obs, priv, ep_ret, ep_len, limit = episodes.obs, episodes.priv, episodes.ep_ret, episodes.ep_len, episodes.limit
    else:
        for i in range(n):
            env.reset_one(i, rngs[i])
        obs, priv, ep_ret, ep_len = env.observe(), state(), np.zeros(n), np.zeros(n, np.int64)
        limit = np.full(n, steps if horizon is None else horizon)
        if horizon is not None:  # the first episodes end at random steps, so that the envs' episodes never end
            limit = np.array([r.integers(1, horizon + 1) for r in rngs])  # all in one iteration (rsl_rl's way)
    padded = np.zeros((total_slots, obs_dim), np.float32)
    last = steps - 1
    for t in range(steps):
        padded[lo:hi] = obs
        action = policy(padded)[lo:hi] + noise[t]
        out.obs[t] = obs
        out.priv[t] = priv
        out.actions[t] = action
        obs, reward, terminated = env.step(action)
        priv = state()
        term_sums += env.rewards.terms
        ep_ret += reward
        ep_len += 1
        finished = terminated | (ep_len >= limit)
        ended = finished if t < last else np.ones(n, bool)
        out.rewards[t] = reward
        out.terminated[t] = terminated
        out.ended[t] = ended
        if ended.any():
            out.final_obs[t, ended] = obs[ended]
            out.final_priv[t, ended] = priv[ended]
            out.ep_return[t, finished] = ep_ret[finished]
            out.ep_length[t, finished] = ep_len[finished]
            if finished.any() and (t < last or horizon is not None):  # continued: the next iteration goes on
                for i in np.flatnonzero(finished):
                    env.reset_one(i, rngs[i])
                    policy.reset(lo + i)
                ep_ret[finished] = 0.0
                ep_len[finished] = 0
                limit[finished] = steps if horizon is None else horizon
                obs, priv = env.observe(), state()
    if horizon is not None and episodes is not None:
        episodes.keep((stream, iteration), obs, priv, ep_ret, ep_len, limit)
    return out


def evaluate(
    env, params: SamplingParams, *, seed: int, steps: int, on_step=None, on_start=None
) -> tuple[np.ndarray, np.ndarray]:
    """Run one deterministic (mean-action) episode in each env; return (returns, lengths).

    Env i starts from the same state at every call with the same seed, so
    successive evaluations compare policies, not luck. `on_start(env)` is called
    after the resets (a held command), `on_step(env, alive)` after every step, with which
    envs were still in their episode at that step (video capture of env 0).
    """
    policy = SamplingPolicy(params)
    n = env.num_envs
    for i in range(n):
        env.reset_one(i, slot_rng(seed, EVAL_STREAM, 0, i))
    if on_start is not None:
        on_start(env)
    obs = env.observe()
    returns = np.zeros(n)
    lengths = np.zeros(n, np.int64)
    alive = np.ones(n, bool)
    for _ in range(steps):
        obs, reward, terminated = env.step(policy(obs))
        returns += np.where(alive, reward, 0.0)
        lengths += alive
        if on_step is not None:
            on_step(env, alive)
        alive &= ~terminated
        if not alive.any():
            break
    return returns, lengths
