"""What a policy network is, said once: its layer widths and its hidden activation (`NetSpec`).

Three kernels run the same network: torch's modules (policy.py: the update's autograd path, playback,
export), numpy (sampling_policy.py: the rollout workers, which never import torch) and the fused
update's hand-written forward and backward (fused_step.py). Each takes the spec and the activation's
form from here, so they cannot disagree about the shape, and an activation is added in one table: its
torch module and its numpy form below, its derivative in `fused_step.activate_backward`.
tests/test_network.py runs every activation of the table through all three kernels and autograd, so an
activation without a derivative fails a test instead of falling back to a slower path unseen.

This module imports no torch (the sampling workers load it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

ActivationName = Literal["tanh", "relu", "elu"]


def _tanh(h: np.ndarray) -> np.ndarray:
    return np.tanh(h, out=h)


def _relu(h: np.ndarray) -> np.ndarray:
    return np.maximum(h, 0.0, out=h)


def _elu(h: np.ndarray) -> np.ndarray:
    neg = h < 0.0
    h[neg] = np.expm1(h[neg])
    return h


@dataclass(frozen=True)
class Activation:
    """One hidden activation's forms: the torch.nn class that builds the modules, and numpy's, in place."""

    torch_module: str
    numpy: Callable[[np.ndarray], np.ndarray]


ACTIVATIONS: dict[str, Activation] = {
    "tanh": Activation("Tanh", _tanh),
    "relu": Activation("ReLU", _relu),
    "elu": Activation("ELU", _elu),  # alpha 1 (torch's default; rsl_rl's default activation)
}
if set(ACTIVATIONS) != set(get_args(ActivationName)):
    raise ImportError("network.ACTIVATIONS and ActivationName list different activations")


@dataclass(frozen=True)
class NetSpec:
    """A multilayer perceptron: its widths from input to output, and the activation after every hidden layer
    (the output layer is linear)."""

    sizes: tuple[int, ...]
    activation: ActivationName = "tanh"

    @classmethod
    def of(cls, inputs: int, hidden: list[int] | tuple[int, ...], outputs: int, activation: str) -> NetSpec:
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}: one of {', '.join(ACTIVATIONS)}")
        return cls((inputs, *hidden, outputs), activation)  # type: ignore[arg-type]

    @property
    def layers(self) -> int:
        """Linear layers."""
        return len(self.sizes) - 1
