"""The PPO training loop, top to bottom: sample, bootstrap, update, log, evaluate, checkpoint."""

from __future__ import annotations

import errno
import math
import shutil
import signal
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np
import torch

from ppolab.envs import EnvSettings, env_config, make_env
from ppolab.envs.protocol import BatchEnv, Privileged, Standing
from ppolab.errors import NoSpace, UserError
from ppolab.ppo import checkpoint as ckpt
from ppolab.ppo import fused_step
from ppolab.ppo.adam import FlatAdam
from ppolab.ppo.critic_process import CriticProcess
from ppolab.ppo.imitation import Expert
from ppolab.ppo.loss import LossSettings, MirrorMaps, mirror_maps
from ppolab.ppo.lr_schedule import next_lr
from ppolab.ppo.policy import (
    Actor,
    Critic,
    ObsNormalizer,
    RecurrentActor,
    RecurrentCritic,
    sampling_params,
)
from ppolab.ppo.rollout import TRAIN_STREAM, WARMUP_STREAM, Trajectories, evaluate
from ppolab.ppo.std_schedule import set_std, std_at
from ppolab.ppo.storage import RolloutStorage
from ppolab.ppo.update import FusedUpdate, Hyper, Update, choose_update
from ppolab.runner import checking
from ppolab.runner.config import TrainConfig
from ppolab.runner.console import Console
from ppolab.runner.run_files import MetricsLog, create_run_dir, record_resume, system_info, write_run_files
from ppolab.runner.sampling import Sampler, make_sampler
from ppolab.runner.tracking import Tracker
from ppolab.util.files import remove_stale_temps
from ppolab.util.interrupt import restore, stop_on_signals
from ppolab.util.run_folder import LOG, TERM_PREFIX, RunFolder
from ppolab.util.tables import count

UPDATE_STREAM = 3


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda: no CUDA device is available; use --device cpu or auto")
    return torch.device(name)


def policy_meta(
    cfg: TrainConfig,
    env,
    kind: str,
    iteration: int,
    eval_reward: float | None,
    env_settings: EnvSettings | None,
) -> dict:
    return {
        "kind": kind,
        "env": cfg.env,
        "env_config": env_settings.data() if env_settings is not None else None,
        "obs_dim": env.obs_dim,
        "act_dim": env.act_dim,
        "hidden_sizes": list(cfg.hidden_sizes),
        "activation": cfg.activation,
        "recurrent": cfg.recurrent,
        "learn_std": cfg.learn_std,
        "std_dev": cfg.std_dev,
        "max_traj_len": cfg.max_traj_len,
        "iteration": iteration,
        "eval_reward": eval_reward,
    }


def build_networks(cfg: TrainConfig, obs_dim: int, act_dim: int, privileged_dim: int = 0) -> tuple[Actor, Critic]:
    """The actor and the critic (the critic reading `privileged_dim` entries more with --privileged-critic)."""
    norm = ObsNormalizer(obs_dim)
    if cfg.recurrent:
        actor = RecurrentActor(norm, obs_dim, act_dim, list(cfg.hidden_sizes), cfg.std_dev, cfg.learn_std)
        return actor, RecurrentCritic(norm, obs_dim, list(cfg.hidden_sizes))
    hidden = list(cfg.hidden_sizes)
    actor = Actor(norm, obs_dim, act_dim, hidden, cfg.std_dev, cfg.learn_std, cfg.activation)
    critic = Critic(norm, obs_dim, hidden, cfg.activation, privileged_dim if cfg.privileged_critic else 0)
    return actor, critic


def privileged_dim(cfg: TrainConfig, probe) -> int:
    """The privileged state's width for --privileged-critic (0 without it); an env that has none is refused."""
    if not cfg.privileged_critic:
        return 0
    if not isinstance(probe, Privileged):
        raise UserError(f"--privileged-critic: {cfg.env} has no privileged state (tasks on a robot file have); "
                        "leave it out or set it to false")  # fmt: skip
    return probe.privileged_dim


