"""The recommended cartpole configuration (README), shared by the benchmarks: the learning bar's settings."""

from ppolab.runner.config import TrainConfig, flag
from ppolab.runner.presets import PRESETS

# the cartpole preset is the recommended configuration; the benchmarks set n_itr and eval_freq themselves
SETTINGS = {"env": "cartpole", **{k: v for k, v in PRESETS["cartpole"].items() if k not in ("n_itr", "eval_freq")}}


def config() -> TrainConfig:
    return TrainConfig(**SETTINGS)


def flags() -> list[str]:
    out: list[str] = []
    for name, value in SETTINGS.items():
        out += [flag(name)] if value is True else [flag(name), str(value)]
    return out


def train_command(n_itr: int, seed: int, eval_freq: int, logdir: str, *extra: str) -> list[str]:
    """`python -m ppolab train` in the recommended configuration."""
    import sys

    return [
        sys.executable,
        "-m",
        "ppolab",
        "train",
        *flags(),
        "--n-itr",
        str(n_itr),
        "--seed",
        str(seed),
        "--eval-freq",
        str(eval_freq),
        "--logdir",
        logdir,
        *extra,
    ]
