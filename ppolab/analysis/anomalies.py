"""Anomaly rules over a run's per-iteration metrics.

Each finding is `{"rule", "first_iteration", "count", "detail"}`; a run with no
finding is stable. Rules (thresholds in `Thresholds`):

- `nan_inf`: a loss, KL, entropy, clip fraction or noise std is nan or inf, or a
  reward is inf (a nan reward only means no episode finished that iteration);
- `critic_divergence`: critic loss above `critic_loss` (1000);
- `kl_high`: mean KL above `kl` (0.05): the policy changes too fast;
- `clip_high`: clip fraction above `clip_fraction` (0.3): clipping too aggressively;
- `entropy_collapse`: the action noise std below `min_noise_std` (0.01). The
  entropy of a Gaussian is negative for small std, so "entropy near zero" means
  nothing; the std is the quantity that collapses;
- `reward_decline`: over the last `decline_window` (20%) of iterations, the
  least-squares slope of Mean Eprew is negative, its t statistic corrected for
  autocorrelation is below `decline_t` (-3) and significant at 1% one-sided, and the
  fitted drop exceeds `decline_min_drop` (5%) of the run's reward range. Rewards of
  successive iterations are correlated (lag-1 autocorrelation 0.5-0.9 on real
  plateaus); the standard error is inflated by sqrt((1 + phi) / (1 - phi)), phi
  estimated from the window's residuals with a small-sample bias correction, and the
  degrees of freedom shrink to the effective sample size. Measured on simulated flat
  AR(1) plateaus (benchmarks/conclusions.py): at most ~3% false positives up to
  phi = 0.9;
  It is reported from where the decline starts: the peak of the smoothed curve;
- `reward_collapse`: the reward fell from its peak and stayed down: the mean of
  the last `collapse_window` (10%) of iterations is below the smoothed peak by more
  than `collapse_drop` (30%) of the run's reward range, and by more than three
  standard deviations of those last iterations inflated by sqrt((1 + phi) / (1 - phi)),
  phi the lag-1 autocorrelation of the whole run's rewards (as for `reward_decline`:
  successive iterations are correlated, and a correlated window's spread understates
  the noise; a climb or a step in the run only raises phi, a stricter guard). Measured
  on flat AR(1) runs (benchmarks/conclusions.py): at most 5% false positives up to
  phi = 0.9, where the uncorrected guard fired on 35-46% at phi 0.8-0.9;
- `never_learned`: the run stayed flat near its start: the mean of no `collapse_window` (10%) of
  successive iterations rose above that of its first ones by more than 6 standard errors of such a
  mean (the rewards' sd about the smoothed curve, inflated for autocorrelation as above). A seed that never learns
  is a result, not noise: `compare` counts it against its configuration's solve rate. Not asked of a
  run that started from trained weights (`--continued`), flat by design.

Thresholds are compared in float32, the precision metrics are stored in: a std
set to exactly 0.01 is not "below 0.01", a KL of exactly 0.05 is not "above 0.05".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

RULES = (
    "nan_inf", "critic_divergence", "kl_high", "clip_high", "entropy_collapse", "reward_decline", "reward_collapse",
    "never_learned",
)  # fmt: skip
NEVER_LEARNED_SE = 6.0  # a rise of the best window over the first one within this many standard errors: flat
FAILED_RULES = ("nan_inf", "never_learned")  # a run they fire on failed as a seed: it counts in the solve rate
IMPROVING_P = 0.025  # one-sided: a rising end is called at most 2.5% of the time on a levelled-off run with AR(1) noise
CHECKED_FOR_NAN = ("actor_loss", "critic_loss", "kl", "entropy", "clip_fraction", "noise_std")


class Thresholds(BaseModel):
    """Anomaly thresholds: defaults here, overridden by a YAML file (same keys) and then by flags."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    critic_loss: float = Field(1000.0, gt=0, description="critic loss above this: possible divergence")
    kl: float = Field(0.05, gt=0, description="mean KL above this: the policy changes too fast")
    clip_fraction: float = Field(0.3, gt=0, le=1, description="clip fraction above this: clipping too much")
    min_noise_std: float = Field(0.01, ge=0, description="action noise std below this: exploration collapsed")
    decline_window: float = Field(0.2, gt=0, le=1, description="fraction of iterations checked for a decline")
    decline_t: float = Field(-3.0, lt=0, description="t statistic of the reward slope below which it declines")
    decline_min_drop: float = Field(0.05, ge=0, description="minimal fitted drop, as a fraction of the reward range")
    collapse_window: float = Field(0.1, gt=0, le=1, description="fraction of iterations whose mean is checked")
    collapse_drop: float = Field(0.3, gt=0, description="drop below the smoothed peak, as a fraction of the range")