def update_normalizers(s: Session, traj: Trajectories) -> None:
    """The running statistics of what the networks read, after an iteration (or a warm-up batch)."""
    s.actor.norm.update(traj.obs)
    if s.critic.priv_norm is not None:
        s.critic.priv_norm.update(traj.priv)


def hyper(cfg: TrainConfig) -> Hyper:
    loss = LossSettings(clip=cfg.clip, entropy_coeff=cfg.entropy_coeff, mirror_coeff=cfg.mirror_coeff,
                        imitate_coeff=cfg.imitate_coeff)  # fmt: skip
    return Hyper(epochs=cfg.epochs, minibatch_size=cfg.minibatch_size, loss=loss, max_grad_norm=cfg.max_grad_norm,
                 update=cfg.update)  # fmt: skip


@dataclass(frozen=True)
class ResumePoint:
    """Where a run continues: its first iteration to run, the steps and seconds so far, the best evaluation
    (reward, iteration), and last.pt's own copy of the metrics records (None: none to restore)."""

    start_itr: int = 0
    total_steps: int = 0
    prior_time: float = 0.0
    best: tuple[float, int] | None = None
    records: list | None = None


def resume_point(run_dir: Path, actor, critic, optimizer, notes: list[str]) -> ResumePoint:
    """Load last.pt into the networks and the optimiser, and say where the run continues.

    A damaged last.pt falls back to the newest actor_<N>.pt/critic_<N>.pt pair that loads (the optimiser's
    state then starts afresh), else to iteration 0; `notes` says which.
    """
    try:
        state = ckpt.load(RunFolder(run_dir).last)
        actor.load_state_dict(state["actor"])
        critic.load_state_dict(state["critic"])
        optimizer.load_state_dict(state["optimizer"])
        best = tuple(state["best_eval"]) if state["best_eval"] is not None else None
        notes.append(f"Resuming {run_dir} at iteration {state['iteration'] + 1}")
        return ResumePoint(start_itr=state["iteration"] + 1, total_steps=state["total_steps"],
                           prior_time=state["total_time"], best=best, records=state.get("records"))  # fmt: skip
    except (UserError, KeyError, TypeError, RuntimeError, ValueError) as exc:
        why = str(exc).split(": ", 1)[-1] if isinstance(exc, UserError) else type(exc).__name__
    folder = RunFolder(run_dir)
    for itr in reversed(folder.checkpoints()):
        try:
            actor.load_state_dict(ckpt.load(folder.actor(itr))["state_dict"])
            critic.load_state_dict(ckpt.load(folder.critic(itr))["state_dict"])
        except (UserError, KeyError, TypeError, RuntimeError):
            continue
        recs = folder.records()
        last = next((r for r in recs.iterations if r["iteration"] == itr), {})
        evals = [(r["reward"], r["iteration"]) for r in recs.evals if r["iteration"] <= itr]
        notes.append(
            f"last.pt is unreadable ({why}); resuming from actor_{itr}.pt and critic_{itr}.pt (iteration {itr}); "
            "the optimizer's state starts afresh"
        )
        best = max(evals) if evals else None
        return ResumePoint(start_itr=itr + 1, total_steps=int(last.get("total_steps", 0)),
                           prior_time=float(last.get("total_time", 0.0)), best=best)  # fmt: skip
    notes.append(f"last.pt is unreadable ({why}) and no checkpoint pair loads: training restarts at iteration 0")
    return ResumePoint()


