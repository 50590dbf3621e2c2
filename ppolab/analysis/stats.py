"""Statistics across seeds: intervals with honest coverage, tests that decide, and the seeds a test needs.

After Agarwal et al. (2021), "Deep RL at the edge of the statistical precipice", with
what holds at the handful of seeds RL runs have:

- a configuration's mean gets a Student t interval (exact for normal scores, close for
  others); its interquartile mean (IQM) gets a percentile bootstrap interval only from
  `BOOTSTRAP_MIN_SEEDS` seeds on, where its coverage is near nominal (below that a
  bootstrap of a few values is far too narrow: 74% for a nominal 95% at 3 seeds);
- between a treatment and the control: Welch's t test with fractional degrees of
  freedom (scipy) decides significance, and its interval says what the data rule out;
  with several treatments the p-values are Holm-adjusted;
- equivalence is claimed only by a test of it: TOST (two one-sided Welch tests)
  against the smallest effect of interest;
- the probability of improvement P(X > Y) is shown with a bootstrap interval only from
  `BOOTSTRAP_MIN_SEEDS` seeds a side; below, it is a point estimate;
- the seeds to run come from a t test power calculation for the smallest effect of
  interest, never from the observed difference;
- seeds are said to split into two groups (some solve, some fail) only when the best cut into two
  explains more of their variance than it does for 99% of samples of as many normal scores.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import special  # the t and normal distributions; scipy.stats would cost 1 s more to import

ALPHA = 0.05
POWER = 0.8
BOOTSTRAP = 2000
BOOTSTRAP_MIN_SEEDS = 10  # percentile-bootstrap intervals (IQM, P(improvement)) from this many seeds a side
MIN_SEEDS = 2  # a t test needs two seeds a side
MAX_SEEDS = 1000


def t_sf(x: float, df: float) -> float:
    """Student t survival function, P(T > x)."""
    return float(special.stdtr(df, -x))


def t_ppf(q: float, df: float) -> float:
    """Student t quantile."""
    return float(special.stdtrit(df, q))


def iqm(x: np.ndarray) -> float:
    """Mean of the middle 50% (25% trimmed from each end; all of x when it has fewer than 4 values)."""
    x = np.sort(np.asarray(x, float))
    k = int(math.floor(0.25 * len(x)))
    return float(x[k : len(x) - k].mean())


def _rng() -> np.random.Generator:
    return np.random.default_rng(20211201)  # fixed: the same report every time it is written


@dataclass
class Interval:
    """An estimate with its 95% interval; `low`/`high` are None when no honest interval exists."""

    value: float
    low: float | None = None
    high: float | None = None

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def fmt(self, digits: int = 1) -> str:
        if not self.has_interval:
            return f"{self.value:.{digits}f} (estimate)"
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def mean_ci(x) -> Interval:
    """The mean with a 95% Student t interval (none below two values)."""
    x = np.asarray(x, float)
    m = float(x.mean())
    if len(x) < 2:
        return Interval(m)
    half = float(t_ppf(1 - ALPHA / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return Interval(m, m - half, m + half)


def bootstrap_ci(x, stat) -> Interval:
    """A 95% percentile-bootstrap interval of stat(x), only from BOOTSTRAP_MIN_SEEDS values on."""
    x = np.asarray(x, float)
    v = float(stat(x))
    if len(x) < BOOTSTRAP_MIN_SEEDS:
        return Interval(v)
    idx = _rng().integers(0, len(x), size=(BOOTSTRAP, len(x)))
    samples = np.array([stat(x[i]) for i in idx])
    return Interval(v, float(np.percentile(samples, 2.5)), float(np.percentile(samples, 97.5)))


def prob_improvement(x, y) -> float:
    """P(X > Y) for one random seed of each (ties count half): the Mann-Whitney U statistic over n*m."""
    x, y = np.asarray(x, float)[:, None], np.asarray(y, float)[None, :]
    return float(((x > y) + 0.5 * (x == y)).mean())


def prob_improvement_ci(x, y) -> Interval:
    """P(X > Y) with a bootstrap interval where it means something (enough seeds, not a single point)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    p = prob_improvement(x, y)
    if min(len(x), len(y)) < BOOTSTRAP_MIN_SEEDS:
        return Interval(p)
    rng = _rng()
    samples = [
        prob_improvement(x[rng.integers(0, len(x), len(x))], y[rng.integers(0, len(y), len(y))])
        for _ in range(BOOTSTRAP)
    ]
    low, high = float(np.percentile(samples, 2.5)), float(np.percentile(samples, 97.5))
    return Interval(p, low, high) if high > low else Interval(p)


@dataclass
class Difference:
    """mean(x) - mean(y) by Welch's t test."""

    value: float
    low: float  # 95% interval (two-sided); infinite below MIN_SEEDS a side
    high: float
    p: float  # two-sided p-value (1 when untestable)
    df: float
    se: float
    n: tuple[int, int]

    @property
    def testable(self) -> bool:
        return math.isfinite(self.low)


