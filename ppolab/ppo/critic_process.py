"""The critic's PPO epochs in a second process, at the same time as the actor's.

Why: the update ran on one core while the other sat idle (the sampling workers wait for the next
policy), and a second intra-op thread or a Python thread does not pay on these small networks
(benchmarks/README.md: threads fight over the GIL or meet at a barrier after every small kernel). The
actor's and the critic's halves of the fused update are independent (separate losses, gradients,
clipping and Adam moments), so a forked process steps the critic's half of the FlatAdam buffers, which
live in shared memory, while this one steps the actor's. The two meet once per iteration, not per
minibatch, so another busy process slows them down gracefully. The process runs the same
`update.critic_epochs` as the in-process path: the parameters are the same to the last bit either way
(tests/test_update.py), so a seed's metrics do not depend on the cores.
"""

from __future__ import annotations

import multiprocessing as mp
import signal

import torch

from ppolab.ppo.adam import FlatAdam
from ppolab.ppo.fused_step import CriticStep
from ppolab.ppo.update import Hyper, critic_epochs
from ppolab.util.system import available_cores


def _serve(conn, parent_end, step: CriticStep, obs, returns, perms, hp: Hyper) -> None:
    # the trainer decides when to stop (Ctrl-C and Slurm's SIGTERM reach every process); a trainer that is
    # gone closes the pipe, and recv() sees EOF once the parent's end, inherited by this fork, is closed too
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    parent_end.close()
    # before any op: a fork inherits the parent's OpenMP pool but not its threads, and the first parallel
    # region then waits for them forever (seen when the parent had run ops on 2 threads); one thread
    # keeps torch's kernels out of OpenMP altogether
    torch.set_num_threads(1)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        t0, lr = job
        losses = critic_epochs(step, obs, returns, list(perms), hp, t0, lr)
        try:
            conn.send(torch.stack(losses).numpy())
        except OSError:
            return


class CriticProcess:
    """A forked process that runs the critic's epochs of each fused update (`update.CriticRunner`)."""

    def __init__(self, step: CriticStep, optimizer: FlatAdam, hp: Hyper, batch_size: int, obs_dim: int) -> None:
        optimizer.share_memory()  # in place: the step's views follow
        # what the process reads each iteration, filled by start(): normalised observations, returns, orders
        self.obs = torch.zeros(batch_size, obs_dim).share_memory_()
        self.returns = torch.zeros(batch_size).share_memory_()
        self.perms = torch.zeros(hp.epochs, batch_size, dtype=torch.int64).share_memory_()
        ctx = mp.get_context("fork")
        self.conn, child = ctx.Pipe()
        args = (child, self.conn, step, self.obs, self.returns, self.perms, hp)
        self.proc = ctx.Process(target=_serve, args=args, daemon=True)
        self.proc.start()
        child.close()

    @staticmethod
    def wanted(device: torch.device) -> bool:
        """Where it pays (for a fused update): on the CPU, with a second core, where fork exists."""
        return device.type == "cpu" and available_cores() >= 2 and "fork" in mp.get_all_start_methods()

    def start(self, obs: torch.Tensor, returns: torch.Tensor, perms: list[torch.Tensor], t0: int, lr: float) -> None:
        self.obs.copy_(obs)
        self.returns.copy_(returns)
        for k, perm in enumerate(perms):
            self.perms[k].copy_(perm)
        self.conn.send((t0, lr))

    def result(self) -> list[torch.Tensor]:
        try:
            losses = self.conn.recv()
        except EOFError:
            died = f"the critic's update process {self.proc.pid} died (exit code {self.proc.exitcode})"
            raise RuntimeError(died) from None
        return list(torch.from_numpy(losses))

    def close(self) -> None:
        try:
            self.conn.send(None)
            self.conn.close()
        except OSError:
            pass
        self.proc.join(timeout=2)
        if self.proc.is_alive():
            self.proc.terminate()