def load_pretrained(path: str, actor: Actor, critic: Critic, env_name: str) -> list[str]:
    """--continued: load an actor (and the critic beside it, if any); returns notes to print."""
    actor_path = ckpt.find_actor(Path(path))
    data = ckpt.load(actor_path)
    meta = data.get("meta", {})
    if meta.get("env") != env_name:
        raise UserError(f"--continued: {actor_path} was trained on {meta.get('env')!r}, not {env_name!r}")
    try:
        actor.load_state_dict(data["state_dict"])
    except RuntimeError:
        raise UserError(
            f"--continued: {actor_path} does not match this network (check --hidden-sizes and --recurrent)"
        ) from None
    notes = [f"Loaded pretrained actor from {actor_path}"]
    critic_path = ckpt.critic_beside(actor_path)
    if critic_path.is_file():
        try:
            critic.load_state_dict(ckpt.load(critic_path)["state_dict"])
            notes.append(f"Loaded pretrained critic from {critic_path}")
        except RuntimeError:  # another critic's inputs (--privileged-critic) or widths: the actor is what counts
            notes.append(f"The critic beside it ({critic_path}) reads other inputs: the critic starts fresh")
    else:
        notes.append("No critic beside it: the critic starts fresh")
    return notes


def fixed_std(actor: Actor, cfg: TrainConfig) -> list[str]:
    """A fixed action std is this run's setting (--std-dev, as config.yaml says), not the loaded actor's: a
    fine-tune at a smaller std is a common last step. A learned std is a trained weight and stays."""
    if cfg.learn_std:
        return []
    loaded = float(actor.log_std.exp().mean())
    if math.isclose(loaded, cfg.std_dev, rel_tol=1e-6):
        return []
    set_std(actor, cfg.std_dev)
    return [f"Action std {cfg.std_dev:g} (--std-dev; the loaded actor's was {loaded:.3g})"]


@dataclass
class Session:
    """Everything one training process holds: the networks, the sampler, the run folder and its logs."""

    cfg: TrainConfig
    seed: int
    device: torch.device
    probe: BatchEnv  # a one-env batch: dimensions and the mirror maps
    env_overrides: EnvSettings  # the env's settings, validated once
    actor: Actor
    critic: Critic
    optimizer: FlatAdam
    sampler: Sampler
    run_dir: Path
    console: Console
    log_file: TextIO
    metrics: MetricsLog
    eval_env: BatchEnv
    update: Update  # the kernel chosen for this run (fused or autograd), made once
    start_itr: int = 0
    total_steps: int = 0
    prior_time: float = 0.0
    best: tuple[float, int] | None = None
    fresh: bool = True  # a new run folder, not a resumed one
    mirror: MirrorMaps | None = None  # the mirror loss's action map (None: no mirror loss)
    check_time: float = 0.0  # seconds spent in behaviour checks (--check-every), resumed runs included
    expert: Expert | None = None  # --imitate's expert
    passed: int | None = None  # the latest iteration whose actor passed every check: actor.pt's, from then on
    t_start: float = field(default_factory=time.perf_counter)

    @property
    def elapsed(self) -> float:
        return self.prior_time + (time.perf_counter() - self.t_start)


