"""Humanoid envs: shapes, rewards, terminations, determinism, the model cache and --yaml overrides."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from conftest import REPO, read_metrics, run_ppolab

from ppolab.envs import make_env
from ppolab.envs.h1 import H1Config, H1Env
from ppolab.envs.humanoid import Randomization

HUMANOIDS = ["h1", "jvrc_walk", "jvrc_step", "h1_walk", "g1_walk", "t1_walk", "berkeley_walk", "jvrc_stand"]


def rollout(env, seed: int, steps: int, actions: np.ndarray | None = None):
    rng = np.random.default_rng(seed)
    for i in range(env.num_envs):
        env.reset_one(i, rng)
    out = []
    for t in range(steps):
        a = np.zeros((env.num_envs, env.act_dim)) if actions is None else actions[t]
        obs, rew, term = env.step(a)
        out.append((obs.copy(), rew.copy(), term.copy()))
    return out


@pytest.mark.parametrize("name", HUMANOIDS)
def test_shapes_and_finite_rewards_within_range(name):
    env = make_env(name, 3)
    rng = np.random.default_rng(0)
    for i in range(3):
        env.reset_one(i, rng)
    assert env.observe().shape == (3, env.obs_dim) and env.observe().dtype == np.float32
    actions = np.random.default_rng(1).uniform(-1, 1, size=(30, 3, env.act_dim))
    for obs, rew, term in rollout(env, 0, 30, actions):
        assert obs.shape == (3, env.obs_dim) and np.isfinite(obs).all()
        # the clock terms of the walking and stepping tasks score -1 for the opposite of the gait asked for
        low = -sum(getattr(env.cfg.rewards, k, 0.0) for k in ("foot_force", "foot_velocity"))
        assert rew.shape == (3,) and np.isfinite(rew).all() and (rew >= low).all() and (rew <= 1.0 + 1e-9).all()
        assert term.dtype == bool


def test_dimensions_match_the_tasks():
    assert (H1Env(1).obs_dim, H1Env(1).act_dim) == (35, 10)
    assert H1Env(1).model.nu == 19  # h1 holds its torso and arms with servos
    walk = make_env("jvrc_walk", 1)
    assert (walk.obs_dim, walk.act_dim) == (37, 12)
    assert walk.model.nu == 12  # only the legs are actuated; the upper body is welded
    step = make_env("jvrc_step", 1)
    assert (step.obs_dim, step.act_dim) == (39, 12)
    h1_walk = make_env("h1_walk", 1)  # LHW's h1_walk observes the torques: 35 + clock, mode and command
    assert (h1_walk.obs_dim, h1_walk.act_dim, h1_walk.model.nu) == (43, 10, 10)
    assert list(h1_walk.layout) == ["root_orient", "root_ang_vel", "joint_pos", "joint_vel", "joint_torque",
                                    "clock", "mode", "command"]  # fmt: skip


def test_jvrc_step_plans_targets_and_the_stairs_curriculum():
    env = make_env("jvrc_step", 2, {"plan_probs": [1, 0, 0, 0, 0]})  # forward plans
    rng = np.random.default_rng(0)
    env.set_iteration(0)
    env.reset_one(0, rng)
    assert (env.plan[0, :, 2] == 0).all()  # no rise yet: the curriculum starts flat (LHW: from iteration 3,000)
    env.set_iteration(env.cfg.stair_ramp_start + env.cfg.stair_ramp_iterations)
    env.reset_one(1, rng)
    line_y = env.sole_positions()[1, :, 1].mean()  # the plan starts from the midpoint of the feet
    rises = np.diff(env.plan[1, :, 2])
    np.testing.assert_allclose(rises[rises > 0], env.cfg.max_stair_height)  # one tread per target, full height
    np.testing.assert_allclose(np.diff(env.plan[1, :, 0]), env.cfg.forward_step)  # 0.3 m steps
    assert (np.sign(env.plan[1, 1:, 1]) != np.sign(env.plan[1, :-1, 1])).all()  # left, right, left, ...
    raised = env.plan[1, :, 2] > 0
    tops = env.batch.models[1].geom_pos[env.stair_geoms[raised], 2] + 0.5
    np.testing.assert_allclose(tops, env.plan[1, raised, 2])  # each raised target stands on its tread
    assert env.batch.models[0].geom_pos[env.stair_geoms, 2].max() < -1  # env 0's stairs stay hidden
    # the first target is under the stance foot: the left one when the right foot swings first (phase 0)
    stance_left = env.phase[1] == 0
    first = env.plan[1, 0, 1] - line_y
    assert (first > 0) == stance_left and abs(abs(first) - 0.1) <= 0.005


def test_a_stepping_plan_is_drawn_in_the_frame_the_robot_starts_in():
    """A robot that starts facing another way gets the same plan, turned with it (the checks start that way)."""
    import math

    straight = make_env("jvrc_step", 1, {"plan_probs": [1, 0, 0, 0, 0]})
    turned = make_env("jvrc_step", 1, {"plan_probs": [1, 0, 0, 0, 0], "init_yaw": [math.pi / 2, math.pi / 2]})
    straight.reset_one(0, np.random.default_rng(3))
    turned.reset_one(0, np.random.default_rng(3))
    np.testing.assert_allclose(turned.observe()[0, -8:], straight.observe()[0, -8:], atol=1e-6)
    steps = np.diff(turned.plan[0, :, :2], axis=0)
    np.testing.assert_allclose(steps[:, 1], 0.3)  # forward is now +y, 0.3 m a step
    np.testing.assert_allclose(np.abs(steps[1:, 0]), 0.3)  # and the feet alternate across the line (x)


def test_jvrc_step_target_advances_after_a_foot_holds_it_for_a_swing():
    env = make_env("jvrc_step", 1)
    env.reset_one(0, np.random.default_rng(0))
    assert env.hold_frames == 16  # one swing, 0.4 s at 40 Hz (LHW: 0.75 s, 30 frames)
    sole = env.sole_positions()[0, 0]

    def hold(offset: float) -> None:  # the target `offset` m from the right sole; the robot is not stepped
        env.plan[0, env.target[0], :3] = sole + (offset, 0.0, 0.0)
        env._task_step()

    for frame in range(1, 16):
        hold(0.1)
        assert env.target[0] == 0 and env.reached[0] == frame
    hold(0.1)
    assert env.target[0] == 1 and env.reached[0] == 0  # the 16th frame moves on
    hold(0.1)
    hold(0.3)  # outside the 0.2 m radius: the count starts again
    assert env.target[0] == 1 and env.reached[0] == 0


def _step_terms(env, target: np.ndarray, reached: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Each stepping term from its definition, numpy, from the targets before this step's progress; and the
    targets after it."""
    from ppolab.envs.step import N_STEPS, PLANS

    b, c, s, rows = env.batch, env.cfg, env.s, np.arange(env.num_envs)
    feet = b.sensors[:, s.sole_pos].reshape(-1, 2, 3)

    def nearest(point):
        return np.sqrt(((feet - point[:, None, :]) ** 2).sum(2).min(axis=1))

    inside = nearest(env.plan[rows, target, :3]) < c.target_radius
    reached = np.where(inside, reached + 1, 0)
    done = inside & (reached >= env.hold_frames)
    target = np.where(done, np.minimum(target + 1, N_STEPS - 1), target)
    t1, t2 = env.plan[rows, target], env.plan[rows, np.minimum(target + 1, N_STEPS - 1)]
    clock = np.where((env.kind == PLANS.index("standing"))[:, None], 1.0, env.clock[env.phase])
    force = np.clip(b.sensors[:, s.touch] / (0.5 * env.weight), 0.0, 1.0)
    speed = np.clip(np.linalg.norm(b.sensors[:, s.sole_vel].reshape(-1, 2, 3), axis=2) / 0.2, 0.0, 1.0)
    q, half = b.qpos[:, 3:7], t1[:, 3] / 2
    align = q[:, 0] * np.cos(half) + q[:, 3] * np.sin(half)
    height = np.abs(b.qpos[:, 2] - feet[:, :, 2].min(axis=1) - env.goal_height)
    hit = np.where(inside & ~done, np.exp(-nearest(t1[:, :3]) / 0.25), 0.0)
    mid = b.qpos[:, :2] - (t1[:, :2] + t2[:, :2]) / 2
    head = b.sensors[:, s.head_pos][:, :2] - b.qpos[:, :2]
    terms = {
        "foot_force": np.mean(np.tan(np.pi / 4 * clock * (2 * force - 1)), axis=1),
        "foot_velocity": np.mean(np.tan(np.pi / 4 * -clock * (2 * speed - 1)), axis=1),
        "orientation": np.exp(-10.0 * (1.0 - align**2)),
        "height": np.exp(-40.0 * np.where(height < 0.01, 0.0, height) ** 2),
        "step": 0.8 * hit + 0.2 * np.exp(-np.linalg.norm(mid, axis=1) / 2),
        "upper_body": np.exp(-10.0 * (head**2).sum(1)),
    }
    return terms, target


