"""Time to pass: how soon a run's behaviour checks (`train --check-every`) first passed.

A run that never passed is not dropped and not given its budget as if it had passed: it is censored at the
last moment it was checked (it passes, if ever, later than that). So a configuration is described by its
solve rate (runs that passed, of those checked: a Clopper-Pearson interval) and its Kaplan-Meier median
time to pass, and two configurations are compared by the log-rank statistic, with a permutation p-value
(exact over every assignment of the runs to the two sides while there are at most `EXACT_UP_TO` of them,
else `RESAMPLES` random ones): at the 3-10 seeds a sweep runs, the log-rank's normal approximation is not
to be trusted. Solve rates are compared by Fisher's exact test.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ppolab.analysis.stats import ALPHA, holm
from ppolab.util.run_folder import check_passes

PassMetric = Literal["time_to_pass", "steps_to_pass"]
PASS_METRICS: dict[str, tuple[str, str]] = {  # metric -> (its key in a check record and a summary, its unit)
    "time_to_pass": ("seconds", "s"),
    "steps_to_pass": ("env_steps", "env steps"),
}
RESAMPLES = 1_000
EXACT_UP_TO = 1_000  # label assignments: above this many, a random sample of RESAMPLES


@dataclass(frozen=True)
class Passing:
    """When a run first passed (`passed`), else how long it was watched without passing (censored there)."""

    value: float
    passed: bool


def first_pass(checks: list[dict]) -> dict | None:
    """A run's passing figures from its check records: seconds, env_steps and iteration of the first round
    that passed, else of the last round (censored), and `passed`; None when the run was never checked.
    `checks_passed`: the most checks one round passed (how far a run that never passed got)."""
    if not checks:
        return None
    ordered = sorted(checks, key=lambda r: r["iteration"])
    rec = next((r for r in ordered if r["passed"]), ordered[-1])
    most = max(sum(check_passes(r).values()) for r in ordered)
    return {"passed": bool(rec["passed"]), "seconds": float(rec["total_time"]), "env_steps": int(rec["total_steps"]),
            "iteration": int(rec["iteration"]), "rounds": len(ordered), "checks_passed": most}  # fmt: skip


def outcome(figures: dict | None, metric: PassMetric) -> Passing | None:
    if figures is None:
        return None
    return Passing(float(figures[PASS_METRICS[metric][0]]), bool(figures["passed"]))


def measure_name(metric: PassMetric) -> str:
    """What a pass metric measures, for a sentence: "time" or "env steps"."""
    return "time" if metric == "time_to_pass" else "env steps"


def fmt_value(value: float, metric: PassMetric) -> str:
    if metric == "time_to_pass":
        return f"{value:.0f} s" if value < 120 else f"{value / 60:.1f} min"
    return f"{value / 1e6:.2f} M steps"


def km_curve(runs: list[Passing]) -> list[tuple[float, float]]:
    """The Kaplan-Meier estimate: (time, share of runs not yet passed) at each time a run passed. A censored
    run counts among those at risk up to its last round, and no longer."""
    curve, surviving = [], 1.0
    for t in sorted({r.value for r in runs if r.passed}):
        at_risk = sum(r.value >= t for r in runs)
        events = sum(r.passed and r.value == t for r in runs)
        surviving *= 1 - events / at_risk
        curve.append((t, surviving))
    return curve


def km_median(runs: list[Passing]) -> float | None:
    """The Kaplan-Meier median: the first time at which half the runs have passed; None while fewer have."""
    return next((t for t, surviving in km_curve(runs) if surviving <= 0.5), None)


def solve_rate(runs: list[Passing]) -> tuple[int, int, float, float]:
    """Passed, checked, and the 95% Clopper-Pearson interval of the share that passes."""
    from scipy.stats import binomtest

    k, n = sum(r.passed for r in runs), len(runs)
    if n == 0:
        return 0, 0, math.nan, math.nan
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return k, n, float(ci.low), float(ci.high)


def _logrank_z(runs: list[Passing], first: set[int]) -> float:
    """scipy's log-rank z of the runs in `first` against the rest: positive when they pass sooner."""
    from scipy.stats import CensoredData, logrank

    def side(members: list[Passing]) -> CensoredData:
        return CensoredData(uncensored=[r.value for r in members if r.passed],
                            right=[r.value for r in members if not r.passed])  # fmt: skip

    ones = [r for i, r in enumerate(runs) if i in first]
    rest = [r for i, r in enumerate(runs) if i not in first]
    with np.errstate(invalid="ignore", divide="ignore"):  # a split with no variance: nan, counted as 0 below
        return float(logrank(side(ones), side(rest)).statistic)


