"""Batched MuJoCo stepping: one model, many MjData, physics in C.

Every env in a batch shares one compiled MjModel. Each env has its own MjData,
so an env's trajectory depends only on its own controls and initial state,
never on which other envs share the batch (or the process).
"""

from __future__ import annotations

import mujoco
import numpy as np

WARNINGS: list[str] = []  # MuJoCo's latest warnings (a model it cannot decode, an unstable simulation)


def _keep_warning(message: str) -> None:
    """MuJoCo's warnings kept here instead of printed to stderr and appended to MUJOCO_LOG.TXT in the user's
    folder: a refusal stays one line, and ppolab writes nothing where it was not asked to. An unstable step is
    seen in the state (a fallen robot, a reset), which the checks and tasks already judge."""
    WARNINGS.append(message)
    del WARNINGS[:-20]


mujoco.set_mju_user_warning(_keep_warning)


class BatchPhysics:
    """Steps `num_envs` copies of a model with per-env controls held over `substeps`."""

    def __init__(self, model: mujoco.MjModel, num_envs: int, substeps: int) -> None:
        self.model = model
        self.substeps = substeps
        self.datas = [mujoco.MjData(model) for _ in range(num_envs)]
        self.qpos = np.zeros((num_envs, model.nq))
        self.qvel = np.zeros((num_envs, model.nv))
        # views into each MjData's own memory, made once: the step loop does no attribute lookups
        self._views = [(d, d.ctrl, d.qpos, d.qvel) for d in self.datas]

    @property
    def num_envs(self) -> int:
        return len(self.datas)

    def step(self, ctrl: np.ndarray) -> None:
        """Apply ctrl (num_envs, nu) for `substeps` physics steps, then refresh qpos/qvel."""
        m, k, step = self.model, self.substeps, mujoco.mj_step
        for i, (d, c, q, v) in enumerate(self._views):
            c[:] = ctrl[i]
            step(m, d, k)
            self.qpos[i] = q
            self.qvel[i] = v

    def set_state(self, i: int, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Reset env i to the given joint state (time, controls and warmstart cleared)."""
        d = self.datas[i]
        mujoco.mj_resetData(self.model, d)
        d.qpos[:] = qpos
        d.qvel[:] = qvel
        mujoco.mj_forward(self.model, d)
        self.qpos[i] = d.qpos
        self.qvel[i] = d.qvel
