"""The console format of `ppolab train`, kept line-compatible with existing PPO tooling.

Scripts parse these lines (see shared/reference for another trainer's log):

    ********** Iteration 3 ************
    Sampling took 0.17s for 6000 steps.
    Optimizer took: 0.04s
    -------------------------------------
    |      Mean Eprew |          267.59 |
    ...
    -------------------------------------
    Total time elapsed: 3.67s. Total steps: 24000 (fps=6539.92. iter-avg=0.92s. ETA=0:07:36)
    ====EVALUATE EPISODE====
    (Episode length:500.000. Reward:190.619. Time taken:0.72s)

and, when training ends (normally or interrupted), one final summary line.
"""

from __future__ import annotations

import datetime as dt
import math
import sys
from typing import TextIO

from ppolab.runner.config import seconds_left

TABLE_ROWS = [
    ("Mean Eprew", "mean_eprew"),
    ("Mean Eplen", "mean_eplen"),
    ("Actor loss", "actor_loss"),
    ("Critic loss", "critic_loss"),
    ("Mirror loss", "mirror_loss"),
    ("Imitation loss", "imitation_loss"),
    ("Mean KL Div", "kl"),
    ("Mean Entropy", "entropy"),
    ("Clip Fraction", "clip_fraction"),
    ("Mean noise std", "noise_std"),
]
RULE = "-" * 37


def fmt_value(key: str, v: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "nan"
    if key in ("mean_eprew", "mean_eplen"):
        return f"{round(v, 2):g}"
    return f"{v:.3g}"


def fmt_eta(seconds: float) -> str:
    return str(dt.timedelta(seconds=max(0, round(seconds))))


class Console:
    """Writes the training log to stdout and, line for line, to a log file."""

    def __init__(self, tee: TextIO | None = None, out: TextIO = sys.stdout) -> None:
        self.out, self.tee = out, tee

    def line(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()
        if self.tee is not None:
            try:
                self.tee.write(text + "\n")
                self.tee.flush()
            except OSError:  # train.log's disk is full: the console still says what happens
                self.tee = None

    def header(self, system: dict[str, str], config: dict[str, str]) -> None:
        self.line("=" * 60)
        self.line("System Information")
        self.line("=" * 60)
        for k, v in system.items():
            self.line(f"{k}: {v}")
        self.line("-" * 60)
        self.line("Training Configuration")
        self.line("-" * 60)
        for k, v in config.items():
            self.line(f"{k}: {v}")
        self.line("=" * 60)

    def iteration(self, rec: dict, n_itr: int, time_limit: float | None = None) -> None:
        self.line(f"********** Iteration {rec['iteration']} ************")
        self.line(f"Sampling took {rec['sample_time']:.2f}s for {rec['steps']} steps.")
        self.line(f"Optimizer took: {rec['optimizer_time']:.2f}s")
        self.line(RULE)
        for label, key in TABLE_ROWS:
            self.line(f"| {label:>15} | {fmt_value(key, rec[key]):>15} |")
        self.line(RULE)
        done = rec["iteration"] + 1
        iter_avg = rec["total_time"] / done
        eta = fmt_eta(seconds_left(iter_avg, done, n_itr, rec["total_time"], time_limit))
        self.line(
            f"Total time elapsed: {rec['total_time']:.2f}s. Total steps: {rec['total_steps']} "
            f"(fps={rec['fps']:.2f}. iter-avg={iter_avg:.2f}s. ETA={eta})"
        )

    def evaluation(self, length: float, reward: float, seconds: float) -> None:
        self.line("====EVALUATE EPISODE====")
        self.line(f"(Episode length:{length:.3f}. Reward:{reward:.3f}. Time taken:{seconds:.2f}s)")

    def final(
        self, interrupted: bool, iteration: int, total_time: float, total_steps: int, best: tuple[float, int] | None
    ) -> None:
        fps = total_steps / total_time if total_time > 0 else 0.0
        head = f"Training interrupted at iteration {iteration}." if interrupted else "Training finished."
        best_txt = f"Best eval reward: {best[0]:.3f} at iteration {best[1]}." if best else "Best eval reward: none."
        self.line(
            f"{head} Total time: {total_time:.2f}s. Total steps: {total_steps}. Average fps: {fps:.2f}. {best_txt}"
        )
