"""ppolab: fast PPO for MuJoCo robot tasks, and the tools to run and compare many training runs.

From Python (`ppolab.api`; each name imports what it needs on first use, so `import ppolab` stays light):
`make_env` (a task as a Gymnasium vector env), `load` (a trained policy), `train`, `evaluate`, `compare`,
`sweep`; mistakes raise `UserError`.
"""

__version__ = "0.1.0"

_API = ("Policy", "UserError", "compare", "evaluate", "load", "make_env", "sweep", "train")


def __getattr__(name: str):
    if name in _API:  # imported by name: the layers below, which import `ppolab` for its version, stay below
        import importlib

        return getattr(importlib.import_module("ppolab.api"), name)
    raise AttributeError(f"module 'ppolab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
