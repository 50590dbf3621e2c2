"""Every shipped env gives the observations, rewards and terminations recorded before its task was last
rewritten (tests/equivalence.py), replaying the recorded actions from the same seeded starts."""

from __future__ import annotations

import numpy as np
import pytest
from equivalence import DATA, ENVS, record


@pytest.mark.parametrize("env_name", ENVS)
def test_a_task_gives_what_it_gave(env_name):
    want = dict(np.load(DATA / f"{env_name}.npz"))
    got = record(env_name, actions=want["actions"])
    for key in ("obs", "rewards", "terminated"):
        assert got[key].shape == want[key].shape, key
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6, err_msg=f"{env_name}: {key}")