def welch(x, y) -> Difference:
    x, y = np.asarray(x, float), np.asarray(y, float)
    d = float(x.mean() - y.mean()) if len(x) and len(y) else math.nan
    n = (len(x), len(y))
    if min(n) < MIN_SEEDS:
        return Difference(d, -math.inf, math.inf, 1.0, math.nan, math.nan, n)
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se = math.sqrt(vx + vy)
    if se == 0:  # every seed the same on both sides: no variance, so no test is possible
        return Difference(d, -math.inf, math.inf, 1.0, math.nan, 0.0, n)
    df = (vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1))
    t = t_ppf(1 - ALPHA / 2, df)
    p = 2 * t_sf(abs(d) / se, df)
    return Difference(d, d - t * se, d + t * se, p, df, se, n)


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjustment: reject where adjusted p < alpha; family-wise error <= alpha."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted, running = [1.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def tost_interval(diff: Difference, alpha: float = 0.05) -> tuple[float, float]:
    """The (1 - 2 alpha) interval TOST decides on (90% at alpha 0.05): equivalence at alpha holds exactly when
    it lies within +-margin."""
    if not diff.testable:
        return -math.inf, math.inf
    half = t_ppf(1 - alpha, diff.df) * diff.se
    return diff.value - half, diff.value + half


def tost_p(diff: Difference, margin: float) -> float:
    """p-value of TOST: equivalence (|true difference| < margin) is shown where it is below alpha."""
    if not diff.testable or margin <= 0:
        return 1.0
    if diff.se == 0:
        return 0.0 if abs(diff.value) < margin else 1.0
    lower = t_sf((diff.value + margin) / diff.se, diff.df)  # H0: difference <= -margin
    upper = t_sf((margin - diff.value) / diff.se, diff.df)  # H0: difference >= +margin
    return float(max(lower, upper))


def power(n: int, effect: float, sd: float) -> float:
    """Power of a two-sided two-sample t test at level ALPHA with n seeds a side (noncentral t)."""
    df = 2 * n - 2
    ncp = effect / (sd * math.sqrt(2.0 / n))
    crit = t_ppf(1 - ALPHA / 2, df)
    p = float(1 - special.nctdtr(df, ncp, crit) + special.nctdtr(df, ncp, -crit))
    if not math.isfinite(p):  # scipy's noncentral t gives up far in the tail: the normal limit holds there
        p = float(special.ndtr(ncp - crit) + special.ndtr(-crit - ncp))
    return p


def seeds_for_power(effect: float, sd: float, have: int = 0) -> int | None:
    """Seeds per configuration for POWER to detect `effect` given a seed-to-seed `sd`, more than `have`.

    None when it takes more than MAX_SEEDS (or the sd is unknown).
    """
    if not (effect > 0 and sd > 0 and math.isfinite(sd)):
        return None
    n = max(2, have + 1)
    while n <= MAX_SEEDS:
        if power(n, effect, sd) >= POWER:
            return n
        n = n + 1 if n < 64 else int(n * 1.1) + 1
    return None


def pooled_sd(groups: list[np.ndarray]) -> float:
    """The seed-to-seed standard deviation pooled over configurations with two or more seeds."""
    ss = sum(float(((g - g.mean()) ** 2).sum()) for g in groups if len(g) >= 2)
    dof = sum(len(g) - 1 for g in groups if len(g) >= 2)
    return math.sqrt(ss / dof) if dof else math.nan


SPLIT_ALPHA = 0.01  # seeds are said to split into two groups at this false-alarm rate on normal scores
SPLIT_DRAWS = 20_000


def _explained(z: np.ndarray) -> np.ndarray:
    """Per row of sorted values, the largest share of its variance that one cut into two groups explains."""
    sst = ((z - z.mean(1, keepdims=True)) ** 2).sum(1)
    best = np.zeros(len(z))
    for c in range(1, z.shape[1]):
        a, b = z[:, :c], z[:, c:]
        ssw = ((a - a.mean(1, keepdims=True)) ** 2).sum(1) + ((b - b.mean(1, keepdims=True)) ** 2).sum(1)
        best = np.maximum(best, 1 - ssw / np.where(sst > 0, sst, 1.0))
    return best


@functools.lru_cache(maxsize=64)
def _split_critical(n: int) -> float:
    """The (1 - SPLIT_ALPHA) quantile of `_explained` for n normal scores (Monte Carlo, a fixed stream)."""
    z = np.sort(_rng().normal(size=(SPLIT_DRAWS, n)), axis=1)
    return float(np.quantile(_explained(z), 1 - SPLIT_ALPHA))


def two_groups(x: np.ndarray) -> tuple[list[float], list[float]] | None:
    """The scores as two groups when they split: the best cut into two explains more of their variance than
    it does for all but SPLIT_ALPHA of samples of as many normal scores. From 4 scores on (at 3, any cut of
    normal scores explains nearly all of it)."""
    z = np.sort(np.asarray(x, float))
    if len(z) < 4 or float(z.std()) == 0.0:
        return None
    if _explained(z[None, :])[0] <= _split_critical(len(z)):
        return None
    within = [
        float(((z[:c] - z[:c].mean()) ** 2).sum() + ((z[c:] - z[c:].mean()) ** 2).sum()) for c in range(1, len(z))
    ]
    c = 1 + int(np.argmin(within))
    return z[:c].tolist(), z[c:].tolist()
