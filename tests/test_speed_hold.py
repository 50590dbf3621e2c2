"""The off-distribution speed and heading check of a shipped walker: speeds and start states the training
checks never use, judged by the straight check's bars."""

from __future__ import annotations

from conftest import REPO

from ppolab.evaluation.behaviour import HOLD_SLOT, speed_hold


def test_speed_hold_measures_each_speed_from_start_states_of_its_own():
    short = speed_hold(REPO / "pretrained" / "jvrc_walk", speeds=(0.2, 0.35), seconds=3.0, n=2)
    assert [r["command_vx"] for r in short["speeds"]] == [0.2, 0.35]
    for r in short["speeds"]:
        assert r["seconds"] == 3.0 and r["still_up"] in (0, 1, 2) and len(r["speed_share"]) == 2
        assert r["passed"] == (not r.get("missed"))
    assert short["passed"] == all(r["passed"] for r in short["speeds"])
    assert HOLD_SLOT > 3  # the straight check's three speeds use slots 1-3


def test_noisy_speed_hold_samples_training_actions_at_the_policys_std():
    """`noisy` adds the policy's std x a normal draw to the mean action, from a generator of the check's own:
    the same figures twice, other figures than the mean action's, and the mean action's at a std of 0."""
    import dataclasses

    import numpy as np

    from ppolab.evaluation.behaviour import Subject

    subject = Subject.of(REPO / "pretrained" / "jvrc_walk")
    still = Subject(subject.env, subject.env_config,
                    dataclasses.replace(subject.params, std=np.zeros_like(subject.params.std)))  # fmt: skip
    kw = {"speeds": (0.25,), "seconds": 2.0, "n": 2}
    mean, noisy = speed_hold(subject, **kw), speed_hold(subject, noisy=True, **kw)
    assert speed_hold(subject, noisy=True, **kw) == noisy
    assert noisy["speeds"][0]["speed_m_s"] != mean["speeds"][0]["speed_m_s"]
    assert speed_hold(still, noisy=True, **kw) == mean


def test_the_checks_keep_their_speeds_when_check_speed_holds_them_and_training_draws_from_elsewhere():
    """straight runs at the sixths of the checks' range and walk at 3/4 of its top: forward_speed's by
    default, check_speed's when given, so a training range can move while the checks stay."""
    from ppolab.evaluation.behaviour import Subject, straight, walk

    subject = Subject.of(REPO / "pretrained" / "jvrc_walk")

    def speeds(**cfg) -> tuple[list[float], float]:
        s = Subject(subject.env, {**subject.env_config, **cfg}, subject.params)
        ran = straight(s, seconds=0.2, n=1)["speeds"]
        return [r["command_vx"] for r in ran], walk(s, seconds=0.2, n=1)["command_vx"]

    assert speeds(forward_speed=(0.0, 0.4), check_speed=None) == ([0.067, 0.2, 0.333], 0.3)
    assert speeds(forward_speed=(0.0, 0.4), check_speed=(0.1, 0.4)) == ([0.15, 0.25, 0.35], 0.3)
    assert speeds(forward_speed=(0.1, 0.4), check_speed=(0.1, 0.6)) == ([0.183, 0.35, 0.517], 0.45)
