"""The recommended cartpole configuration (README), shared by the benchmarks: the learning bar's settings."""

from ppolab.ppo.config import TrainConfig, flag

SETTINGS = {
    "env": "cartpole",
    "std_dev": 0.15,
    "learn_std": True,
    "entropy_coeff": 0.01,
    "minibatch_size": 256,
    "max_traj_len": 500,
    "num_procs": 12,
}


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