@pytest.mark.parametrize("name", ["jvrc_step", "berkeley_step"])
def test_each_stepping_reward_term_and_the_targets_observed_are_what_their_definitions_say(name):
    """The stepping task is compiled (step_kernels); with one weight at 1 and the rest 0 its reward must equal
    that term from its definition, on states a random policy reaches, with targets placed under the feet so
    that some are held and reached; and the observed targets are the next two in the root's frame."""
    from ppolab.envs.humanoid import wrap_angle, yaw
    from ppolab.envs.step import N_STEPS, PLANS, StepRewards

    fields = list(StepRewards.model_fields)
    rng = np.random.default_rng(5)
    for k, term in enumerate(fields):
        env = make_env(name, 5, {"rewards": {f: float(f == term) for f in fields}})
        for i in range(5):
            env.reset_one(i, np.random.default_rng(10 * k + i))
        env.kind[4] = PLANS.index("standing")  # its clock is held and its targets hidden
        for _ in range(40):
            env.batch.apply(rng.normal(0.0, 0.3, (5, env.act_dim)))
            env.phase = (env.phase + 1) % env.period
            near = env.sole_positions()[[0, 1], [0, 1]]  # envs 0 and 1: their targets under a sole, held
            env.plan[[0, 1], env.target[[0, 1]], :3] = near + 0.05
            expected, target = _step_terms(env, env.target.copy(), env.reached.copy())
            np.testing.assert_allclose(env._task_step(), expected[term], rtol=1e-9, atol=1e-12, err_msg=term)
            np.testing.assert_array_equal(env.target, target)
        assert env.target[:2].min() >= 2  # held targets were reached
        qpos, rows = env.batch.qpos, np.arange(5)
        heading = yaw(qpos[:, 3:7])
        for j in range(2):
            t = env.plan[rows, np.minimum(env.target + j, N_STEPS - 1)]
            d = t[:, :2] - qpos[:, :2]
            want = np.stack([np.cos(heading) * d[:, 0] + np.sin(heading) * d[:, 1],
                             np.cos(heading) * d[:, 1] - np.sin(heading) * d[:, 0], t[:, 2] - qpos[:, 2],
                             wrap_angle(t[:, 3] - heading)], axis=1)  # fmt: skip
            want[env.kind == PLANS.index("standing")] = 0.0  # a standing plan shows no targets
            np.testing.assert_allclose(env._targets_in_root_frame()[:, 4 * j : 4 * j + 4], want, atol=1e-12)


@pytest.mark.parametrize("name", ["jvrc_walk", "jvrc_step", "h1_walk", "g1_walk", "berkeley_step", "t1_stand"])
def test_mirroring_twice_gives_back_the_original(name):
    env = make_env(name, 1)
    x = np.random.default_rng(0).normal(size=(5, env.obs_dim))
    a = np.random.default_rng(1).normal(size=(5, env.act_dim))
    np.testing.assert_array_equal(env.symmetry.obs(env.symmetry.obs(x)), x)
    np.testing.assert_array_equal(env.symmetry.act(env.symmetry.act(a)), a)
    assert not np.array_equal(env.symmetry.obs(x), x)


def test_jvrc_walk_clock_runs_and_the_mode_switches_during_an_episode():
    from ppolab.envs.walk import STANDING, WalkConfig

    env = make_env("jvrc_walk", 4, {"stand_switch_prob": 1.0, "walk_switch_prob": 1.0})
    assert isinstance(env.cfg, WalkConfig) and env.period == 44  # 2 x (0.4 + 0.15) s at 40 Hz (LHW: 2.2 s)
    rng = np.random.default_rng(3)
    for i in range(4):
        env.reset_one(i, rng)
    phases, modes = [env.phase.copy()], [env.mode.copy()]
    for _ in range(20):
        obs, _, _ = env.step(np.zeros((4, 12)))
        phases.append(env.phase.copy())
        modes.append(env.mode.copy())
        np.testing.assert_allclose(obs[:, 29] ** 2 + obs[:, 30] ** 2, 1.0, atol=1e-5)  # sin/cos of the clock
        assert (obs[:, 31:34].sum(axis=1) == 1).all()  # one mode
    assert ((phases[1] - phases[0]) % env.period == 1).all()  # one control step a step
    assert len({tuple(m) for m in modes}) > 1
    standing = env.mode == STANDING
    assert (env.force_clock()[standing] == 1.0).all()  # standing: both feet bear weight


def test_jvrc_walk_gait_clock_is_lhw_s():
    """Right swing 0.75 s, double support 0.35 s, left swing, double support; smooth in between."""
    from ppolab.envs.compiled import foot_clock_score
    from ppolab.envs.gait_clock import clock_tables

    table, double = clock_tables(0.75, 0.35, 0.025)
    right, left = table[:, 0], table[:, 1]
    assert (right[3:28] == -1).all() and (left[3:28] == 1).all()  # right swings, left stands
    assert (left[47:72] == -1).all() and (right[47:72] == 1).all()  # and the other way round
    assert double[32:43].all() and double[76:87].all() and not double[:30].any()
    np.testing.assert_allclose(np.roll(table[:, ::-1], 44, axis=0), table, atol=1e-12)  # mirror = half a cycle
    assert (np.abs(np.diff(right)) < 0.7).all()  # no jump at touchdown or lift-off
    # a foot doing what its clock asks scores +1, the opposite -1
    assert foot_clock_score(-1.0, 0.0) == pytest.approx(1.0) and foot_clock_score(1.0, 1.0) == pytest.approx(1.0)
    assert foot_clock_score(-1.0, 1.0) == pytest.approx(-1.0) and foot_clock_score(1.0, 0.0) == pytest.approx(-1.0)
    assert foot_clock_score(0.0, 0.7) == 0.0 and foot_clock_score(1.0, 2.0) == pytest.approx(1.0)  # clipped