def _finding(rule: str, iterations: list[int], detail: str) -> dict | None:
    if not iterations:
        return None
    return {"rule": rule, "first_iteration": iterations[0], "count": len(iterations), "detail": detail}


def _value(rec: dict, key: str) -> float | None:
    v = rec.get(key)
    return None if v is None else float(v)


def find_anomalies(iters: list[dict], th: Thresholds | None = None, fine_tune: bool = False) -> list[dict]:
    """Every rule's finding on a run's iteration records. `fine_tune`: the run started from trained weights
    (`--continued`), where a flat curve is no failure: `never_learned` is not asked."""
    th = th or Thresholds()
    found: list[dict | None] = []

    def where(pred) -> list[int]:
        return [r["iteration"] for r in iters if pred(r)]

    def bad(r: dict) -> bool:
        vals = [_value(r, k) for k in CHECKED_FOR_NAN]
        rewards = [_value(r, k) for k in ("mean_eprew", "mean_eplen")]
        return any(v is not None and not math.isfinite(v) for v in vals) or any(
            v is not None and math.isinf(v) for v in rewards
        )

    def above(key: str, limit: float):
        return lambda r: (v := _value(r, key)) is not None and math.isfinite(v) and f32(v) > f32(limit)

    found.append(_finding("nan_inf", where(bad), "nan or inf in the metrics"))
    found.append(
        _finding(
            "critic_divergence",
            where(above("critic_loss", th.critic_loss)),
            f"critic loss > {th.critic_loss:g}: possible divergence",
        )
    )
    found.append(
        _finding(
            "kl_high",
            where(above("kl", th.kl)),
            f"KL > {th.kl:g}: the policy changes too fast (lower lr or fewer epochs)",
        )
    )
    found.append(
        _finding(
            "clip_high",
            where(above("clip_fraction", th.clip_fraction)),
            f"clip fraction > {th.clip_fraction:g}: clipping too aggressively",
        )
    )
    low_std = where(
        lambda r: (v := _value(r, "noise_std")) is not None and math.isfinite(v) and f32(v) < f32(th.min_noise_std)
    )
    found.append(
        _finding("entropy_collapse", low_std, f"action noise std < {th.min_noise_std:g}: exploration has collapsed")
    )
    found.append(_reward_decline(iters, th))
    found.append(_reward_collapse(iters, th))
    if not fine_tune:
        found.append(_never_learned(iters, th))
    return [f for f in found if f]


def f32(v: float) -> np.float32:
    return np.float32(v)


