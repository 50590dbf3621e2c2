"""Checkpoints: state dicts plus plain metadata, written atomically, loadable with weights_only=True.

Files in a run folder:
- `actor_<itr>.pt`, `critic_<itr>.pt`: at each evaluation;
- `actor.pt`, `critic.pt`: the latest that passed every behaviour check (`--check-every`), else the best so far
  by eval reward; their metadata's `chosen_by` says which;
- `last.pt`: everything `--resume` needs (networks, optimisers, counters), every iteration.

Each policy file is `{"state_dict": ..., "meta": {...}}`; `meta` names the env,
dimensions and network shape so that `ppolab eval` can rebuild the policy.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import torch

from ppolab.envs import env_config
from ppolab.errors import UserError
from ppolab.ppo.policy import Actor, ObsNormalizer, RecurrentActor
from ppolab.util.files import atomic_write_bytes
from ppolab.util.interrupt import deferred_signals
from ppolab.util.run_folder import ACTOR


def atomic_save(obj: Any, path: Path) -> None:
    """torch.save to a temp file in the same folder, then rename: never a half-written file."""
    with deferred_signals():
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        atomic_write_bytes(path, buffer.getvalue())


def save_policy(path: Path, module: torch.nn.Module, meta: dict) -> None:
    # clone: parameters are views into the optimiser's flat buffer, which torch.save would store whole
    state = {k: v.detach().clone() for k, v in module.state_dict().items()}
    atomic_save({"state_dict": state, "meta": meta}, path)


def load(path: Path) -> dict:
    """Load a checkpoint without unpickling code; a bad file is a UserError with the reason."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except Exception:  # corrupt, truncated, or pickled code that weights_only refuses
        raise UserError(f"{path}: not a readable checkpoint (truncated, corrupt, or not saved by ppolab)") from None


def find_actor(path: Path) -> Path:
    """An actor file given itself or its run folder (the best one, `actor.pt`)."""
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        path = path / ACTOR
        if not path.is_file():
            raise UserError(f"{path}: no such file (is this a run folder with an evaluation yet?)")
    return path


def describe(path: Path) -> str:
    """The first line eval, export and the checks print: which file, which iteration, and why actor.pt is it."""
    meta = load(path).get("meta", {})
    why = meta.get("chosen_by") or ("the best evaluation reward" if path.name == ACTOR else None)
    chosen = f"; actor.pt is {why}" if path.name == ACTOR and why else ""
    return f"Policy: {path}, iteration {meta.get('iteration', '?')} (env {meta.get('env', '?')}{chosen})"


def critic_beside(actor_path: Path) -> Path:
    """`actor_100.pt` -> `critic_100.pt`, `actor.pt` -> `critic.pt`."""
    return actor_path.with_name(actor_path.name.replace("actor", "critic", 1))


def load_actor(path: Path) -> tuple[Actor, dict]:
    """Rebuild an actor from `actor*.pt` (state dict + meta), no pickled code involved."""
    actor_path = find_actor(path)
    data = load(actor_path)
    meta = data.get("meta") if isinstance(data, dict) else None
    if not meta or meta.get("kind") != "actor":
        raise UserError(f"{actor_path}: not a ppolab actor checkpoint")
    args = (ObsNormalizer(meta["obs_dim"]), meta["obs_dim"], meta["act_dim"], meta["hidden_sizes"])
    if meta.get("recurrent"):
        actor = RecurrentActor(*args, meta["std_dev"], meta["learn_std"])
    else:
        actor = Actor(*args, meta["std_dev"], meta["learn_std"], meta.get("activation", "tanh"))
    actor.load_state_dict(data["state_dict"])
    if meta.get("env_config") is None and meta.get("env"):  # an actor saved before policies carried it in full
        saved = env_config.load_saved(actor_path.parent, meta["env"])  # its run's env.yaml, if any
        meta["env_config"] = saved.data() if saved is not None else None
    elif meta.get("env"):  # settings added to the task since keep the value it was trained with
        meta["env_config"] = env_config.restore(meta["env"], meta["env_config"])
    return actor, meta