@pytest.mark.parametrize("swing, stance, dt, relax", [(0.75, 0.35, 0.025, 0.1), (0.4, 0.15, 0.025, 0.1),
                                                      (0.35, 0.1, 0.02, 0.2), (0.5, 0.2, 0.01, 0.05)])  # fmt: skip
def test_the_gait_clock_is_scipy_s_pchip_through_its_knots(swing, stance, dt, relax):
    """The clock's pieces are written as smoothsteps (no scipy import per env); they are PCHIP's."""
    from scipy.interpolate import PchipInterpolator

    from ppolab.envs.gait_clock import clock_tables

    table, _ = clock_tables(swing, stance, dt, relax)
    bounds = np.cumsum([0.0, swing, stance, swing, stance]) / dt
    knots = np.ravel([[a + (b - a) * relax, b - (b - a) * relax] for a, b in zip(bounds, bounds[1:])])
    x = np.concatenate([knots - bounds[-1], knots, knots + bounds[-1]])
    phases = np.arange(len(table), dtype=float)
    for foot, values in enumerate([(-1, -1, 1, 1, 1, 1, 1, 1), (1, 1, 1, 1, -1, -1, 1, 1)]):
        expected = np.clip(PchipInterpolator(x, np.tile(values, 3))(phases), -1, 1)
        np.testing.assert_allclose(table[:, foot], expected, rtol=0, atol=1e-12)


def test_jvrc_model_is_lhw_s_servo_and_joint_model():
    env = make_env("jvrc_walk", 1)
    m = env.model
    knee = m.actuator("R_KNEE")
    assert knee.gainprm[0] == 250 and list(knee.biasprm[1:3]) == [-250, -25]
    assert not m.actuator_forcelimited.any()  # no torque clamp
    assert m.dof_armature[m.joint("R_HIP_P").dofadr[0]] == pytest.approx(0.1925)
    assert m.dof_damping[m.joint("L_ANKLE_R").dofadr[0]] == pytest.approx(0.2)
    r = env.cfg.randomization  # nothing of the robot or its sensors randomised; the walk preset tilts its starts
    assert r.obs_noise == 0.0 and r.push_force == 0.0 and not r.perturbation.enabled
    assert [tuple(map(float, x)) for x in (r.friction, r.damping, r.mass)] == [(1.0, 1.0)] * 3
    assert not make_env("jvrc_stand", 1).cfg.randomization.enabled


def test_jvrc_actions_are_radians_averaged_with_the_previous_one():
    env = make_env("jvrc_walk", 1)
    env.reset_one(0, np.random.default_rng(0))
    a1, a2 = np.full((1, 12), 2.0), np.full((1, 12), -1.0)  # unbounded: 2 rad is taken as it is
    np.testing.assert_allclose(env.batch.apply(a1), 1.0)
    np.testing.assert_allclose(env.batch.apply(a2), 0.5)  # 0.5 a_t + 0.5 a_{t-1}, not a running average
    np.testing.assert_allclose(env.batch.datas[0].ctrl[env.batch._legs], env.batch.nominal_leg + 0.5)


def test_jvrc_walk_feet_carry_the_robot_at_the_start():
    env = make_env("jvrc_walk", 1, {"randomization": {"enabled": False}, "init_joint_noise": 0.0})
    rollout(env, 0, 2)
    weight_share = env.batch.sensors[0, env.s.touch].sum() / env.weight
    assert 0.7 < weight_share < 1.5  # the soles touch the floor and bear the body's weight


def test_h1_falls_without_control_and_the_episode_ends():
    env = H1Env(2, H1Config(randomization=Randomization(enabled=False)))
    steps = rollout(env, 0, 200)
    ended = np.array([term for _, _, term in steps]).any(axis=0)
    assert ended.all()
    assert (env.batch.qpos[:, 2] < 0.9).all()  # it ended because the root fell below 0.9 m


def test_h1_standing_still_at_the_nominal_pose_pays_the_most():
    env = H1Env(1, H1Config(randomization=Randomization(enabled=False), init_joint_noise=0.0))
    first_reward = rollout(env, 0, 1)[0][1][0]
    assert first_reward > 0.95


@pytest.mark.parametrize("name", HUMANOIDS)
def test_same_seed_same_rollout_whatever_the_batch(name):
    actions = np.random.default_rng(2).uniform(-1, 1, size=(40, 3, make_env(name, 1).act_dim))
    a = rollout(make_env(name, 3), 7, 40, actions)
    b = rollout(make_env(name, 3), 7, 40, actions)
    for (oa, ra, ta), (ob, rb, tb) in zip(a, b):
        np.testing.assert_array_equal(oa, ob)
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_array_equal(ta, tb)
    # env 0 alone, seeded as env 0 of the batch was: the same trajectory (pushes and noise included)
    single = make_env(name, 1)
    rng = np.random.default_rng(7)
    single.reset_one(0, rng)
    for t in range(40):
        obs, rew, _ = single.step(actions[t][:1])
        np.testing.assert_array_equal(obs[0], a[t][0][0])


def test_the_model_cache_is_reused_and_a_corrupt_entry_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("PPOLAB_CACHE_DIR", str(tmp_path))
    H1Env(1)
    entries = list((tmp_path / "models").glob("robot-h1-*.mjb"))
    assert len(entries) == 1
    stamp = (entries[0].stat().st_ino, entries[0].read_bytes())
    H1Env(1)
    assert (entries[0].stat().st_ino, entries[0].read_bytes()) == stamp  # read, not rewritten
    entries[0].write_bytes(b"garbage")
    env = H1Env(1)
    assert env.model.nq == 26
    fresh = list((tmp_path / "models").glob("robot-h1-*.mjb"))
    assert len(fresh) == 1 and fresh[0].read_bytes() != b"garbage"
    # a different configuration that changes the model gets its own entry
    H1Env(1, H1Config(kp={"hip": 150.0, "knee": 300.0, "ankle": 40.0, "torso": 300.0, "shoulder": 100.0,
                          "elbow": 100.0}))  # fmt: skip
    assert len(list((tmp_path / "models").glob("robot-h1-*.mjb"))) == 2


