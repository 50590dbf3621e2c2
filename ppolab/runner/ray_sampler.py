"""Ray sampling backend: the rollout workers as Ray actors on a cluster; the learner stays in the driver.

The slots are split into the same contiguous ranges as the local backend, each
range on one actor, and every slot keeps its own RNG stream: the batch and the
metrics for a seed do not depend on the backend or on how many actors there are.
Each iteration puts the policy (weights and normaliser statistics) in Ray's
object store once; every actor reads that one copy. An actor that dies (its node
lost, or killed) is replaced and its share of the iteration sampled again, which
gives the very same trajectories (with --steps-per-env, whose episodes go on across
iterations, the replacement starts its envs' episodes afresh).

Ray is imported only here: the local backend never starts or imports it.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable

from ppolab.envs import EnvSettings, make_env
from ppolab.errors import UserError
from ppolab.ppo.rollout import Episodes, Trajectories, collect
from ppolab.ppo.sampling_policy import SamplingParams
from ppolab.runner.sampler import one_blas_thread, split_slots

READY_TIMEOUT_S = 120.0
REPLACEMENTS_PER_ITERATION = 3


class RolloutWorker:
    """One actor: the envs of a slot range, sampled with the policy of the iteration."""

    def __init__(self, env_name: str, overrides: EnvSettings | None, first_slot: int, count: int, total: int) -> None:
        one_blas_thread()
        self.env, self.episodes = make_env(env_name, count, overrides), Episodes()
        self.first_slot, self.total = first_slot, total

    def where(self) -> tuple[str, int]:
        return socket.gethostname(), os.getpid()

    def collect(self, params: SamplingParams, kwargs: dict) -> Trajectories:
        return collect(self.env, params, first_slot=self.first_slot, total_slots=self.total, episodes=self.episodes,
                       **kwargs)  # fmt: skip


def check_address() -> None:
    """A RAY_ADDRESS where nothing listens is a user mistake: say so now (Ray itself retries for minutes)."""
    address = os.environ.get("RAY_ADDRESS") or ""
    if address in ("", "auto", "local"):
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise UserError(f"RAY_ADDRESS={address}: write it as HOST:PORT (e.g. 10.0.0.5:6379), or leave it empty")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise UserError(
            f"RAY_ADDRESS={address}: no Ray cluster answers there ({exc.strerror or exc}); start one with "
            "`ray start --head`, or set RAY_ADDRESS= (empty) for the local backend"
        ) from None


def connect() -> str:
    """Join the cluster at RAY_ADDRESS, or start a private local one; which, in words."""
    import ray

    if not ray.is_initialized():
        check_address()
        # Empty or unset: a new private cluster ("local"). Ray's own default (None) would join whatever cluster
        # its current-cluster file names, a dead one included, and wait for its timeout.
        address = os.environ.get("RAY_ADDRESS") or "local"
        extra = {"include_dashboard": False} if address == "local" else {}
        try:
            ray.init(address=address, log_to_driver=False, logging_level="ERROR", **extra)
        except ConnectionError as exc:
            raise UserError(f"RAY_ADDRESS={address}: cannot connect to a Ray cluster there ({exc})") from None
    address = os.environ.get("RAY_ADDRESS")
    return f"the Ray cluster at {address}" if address and address != "local" else "a private local Ray"


class RaySampler:
    """Samples all env slots each iteration with `procs` Ray actors of one CPU each."""

    def __init__(
        self,
        env_name: str,
        total_slots: int,
        procs: int | None = None,
        overrides: EnvSettings | None = None,
        say: Callable[[str], None] = print,
    ) -> None:
        import ray

        self.cluster = connect()
        free = int(ray.available_resources().get("CPU", 0))
        procs = max(1, min(procs or free or 1, total_slots))
        self.total_slots, self.procs, self.say = total_slots, procs, say
        self.ranges = split_slots(total_slots, procs)
        self.env_name, self.overrides = env_name, overrides
        self._actor_class = ray.remote(num_cpus=1, max_restarts=0)(RolloutWorker)
        self.workers = [self._start(k) for k in range(procs)]
        try:
            self.places = ray.get([w.where.remote() for w in self.workers], timeout=READY_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            self.close()
            raise UserError(
                f"{self.cluster} has no room for {procs} rollout workers of 1 CPU "
                f"within {READY_TIMEOUT_S:.0f}s; free some CPUs or pass --sampler-procs N"
            ) from None

    def _start(self, k: int):
        first, count = self.ranges[k]
        return self._actor_class.remote(self.env_name, self.overrides, first, count, self.total_slots)

    def describe(self) -> str:
        hosts = sorted({h for h, _ in self.places})
        pids = ", ".join(str(p) for _, p in self.places)
        return f"{self.procs} Ray actors (pids {pids}) on {len(hosts)} host(s) of {self.cluster}"

    def sample(self, params: SamplingParams, **kwargs) -> Trajectories:
        """kwargs: seed, stream, iteration, steps, horizon (see rollout.collect)."""
        import ray

        shared = ray.put(params)  # once per iteration, whatever the number of actors and envs
        pending = {k: w.collect.remote(shared, kwargs) for k, w in enumerate(self.workers)}
        parts: list[Trajectories | None] = [None] * self.procs
        replaced = 0
        while pending:
            ready, _ = ray.wait(list(pending.values()), num_returns=1)
            k = next(i for i, ref in pending.items() if ref == ready[0])
            try:
                parts[k] = ray.get(ready[0])
                del pending[k]
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
                replaced += 1
                if replaced > REPLACEMENTS_PER_ITERATION:
                    raise RuntimeError(f"rollout workers keep dying on the Ray cluster: {exc}") from None
                host, pid = self.places[k]
                first, count = self.ranges[k]
                self.say(
                    f"Rollout worker {k} (pid {pid} on {host}, slots {first}-{first + count - 1}) died: "
                    f"{type(exc).__name__}. Replaced; its part of iteration {kwargs.get('iteration')} is sampled again."
                )
                self.workers[k] = self._start(k)
                try:
                    self.places[k] = ray.get(self.workers[k].where.remote(), timeout=READY_TIMEOUT_S)
                except ray.exceptions.GetTimeoutError:
                    raise RuntimeError(
                        f"no room on {self.cluster} for a replacement rollout worker within {READY_TIMEOUT_S:.0f}s; "
                        "the run resumes from its last checkpoint with --resume"
                    ) from None
                pending[k] = self.workers[k].collect.remote(shared, kwargs)
        return Trajectories.concat(parts)  # type: ignore[arg-type]

    def close(self) -> None:
        import ray

        for w in getattr(self, "workers", []):
            try:
                ray.kill(w)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.workers = []