def train(
    cfg: TrainConfig,
    *,
    resume_dir: Path | None = None,
    sampler_procs: int | None = None,
    backend: str = "auto",
    out: TextIO = sys.stdout,
) -> tuple[Path, bool]:
    """Train until n_itr or an interrupt. Returns (run folder, completed)."""
    s = setup(cfg, resume_dir, sampler_procs, backend, out)
    cfg = s.cfg
    previous_handlers = stop_on_signals()
    itr, interrupted, no_space = s.start_itr, False, None
    try:
        if resume_dir is None and not cfg.continued:
            warm_up(s)
        for itr in range(s.start_itr, cfg.n_itr):
            t0 = time.perf_counter()
            if cfg.std_final is not None:
                set_std(s.actor, std_at(itr, cfg.std_dev, cfg.std_final, cfg.std_decay_itr))
            traj = s.sampler.sample(
                sampling_params(s.actor),
                seed=s.seed,
                stream=TRAIN_STREAM,
                iteration=itr,
                steps=cfg.rollout_steps,
                horizon=cfg.horizon,
                privileged=cfg.privileged_critic,
            )
            t1 = time.perf_counter()
            storage = RolloutStorage(
                traj, s.actor, s.critic, gamma=cfg.gamma, lam=cfg.lam, recurrent=cfg.recurrent, device=s.device,
                mirror_obs=s.probe.symmetry.obs if s.mirror is not None else None,
                expert=s.expert.targets(traj.obs.reshape(-1, traj.obs.shape[-1])) if s.expert else None,
            )  # fmt: skip
            update_rng = np.random.default_rng([s.seed, UPDATE_STREAM, itr])
            stats = {**s.update(storage, update_rng), "lr": s.optimizer.lr}  # the rate this update ran at
            s.optimizer.lr = next_lr(cfg.schedule, s.optimizer.lr, stats["kl"], cfg.desired_kl)
            update_normalizers(s, traj)
            log_iteration(s, itr, traj, stats, t1 - t0, time.perf_counter() - t1)
            if itr % cfg.eval_freq == 0 or itr == cfg.n_itr - 1:
                evaluate_and_save(s, itr)
            passed = checking.due(cfg.check_every, itr, cfg.n_itr) and check_round(s, itr)
            save_last(s, itr)
            if stop := _stopping(cfg, passed, s.elapsed):
                s.console.line(f"Stopping at iteration {itr}: {stop}, after {s.total_steps:,} env steps and "
                               f"{s.elapsed / 60:.1f} min")  # fmt: skip
                break
    except KeyboardInterrupt:
        interrupted = True
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        interrupted, no_space = True, exc
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # already stopping (after Ctrl-C, say)
        close(s, itr, interrupted)
        restore(previous_handlers)
    if no_space is not None:
        last = RunFolder(s.run_dir).last
        raise NoSpace(str(s.run_dir), 3 * last.stat().st_size / 1e6 if last.exists() else None)
    return s.run_dir, not interrupted


def _stopping(cfg: TrainConfig, passed: bool, elapsed: float) -> str | None:
    """Why the run ends before --n-itr, if it does: every check passed, or its time is up."""
    if passed and cfg.stop_on_pass:
        return "every check passed (--stop-on-pass)"
    if cfg.time_limit is not None and elapsed >= 60 * cfg.time_limit:
        return f"its time limit of {cfg.time_limit:g} min is reached (--time-limit)"
    return None


def _learner(cfg: TrainConfig, probe, device: torch.device, fresh: bool, notes: list[str]):
    """The networks (from `--continued` or standing, for a fresh run), the optimiser, the mirror maps and the
    update, its critic's process started (a fork: before any thread). What it did goes into `notes`."""
    priv_dim = privileged_dim(cfg, probe)
    actor, critic = build_networks(cfg, probe.obs_dim, probe.act_dim, priv_dim)
    if cfg.continued and fresh:
        notes += load_pretrained(cfg.continued, actor, critic, cfg.env)
        notes += fixed_std(actor, cfg)
    elif cfg.start_standing and fresh:
        notes.append(start_standing(actor, probe, cfg.env))
    actor.to(device)
    critic.to(device)
    optimizer = FlatAdam(actor, critic, cfg.lr, cfg.eps)
    mirror = mirror_action_maps(cfg, probe, device)
    update = choose_update(actor, critic, optimizer, hyper(cfg), mirror)
    if isinstance(update, FusedUpdate) and fused_step.NOT_SCRIPTED:
        notes.append(f"Update: the fused epochs run from Python, slower, with the same results (TorchScript: "
                     f"{fused_step.NOT_SCRIPTED})")  # fmt: skip
    notes += start_critic_process(update, optimizer, hyper(cfg), cfg.batch_size, probe.obs_dim + priv_dim, device)
    return actor, critic, optimizer, mirror, update


