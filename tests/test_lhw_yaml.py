"""LearningHumanoidWalking's env files taken by --yaml as they are: every key with a ppolab meaning mapped
(values checked against LHW's), every key without one refused by name with the reason."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import REPO, run_ppolab

from ppolab.envs import env_config, make_env
from ppolab.errors import UserError

LHW = REPO / "tests" / "data" / "lhw"


def test_lhw_s_jvrc_base_file_sets_the_rates_smoothing_and_each_leg_s_gains():
    settings = env_config.resolve("jvrc_walk", str(LHW / "jvrc_base.yaml"))
    cfg = settings.data()
    assert (cfg["physics_dt"], cfg["control_dt"], cfg["action_smoothing"], cfg["action_filter"]) == (
        0.001, 0.025, 0.5, "pair")  # fmt: skip
    env = make_env("jvrc_walk", 1, settings)
    gains = dict(zip(env.batch.layout.leg_joints, env.model.actuator_gainprm[env.batch.layout.leg_act, 0]))
    damping = dict(zip(env.batch.layout.leg_joints, -env.model.actuator_biasprm[env.batch.layout.leg_act, 2]))
    assert gains == {f"{s}_{j}": g for s in "RL" for j, g in zip(
        ["HIP_P", "HIP_R", "HIP_Y", "KNEE", "ANKLE_R", "ANKLE_P"], [200, 200, 200, 250, 80, 80])}  # fmt: skip
    assert damping["R_KNEE"] == 25 and damping["L_ANKLE_P"] == 8 and damping["R_HIP_Y"] == 20
    assert not env.cfg.randomization.start_tilt  # ppolab's own start tilt of the preset: no LHW task has it


def test_lhw_s_h1_base_file_on_the_h1_standing_task_maps_every_key():
    settings = env_config.resolve("h1", str(LHW / "h1_base.yaml"))
    cfg = settings.data()
    env = make_env("h1", 2, settings)
    m, lay = env.model, env.batch.layout
    gain = {m.actuator(i).name: m.actuator_gainprm[i, 0] for i in range(m.nu)}
    assert gain["torso"] == 40 and gain["left_elbow"] == 20
    assert m.actuator_gainprm[lay.leg_act, 0].tolist() == [100, 100, 100, 100, 20] * 2
    assert not env.batch.models[0].jnt_limited.any()  # jointlimited: false
    assert math.isclose(cfg["init_joint_noise"], math.radians(3) / math.sqrt(3))  # uniform +-3 degrees: its std
    r = cfg["randomization"]
    assert r.get("start_tilt", 0.0) == 0.0
    assert r["enabled"] and r["push_force"] == 0.0 and r["redraw_interval"] == 0.5 and r["mass"] == [0.95, 1.05]
    assert r["obs_noise"] == {"root_orient": 0.05, "root_ang_vel": 0.05, "joint_pos": 0.02, "joint_vel": 0.05,
                              "joint_torque": 5.0}  # fmt: skip
    p = r["perturbation"]
    assert p == {"enabled": True, "force": 10.0, "torque": 2.0, "interval": 5.0, "bodies": ["pelvis", "torso_link"]}
    assert env.batch._pushed == [m.body("pelvis").id, m.body("torso_link").id]


def test_lhw_s_h1_walk_file_sets_the_pose_and_the_clock():
    cfg = env_config.resolve("h1_walk", str(LHW / "h1_walk.yaml")).data()
    assert (cfg["goal_height"], cfg["swing_duration"], cfg["stance_duration"]) == (1.0, 0.4, 0.1)
    env = make_env("h1_walk", 1, cfg)
    np.testing.assert_allclose(env.batch.nominal_leg, [0, 0, -0.2, 0.6, -0.4] * 2)
    assert env.period == 40  # a 1 s cycle at 40 Hz: LHW's total_duration 0.5 is half of it


@pytest.mark.parametrize(
    ("env", "text", "says"),
    [
        ("jvrc_walk", "obs_history_len: 2\n", "obs_history_len: 2: ppolab's policies observe the current step"),
        ("jvrc_walk", "sim_dt: 0.001\nkp: [200, 200]\n", "kp: a list of 12 values, one per leg joint"),
        ("jvrc_walk", "sim_dt: 1.0e-12\n", "sim_dt: 1e-12: a physics step of 0.0001 to 0.1 s"),
        ("jvrc_walk", "sim_dt: 1e-12\n", "sim_dt: expected a number, got '1e-12'"),
        ("h1_walk", "perturbation: {enable: 'yes'}\n", "perturbation.enable: true or false, got 'yes'"),
        ("h1_walk", "dynamics_randomization: {enable: x}\n", "dynamics_randomization.enable: true or false"),
        ("h1_walk", "dynamics_randomization: {enable: false, interval: -1}\n", "interval: expected a number above 0"),
        ("h1_walk", "perturbation: {enable: true, interval: -1}\n", "perturbation.interval: expected a number above 0"),
        (
            "jvrc_walk",
            "task: {swing_duration: 0.75, stance_duration: 0.35, total_duration: x}\n",
            "task.total_duration: expected a number",
        ),
        ("jvrc_walk", "sim_dt: 0.001\nnumber: 3\n", "number: no ppolab setting corresponds to it"),
        ("h1_walk", "pdgains: {torso_joint: [40, 4]}\n", "pdgains.torso_joint: no such servoed joint in this env"),
        ("h1_walk", "sim_dt: 0.001\nctrllimited: true\n", "ctrllimited: ppolab's servos take any target"),
        (
            "h1_walk",
            "task: {swing_duration: 0.4, stance_duration: 0.1, total_duration: 0.6}\n",
            "task.total_duration: 0.6 must be swing + stance",
        ),
        ("h1_walk", "observation_noise: {type: gaussian, scales: {motor_pos: 0.1}}\n", "observation_noise.type"),
        ("h1_walk", "observation_noise: {scales: {motor_acc: 0.1}}\n", "observation_noise.scales.motor_acc"),
        ("h1", "sim_dt: 0.001\nhalf_sitting_pose: [0, 0]\n", "half_sitting_pose: this env's pose is fixed"),
        ("jvrc_walk", "reward_weights: {foot_frc_score: 0.2, nope: 1}\n", "reward_weights.nope: no such term"),
    ],
)
def test_an_lhw_key_without_a_ppolab_meaning_is_one_line_naming_it(tmp_path, env, text, says):
    path = tmp_path / "lhw.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        env_config.resolve(env, str(path))
    assert str(err.value).startswith(f"{path}: ") and says in str(err.value) and "\n" not in str(err.value)


def test_reward_weights_in_lhw_s_names_become_the_task_s_terms(tmp_path):
    path = tmp_path / "lhw.yaml"
    path.write_text("reward_weights: {foot_frc_score: 0.225, com_vel_error: 0.15, yaw_vel_error: 0.15}\n")
    rewards = env_config.resolve("jvrc_walk", str(path)).data()["rewards"]
    assert (rewards["foot_force"], rewards["velocity"], rewards["yaw_rate"]) == (0.225, 0.15, 0.15)


def test_train_takes_lhw_s_file_through_the_cli(tmp_path):
    proc = run_ppolab("train", "--env", "jvrc_walk", "--yaml", str(LHW / "jvrc_base.yaml"), "--n-itr", "1",
                      "--num-procs", "2", "--max-traj-len", "20", "--minibatch-size", "20", "--eval-freq", "100",
                      "--logdir", str(tmp_path), "--no-lock")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    saved = next(tmp_path.glob("*/env.yaml")).read_text()
    assert "R_KNEE: 250.0" in saved and "action_filter: pair" in saved
    assert "xml_export_path ignored: ppolab writes no XML there" in proc.stdout  # LHW's file as LHW ships it


def test_h1_walk_without_a_file_is_lhw_s_walk_yaml():
    """`--env h1_walk` alone trains what LHW's envs/h1/configs/walk.yaml says: pose, gains, clock, joint
    limits, noise, perturbed bodies (a robot file's task defaults, not a copy of LHW's file)."""
    ours = make_env("h1_walk", 1)
    lhw = make_env("h1_walk", 1, env_config.resolve("h1_walk", str(LHW / "h1_walk.yaml")))
    np.testing.assert_allclose(ours.batch.nominal_leg, lhw.batch.nominal_leg)
    for field in ("actuator_gainprm", "actuator_biasprm"):  # kp; -kp and -kd
        np.testing.assert_allclose(getattr(ours.batch.models[0], field), getattr(lhw.batch.models[0], field))
    a, b = ours.cfg, lhw.cfg
    assert (a.joint_limits, a.swing_duration, a.stance_duration, a.goal_height) == (
        b.joint_limits, b.swing_duration, b.stance_duration, b.goal_height)  # fmt: skip
    assert a.randomization.model_dump() == b.randomization.model_dump() and ours.batch._pushed == lhw.batch._pushed
    assert a.init_joint_noise == pytest.approx(b.init_joint_noise, rel=0.01)