def test_the_model_cache_keeps_each_model_s_most_recently_used_entries_only(tmp_path, monkeypatch):
    """Every setting that changes a model (and every ppolab version) makes a new entry: a name keeps its KEEP
    most recently used ones; a file that is not one of its entries is never touched."""
    import os

    from ppolab.envs import model_cache

    monkeypatch.setenv("PPOLAB_CACHE_DIR", str(tmp_path))
    folder = tmp_path / "models"
    folder.mkdir()
    others = [folder / "robot-box-notes.txt", folder / ("robot-boxer-" + "a" * 24 + "-" + "b" * 16 + ".mjb")]
    for path in others:
        path.write_text("not robot-box's")

    def build(size: float) -> mujoco.MjModel:
        return mujoco.MjModel.from_xml_string(f"<mujoco><worldbody><geom size='{size}'/></worldbody></mujoco>")

    def entry(size: float):
        (path,) = [p for p in folder.glob("robot-box-*.mjb") if model_cache.content_key(
            "robot-box", [], build, {"size": size}) in p.name]  # fmt: skip
        return path

    sizes = [0.1 * (k + 1) for k in range(model_cache.KEEP + 2)]
    for k, size in enumerate(sizes[: model_cache.KEEP]):
        model_cache.load_or_build("robot-box", [], build, {"size": size})
        os.utime(entry(size), ns=(k * 10**9, k * 10**9))  # used in this order, a second apart
    model_cache.load_or_build("robot-box", [], build, {"size": sizes[0]})  # the oldest is used again
    for size in sizes[model_cache.KEEP :]:
        model_cache.load_or_build("robot-box", [], build, {"size": size})
    kept = {p.name for p in folder.glob("robot-box-*.mjb")}
    assert len(kept) == model_cache.KEEP
    assert entry(sizes[0]).name in kept  # used again: kept
    assert not any(model_cache.content_key("robot-box", [], build, {"size": s}) in n for s in sizes[1:3] for n in kept)
    assert all(path.read_text() == "not robot-box's" for path in others)