def setup(cfg: TrainConfig, resume_dir: Path | None, sampler_procs: int | None, backend: str, out: TextIO) -> Session:
    """Seed, networks, optimiser and sampler; then the run folder (new, or the resumed one) and its logs."""
    seed_drawn = cfg.seed is None
    if seed_drawn:
        cfg = cfg.model_copy(update={"seed": int(np.random.SeedSequence().entropy % 2**31)})
    device = resolve_device(cfg.device)
    # One thread: results don't depend on the cores, and while another process is busy a second intra-op
    # thread made the jvrc_walk update 8-30x slower (benchmarks/README.md), for 5-17% on an idle machine.
    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    # the env's settings, validated once: a resumed run's env.yaml, else the defaults changed by --yaml
    saved = env_config.load_saved(resume_dir, cfg.env) if resume_dir else None
    env_overrides = saved or env_config.resolve(cfg.env, cfg.yaml if resume_dir is None else None, cfg.robot)
    probe = make_env(cfg.env, 1, env_overrides)
    expert, notes = imitation_expert(cfg, probe)
    if expert is not None and cfg.imitate_sha256 is None:
        cfg = cfg.model_copy(update={"imitate_sha256": expert.checksum})  # in config.yaml: a resume checks it
    actor, critic, optimizer, mirror, update = _learner(cfg, probe, device, fresh=resume_dir is None, notes=notes)
    # before the run folder: a cluster with no room is refused without leaving one. The local
    # backend forks its workers here, before any thread starts (workers die with this process)
    sampler = make_sampler(backend, cfg.env, cfg.num_slots, sampler_procs, env_overrides)
    system = system_info()
    run_dir, point = _open_run_folder(cfg, resume_dir, actor, critic, optimizer, notes)
    try:  # Ctrl-C (or a failure) before the first iteration: a new run folder holds nothing, it goes
        if resume_dir is None:
            write_run_files(run_dir, cfg, system)
            env_config.save(run_dir, env_overrides)
        log_file = open(run_dir / LOG, "a")
        console = Console(tee=log_file, out=out)
        sampler.say = console.line  # a replaced Ray worker is reported in the log
        console.header(*header_tables(cfg, system, run_dir, sampler.describe(), device, seed_drawn,
                                      probe.symmetry is not None))  # fmt: skip
        if isinstance(update, FusedUpdate) and update.elsewhere is not None:
            notes = ["Update: the critic's epochs in a second process, beside the actor's", *notes]
        for note in notes:
            console.line(note)
        tracker = Tracker(cfg, run_dir, say=console.line)
        metrics = MetricsLog(run_dir, resume_from=point.start_itr if resume_dir is not None else None, tracker=tracker,
                             restore=point.records)  # fmt: skip
        for note in metrics.notes:
            console.line(note)
        if resume_dir is None:
            metrics.describe(cfg)
        eval_env = make_env(cfg.env, cfg.eval_episodes, env_overrides)
        checks = RunFolder(run_dir).records().checks
        check_time = sum(r.get("seconds") or 0.0 for r in checks)
        passed = [r["iteration"] for r in checks if r["passed"]]
        return Session(
            cfg=cfg, seed=cfg.seed, device=device, probe=probe, env_overrides=env_overrides, actor=actor,
            critic=critic, optimizer=optimizer, sampler=sampler, run_dir=run_dir, console=console,
            log_file=log_file, metrics=metrics, eval_env=eval_env, update=update, start_itr=point.start_itr,
            total_steps=point.total_steps, prior_time=point.prior_time, best=point.best, fresh=resume_dir is None,
            mirror=mirror, check_time=check_time, expert=expert, passed=passed[-1] if passed else None,
        )  # fmt: skip
    except BaseException:
        sampler.close()
        update.close()
        if resume_dir is None:
            discard_new_run(run_dir)
        raise


