"""Local sampling backend: logical rollout workers mapped onto as many processes as there are cores.

`--num-procs 12` means 12 logical workers (12 x envs-per-worker env slots), not
12 busy processes: the slots are split into contiguous ranges, one per process,
and the driver process samples the first range itself. Workers receive the
policy once per iteration and send back their range's trajectories.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection

from threadpoolctl import threadpool_limits

from ppolab.envs import EnvSettings, make_env
from ppolab.ppo.rollout import Episodes, Trajectories, collect
from ppolab.ppo.sampling_policy import SamplingParams
from ppolab.util.system import available_cores


def one_blas_thread() -> None:
    """Policy inference is many small matmuls: BLAS threads in every sampling process only fight over
    the cores (measured: 2.5x slower sampling on 2 cores with a 256 x 256 policy)."""
    threadpool_limits(1, user_api="blas")


def split_slots(total: int, parts: int) -> list[tuple[int, int]]:
    """Contiguous (first_slot, count) ranges, as even as possible."""
    base, extra = divmod(total, parts)
    ranges, start = [], 0
    for p in range(parts):
        count = base + (1 if p < extra else 0)
        ranges.append((start, count))
        start += count
    return ranges


def _worker_main(
    conn: Connection,
    driver_end: Connection,
    env_name: str,
    overrides: EnvSettings | None,
    first_slot: int,
    count: int,
    total: int,
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver decides when to stop
    driver_end.close()  # a forked worker inherits it; closed, recv() sees EOF as soon as the driver is gone
    one_blas_thread()
    env, episodes = make_env(env_name, count, overrides), Episodes()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):  # the driver is gone (killed, or its pipe reset): leave quietly
            return
        if msg is None:
            return
        params, kwargs = msg
        result = collect(env, params, first_slot=first_slot, total_slots=total, episodes=episodes, **kwargs)
        try:
            conn.send(result)
        except OSError:  # the driver stopped (Ctrl-C) while this range was sampled: nothing to deliver
            return


class LocalSampler:
    """Samples all env slots each iteration with `procs` processes (the driver included)."""

    def __init__(
        self,
        env_name: str,
        total_slots: int,
        procs: int | None = None,
        overrides: EnvSettings | None = None,
        say: Callable[[str], None] = print,
    ) -> None:
        procs = max(1, min(procs or available_cores(), total_slots))
        self.total_slots, self.say = total_slots, say
        self.ranges = split_slots(total_slots, procs)
        self.procs = procs
        first, count = self.ranges[0]
        one_blas_thread()
        self.env, self.episodes = make_env(env_name, count, overrides), Episodes()
        # fork: workers start in milliseconds with the modules already imported. They never touch torch,
        # so the parent's torch state is of no concern; elsewhere (no fork), spawn.
        ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        self.conns: list[Connection] = []
        self.workers: list[mp.process.BaseProcess] = []
        for first_slot, n in self.ranges[1:]:
            parent, child = ctx.Pipe()
            p = ctx.Process(
                target=_worker_main, args=(child, parent, env_name, overrides, first_slot, n, total_slots), daemon=True
            )
            p.start()
            child.close()
            self.conns.append(parent)
            self.workers.append(p)

    def describe(self) -> str:
        return f"{self.procs} processes on {available_cores()} cores"

    def sample(self, params: SamplingParams, **kwargs) -> Trajectories:
        """kwargs: seed, stream, iteration, steps, horizon (see rollout.collect)."""
        for conn in self.conns:
            conn.send((params, kwargs))
        first, _ = self.ranges[0]
        parts = [collect(self.env, params, first_slot=first, total_slots=self.total_slots, episodes=self.episodes,
                         **kwargs)]  # fmt: skip
        for conn, proc in zip(self.conns, self.workers):
            try:
                parts.append(conn.recv())
            except EOFError:
                raise RuntimeError(f"rollout worker process {proc.pid} died (exit code {proc.exitcode})") from None
        return Trajectories.concat(parts)

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(None)
                conn.close()
            except OSError:
                pass
        for p in self.workers:
            p.join(timeout=2)
            if p.is_alive():
                p.terminate()
        self.conns, self.workers = [], []