def logrank_permutation(treated: list[Passing], control: list[Passing]) -> tuple[float, float]:
    """(z, two-sided p) of the log-rank test of `treated` against `control`: z > 0 when the treated runs
    pass sooner. p is the share of label assignments whose |z| is at least the observed one. Remembered: a
    report asks the same pair for its table, its verdict and its JSON."""
    return _logrank_permutation(tuple(treated), tuple(control))


@functools.lru_cache(maxsize=256)
def _logrank_permutation(treated: tuple[Passing, ...], control: tuple[Passing, ...]) -> tuple[float, float]:
    from itertools import combinations

    runs = list(treated + control)
    if not any(r.passed for r in runs) or not treated or not control:
        return 0.0, 1.0
    n, k = len(runs), len(treated)
    z = _logrank_z(runs, set(range(k)))
    if math.isnan(z):  # no variance (every run passing at the same round, say): no test is possible
        return math.nan, math.nan
    if math.comb(n, k) <= EXACT_UP_TO:
        draws = [_logrank_z(runs, set(c)) for c in combinations(range(n), k)]
    else:
        rng = np.random.default_rng(20211201)  # fixed: the same report every time it is written
        draws = [_logrank_z(runs, set(rng.choice(n, k, replace=False).tolist())) for _ in range(RESAMPLES)]
    z_all = np.nan_to_num(np.array(draws))
    return z, float(np.mean(np.abs(z_all) >= abs(z) - 1e-9))


def fisher_p(treated: list[Passing], control: list[Passing]) -> float:
    """Fisher's exact test (two-sided) of the two solve rates."""
    from scipy.stats import fisher_exact

    a, b = sum(r.passed for r in treated), sum(r.passed for r in control)
    return float(fisher_exact([[a, len(treated) - a], [b, len(control) - b]]).pvalue)


@dataclass
class Group:
    """A configuration's checked runs (control first in a list of groups)."""

    label: str
    runs: list[Passing]

    def describe(self, metric: PassMetric) -> list[str]:
        """Table cells: runs checked, passed with the solve rate's interval, median time to pass."""
        k, n, low, high = solve_rate(self.runs)
        if n == 0:
            return [self.label, "0", "-", "-"]
        median = km_median(self.runs)
        longest = max(r.value for r in self.runs)
        med = fmt_value(median, metric) if median is not None else f"not reached (> {fmt_value(longest, metric)})"
        return [self.label, str(n), f"{k} of {n} ({k / n:.0%}, 95% CI {low:.0%}-{high:.0%})", med]


@dataclass
class PassTest:
    """A treatment against the control: log-rank (permutation p, Holm-adjusted) and Fisher on solve rates."""

    group: Group
    z: float
    p: float
    p_holm: float
    p_fisher: float

    @property
    def testable(self) -> bool:
        """False when the log-rank statistic has no variance (every run passing at the same round, say)."""
        return not math.isnan(self.z)

    @property
    def significant(self) -> bool:
        return self.testable and self.p_holm < ALPHA

    @property
    def sooner(self) -> bool:
        return self.z > 0


def pass_tests(groups: list[Group]) -> list[PassTest]:
    control, treated = groups[0], [g for g in groups[1:] if g.runs]
    if not control.runs:
        return []
    raw = [logrank_permutation(g.runs, control.runs) for g in treated]
    testable = [p for _, p in raw if not math.isnan(p)]  # Holm over the tests that could be made
    adjusted = iter(holm(testable) if testable else [])
    return [PassTest(g, z, p, math.nan if math.isnan(p) else next(adjusted), fisher_p(g.runs, control.runs))
            for g, (z, p) in zip(treated, raw)]  # fmt: skip


def describe_pass_test(t: PassTest, control: Group, metric: PassMetric, k: int) -> str:
    unit = measure_name(metric)
    if not t.testable:
        return (f"**No test possible:** {t.group.label} vs {control.label}: the log-rank statistic has no variance "
                f"here (every run passed at the same {unit}, or none passed), so nothing can be said about which "
                "passes sooner.")  # fmt: skip
    ps = f"log-rank, permutation p = {t.p:.3g}" + (f", Holm-adjusted p = {t.p_holm:.3g} over {k}" if k > 1 else "")
    rates = (
        f"solve rates {sum(r.passed for r in t.group.runs)}/{len(t.group.runs)} vs "
        f"{sum(r.passed for r in control.runs)}/{len(control.runs)}, Fisher's exact p = {t.p_fisher:.3g}"
    )
    if t.significant:
        word = "sooner" if t.sooner else "later"
        return (
            f"**Significant:** {t.group.label} passes its checks {word} than {control.label} ({unit}; {ps}; {rates})."
        )
    return (
        f"**Inconclusive:** {t.group.label} vs {control.label}: no significant difference in {unit} to pass ({ps}; "
        f"{rates}). Not significant is not equal."
    )