def _open_run_folder(cfg: TrainConfig, resume_dir: Path | None, actor, critic, optimizer, notes: list[str]):
    """A new run folder, or the resumed one with the weights, optimiser and counters of its last.pt."""
    if resume_dir is None:
        return create_run_dir(cfg), ResumePoint()
    remove_stale_temps(resume_dir)  # a run killed mid-checkpoint left its temp file
    point = resume_point(resume_dir, actor, critic, optimizer, notes)
    if cfg.schedule == "fixed":
        optimizer.lr = cfg.lr  # a fixed rate is the config's, whatever last.pt holds
    record_resume(resume_dir, point.start_itr)
    if cfg.steps_per_env is not None:
        notes.append("The envs start fresh episodes: with --steps-per-env an uninterrupted run would have gone on "
                     "with its episodes, so from here the metrics differ from one")  # fmt: skip
    return resume_dir, point


def start_standing(actor, probe: BatchEnv, env_name: str) -> str:
    """--start-standing: the untrained policy's mean action holds the nominal pose; the console's note."""
    if not isinstance(probe, Standing):
        raise UserError(f"--start-standing: {env_name} is not a task on a robot file (it has no servo targets that "
                        "hold a standing pose); drop the flag")  # fmt: skip
    action = probe.standing_action()
    actor.start_at(action)
    return (
        f"Starting standing (--start-standing): the initial mean action holds the nominal pose (largest "
        f"entry {np.abs(action).max():.2f})"
    )


def imitation_expert(cfg: TrainConfig, probe: BatchEnv) -> tuple[Expert | None, list[str]]:
    """--imitate's expert, checked against this env and against the checksum a resumed run recorded; the
    console's note saying which update computes its loss."""
    if not cfg.imitate:
        return None, []
    expert = Expert.load(cfg.imitate, probe, cfg.env)
    expert.check_unchanged(cfg.imitate_sha256)
    kernel = "exact (autograd's)" if cfg.recurrent or cfg.update == "exact" else "fused (gradient written out)"
    return expert, [f"Imitating {expert.path} (trained on {expert.env}; --imitate-coeff {cfg.imitate_coeff}): "
                    f"the {kernel} update computes the imitation loss"]  # fmt: skip


def header_tables(
    cfg: TrainConfig, system: dict, run_dir: Path, sampled_by: str, device, seed_drawn: bool, has_symmetry: bool
):
    """The console header's two tables (LHW's layout): the machine, then the run's settings."""
    seed = cfg.seed
    machine = {
        "MuJoCo version": system["mujoco"],
        "PyTorch version": system["torch"],
        "Platform": system["platform"],
        "CPU": system["cpu"],
        "CPU count": str(system["cpu_count"]),
    }
    settings = {
        "Environment": cfg.env,
        "Log directory": str(run_dir.resolve()),
        "Num processes": f"{cfg.num_procs} (x {count(cfg.num_envs_per_worker, 'env')}; sampled by {sampled_by})",
        "Learning rate": str(cfg.lr),
        "Max trajectory length": str(cfg.max_traj_len),
        "Iterations": str(cfg.n_itr),
        "Seed": f"{seed} (drawn at random; --seed {seed} repeats this run)" if seed_drawn else f"{seed}",
        "Batch size": str(cfg.batch_size),
        "Device": str(device),
        **{k: str(v) for k, v in cfg.model_dump().items() if k not in ("env", "lr", "n_itr", "seed")},
    }
    if cfg.mirror and not has_symmetry:  # asked for (the default), but the env has no left and right
        settings["mirror"] = f"off ({cfg.env} has no mirror symmetry)"
    return machine, settings


def mirror_action_maps(cfg: TrainConfig, probe: BatchEnv, device: torch.device) -> MirrorMaps | None:
    """The mirror loss's action map, when the loss is asked for and the env has a symmetry."""
    if not (cfg.mirror and cfg.mirror_coeff > 0 and probe.symmetry is not None):
        return None
    act = probe.symmetry.act
    return mirror_maps(torch.from_numpy(act.perm).to(device), torch.from_numpy(act.sign).float().to(device))