def rewards(iters: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(iteration, Mean Eprew) of the iterations with a finite reward."""
    pts = [(r["iteration"], _value(r, "mean_eprew")) for r in iters]
    pts = [(i, v) for i, v in pts if v is not None and math.isfinite(v)]
    return np.array([p[0] for p in pts], float), np.array([p[1] for p in pts], float)


def smoothed(y: np.ndarray) -> np.ndarray:
    """A centred moving average over about 5% of the run (at least 3 points)."""
    w = max(3, len(y) // 20) | 1
    pad = np.pad(y, w // 2, mode="edge")
    return np.convolve(pad, np.ones(w) / w, mode="valid")


def lag1_autocorrelation(resid: np.ndarray) -> float:
    """Lag-1 autocorrelation of residuals, bias-corrected for short series, within [0, 0.95]."""
    r = resid - resid.mean()
    denom = float((r**2).sum())
    if len(r) < 4 or denom == 0:
        return 0.0
    phi = float((r[1:] * r[:-1]).sum() / denom)
    return min(0.95, max(0.0, phi + (1 + 4 * phi) / len(r)))


def step_robust_autocorrelation(y: np.ndarray) -> float:
    """Lag-1 autocorrelation of a series' noise, from its successive differences: for AR(1) noise,
    corr(dy_t, dy_t-1) = -(1 - phi) / 2, whatever the series' level does. A climb only shifts the
    differences; a step (the collapse itself) is one outlier among them and is clipped (median +- 5 MAD)."""
    d = np.diff(y)
    med = float(np.median(d))
    mad = float(np.median(np.abs(d - med))) or 1e-12
    d = np.clip(d, med - 5 * 1.4826 * mad, med + 5 * 1.4826 * mad)
    d = d - d.mean()
    denom = float((d**2).sum())
    if len(d) < 4 or denom == 0:
        return 0.0
    rho = float((d[1:] * d[:-1]).sum() / denom)
    return min(0.95, max(0.0, 1 + 2 * rho))


@dataclass
class Trend:
    slope: float  # reward per iteration
    t: float  # slope over its autocorrelation-corrected standard error
    p_down: float  # one-sided p-values with the effective degrees of freedom
    p_up: float


def trend(x: np.ndarray, y: np.ndarray, phi: float) -> Trend | None:
    """Least-squares slope of y on x, its t statistic corrected for lag-1 autocorrelation phi."""
    n = len(x)
    xc = x - x.mean()
    sxx = float((xc**2).sum())
    if n < 5 or sxx == 0:
        return None
    slope = float((xc * (y - y.mean())).sum() / sxx)
    resid = y - (y.mean() + slope * xc)
    se = math.sqrt(float((resid**2).sum()) / (n - 2) / sxx) * math.sqrt((1 + phi) / (1 - phi))
    df = max(1.0, n * (1 - phi) / (1 + phi) - 2)
    if se == 0:
        t = math.copysign(math.inf, slope) if slope else 0.0
    else:
        t = slope / se
    from ppolab.analysis.stats import t_sf  # here: building the CLI's parser (Thresholds) stays fast

    return Trend(slope, t, t_sf(-t, df), t_sf(t, df))


def end_trend(
    iters: list[dict], window: float, whole_run_phi: bool = False
) -> tuple[Trend, np.ndarray, np.ndarray] | None:
    """The trend of the last `window` of the run, corrected for the autocorrelation of its residuals (with
    `whole_run_phi`, at least that of the whole run's noise: a short window's own estimate runs low)."""
    x, y = rewards(iters)
    if len(x) < 20:
        return None
    k = max(10, int(len(x) * window))
    xs, ys = x[-k:], y[-k:]
    fit = np.polyfit(xs - xs.mean(), ys, 1)
    phi = lag1_autocorrelation(ys - np.polyval(fit, xs - xs.mean()))
    if whole_run_phi:
        phi = max(phi, step_robust_autocorrelation(y))
    t = trend(xs, ys, phi)
    return (t, x, y) if t else None


def _reward_decline(iters: list[dict], th: Thresholds) -> dict | None:
    found = end_trend(iters, th.decline_window)
    if found is None:
        return None
    t, x, y = found
    k = max(10, int(len(x) * th.decline_window))
    drop = -t.slope * (x[-1] - x[-k])
    span = float(y.max() - y.min()) or 1.0
    if t.slope < 0 and t.t < th.decline_t and t.p_down < 0.01 and drop > th.decline_min_drop * span:
        start = int(x[decline_start(y, len(x) - k // 2)])
        return {
            "rule": "reward_decline",
            "first_iteration": start,
            "count": int((x >= start).sum()),
            "detail": f"reward fell by {drop:.1f} over the last {k} iterations, declining from iteration {start} "
            f"(slope t = {t.t:.1f}, corrected for autocorrelation)",
        }
    return None


def decline_start(y: np.ndarray, before: int) -> int:
    """Index where the fall to the end begins: the last point, from the smoothed peak before `before`,
    where the smoothed curve is still within noise (twice the residual sd) of that peak."""
    smooth = smoothed(y)
    top = int(np.argmax(smooth[:before]))
    tol = 2.0 * float(np.std(y - smooth))
    near = np.nonzero(smooth[top:before] >= smooth[top] - tol)[0]
    return top + int(near[-1])


def _reward_collapse(iters: list[dict], th: Thresholds) -> dict | None:
    x, y = rewards(iters)
    if len(x) < 20:
        return None
    k = max(5, int(len(x) * th.collapse_window))
    smooth = smoothed(y)
    top = int(np.argmax(smooth[:-k]))
    peak, final = float(smooth[top]), float(y[-k:].mean())
    span = float(smooth.max() - smooth.min()) or 1.0
    drop = peak - final
    phi = step_robust_autocorrelation(y)
    noise = float(y[-k:].std()) * math.sqrt((1 + phi) / (1 - phi))
    if drop > th.collapse_drop * span and drop > 3 * noise:
        start = decline_start(y, len(y) - k)
        return {
            "rule": "reward_collapse",
            "first_iteration": int(x[start]),
            "count": int(len(x) - start),
            "detail": f"reward fell from {peak:.1f} (iteration {int(x[top])}) to {final:.1f} and stayed down",
        }
    return None


def _never_learned(iters: list[dict], th: Thresholds) -> dict | None:
    x, y = rewards(iters)
    if len(x) < 20:
        return None
    k = max(5, int(len(x) * th.collapse_window))
    windows = np.convolve(y, np.ones(k) / k, mode="valid")  # the mean of every k successive iterations
    start, best = float(windows[0]), float(windows.max())
    phi = step_robust_autocorrelation(y)
    se = float(np.std(y - smoothed(y))) * math.sqrt((1 + phi) / (1 - phi) / k)  # of one window's mean
    if best - start <= NEVER_LEARNED_SE * se:
        return {
            "rule": "never_learned",
            "first_iteration": int(x[0]),
            "count": len(x),
            "detail": f"flat from its start: its best {k}-iteration mean is {best - start:.1f} above its first "
            f"({start:.1f}), within {NEVER_LEARNED_SE:g} standard errors ({se:.1f} each)",
        }
    return None


def still_improving(iters: list[dict], evals: list[dict], window: float = 0.2) -> str | None:
    """Why the run had not levelled off at its end (None if it had): a rising trend of the training reward
    over the last `window` of iterations, significant at 5% one-sided with its t statistic corrected for
    autocorrelation. The evaluations are not asked: "the best evaluation is the last one" is true by chance
    of one levelled-off run in every few evaluations, and flagged 16-59% of levelled-off synthetic runs
    (benchmarks/conclusions.py); `evals` is kept for callers."""
    found = end_trend(iters, window, whole_run_phi=True)
    if found and found[0].slope > 0 and found[0].p_up < IMPROVING_P:
        return f"reward still rising over the last {int(window * 100)}% of iterations (slope t = {found[0].t:.1f})"
    return None


def describe(anomalies: list[dict]) -> str:
    if not anomalies:
        return "stable"
    return "anomalies: " + ", ".join(
        f"{a['rule']} x{a['count']} (from iteration {a['first_iteration']})" for a in anomalies
    )
