"""The actor's mean in numpy, for rollout workers.

Keeps torch out of the sampling processes (they start in a fraction of a second
instead of importing torch), and costs a third of a torch forward for the small
batches sampled each step. Its input, `SamplingParams`, comes from
`policy.sampling_params(actor)`; the layers' activation from `network.ACTIVATIONS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ppolab.ppo.network import ACTIVATIONS


@dataclass
class SamplingParams:
    """What a rollout worker needs to run the actor: the observation normaliser's statistics, the layers'
    float32 arrays (weights transposed: rows @ w), the action noise, and an LSTM's layers if it has them.
    Picklable, shipped once per iteration."""

    mean: np.ndarray
    inv_std: np.ndarray
    clip: float
    std: np.ndarray
    weights: list[np.ndarray]
    biases: list[np.ndarray]
    activation: str = "tanh"
    lstm: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)  # (w_ih^T, w_hh^T, b)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (np.tanh(0.5 * x) + 1.0)


class SamplingPolicy:
    """The actor's mean and std as float32 numpy, for rollout workers.

    A recurrent actor keeps an LSTM state per row of the batch it is called on;
    `reset(rows)` zeroes the state of rows whose episode starts.
    """

    def __init__(self, params: SamplingParams) -> None:
        self.params = params
        self.std = params.std
        self.activate = ACTIVATIONS[params.activation].numpy
        self.state: list[tuple[np.ndarray, np.ndarray]] | None = None

    def reset(self, rows) -> None:
        if self.state is not None:
            for h, c in self.state:
                h[rows] = 0.0
                c[rows] = 0.0

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        p = self.params
        h = obs - p.mean
        h *= p.inv_std
        np.minimum(h, p.clip, out=h)
        np.maximum(h, -p.clip, out=h)
        if p.lstm:
            h = self._lstm(h)
        last = len(p.weights) - 1
        for i, (w, b) in enumerate(zip(p.weights, p.biases)):
            h = h @ w
            h += b
            if i < last:
                self.activate(h)
        return h

    def _lstm(self, x: np.ndarray) -> np.ndarray:
        """One time step of the stacked LSTM (torch's gate order: input, forget, cell, output)."""
        lstm = self.params.lstm
        if self.state is None or self.state[0][0].shape[0] != x.shape[0]:
            self.state = [
                (np.zeros((x.shape[0], w_hh.shape[0]), np.float32), np.zeros((x.shape[0], w_hh.shape[0]), np.float32))
                for _, w_hh, _ in lstm
            ]
        for k, (w_ih, w_hh, b) in enumerate(lstm):
            h, c = self.state[k]
            gates = x @ w_ih + h @ w_hh + b
            i, f, g, o = np.split(gates, 4, axis=1)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
            self.state[k] = (h, c)
            x = h
        return x
