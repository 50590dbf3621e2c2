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
  least-squares slope of Mean Eprew is negative with a t statistic below
  `decline_t` (-3), and the fitted drop exceeds `decline_min_drop` (5%) of the
  run's reward range: a trend, not noise.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

RULES = ("nan_inf", "critic_divergence", "kl_high", "clip_high", "entropy_collapse", "reward_decline")
CHECKED_FOR_NAN = ("actor_loss", "critic_loss", "kl", "entropy", "clip_fraction", "noise_std")


class Thresholds(BaseModel):
    """Anomaly thresholds: defaults here, overridden by a YAML file (same keys) and then by flags."""

    model_config = ConfigDict(extra="forbid")

    critic_loss: float = Field(1000.0, gt=0, description="critic loss above this: possible divergence")
    kl: float = Field(0.05, gt=0, description="mean KL above this: the policy changes too fast")
    clip_fraction: float = Field(0.3, gt=0, le=1, description="clip fraction above this: clipping too much")
    min_noise_std: float = Field(0.01, ge=0, description="action noise std below this: exploration collapsed")
    decline_window: float = Field(0.2, gt=0, le=1, description="fraction of iterations checked for a decline")
    decline_t: float = Field(-3.0, lt=0, description="t statistic of the reward slope below which it declines")
    decline_min_drop: float = Field(0.05, ge=0, description="minimal fitted drop, as a fraction of the reward range")


def _finding(rule: str, iterations: list[int], detail: str) -> dict | None:
    if not iterations:
        return None
    return {"rule": rule, "first_iteration": iterations[0], "count": len(iterations), "detail": detail}


def _value(rec: dict, key: str) -> float | None:
    v = rec.get(key)
    return None if v is None else float(v)


def find_anomalies(iters: list[dict], th: Thresholds | None = None) -> list[dict]:
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
        return lambda r: (v := _value(r, key)) is not None and math.isfinite(v) and v > limit

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
    low_std = where(lambda r: (v := _value(r, "noise_std")) is not None and math.isfinite(v) and v < th.min_noise_std)
    found.append(
        _finding("entropy_collapse", low_std, f"action noise std < {th.min_noise_std:g}: exploration has collapsed")
    )
    found.append(_reward_decline(iters, th))
    return [f for f in found if f]


def _reward_decline(iters: list[dict], th: Thresholds) -> dict | None:
    pts = [(r["iteration"], _value(r, "mean_eprew")) for r in iters]
    pts = [(i, v) for i, v in pts if v is not None and math.isfinite(v)]
    if len(pts) < 20:
        return None
    window = pts[-max(10, int(len(pts) * th.decline_window)) :]
    x = np.array([p[0] for p in window], float)
    y = np.array([p[1] for p in window], float)
    xc = x - x.mean()
    sxx = float((xc**2).sum())
    if sxx == 0:
        return None
    slope = float((xc * (y - y.mean())).sum() / sxx)
    resid = y - (y.mean() + slope * xc)
    se = math.sqrt(float((resid**2).sum()) / (len(x) - 2) / sxx) if len(x) > 2 else 0.0
    t = slope / se if se > 0 else (-math.inf if slope < 0 else 0.0)
    all_rewards = np.array([p[1] for p in pts])
    span = float(all_rewards.max() - all_rewards.min()) or 1.0
    drop = -slope * (x[-1] - x[0])
    if slope < 0 and t < th.decline_t and drop > th.decline_min_drop * span:
        return {
            "rule": "reward_decline",
            "first_iteration": int(x[0]),
            "count": len(x),
            "detail": f"reward fell by {drop:.1f} over the last {len(x)} iterations (slope t = {t:.1f})",
        }
    return None


def describe(anomalies: list[dict]) -> str:
    if not anomalies:
        return "stable"
    return "anomalies: " + ", ".join(
        f"{a['rule']} x{a['count']} (from iteration {a['first_iteration']})" for a in anomalies
    )
