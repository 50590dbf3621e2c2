"""Statistics across seeds, after Agarwal et al. (2021), "Deep RL at the edge of the statistical precipice".

Per configuration: the mean and the interquartile mean (IQM) of its seeds' scores,
each with a 95% stratified-bootstrap confidence interval (with one task, seeds
are resampled within each configuration). Between two configurations: the
probability of improvement P(X > Y) with a bootstrap interval, and a Welch t
interval for the difference of means, which decides significance: a percentile
bootstrap of two to five seeds is far too narrow to decide anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BOOTSTRAP = 2000
Z_975, Z_80 = 1.959964, 0.841621


def iqm(x: np.ndarray) -> float:
    """Mean of the middle 50% (25% trimmed from each end; all of x when it has fewer than 4 values)."""
    x = np.sort(np.asarray(x, float))
    k = int(math.floor(0.25 * len(x)))
    return float(x[k : len(x) - k].mean())


def _rng() -> np.random.Generator:
    return np.random.default_rng(20211201)  # fixed: the same report every time it is written


@dataclass
class Interval:
    value: float
    low: float
    high: float

    def fmt(self, digits: int = 1) -> str:
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def bootstrap_ci(x, stat) -> Interval:
    x = np.asarray(x, float)
    if len(x) < 2:
        v = stat(x)
        return Interval(v, v, v)
    idx = _rng().integers(0, len(x), size=(BOOTSTRAP, len(x)))
    samples = np.array([stat(x[i]) for i in idx])
    return Interval(stat(x), float(np.percentile(samples, 2.5)), float(np.percentile(samples, 97.5)))


def prob_improvement(x, y) -> float:
    """P(X > Y) for one random seed of each (ties count half): the Mann-Whitney U statistic over n*m."""
    x, y = np.asarray(x, float)[:, None], np.asarray(y, float)[None, :]
    return float(((x > y) + 0.5 * (x == y)).mean())


def prob_improvement_ci(x, y) -> Interval:
    x, y = np.asarray(x, float), np.asarray(y, float)
    p = prob_improvement(x, y)
    if len(x) < 2 or len(y) < 2:
        return Interval(p, p, p)
    rng = _rng()
    samples = [
        prob_improvement(x[rng.integers(0, len(x), len(x))], y[rng.integers(0, len(y), len(y))])
        for _ in range(BOOTSTRAP)
    ]
    return Interval(p, float(np.percentile(samples, 2.5)), float(np.percentile(samples, 97.5)))


# two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (beyond: the normal's)
T_975 = [
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
]
MIN_SEEDS = 3


def mean_difference_ci(x, y) -> Interval:
    """95% Welch interval of mean(x) - mean(y): sound with a handful of seeds, where a bootstrap is not.

    With fewer than MIN_SEEDS seeds on a side the interval is unbounded: no claim either way.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    d = float(x.mean() - y.mean())
    if len(x) < MIN_SEEDS or len(y) < MIN_SEEDS:
        return Interval(d, -math.inf, math.inf)
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se = math.sqrt(vx + vy)
    if se == 0:
        return Interval(d, d, d)
    df = (vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1))
    t = T_975[int(df) - 1] if int(df) <= len(T_975) else Z_975  # floor of df: conservative
    return Interval(d, d - t * se, d + t * se)


def seeds_needed(x, y) -> int | None:
    """Seeds per configuration for an 80%-power, 5%-level test to detect the observed difference."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or len(y) < 2:
        return None
    d = abs(x.mean() - y.mean())
    s = math.sqrt((x.var(ddof=1) + y.var(ddof=1)) / 2)
    if d == 0:
        return None
    if s == 0:
        return 2
    return max(2, math.ceil(2 * ((Z_975 + Z_80) * s / d) ** 2))