def test_yaml_overrides_merge_into_the_defaults_and_unknown_keys_are_refused(tmp_path):
    import yaml

    good = tmp_path / "env.yaml"
    good.write_text("kp: {hip: 150}\nrandomization: {enabled: false}\ncontrol_dt: 0.02\nsolver: pgs\n")
    proc = run_ppolab(
        "train", "--env", "h1", "--yaml", str(good), "--n-itr", "1", "--num-procs", "2", "--max-traj-len", "20",
        "--minibatch-size", "8", "--eval-episodes", "1", "--seed", "1", "--logdir", str(tmp_path / "logs"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "logs").iterdir()
    saved = yaml.safe_load((run_dir / "env.yaml").read_text())
    assert saved["kp"]["hip"] == 150 and saved["kp"]["knee"] == 300 and saved["control_dt"] == 0.02
    assert saved["randomization"]["enabled"] is False and saved["solver"] == "pgs"

    bad = tmp_path / "bad.yaml"
    bad.write_text("randomization: {push_forse: 3}\n")
    proc = run_ppolab("train", "--env", "h1", "--yaml", str(bad), "--logdir", str(tmp_path / "bad-logs"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"ppolab train: error: {bad}: unknown key 'randomization.push_forse' for env h1; did you mean 'push_force'?"
    )
    assert not (tmp_path / "bad-logs").exists()


def test_the_solver_setting_reaches_every_envs_model_and_leaves_the_cached_one_as_built():
    import mujoco

    pgs = make_env("jvrc_walk", 2, {"solver": "pgs", "solver_iterations": 50})
    assert {(m.opt.solver, m.opt.iterations) for m in pgs.batch.models} == {(mujoco.mjtSolver.mjSOL_PGS, 50)}
    default = make_env("jvrc_walk", 2)
    assert {(m.opt.solver, m.opt.iterations) for m in default.batch.models} == {(mujoco.mjtSolver.mjSOL_NEWTON, 100)}


@pytest.mark.parametrize("name", ["jvrc_step"])  # h1 trains in the --yaml test, every env in test_recurrent
def test_a_few_training_iterations_with_the_mirror_loss(name, tmp_path):
    proc = run_ppolab(
        "train", "--env", name, "--n-itr", "3", "--num-procs", "2", "--max-traj-len", "30", "--minibatch-size", "16",
        "--eval-episodes", "2", "--seed", "1", "--logdir", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Training finished." in proc.stdout
    (run_dir,) = tmp_path.iterdir()
    rows = [r for r in read_metrics(run_dir) if r["type"] == "iteration"]
    assert all(r["mirror_loss"] > 0 for r in rows)  # the symmetry term is in the loss


def test_envs_without_symmetry_refuse_a_mirror_loss(tmp_path):
    proc = run_ppolab("train", "--env", "h1", "--mirror-coeff", "0.4", "--logdir", str(tmp_path))
    assert proc.returncode == 2 and "env h1 has no mirror symmetry" in proc.stderr
    assert not any(tmp_path.iterdir())


def _mirrored_twin(env, twin):
    """Put `twin` in the mirror image of `env`'s state: root reflected in the x-z plane, each leg joint's
    angle on its twin with the derived sign."""
    import mujoco

    d, b, tb = env.batch.datas[0], env.batch, twin.batch
    qpos, qvel = d.qpos.copy(), d.qvel.copy()
    qpos[1] *= -1
    qpos[3:7] = qpos[3:7] * [1, -1, 1, -1]  # reflect the orientation in the x-z plane
    qvel[1] *= -1
    qvel[3:6] = qvel[3:6] * [-1, 1, -1]
    tq, tv = qpos.copy(), qvel.copy()
    mirror, lay = env.robot.mirror, b.layout
    for k in range(env.n_legs):
        tq[lay.leg_qpos[mirror.twin[k]]] = mirror.sign[k] * qpos[lay.leg_qpos[k]]
        tv[lay.leg_qvel[mirror.twin[k]]] = mirror.sign[k] * qvel[lay.leg_qvel[k]]
    twin.reset_one(0, np.random.default_rng(0))
    td = tb.datas[0]
    td.qpos[:], td.qvel[:] = tq, tv
    mujoco.mj_forward(twin.model, td)
    tb._gather(0)
    here = mujoco.MjData(env.model)  # env's positions at its qpos now: after mj_step, d's are a substep old
    here.qpos[:] = d.qpos
    mujoco.mj_kinematics(env.model, here)
    return here, td


@pytest.mark.parametrize("name", ["jvrc_walk", "h1_walk", "g1_walk", "t1_walk", "berkeley_walk", "jvrc_step"])
def test_the_mirror_of_a_state_observes_as_the_mirrored_observation(name):
    """The signed permutations derived from each robot file's naming and joint axes agree with the physics:
    mirror the robot's state, observe, compare; and each mirrored sole sits where the other one's reflection is."""
    cfg = {"randomization": {"enabled": False}}
    env, twin = make_env(name, 1, cfg), make_env(name, 1, cfg)
    rng = np.random.default_rng(5)
    env.reset_one(0, rng)
    for _ in range(15):
        env.step(rng.uniform(-0.25, 0.25, size=(1, env.act_dim)))
    d, td = _mirrored_twin(env, twin)
    twin.phase[0] = (env.phase[0] + env.period // 2) % env.period
    if name.endswith("_walk"):
        twin.mode[0], twin.command[0] = env.mode[0], env.command[0] * [-1, 1, -1]
    else:
        twin.plan[0], twin.target[0], twin.kind[0] = env.plan[0] * [1, -1, 1, -1], env.target[0], env.kind[0]
    keep = np.ones(env.obs_dim, bool)
    if "joint_torque" in env.layout:
        keep[env.layout["joint_torque"]] = False  # torques follow from the dynamics, not from the state
    np.testing.assert_allclose(twin.observe()[0][keep], env.symmetry.obs(env.observe())[0][keep], atol=1e-5)
    for side, other in (("right", "left"), ("left", "right")):
        here = td.site_xpos[env.model.site(f"{side}_sole").id]
        there = d.site_xpos[env.model.site(f"{other}_sole").id] * [1, -1, 1]
        np.testing.assert_allclose(here, there, atol=1e-5)  # the models are symmetric to a few micrometres


def test_the_derived_mirror_signs_are_lhw_s():
    """LHW writes its mirror maps by hand: JVRC-1 flips hip roll, hip yaw and ankle roll; H1 hip yaw and roll."""
    jvrc, h1 = make_env("jvrc_walk", 1), make_env("h1_walk", 1)
    flips = lambda env: sorted(j for j, s in zip(env.robot_file.legs, env.robot.mirror.sign) if s < 0)  # noqa: E731
    assert flips(jvrc) == ["L_ANKLE_R", "L_HIP_R", "L_HIP_Y", "R_ANKLE_R", "R_HIP_R", "R_HIP_Y"]
    assert flips(h1) == ["left_hip_roll", "left_hip_yaw", "right_hip_roll", "right_hip_yaw"]
    assert list(jvrc.robot.mirror.twin) == [6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5]


def test_a_robot_commanded_straight_is_told_to_turn_back_when_its_heading_drifts():
    """The heading reference: an error of 0.1 rad asks for 0.1 rad/s back (gain 1), standing too; with
    heading_standing off, only while stepping (the policy then never sees a standing drift)."""
    from ppolab.envs.walk import FORWARD, STANDING

    env = make_env("jvrc_walk", 2)
    for i in range(2):
        env.reset_one(i, np.random.default_rng(i))
    env.set_command(FORWARD, vx=0.3)
    env.heading_ref += 0.1  # as if the robot had turned 0.1 rad right of where it was told to go
    env._update_command()
    np.testing.assert_allclose(env.command[:, 0], 0.1, atol=1e-9)
    np.testing.assert_allclose(env.command[:, 1:], [[0.3, 0.0]] * 2)
    env.heading_ref += 5.0  # a large error: the correction is capped
    env._update_command()
    assert np.all(np.abs(env.command[:, 0]) <= env.cfg.heading_limit + 1e-12)
    env.set_command(STANDING)
    env.heading_ref += 0.1
    env._update_command()
    np.testing.assert_allclose(env.command[:, 0], 0.1, atol=1e-9)
    open_loop = make_env("jvrc_walk", 2, {"heading_standing": False})
    for i in range(2):
        open_loop.reset_one(i, np.random.default_rng(i))
    open_loop.set_command(STANDING)
    open_loop.heading_ref += 0.1
    open_loop._update_command()
    np.testing.assert_array_equal(open_loop.command[:, 0], 0.0)


def test_each_env_trains_with_its_preset_unless_a_flag_says_otherwise():
    from ppolab.runner.config import TrainConfig
    from ppolab.runner.presets import preset

    walk = TrainConfig(env="jvrc_walk")
    assert (walk.hidden_sizes, walk.activation, walk.minibatch_size, walk.lr) == ([256, 256], "relu", 64, 1e-4)
    assert TrainConfig(env="jvrc_walk", minibatch_size=128).minibatch_size == 128  # given wins
    cart = TrainConfig(env="cartpole")
    assert cart.learn_std and cart.std_dev == 0.15 and cart.max_traj_len == 500  # the README's recommendation
    assert TrainConfig(env="cartpole", learn_std=False).learn_std is False
    robot = TrainConfig(env="g1_walk")  # a robot walker: the Menagerie walkers' budget, checked as it goes
    assert (robot.n_itr, robot.check_every) == (3000, 100) and not TrainConfig(env="g1_stand").check_every
    assert not TrainConfig(env="g1_walk", check_every=0).check_every  # and a flag turns the checks off
    proc = run_ppolab("envs")
    assert proc.returncode == 0
    for name in ("cartpole", "h1", "jvrc_walk", "jvrc_step", "h1_walk", "g1_stand"):
        line = next(x for x in proc.stdout.splitlines() if x.startswith(f"{name}:"))
        preset_line = proc.stdout.splitlines()[proc.stdout.splitlines().index(line) + 1]
        assert f"--n-itr {preset(name)['n_itr']}" in preset_line


def test_randomisation_when_on_draws_masses_friction_and_damping_per_env_and_reset_within_range():
    env = H1Env(2, H1Config(randomization=Randomization(push_force=0.0)))  # h1 randomises by default
    b, r = env.batch.base, env.cfg.randomization
    assert r.enabled
    rng = np.random.default_rng(0)
    for i in range(2):
        env.batch.reset_one(i, rng)
    first = [env.batch.models[i].body_mass.copy() for i in range(2)]
    assert not np.array_equal(first[0], first[1])  # each env its own draw
    env.batch.reset_one(0, np.random.default_rng(1))
    m = env.batch.models[0]
    assert not np.array_equal(m.body_mass, first[0])  # a reset draws again
    heavy = b.body_mass > 0
    ratio = m.body_mass[heavy] / b.body_mass[heavy]
    assert np.all((ratio >= r.mass[0]) & (ratio <= r.mass[1]))
    friction = m.geom_friction[:, 0][b.geom_friction[:, 0] > 0] / b.geom_friction[:, 0][b.geom_friction[:, 0] > 0]
    assert np.allclose(friction, friction[0]) and r.friction[0] <= friction[0] <= r.friction[1]
    damped = b.dof_damping > 0
    ratio = m.dof_damping[damped] / b.dof_damping[damped]
    assert np.all((ratio >= r.damping[0]) & (ratio <= r.damping[1])) and ratio.std() > 0


def test_perturbations_clear_as_lhw_s_do_after_each_body_s_draw():
    """LHW draws a wrench for each named body in turn and, after each, clears every wrench half the time: with
    two bodies, none half of the time, the last body's alone a quarter, both a quarter, the first alone never."""
    pert = {"enabled": True, "force": 10.0, "torque": 2.0, "interval": 0.001, "bodies": ["pelvis", "left_knee_link"]}
    env = make_env("h1_walk", 1, {"randomization": {"enabled": True, "perturbation": pert}})
    b = env.batch
    b.reset_one(0, np.random.default_rng(0))
    first, last = b.models[0].body("pelvis").id, b.models[0].body("left_knee_link").id
    seen = {"none": 0, "last": 0, "both": 0, "first": 0}
    for _ in range(4000):  # interval below the control step: a new draw at every step
        b._during_episode(0, b.datas[0])
        on = [bool(np.any(b.datas[0].xfrc_applied[k])) for k in (first, last)]
        seen[
            {(False, False): "none", (False, True): "last", (True, True): "both", (True, False): "first"}[tuple(on)]
        ] += 1
    assert seen["first"] == 0
    assert abs(seen["none"] / 4000 - 0.5) < 0.04 and abs(seen["last"] / 4000 - 0.25) < 0.04, seen


def test_the_model_cache_key_follows_the_source_bytes_the_builder_and_its_parameters(tmp_path):
    from ppolab.envs.model_cache import content_key

    src = tmp_path / "robot.xml"
    src.write_text("<mujoco/>")
    key = content_key("r", [src], H1Env, {"kp": 1})
    assert content_key("r", [src], H1Env, {"kp": 1}) == key  # stable
    assert content_key("r", [src], H1Env, {"kp": 2}) != key  # a parameter
    assert content_key("r", [src], make_env, {"kp": 1}) != key  # the builder's code (another module)
    src.write_text("<mujoco><option/></mujoco>")
    assert content_key("r", [src], H1Env, {"kp": 1}) != key  # the model file's bytes


def test_the_model_cache_key_follows_the_helpers_the_builder_calls(tmp_path, monkeypatch):
    """A robot file's model is built by robot_model, which adds ppolab's floor from scene: an edit to the
    floor's code must give a new key, or every user's cache would keep serving the model built before it."""
    import inspect

    from ppolab.envs import model_cache, robot_model, scene

    src = tmp_path / "robot.xml"
    src.write_text("<mujoco/>")
    key = model_cache.content_key("r", [src], robot_model.build, {})
    real = inspect.getsource
    monkeypatch.setattr(model_cache.inspect, "getsource", lambda m: real(m) + ("#" if m is scene else ""))
    assert model_cache.content_key("r", [src], robot_model.build, {}) != key


def test_the_floor_grips_whatever_the_robot_model_s_own_defaults():
    """Menagerie's Apollo makes every geom frictionless (condim 1) and pairs its feet with its scene's floor
    explicitly; a robot file drops the pairs, and ppolab's floor must not take the model's defaults: the soles'
    contacts have friction, and a standing robot pushed with a tenth of its weight does not slide."""
    from ppolab.envs import robot_file
    from ppolab.envs.robot_task import task_env
    from ppolab.envs.task_registry import task_class

    cls = task_env(task_class("walk"), robot_file.read(REPO / "examples" / "robots" / "apollo.yaml"))
    env = cls(1, cls.Config(randomization={"enabled": False}, init_joint_noise=0.0, init_tilt=0.0, init_lift=0.0))
    env.reset_one(0, np.random.default_rng(0))
    b = env.batch
    m, d = b.models[0], b.datas[0]
    d.ctrl[b.layout.leg_act] = b.nominal_leg + env.cfg.action_scale * env.standing_action()
    floor = m.geom("floor").id
    d.xfrc_applied[b.layout.root_body, 0] = 0.1 * env.weight  # a steady push ahead at the root
    soles = env.sole_positions()[0].copy()
    for _ in range(round(0.3 / m.opt.timestep)):
        mujoco.mj_step(m, d)
    b._gather(0)
    touching = [c for c in d.contact[: d.ncon] if floor in (c.geom1, c.geom2)]
    assert touching and all(c.dim >= 3 for c in touching), [c.dim for c in touching]
    slid = env.sole_positions()[0, :, 0] - soles[:, 0]
    assert np.all(np.abs(slid) < 0.01), f"the soles slid {slid} m"


@pytest.mark.parametrize("name", ["cartpole", "h1", "jvrc_walk", "jvrc_step"])
def test_every_env_has_what_the_batch_env_protocol_names(name):
    from ppolab.envs.protocol import BatchEnv

    env = make_env(name, 2)
    members = {*BatchEnv.__annotations__, "reset_one", "observe", "step"}
    assert all(hasattr(env, m) for m in members), [m for m in members if not hasattr(env, m)]
    env.reset_one(0, np.random.default_rng(0))
    env.reset_one(1, np.random.default_rng(1))
    obs, reward, terminated = env.step(np.zeros((2, env.act_dim), np.float32))
    assert obs.shape == (2, env.obs_dim) and obs.dtype == np.float32 and reward.shape == terminated.shape == (2,)


@pytest.mark.parametrize(
    ("env", "override", "says"),
    [
        ("jvrc_walk", {"control_dt": 0.0015}, "control_dt: must be a whole multiple of physics_dt"),
        ("jvrc_walk", {"control_dt": 0.0001}, "control_dt: must be a whole multiple of physics_dt"),
        ("jvrc_walk", {"kp": {"KNEE": -5}}, "kp.KNEE: Input should be greater than or equal to 0"),
        ("jvrc_walk", {"kp": {"HIPP": 5}}, "kp: 'HIPP' is part of no joint's name; the joints: R_HIP_P"),
        ("jvrc_step", {"armature": {"ELBOW": 0.1}}, "armature: 'ELBOW' is part of no joint's name"),
        ("jvrc_walk", {"mode_probs": [0, 0, 0]}, "mode_probs: weights are non-negative and not all zero"),
        ("jvrc_step", {"plan_probs": [1, -1, 1, 1, 1]}, "plan_probs: weights are non-negative"),
        ("jvrc_walk", {"forward_speed": [0.4, 0.0]}, "forward_speed: must be [low, high] with low <= high"),
        ("h1", {"height_range": [1.4, 0.9]}, "height_range: must be [low, high] with low <= high"),
        ("h1", {"randomization": {"mass": [0, 1]}}, "randomization.mass.0: Input should be greater than 0"),
        ("h1", {"randomization": {"friction": [1.3, 0.7]}}, "randomization.friction: must be [low"),
        ("h1_walk", {"randomization": {"ramp": [300, 100]}}, "randomization.ramp: must be [low, high]"),
        ("h1_walk", {"randomization": {"ramp": [-1, 100]}}, "randomization.ramp.0: Input should be greater"),
        ("jvrc_walk", {"action_clip": -1}, "action_clip: Input should be greater than 0"),
    ],
)
def test_an_env_setting_that_cannot_mean_anything_is_refused_by_name(env, override, says):
    from ppolab.envs import env_config
    from ppolab.errors import UserError

    with pytest.raises(UserError) as err:
        env_config.validate(env, override, "e.yaml")
    assert str(err.value).startswith("e.yaml: ") and says in str(err.value)


def test_a_gain_for_no_joint_of_h1_is_refused_before_the_run_folder(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kp: {hiip: 150}\n")
    proc = run_ppolab("train", "--env", "h1", "--yaml", str(bad), "--logdir", str(tmp_path / "logs"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"ppolab train: error: {bad}: kp: 'hiip' is part of no joint's name; the joints: ")
    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize("name", ["op3_walk", "h1"])
def test_self_contact_and_torques_agree_with_mujoco_s_own_arrays(name):
    """The batch reads self-contact and the leg torques from sensors (one copy per env): they must say what
    MuJoCo's contact list and actuator forces say, falls and tangled legs included."""
    env = make_env(name, 3)
    b, rng = env.batch, np.random.default_rng(1)
    for i in range(3):
        env.reset_one(i, rng)
    seen = 0
    for _ in range(150):  # no resets: fallen robots lie on the floor, limbs tangled
        env.step(rng.normal(0.0, 1.5, (3, env.act_dim)))
        for i, d in enumerate(b.datas):
            bodies = env.model.geom_bodyid[d.contact.geom[: d.ncon]].reshape(-1, 2)
            robot_robot = bool(((bodies[:, 0] != 0) & (bodies[:, 1] != 0)).any())
            assert b.self_contact[i] == robot_robot
            seen += robot_robot
            np.testing.assert_array_equal(b.torque[i], d.actuator_force[b.layout.leg_act])
    assert seen > 0, "no self-contact happened: the test tried nothing"


def test_a_saved_walker_config_without_a_later_setting_keeps_the_task_it_was_trained_on(tmp_path):
    """Settings added to the walking task since a run or policy was saved take the values the task had before
    (a shipped policy keeps seeing the observation it was trained on); a new run gets today's defaults."""
    import yaml

    from ppolab.envs import env_config

    full = make_env("jvrc_walk", 1).cfg.model_dump(mode="json")
    assert full["lateral_gain"] == 0.5 and full["heading_standing"] is True  # today's defaults
    old = {k: v for k, v in full.items() if k not in ("lateral_gain", "heading_standing")}
    (tmp_path / "env.yaml").write_text(yaml.safe_dump(old))
    restored = env_config.load_saved(tmp_path, "jvrc_walk")
    assert restored.config.lateral_gain == 0.0 and restored.config.heading_standing is False
    env = make_env("jvrc_walk", 1, restored)
    env.reset_one(0, np.random.default_rng(0))
    env.set_command(2, vx=0.3)
    env.batch.qpos[0, 1] += 0.5  # half a metre off the line: no sideways correction for an old policy
    env._update_command()
    assert env.command[0, 2] == 0.0
    new = make_env("jvrc_walk", 1)
    new.reset_one(0, np.random.default_rng(0))
    new.set_command(2, vx=0.3)
    new.batch.qpos[0, :2] += [-np.sin(new.heading_ref[0]) * 0.1, np.cos(new.heading_ref[0]) * 0.1]  # 0.1 m left
    new._update_command()
    assert abs(new.command[0, 2] + 0.05) < 1e-9  # 0.5 m/s per m, back to the right


def _hold(env, action: np.ndarray, seconds: float = 1.0) -> tuple[bool, float]:
    """Whether the robot fell, and the legs' largest distance from the nominal pose, holding `action`."""
    env.reset_one(0, np.random.default_rng(0))
    fell, worst = False, 0.0
    for _ in range(round(seconds / env.cfg.control_dt)):
        _, _, terminated = env.step(action[None])
        fell |= bool(terminated[0])
        worst = max(worst, float(np.abs(env.batch.qpos[0, env.batch.layout.leg_qpos] - env.batch.nominal_leg).max()))
    return fell, worst


@pytest.mark.parametrize("name", ["h1_walk", "jvrc_walk", "g1_step", "t1_stand", "berkeley_walk", "op3_walk"])
def test_the_standing_action_holds_the_nominal_pose_against_gravity(name):
    still = {"randomization": {"enabled": False}, "init_joint_noise": 0.0, "init_tilt": 0.0, "init_lift": 0.0}
    env = make_env(name, 1, still)
    standing = env.standing_action()
    assert standing.shape == (env.act_dim,)
    fell_standing, sag_standing = _hold(env, standing)
    _, sag_zero = _hold(env, np.zeros(env.act_dim))
    assert not fell_standing and sag_standing < 0.06  # rad, over 1 s
    assert sag_standing < sag_zero
    if name == "h1_walk":  # LHW's H1 gains: action 0 folds the knees (by over 0.5 rad within the second)
        assert sag_zero > 0.5


def test_start_standing_makes_the_untrained_policy_hold_the_pose_and_is_refused_where_there_is_none(tmp_path):
    import torch

    from ppolab.ppo.checkpoint import load_actor

    proc = run_ppolab("train", "--env", "cartpole", "--start-standing", "--logdir", str(tmp_path / "cart"))
    assert proc.returncode == 2 and "--start-standing: cartpole is not a task on a robot file" in proc.stderr
    assert not (tmp_path / "cart").exists() or not any((tmp_path / "cart").iterdir())
    proc = run_ppolab(
        "train",
        "--env",
        "h1_walk",
        "--n-itr",
        "1",
        "--num-procs",
        "2",
        "--max-traj-len",
        "20",
        "--check-every",
        "0",
        "--eval-episodes",
        "1",
        "--seed",
        "1",
        "--logdir",
        str(tmp_path),
        "--run-name",
        "r",
    )  # fmt: skip  (h1_walk's preset starts standing)
    assert proc.returncode == 0, proc.stderr
    assert "Starting standing (--start-standing)" in proc.stdout
    actor, _ = load_actor(tmp_path / "r" / "actor_0.pt")
    env = make_env("h1_walk", 1)
    env.reset_one(0, np.random.default_rng(0))
    with torch.no_grad():
        mean = actor(torch.as_tensor(env.observe()))[0].numpy()[0]
    assert np.abs(mean - env.standing_action()).max() < 0.05  # one update moves it little


def _walk_terms(env, target: np.ndarray, prev_target: np.ndarray, v_avg: np.ndarray) -> dict[str, np.ndarray]:
    """Each walking term from its definition, one numpy expression per term (what `_reward` computes batched)."""
    from ppolab.envs.humanoid import yaw

    b, c, cmd, s = env.batch, env.cfg, env.command, env.s
    clock = env.force_clock()
    force = np.clip(b.sensors[:, s.touch] * 2.0 / env.weight, 0, 1)
    speed = np.clip(np.linalg.norm(b.sensors[:, s.sole_vel].reshape(-1, 2, 3), axis=2) * 5.0, 0, 1)
    h = yaw(b.qpos[:, 3:7])
    v = np.stack(
        [np.cos(h) * b.qvel[:, 0] + np.sin(h) * b.qvel[:, 1], np.cos(h) * b.qvel[:, 1] - np.sin(h) * b.qvel[:, 0]], 1
    )
    a = c.control_dt / 0.5
    fine = (1 - a) * v_avg + a * v - cmd[:, 1:3]
    height = np.abs(b.qpos[:, 2] - env.goal_height)
    height = np.where(height < 0.01 + 0.05 * cmd[:, 1], 0.0, height)
    head = b.sensors[:, s.head_pos][:, :2] - b.qpos[:, :2]
    legs = b.qpos[:, b.layout.leg_qpos] - b.nominal_leg
    ahead = np.maximum(c.velocity_scale, c.velocity_relative * np.abs(cmd[:, 1]))
    return {
        "foot_force": np.mean(np.tan(np.pi / 4 * clock * (2 * force - 1)), axis=1),
        "foot_velocity": np.mean(np.tan(np.pi / 4 * -clock * (2 * speed - 1)), axis=1),
        "root_accel": np.exp(-0.25 * (np.abs(b.qvel[:, 3:6]).sum(1) + np.abs(b.root_acc).sum(1))),
        "height": np.exp(-40 * height**2),
        "velocity": np.exp(-10 * ((v - cmd[:, 1:3]) ** 2).sum(1)),
        "velocity_fine": np.exp(-((fine[:, 0] / ahead) ** 2) - (fine[:, 1] / c.lateral_scale) ** 2),
        "yaw_rate": np.exp(-10 * np.abs(b.qvel[:, 5] - cmd[:, 0]) ** 3),
        "heading": np.exp(-((env.heading_error / c.heading_scale) ** 2)),
        "upper_body": np.exp(-10 * np.linalg.norm(head, axis=1)),
        "posture": np.exp(-np.linalg.norm(legs, axis=1)),
        "torque_change": np.exp(-0.25 * np.abs(b.torque - env.prev_torque).mean(1)),
        "action_change": np.exp(-5 * np.abs(target - prev_target).mean(1)),
    }


@pytest.mark.parametrize(
    "name, settings",
    [("jvrc_walk", {}), ("h1_walk", {}), ("berkeley_walk", {}),
     ("g1_walk", {"velocity_scale": 0.03, "velocity_relative": 0.4, "forward_speed": (0.05, 0.4)})],
)  # fmt: skip
def test_each_walking_reward_term_is_what_its_definition_says(name, settings):
    """The walking reward is written batched for speed (one concatenation per kind of reduction); with one
    weight at 1 and the rest 0 it must equal that term computed from its definition, on states a random
    policy reaches (stumbles, falls, every mode). g1_walk's case judges the fine velocity relative to the
    command, on speeds either side of where the relative scale takes over from the absolute one."""
    from ppolab.envs.walk import WalkRewards

    fields = list(WalkRewards.model_fields)
    rng = np.random.default_rng(3)
    for k, term in enumerate(fields):
        env = make_env(name, 4, {**settings, "rewards": {f: float(f == term) for f in fields}})
        for i in range(4):
            env.reset_one(i, np.random.default_rng(i))
        for _ in range(15 + 5 * k):
            env.step(rng.normal(0.0, 0.3, (4, env.act_dim)))
        target = env.batch.apply(rng.normal(0.0, 0.3, (4, env.act_dim)))
        prev_target = rng.normal(0.0, 0.3, (4, env.act_dim))
        env._update_command()
        expected = _walk_terms(env, target, prev_target, env.v_avg.copy())[term]
        relative = env.cfg.velocity_relative * np.abs(env.command[:, 1]) > env.cfg.velocity_scale
        assert relative.any() == bool(settings) and (~relative).any(), "both scales in the relative case"
        np.testing.assert_allclose(env._reward(target, prev_target), expected, rtol=1e-9, atol=1e-12, err_msg=term)


def test_walk_mode_switches_come_at_their_rate_from_each_envs_own_draws():
    """In place <-> forward switches at walk_switch_prob a step, standing never jumps to forward, and an env's
    switches depend on its own generator only: the same in a batch of one as beside three other envs (the
    sampler splits slots over workers by core count; a seed's episodes must not change with it)."""
    from ppolab.envs.walk import FORWARD, STANDING

    cfg = {"stand_switch_prob": 0.05, "walk_switch_prob": 0.2}

    def modes(n: int, steps: int) -> np.ndarray:
        env = make_env("jvrc_walk", n, cfg)
        for i in range(n):
            env.reset_one(i, np.random.default_rng(100 + i))
        out = [env.mode.copy()]
        for _ in range(steps):
            env.phase = (env.phase + 1) % env.period  # the clock, without stepping the physics
            env._switch_modes()
            out.append(env.mode.copy())
        return np.array(out)

    many = modes(4, 600)
    np.testing.assert_array_equal(modes(1, 600)[:, 0], many[:, 0])
    before, after = many[:-1], many[1:]
    assert not ((before == STANDING) & (after == FORWARD)).any()
    assert not ((before == FORWARD) & (after == STANDING)).any()
    moving = before == FORWARD
    share = (after[moving] != FORWARD).mean()  # forward -> in place: only the walk draw
    assert abs(share - 0.2) < 4 * np.sqrt(0.2 * 0.8 / moving.sum()), (share, moving.sum())


def test_a_forward_mode_draws_new_speeds_at_speed_switch_prob_keeping_its_heading_and_line():
    """speed_switch_prob: in the forward mode a new speed from forward_speed at that rate a step, the heading
    reference and the line kept; never in the other modes; at 0 (the default) one speed a forward mode."""
    from ppolab.envs.walk import FORWARD

    def run(extra: dict, steps: int = 500):
        env = make_env("g1_walk", 4, {"mode_probs": (0.0, 0.5, 0.5), "walk_switch_prob": 0.01, **extra})
        for i in range(4):
            env.reset_one(i, np.random.default_rng(7 + i))
        rows = []
        for _ in range(steps):
            env.phase = (env.phase + 1) % env.period  # the clock, without stepping the physics
            before = (env.mode.copy(), env.velocity[:, 0].copy(), env.heading_ref.copy(), env.line_origin.copy())
            env._switch_modes()
            rows.append((*before, env.mode.copy(), env.velocity[:, 0].copy(), env.heading_ref.copy(),
                         env.line_origin.copy()))  # fmt: skip
        return rows

    plain, resampled = run({}), run({"speed_switch_prob": 0.05})
    new = kept = 0
    for mode, vx, ref, line, mode2, vx2, ref2, line2 in resampled:
        stay = (mode == FORWARD) & (mode2 == FORWARD)
        changed = stay & (vx != vx2)
        new += changed.sum()
        kept += stay.sum()
        np.testing.assert_array_equal(ref[stay], ref2[stay])
        np.testing.assert_array_equal(line[stay], line2[stay])
        assert ((vx2[changed] >= 0.1) & (vx2[changed] <= 0.4)).all()
        assert not (((mode != FORWARD) & (mode2 == mode)) & (vx != vx2)).any()
    assert abs(new / kept - 0.05) < 4 * np.sqrt(0.05 * 0.95 / kept), (new, kept)
    for mode, vx, _, _, mode2, vx2, _, _ in plain:
        stay = (mode == FORWARD) & (mode2 == FORWARD)
        np.testing.assert_array_equal(vx[stay], vx2[stay])


def test_speed_ramp_grows_the_forward_speeds_drawn_with_the_training_iteration():
    """speed_ramp [first, last]: up to `first` every forward mode is told forward_speed's slowest, between the
    ends speeds up to the ramp's share of the range, from `last` the very draws of a run without the ramp
    (each env's own generator, one draw a speed); an env whose iteration training never set (a check's,
    evaluation's) draws the whole range. Resets and the in-run speed switches both follow it."""
    from ppolab.envs.walk import FORWARD

    def speeds(extra: dict, iteration: int | None, steps: int = 300) -> np.ndarray:
        cfg = {"mode_probs": (0.0, 0.0, 1.0), "walk_switch_prob": 0.0, "speed_switch_prob": 0.2, **extra}
        env = make_env("g1_walk", 6, cfg)
        if iteration is not None:
            env.set_iteration(iteration)
        drawn = []
        for i in range(6):
            env.reset_one(i, np.random.default_rng(40 + i))
        for _ in range(steps):
            env._switch_modes()
            assert (env.mode == FORWARD).all()
            drawn.append(env.velocity[:, 0].copy())
        return np.array(drawn)

    ramp = {"speed_ramp": (10, 30)}
    plain = speeds({}, None)
    assert np.unique(plain).size > 50 and plain.min() >= 0.1 and plain.max() <= 0.4
    np.testing.assert_array_equal(speeds(ramp, 0), 0.1)
    np.testing.assert_array_equal(speeds(ramp, 10), 0.1)
    half = speeds(ramp, 20)  # half the range: 0.1 to 0.25
    assert half.min() >= 0.1 and half.max() <= 0.25 and half.max() > 0.23
    np.testing.assert_allclose(half, 0.1 + (plain - 0.1) / 2, rtol=0, atol=1e-12)  # the same draws, scaled
    np.testing.assert_array_equal(speeds(ramp, 30), plain)
    np.testing.assert_array_equal(speeds(ramp, None), plain)
    np.testing.assert_array_equal(speeds({}, 0), plain)  # no ramp: the whole range at any iteration
