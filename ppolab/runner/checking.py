"""Behaviour checks as a training metric (`ppolab train --check-every N [--stop-on-pass]`).

Every N iterations, and at the last, the trainer's actor is checked in memory by the env's behaviour checks
(ppolab/evaluation/behaviour.py) between two iterations: the same checks, start states and horizons as
`benchmarks/humanoid_learning.py --check`, on their own random stream, so the training itself (its samples,
updates and metrics) is the same with checks or without. A round is gated, cheapest check first, and ends
at its first failure: a policy that still falls pays one 10 s walk, and only a policy that walks, stands and
turns pays for the 90 s of straightness. What a round cost is in its record and in the console, as its
share of the run's wall time so far.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ppolab.evaluation.behaviour import Subject, all_passed, checks, checks_of, flat_figures
from ppolab.ppo.sampling_policy import SamplingParams


def due(check_every: int, itr: int, n_itr: int) -> bool:
    """A round after iterations N-1, 2N-1, ... (N iterations trained) and after the last one."""
    return check_every > 0 and ((itr + 1) % check_every == 0 or itr == n_itr - 1)


@dataclass(frozen=True)
class Round:
    """One round of checks: whether every check passed, the figures of those that ran, and its cost."""

    env: str
    result: dict
    seconds: float

    @property
    def passed(self) -> bool:
        return all_passed(self.env, self.result)

    def record(self, total_steps: int, total_time: float, check_time: float) -> dict:
        """The metrics record (without its type and iteration): numbers only, as metrics.jsonl takes them.
        `check_share` is the share of the run's wall time so far spent in checks."""
        return {
            "passed": int(self.passed),
            "total_steps": total_steps,
            "total_time": total_time,
            "seconds": self.seconds,
            "check_share": check_time / total_time if total_time > 0 else 0.0,
            **flat_figures(self.result),
        }

    def summary(self) -> str:
        """'walk passed, stand passed, turn FAILED (1 of 8 fell), straight not run' in the checks' order:
        a failed check says which bars it missed."""
        parts = []
        for name in checks_of(self.env):
            ran = self.result.get(name)
            state = "not run" if ran is None else "passed" if ran["passed"] else "FAILED"
            missed = ran.get("missed") if ran else None
            parts.append(f"{name} {state}" + (f" ({'; '.join(missed)})" if missed else ""))
        return ", ".join(parts)


def run_round(env: str, env_config: dict | None, params: SamplingParams) -> Round:
    """Check the policy (its weights as the sampler runs them) on the env it trains on, gated."""
    t0 = time.perf_counter()
    result = checks(env, Subject(env, env_config, params), gate=True)
    return Round(env, result, time.perf_counter() - t0)


def console_line(itr: int, r: Round, total_steps: int, check_time: float, total_time: float) -> str:
    share = check_time / total_time if total_time > 0 else 0.0
    return (
        f"Checks at iteration {itr} ({total_steps / 1e6:.2f} M env steps, {total_time / 60:.1f} min): "
        f"{'PASSED' if r.passed else 'not yet'}: {r.summary()} ({r.seconds:.1f} s; checks so far "
        f"{100 * share:.1f}% of the wall time)"
    )
