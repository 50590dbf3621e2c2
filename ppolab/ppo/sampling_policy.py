"""The actor's mean in numpy, for rollout workers.

Keeps torch out of the sampling processes (they start in a fraction of a second
instead of importing torch), and costs a third of a torch forward for the small
batches sampled each step. Its input comes from `policy.sampling_params(actor)`.
"""

from __future__ import annotations

import numpy as np


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (np.tanh(0.5 * x) + 1.0)


class SamplingPolicy:
    """The actor's mean and std as float32 numpy, for rollout workers.

    A recurrent actor keeps an LSTM state per row of the batch it is called on;
    `reset(rows)` zeroes the state of rows whose episode starts.
    """

    def __init__(self, params: dict[str, np.ndarray]) -> None:
        self.mean = params["mean"]
        self.inv_std = params["inv_std"]
        self.clip = float(params["clip"])
        self.weights = params["weights"]
        self.biases = params["biases"]
        self.std = params["std"]
        self.lstm = params.get("lstm") or []
        self.relu = params.get("activation", "tanh") == "relu"
        self.state: list[tuple[np.ndarray, np.ndarray]] | None = None

    def reset(self, rows) -> None:
        if self.state is not None:
            for h, c in self.state:
                h[rows] = 0.0
                c[rows] = 0.0

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        h = obs - self.mean
        h *= self.inv_std
        np.minimum(h, self.clip, out=h)
        np.maximum(h, -self.clip, out=h)
        if self.lstm:
            h = self._lstm(h)
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            h = h @ w
            h += b
            if i < last:
                if self.relu:
                    np.maximum(h, 0.0, out=h)
                else:
                    np.tanh(h, out=h)
        return h

    def _lstm(self, x: np.ndarray) -> np.ndarray:
        """One time step of the stacked LSTM (torch's gate order: input, forget, cell, output)."""
        if self.state is None or self.state[0][0].shape[0] != x.shape[0]:
            self.state = [
                (np.zeros((x.shape[0], w_hh.shape[0]), np.float32), np.zeros((x.shape[0], w_hh.shape[0]), np.float32))
                for _, w_hh, _ in self.lstm
            ]
        for k, (w_ih, w_hh, b) in enumerate(self.lstm):
            h, c = self.state[k]
            gates = x @ w_ih + h @ w_hh + b
            i, f, g, o = np.split(gates, 4, axis=1)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
            self.state[k] = (h, c)
            x = h
        return x
