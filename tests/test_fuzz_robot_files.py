"""Eighteen fuzzed robot files and LearningHumanoidWalking env files (tests/fuzzing.py's cases) through the
commands that read them: exit 0, 1 or 2, never a traceback or a hang, and a refusal in one line."""

from __future__ import annotations

import pytest
from fuzzing import cases, run

CASES = cases(seed=7, robots=12, lhw=6)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_fuzzed_file_is_taken_or_refused_in_one_line(tmp_path, case):
    for result in run(case, tmp_path, timeout=240):
        assert result.code is not None, f"{case.name}: {result.command} hung"
        assert result.ok, f"{case.name}: {result.command}: exit {result.code}\n{result.stderr[-2000:]}"