def start_critic_process(update: Update, optimizer: FlatAdam, hp: Hyper, batch_size: int, obs_dim: int,
                         device: torch.device) -> list[str]:  # fmt: skip
    """A fused update's critic epochs in a second process, where that pays; returns notes for the console.
    Forked before any thread starts (Ray's, TensorBoard's); it dies with this process."""
    if not isinstance(update, FusedUpdate) or not CriticProcess.wanted(device):
        return []
    try:
        update.elsewhere = CriticProcess(update.critic_step, optimizer, hp, batch_size, obs_dim)
    except (OSError, RuntimeError) as exc:  # no shared memory (a full /dev/shm) or no process to be had
        return [f"Update: the critic's epochs run after the actor's here ({type(exc).__name__}: {exc})"]
    return []


def warm_up(s: Session) -> None:
    """Observation normalisation starts from rollouts of the initial policy, not from zeros: one batch, or
    --input-norm-steps of them (whole batches, rounded up; 0: none)."""
    n = s.cfg.input_norm_steps
    rounds = 1 if n is None else -(-n // s.cfg.batch_size)
    if rounds == 0:
        s.console.line("Observation normalization starts from zeros (--input-norm-steps 0)")
        return
    s.console.line("Warming up observation normalization...")
    for w in range(rounds):
        warm = s.sampler.sample(
            sampling_params(s.actor),
            seed=s.seed,
            stream=WARMUP_STREAM,
            iteration=w,
            steps=s.cfg.rollout_steps,
            horizon=s.cfg.horizon,
            privileged=s.cfg.privileged_critic,
        )
        update_normalizers(s, warm)
    s.console.line(f"Normalization initialized with {int(s.actor.norm.count.item())} samples")


def log_iteration(s: Session, itr: int, traj, stats: dict, sample_time: float, optimizer_time: float) -> None:
    """One iteration's record: to the console table, metrics.jsonl, TensorBoard and the tracker."""
    steps = traj.rewards.size
    s.total_steps += steps
    total_time = s.elapsed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no finished episode: nan, like other trainers
        mean_eprew = float(np.nanmean(traj.ep_return))
        mean_eplen = float(np.nanmean(traj.ep_length))
    rec = {
        "iteration": itr,
        "mean_eprew": mean_eprew,
        "mean_eplen": mean_eplen,
        **stats,
        "steps": steps,
        "sample_time": sample_time,
        "optimizer_time": optimizer_time,
        "total_steps": s.total_steps,
        "total_time": total_time,
        "fps": s.total_steps / total_time,
        **reward_terms(s.probe.rewards.names, traj),
    }
    s.console.iteration(rec, s.cfg.n_itr, s.cfg.time_limit)
    s.metrics.iteration(rec)


def reward_terms(names: tuple[str, ...], traj) -> dict[str, float]:
    """Each reward term's mean contribution per env step this iteration, as `rewards/<term>`: they sum to the
    mean reward per step, and show which term the policy earns its reward from."""
    steps = traj.rewards.size
    sums = traj.reward_terms.sum(axis=(0, 1))
    return {f"{TERM_PREFIX}{name}": float(v / steps) for name, v in zip(names, sums)}


def evaluate_and_save(s: Session, itr: int) -> None:
    """Deterministic episodes; actor_<itr>.pt and critic_<itr>.pt, and actor.pt/critic.pt when it is the best."""
    te = time.perf_counter()
    rets, lens = evaluate(s.eval_env, sampling_params(s.actor), seed=s.seed, steps=s.cfg.max_traj_len)
    reward, length = float(rets.mean()), float(lens.mean())
    save_pair(s, itr, reward)
    if s.best is None or reward > s.best[0]:
        s.best = (reward, itr)
        if s.passed is None:  # once an actor passed every check, actor.pt is the latest that did
            save_pair(s, itr, reward, best=True, chosen_by=f"the best evaluation reward so far ({reward:.3f})")
    seconds = time.perf_counter() - te
    s.console.evaluation(length, reward, seconds)
    s.metrics.evaluation({"iteration": itr, "reward": reward, "length": length, "time": seconds})


def save_pair(s: Session, itr: int, reward: float | None, best: bool = False, chosen_by: str | None = None) -> None:
    """actor_<itr>.pt and critic_<itr>.pt (`best`: actor.pt and critic.pt, with the rule that chose them), with
    the metadata to replay them."""
    for kind, net in (("actor", s.actor), ("critic", s.critic)):
        path = s.run_dir / (f"{kind}.pt" if best else f"{kind}_{itr}.pt")
        meta = policy_meta(s.cfg, s.probe, kind, itr, reward, s.env_overrides)
        ckpt.save_policy(path, net, {**meta, "chosen_by": chosen_by} if best else meta)
        if not best:
            s.console.line(f"Saved {kind} at {path}")


def check_round(s: Session, itr: int) -> bool:
    """The env's behaviour checks on the current actor (--check-every): recorded, shown, and the actor kept
    as actor_<itr>.pt when it passes. True if every check passed."""
    r = checking.run_round(s.cfg.env, s.env_overrides.data(), sampling_params(s.actor))
    s.check_time += r.seconds
    total = s.elapsed
    s.metrics.check({"iteration": itr, **r.record(s.total_steps, total, s.check_time)})
    s.console.line(checking.console_line(itr, r, s.total_steps, s.check_time, total))
    if r.passed and not RunFolder(s.run_dir).actor(itr).is_file():
        save_pair(s, itr, None)
    if r.passed:  # the policy a user gets is the latest that passed, not the best by reward
        s.passed = itr
        save_pair(s, itr, None, best=True, chosen_by="the latest actor that passed every check")
        s.console.line(f"actor.pt is now iteration {itr}'s actor: the latest that passed every check")
    return r.passed


def save_last(s: Session, itr: int) -> None:
    """last.pt, atomically: where a resume continues, with this iteration's metrics should the file lose them."""
    state = {
        "iteration": itr,
        "total_steps": s.total_steps,
        "total_time": s.elapsed,
        "best_eval": list(s.best) if s.best else None,
        "actor": s.actor.state_dict(),
        "critic": s.critic.state_dict(),
        "optimizer": s.optimizer.state_dict(),
        "records": s.metrics.written,
    }
    ckpt.atomic_save(state, RunFolder(s.run_dir).last)


def close(s: Session, itr: int, interrupted: bool) -> None:
    """Stop the sampler and write the summary line, which stays the log's last (parsers read it there).

    A new run stopped before its first iteration completed holds nothing to resume: its folder goes.
    """
    s.sampler.close()
    s.update.close()
    empty = interrupted and s.fresh and not RunFolder(s.run_dir).has_checkpoint()
    if interrupted and not empty:
        s.console.line(f"Continue it with: ppolab train --resume {s.run_dir}")
    if s.passed is not None:
        s.console.line(f"actor.pt: iteration {s.passed}'s actor, the latest that passed every check")
    elif s.best is not None:
        never = "; no actor passed every check" if s.cfg.check_every else ""
        s.console.line(f"actor.pt: iteration {s.best[1]}'s actor, the best evaluation reward ({s.best[0]:.3f}){never}")
    s.console.final(interrupted, itr, s.elapsed, s.total_steps, s.best)
    for closer in (s.metrics.close, s.log_file.close):
        try:
            closer()
        except OSError:  # a full disk: what could be written is; the checkpoint is the last good one
            pass
    if empty and discard_new_run(s.run_dir):
        print(f"No iteration had completed: removed the run folder {s.run_dir}", file=s.console.out)


def discard_new_run(run_dir: Path) -> bool:
    """Remove a run folder this process made and never completed an iteration in (its marker says it is
    ppolab's): nothing in it could be resumed. True if it was removed."""
    folder = RunFolder(run_dir)
    if folder.is_ppolabs() and not folder.has_checkpoint():
        shutil.rmtree(run_dir, ignore_errors=True)
        return True
    return False
